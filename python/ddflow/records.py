"""What every collection handle is: a node of its owner's plan, and the operators that act on
each record on its own (expressions, Python functions, negation and scaling, time operators).

A handle knows its owner (the dataflow, through the narrow :class:`PlanOwner` interface), its
node id, its column names and its scope. Every operator appends nodes to the owner's plan and
returns a new handle; nothing runs until the dataflow is driven (``flow.run_until`` ...).
Column expressions (``dd.col("dist") + 1``) run in Rust; Python functions (``map``, ``filter``
with a function, ...) are the escape hatch, called once per batch of columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, Self

from ddflow import functions
from ddflow.builder import Node, PlanBuilder
from ddflow.callbacks import ROW, Registered
from ddflow.capture import Capture, Probe
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.expr import Expr, as_expr, check_columns, col, expr_text
from ddflow.functions import function_name, output_names
from ddflow.plan import (
    AdvanceIterationOp,
    ConsolidateOp,
    DelayOp,
    FilterOp,
    FilterPyOp,
    FlatMapPyOp,
    InspectPyOp,
    MapPyOp,
    NegateOp,
    OpSpec,
    ScaleOp,
    SelectOp,
    TemporalFilterOp,
    python_op,
    user_location,
)
from ddflow.temporal import conjuncts, has_now, split_now
from ddflow.traces import TraceHandle

__all__ = ["PlanOwner", "RecordOperators"]


class PlanOwner(Protocol):
    """What collection handles need from the dataflow that owns them."""

    @property
    def builder(self) -> PlanBuilder:
        """The plan under construction, with its functions and time shape."""
        ...

    def new_capture(
        self, node: int, columns: tuple[str, ...], label: str, errors: str, keep: str
    ) -> Capture:
        """A capture reading ``capture`` node ``node``, registered with the owner."""
        ...

    def new_probe(self, node: int, label: str) -> Probe:
        """A probe on ``probe`` node ``node``."""
        ...

    def new_trace_handle(
        self, node: int, key: tuple[str, ...], columns: tuple[str, ...]
    ) -> TraceHandle:
        """A trace handle on the top-level arrangement at ``node``."""
        ...


class RecordOperators:
    """A handle on one node of a dataflow plan, with the record-wise operators
    (``Collection`` adds the rest)."""

    __slots__ = ("flow", "node", "columns", "scope")

    def __init__(self, flow: PlanOwner, node: int, columns: Sequence[str], scope: int) -> None:
        """Wraps plan node ``node``; built by ``Dataflow.new_input`` and operators."""
        self.flow = flow
        self.node = node
        self.columns: tuple[str, ...] = tuple(columns)
        """The column names, in order."""
        self.scope = scope
        """The scope (0: top level; iterate bodies have their own)."""

    def __repr__(self) -> str:
        op = self.flow.builder.op(self.node)
        where = "" if self.scope == 0 else f", scope {self.scope}"
        return f"{type(self).__name__}(#{self.node} {op}: ({', '.join(self.columns)}){where})"

    # -- internal helpers -------------------------------------------------------------------

    @property
    def _builder(self) -> PlanBuilder:
        return self.flow.builder

    def _ref(self) -> Node:
        """This handle's node as operators see it."""
        return Node(self.node, self.columns, self.scope)

    def _wrap(self, ref: Node) -> Self:
        """A handle on another node of the same dataflow."""
        return type(self)(self.flow, ref.node, ref.columns, ref.scope)

    def _add(
        self, spec: OpSpec, columns: Sequence[str], label: str, notes: Sequence[str] = ()
    ) -> Self:
        """Appends a node running ``spec`` on this collection and returns its handle."""
        return self._wrap(self._builder.add(spec, [self._ref()], columns, label, notes))

    def _select_columns(self, names: Sequence[str], label: str) -> Self:
        """A ``select`` of column references (projection / reordering)."""
        return self._wrap(self._builder.select_columns(self._ref(), names, label))

    def _register(self, entry: Registered) -> int:
        return self._builder.register(entry)

    # -- expressions ------------------------------------------------------------------------

    def select(self, *exprs: Expr | str, **named: Expr | str | int | float | bool) -> Self:
        """Columns computed by expressions: ``select("node", dist=dd.col("d") + 1)``.

        Positional arguments are column names or expressions, named like Polars (the
        outermost ``.alias(..)``, else the leftmost column); keyword arguments name their
        expression (a str is a column name, numbers and bools are literals).
        """
        label = f"select@{user_location()}"
        names: list[str] = []
        items: list[Expr] = []
        for e in exprs:
            expr = as_expr(e, label)
            names.append(expr.output_name())
            items.append(expr)
        for name, value in named.items():
            names.append(name)
            items.append(as_expr(value, label))
        return self._select(names, items, label)

    def _select(self, names: list[str], items: list[Expr], label: str) -> Self:
        if not names:
            raise PlanError(f"{label}: select needs at least one column")
        for expr in items:
            check_columns(expr, self.columns, label)
        notes = [f"{n} = {expr_text(e)}" for n, e in zip(names, items, strict=True)]
        return self._add(SelectOp([e.to_json() for e in items]), names, label, notes)

    def with_columns(self, **named: Expr | str | int | float | bool) -> Self:
        """All columns, with ``named`` ones replaced in place or appended at the end."""
        label = f"with_columns@{user_location()}"
        exprs = {n: as_expr(e, label) for n, e in named.items()}
        names = list(self.columns) + [n for n in exprs if n not in self.columns]
        items = [exprs[n] if n in exprs else col(n) for n in names]
        return self._select(names, items, label)

    def rename(self, mapping: Mapping[str, str] | None = None, **names: str) -> Self:
        """Columns renamed (``rename(old="new")`` or ``rename({"old": "new"})``), same order."""
        label = f"rename@{user_location()}"
        renames = {**(mapping or {}), **names}
        for old in renames:
            if old not in self.columns:
                raise ColumnNotFoundError(
                    f"{label}: column {old!r} not found; available columns are "
                    f"{list(self.columns)}"
                )
        out = [renames.get(c, c) for c in self.columns]
        return self._select(out, [col(c) for c in self.columns], label)

    def filter(self, predicate: Expr | Callable[[dict[str, Any]], Any]) -> Self:
        """Rows where a bool expression holds, or where a batch function returns True.

        A function gets ``{column: numpy array}`` and returns a bool array.
        """
        label = f"filter@{user_location()}"
        if isinstance(predicate, Expr) and has_now(predicate):
            return self._temporal_filter(predicate, label)
        if isinstance(predicate, Expr):
            check_columns(predicate, self.columns, label)
            return self._add(
                FilterOp(predicate.to_json()), self.columns, label, [expr_text(predicate)]
            )
        if callable(predicate):
            fn_id = self._register(Registered("filter_py", predicate, label))
            return self._add(FilterPyOp(fn_id), self.columns, label, [function_name(predicate)])
        raise PlanError(f"{label}: expected an expression or a function, got {predicate!r}")

    def _temporal_filter(self, predicate: Expr, label: str) -> Self:
        """A filter reading ``now()`` (:mod:`ddflow.temporal`): an ordinary filter for the
        conjuncts without ``now()`` (first: fewer rows to hold), then a ``temporal_filter``
        node for the comparisons with ``now()``."""
        lower, upper, rest = split_now(predicate, self.columns, label)
        node = self
        if rest is not None:
            node = self._add(FilterOp(rest.to_json()), self.columns, label, [expr_text(rest)])
        now_parts = " & ".join(expr_text(p) for p in conjuncts(predicate) if has_now(p))
        return node._add(TemporalFilterOp(lower, upper), self.columns, label, [now_parts])

    # -- Python functions -------------------------------------------------------------------

    def map(
        self,
        fn: Callable[[dict[str, Any]], Any],
        columns: Sequence[str] | None = None,
    ) -> Self:
        """Columns computed by a Python function on each batch.

        ``fn`` gets ``{column: numpy array}`` and returns a dict of equal-length columns (or a
        tuple, with ``columns=``). Output names are ``columns`` or, when omitted, the keys
        ``fn`` returns when called once on an empty batch while the plan is built.
        """
        label = f"map@{user_location()}"
        return self._map("map_py", fn, columns, label)

    def flat_map(
        self,
        fn: Callable[[dict[str, Any]], Any],
        columns: Sequence[str] | None = None,
    ) -> Self:
        """Any number of rows per input row, computed by a Python function on each batch.

        ``fn`` gets ``{column: numpy array}`` and returns a dict of equal-length columns plus
        ``"__row__"``: for each output row, the index of its input row (whose time and diff it
        takes).
        """
        label = f"flat_map@{user_location()}"
        return self._map("flat_map_py", fn, columns, label)

    def _map(
        self,
        kind: str,
        fn: Callable[[dict[str, Any]], Any],
        columns: Sequence[str] | None,
        label: str,
    ) -> Self:
        if not callable(fn):
            raise PlanError(f"{label}: expected a function, got {fn!r}")
        self._builder.check_building(label)
        if columns is None:
            drop = (ROW,) if kind == "flat_map_py" else ()
            names = functions.discover_columns(fn, self.columns, label, drop=drop)
        else:
            names = output_names(columns, label)
        fn_id = self._register(Registered(kind, fn, label, columns=names))
        return self._add(python_op(kind, fn_id), names, label, [function_name(fn)])

    def map_rows(
        self, fn: Callable[[tuple[Any, ...]], Any], columns: Sequence[str] | None = None
    ) -> Self:
        """Maps each record (a tuple) to one record (a tuple; a bare value for one column).

        ``columns`` names the output (default: the input's columns). Runs a Python loop
        per batch: prefer expressions or ``map`` for speed.
        """
        label = f"map_rows@{user_location()}"
        names = self.columns if columns is None else output_names(columns, label)
        batch_fn = functions.rows_map(fn, self.columns, names, label)
        fn_id = self._register(Registered("map_py", batch_fn, label, columns=names))
        return self._add(MapPyOp(fn_id), names, label, [f"rows: {function_name(fn)}"])

    def filter_rows(self, fn: Callable[[tuple[Any, ...]], Any]) -> Self:
        """Records (tuples) for which ``fn`` is truthy (a Python loop per batch)."""
        label = f"filter_rows@{user_location()}"
        batch_fn = functions.rows_filter(fn, self.columns)
        fn_id = self._register(Registered("filter_py", batch_fn, label))
        return self._add(FilterPyOp(fn_id), self.columns, label, [f"rows: {function_name(fn)}"])

    def flat_map_rows(
        self,
        fn: Callable[[tuple[Any, ...]], Iterable[Any]],
        columns: Sequence[str] | None = None,
    ) -> Self:
        """Each record (a tuple) to any number of records (``fn`` returns an iterable)."""
        label = f"flat_map_rows@{user_location()}"
        names = self.columns if columns is None else output_names(columns, label)
        batch_fn = functions.rows_flat_map(fn, self.columns, names, label)
        fn_id = self._register(Registered("flat_map_py", batch_fn, label, columns=names))
        return self._add(FlatMapPyOp(fn_id), names, label, [f"rows: {function_name(fn)}"])

    # -- multiset operators -----------------------------------------------------------------

    def negate(self) -> Self:
        """Every count negated."""
        return self._add(NegateOp(), self.columns, f"negate@{user_location()}")

    def scale(self, factor: int) -> Self:
        """Every count multiplied by ``factor`` (an int64; ``negate()`` is ``scale(-1)``)."""
        label = f"scale@{user_location()}"
        if (
            isinstance(factor, bool)
            or not isinstance(factor, int)
            or not -(2**63) <= factor < 2**63
        ):
            raise PlanError(f"{label}: factor must be an int64, got {factor!r}")
        return self._add(ScaleOp(factor), self.columns, label, [f"factor={factor}"])

    def consolidate(self) -> Self:
        """The same collection with updates summed per (record, time) once times complete."""
        return self._add(ConsolidateOp(), self.columns, f"consolidate@{user_location()}")

    # -- programming with time --------------------------------------------------------------

    def advance_iteration(self, value: Expr | str) -> Self:
        """Inside ``iterate``: each update's iteration coordinate becomes
        ``max(current, value)``, for ``value`` an int64 expression on its record
        (``advance_iteration(dd.col("dist"))``; a str is a column name).

        Every update of a record moves by the same rule, so at iteration ``i`` the
        collection holds the records whose value is at most ``i``: work on records with
        large values waits for later iterations (prioritized SSSP, label propagation). The
        ``iterate`` reaches the same fixed point when its body re-derives the result from
        its sources in every round and the records held back only delay it (as SSSP's
        ``min`` over proposals and roots does). A negative value, or one
        at or past the iterate's ``max_iterations``, raises ``DdflowError`` naming this
        operator and the value. Follow it with ``delay()`` when values spread over many
        iterations.
        """
        label = f"advance_iteration@{user_location()}"
        if self.scope == 0:
            raise PlanError(
                f"{label}: advance_iteration moves the iteration coordinate, so it only "
                f"applies to collections of an iterate body (outer collections enter the "
                f"body when combined with its collections)"
            )
        expr = as_expr(value, label)
        check_columns(expr, self.columns, label)
        return self._add(AdvanceIterationOp(expr.to_json()), self.columns, label, [expr_text(expr)])

    def delay(self) -> Self:
        """The same updates, held and bundled by time until their time is complete.

        Downstream operators then see each distinct time once, whatever the number of
        updates spread over future times (priority-queue behaviour after
        ``advance_iteration``). The collection's contents at every time are unchanged.
        """
        return self._add(DelayOp(), self.columns, f"delay@{user_location()}")

    # -- observing ---------------------------------------------------------------------------

    def inspect(self, fn: Callable[[tuple[Any, ...], Any, int], Any]) -> Self:
        """Passes the collection through, calling ``fn(record, time, diff)`` for each update.

        Inside ``iterate`` times carry the iteration coordinates. Runs a Python loop.
        """
        label = f"inspect@{user_location()}"
        entry = Registered(
            "inspect_py", fn, label, batch=False, to_user_time=self._builder.times.to_user
        )
        fn_id = self._register(entry)
        return self._add(InspectPyOp(fn_id, batch=False), self.columns, label, [function_name(fn)])

    def inspect_batch(self, fn: Callable[[dict[str, Any]], Any]) -> Self:
        """Passes the collection through, calling ``fn`` with each batch of updates: a dict of
        the columns plus ``time`` (int64, shape (n, time coordinates)) and ``diff``."""
        label = f"inspect_batch@{user_location()}"
        self._check_reserved(label)
        fn_id = self._register(Registered("inspect_py", fn, label, batch=True))
        return self._add(InspectPyOp(fn_id, batch=True), self.columns, label, [function_name(fn)])

    def _check_reserved(self, label: str) -> None:
        for reserved in ("time", "diff"):
            if reserved in self.columns:
                raise PlanError(
                    f"{label}: column {reserved!r} would clash with the updates' {reserved!r} "
                    f"column; rename it first (rename({reserved}=...))"
                )
