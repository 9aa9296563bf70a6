"""``Collection``: a multiset of records changing over time, and its operators.

A Collection is a handle on one node of the plan: it knows its dataflow, its node id, its
column names and its scope. Every operator appends nodes to the plan and returns a new handle;
nothing runs until the dataflow is driven (``flow.run_until`` ...). Column expressions
(``dd.col("dist") + 1``) run in Rust; Python functions (``map``, ``filter`` with a function, ...)
are the escape hatch, called once per batch of columns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ddflow import functions
from ddflow.arrangement import Arrangement
from ddflow.callbacks import ROW, Registered
from ddflow.errors import ColumnNotFoundError, DdflowError, PlanError
from ddflow.expr import Expr, col, lit
from ddflow.plan import (
    AdvanceIterationOp,
    CaptureOp,
    ConcatOp,
    ConsolidateOp,
    DelayOp,
    FilterOp,
    FilterPyOp,
    FlatMapPyOp,
    InspectPyOp,
    LeaveOp,
    MapPyOp,
    NegateOp,
    OpSpec,
    ProbeOp,
    ScaleOp,
    SelectOp,
    VariableOp,
    python_op,
    user_location,
)
from ddflow.times import MAX_TIME_DIMS, is_int
from ddflow.wiring import arrange, common_scope, enter_collection, resolve_names, same_flow

if TYPE_CHECKING:
    from ddflow.aggregates import Aggregate
    from ddflow.capture import Capture, Probe
    from ddflow.dataflow import Dataflow

__all__ = ["Collection"]

Keys = str | Sequence[str]


_INT64_MAX = 2**63 - 1


def _expr_text(expr: Expr) -> str:
    """An expression as Python-like text (its repr), or compact JSON."""
    text = repr(expr)
    if text.startswith("<"):
        text = json.dumps(expr.to_json(), separators=(",", ":"))
    return text


def _as_expr(value: object, label: str) -> Expr:
    """An expression from an Expr, a column name (str) or a literal value (a number, bool)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, str):
        return col(value)
    try:
        return lit(value)  # type: ignore[arg-type]
    except DdflowError:
        raise PlanError(
            f"{label}: expected an expression, a column name or a literal, got {value!r}"
        ) from None


def _check_columns(expr: Expr, columns: Sequence[str], label: str) -> None:
    """Raises ``ColumnNotFoundError`` naming the operator if ``expr`` reads a missing column."""
    for name in expr.columns():
        if name not in columns:
            raise ColumnNotFoundError(
                f"{label}: column {name!r} not found in expression {_expr_text(expr)}; "
                f"available columns are {list(columns)}"
            )


class Collection:
    """A collection of records with named columns, at one node of a dataflow plan."""

    __slots__ = ("flow", "node", "columns", "scope")

    def __init__(self, flow: Dataflow, node: int, columns: Sequence[str], scope: int) -> None:
        """Wraps plan node ``node``; built by ``Dataflow.new_input`` and operators."""
        self.flow = flow
        self.node = node
        self.columns: tuple[str, ...] = tuple(columns)
        """The column names, in order."""
        self.scope = scope
        """The scope (0: top level; iterate bodies have their own)."""

    def __repr__(self) -> str:
        op = self.flow._plan.nodes[self.node]["op"]
        where = "" if self.scope == 0 else f", scope {self.scope}"
        return f"Collection(#{self.node} {op}: ({', '.join(self.columns)}){where})"

    # -- internal helpers -------------------------------------------------------------------

    def derive_node(self, node: int, columns: Sequence[str], scope: int) -> Collection:
        """A handle on another node of the same dataflow."""
        return Collection(self.flow, node, columns, scope)

    def _add(
        self,
        spec: OpSpec,
        columns: Sequence[str],
        label: str,
        notes: Sequence[str] = (),
        inputs: Sequence[int] | None = None,
        scope: int | None = None,
    ) -> Collection:
        """Appends a node running ``spec`` on this collection (or ``inputs``) and returns its
        handle."""
        scope = self.scope if scope is None else scope
        node = self.flow._plan.add(
            spec, scope, [self.node] if inputs is None else inputs, columns, label, notes
        )
        return Collection(self.flow, node, columns, scope)

    def _select_columns(self, names: Sequence[str], label: str) -> Collection:
        """A ``select`` of column references (projection / reordering)."""
        exprs = [col(n).to_json() for n in names]
        return self._add(SelectOp(exprs), names, label, [", ".join(names)])

    def _register(self, entry: Registered) -> int:
        self.flow._plan.check_building(entry.label)
        return self.flow._dispatcher.register(entry)

    # -- expressions ------------------------------------------------------------------------

    def select(self, *exprs: Expr | str, **named: Expr | str | int | float | bool) -> Collection:
        """Columns computed by expressions: ``select("node", dist=dd.col("d") + 1)``.

        Positional arguments are column names or expressions, named like Polars (the
        outermost ``.alias(..)``, else the leftmost column); keyword arguments name their
        expression (a str is a column name, numbers and bools are literals).
        """
        label = f"select@{user_location()}"
        names: list[str] = []
        items: list[Expr] = []
        for e in exprs:
            expr = _as_expr(e, label)
            names.append(expr.output_name())
            items.append(expr)
        for name, value in named.items():
            names.append(name)
            items.append(_as_expr(value, label))
        return self._select(names, items, label)

    def _select(self, names: list[str], items: list[Expr], label: str) -> Collection:
        if not names:
            raise PlanError(f"{label}: select needs at least one column")
        for expr in items:
            _check_columns(expr, self.columns, label)
        notes = [f"{n} = {_expr_text(e)}" for n, e in zip(names, items, strict=True)]
        return self._add(SelectOp([e.to_json() for e in items]), names, label, notes)

    def with_columns(self, **named: Expr | str | int | float | bool) -> Collection:
        """All columns, with ``named`` ones replaced in place or appended at the end."""
        label = f"with_columns@{user_location()}"
        exprs = {n: _as_expr(e, label) for n, e in named.items()}
        names = list(self.columns) + [n for n in exprs if n not in self.columns]
        items = [exprs[n] if n in exprs else col(n) for n in names]
        return self._select(names, items, label)

    def rename(self, mapping: Mapping[str, str] | None = None, **names: str) -> Collection:
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

    def filter(self, predicate: Expr | Callable[[dict[str, Any]], Any]) -> Collection:
        """Rows where a bool expression holds, or where a batch function returns True.

        A function gets ``{column: numpy array}`` and returns a bool array.
        """
        label = f"filter@{user_location()}"
        if isinstance(predicate, Expr):
            _check_columns(predicate, self.columns, label)
            return self._add(
                FilterOp(predicate.to_json()), self.columns, label, [_expr_text(predicate)]
            )
        if callable(predicate):
            fn_id = self._register(Registered("filter_py", predicate, label))
            return self._add(FilterPyOp(fn_id), self.columns, label, [_fn_name(predicate)])
        raise PlanError(f"{label}: expected an expression or a function, got {predicate!r}")

    # -- Python functions -------------------------------------------------------------------

    def map(
        self,
        fn: Callable[[dict[str, Any]], Any],
        columns: Sequence[str] | None = None,
    ) -> Collection:
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
    ) -> Collection:
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
    ) -> Collection:
        if not callable(fn):
            raise PlanError(f"{label}: expected a function, got {fn!r}")
        self.flow._plan.check_building(label)
        if columns is None:
            drop = (ROW,) if kind == "flat_map_py" else ()
            names = functions.discover_columns(fn, self.columns, label, drop=drop)
        else:
            names = _names(columns, label)
        fn_id = self._register(Registered(kind, fn, label, columns=names))
        return self._add(python_op(kind, fn_id), names, label, [_fn_name(fn)])

    def map_rows(
        self, fn: Callable[[tuple[Any, ...]], Any], columns: Sequence[str] | None = None
    ) -> Collection:
        """Maps each record (a tuple) to one record (a tuple; a bare value for one column).

        ``columns`` names the output (default: the input's columns). Runs a Python loop
        per batch: prefer expressions or ``map`` for speed.
        """
        label = f"map_rows@{user_location()}"
        names = self.columns if columns is None else _names(columns, label)
        batch_fn = functions.rows_map(fn, self.columns, names, label)
        fn_id = self._register(Registered("map_py", batch_fn, label, columns=names))
        return self._add(MapPyOp(fn_id), names, label, [f"rows: {_fn_name(fn)}"])

    def filter_rows(self, fn: Callable[[tuple[Any, ...]], Any]) -> Collection:
        """Records (tuples) for which ``fn`` is truthy (a Python loop per batch)."""
        label = f"filter_rows@{user_location()}"
        batch_fn = functions.rows_filter(fn, self.columns)
        fn_id = self._register(Registered("filter_py", batch_fn, label))
        return self._add(FilterPyOp(fn_id), self.columns, label, [f"rows: {_fn_name(fn)}"])

    def flat_map_rows(
        self,
        fn: Callable[[tuple[Any, ...]], Iterable[Any]],
        columns: Sequence[str] | None = None,
    ) -> Collection:
        """Each record (a tuple) to any number of records (``fn`` returns an iterable)."""
        label = f"flat_map_rows@{user_location()}"
        names = self.columns if columns is None else _names(columns, label)
        batch_fn = functions.rows_flat_map(fn, self.columns, names, label)
        fn_id = self._register(Registered("flat_map_py", batch_fn, label, columns=names))
        return self._add(FlatMapPyOp(fn_id), names, label, [f"rows: {_fn_name(fn)}"])

    # -- multiset operators -----------------------------------------------------------------

    def concat(self, *others: Collection) -> Collection:
        """The union (sum of counts) of this collection and ``others`` (same column names)."""
        label = f"concat@{user_location()}"
        items = [self, *others]
        for other in others:
            if not isinstance(other, Collection):
                raise PlanError(f"{label}: expected Collections, got {other!r}")
            if set(other.columns) != set(self.columns) or len(other.columns) != len(self.columns):
                raise PlanError(
                    f"{label}: columns {list(other.columns)} differ from {list(self.columns)}"
                )
        same_flow(label, *items)
        scope = common_scope(label, *items)
        plan = self.flow._plan
        plan.check_building(label)
        mark = plan.mark()
        try:
            aligned = []
            for item in items:
                item = enter_collection(item, scope, label)
                if item.columns != self.columns:
                    item = item._select_columns(self.columns, f"{label} (column order)")
                aligned.append(item)
            return aligned[0]._add(
                ConcatOp(), self.columns, label, inputs=[c.node for c in aligned], scope=scope
            )
        except BaseException:
            plan.rollback(mark)
            raise

    def negate(self) -> Collection:
        """Every count negated."""
        return self._add(NegateOp(), self.columns, f"negate@{user_location()}")

    def scale(self, factor: int) -> Collection:
        """Every count multiplied by ``factor`` (an int64; ``negate()`` is ``scale(-1)``)."""
        label = f"scale@{user_location()}"
        if (
            isinstance(factor, bool)
            or not isinstance(factor, int)
            or not -(2**63) <= factor < 2**63
        ):
            raise PlanError(f"{label}: factor must be an int64, got {factor!r}")
        return self._add(ScaleOp(factor), self.columns, label, [f"factor={factor}"])

    def consolidate(self) -> Collection:
        """The same collection with updates summed per (record, time) once times complete."""
        return self._add(ConsolidateOp(), self.columns, f"consolidate@{user_location()}")

    # -- programming with time --------------------------------------------------------------

    def advance_iteration(self, value: Expr | str) -> Collection:
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
        expr = _as_expr(value, label)
        _check_columns(expr, self.columns, label)
        return self._add(
            AdvanceIterationOp(expr.to_json()), self.columns, label, [_expr_text(expr)]
        )

    def delay(self) -> Collection:
        """The same updates, held and bundled by time until their time is complete.

        Downstream operators then see each distinct time once, whatever the number of
        updates spread over future times (priority-queue behaviour after
        ``advance_iteration``). The collection's contents at every time are unchanged.
        """
        return self._add(DelayOp(), self.columns, f"delay@{user_location()}")

    # -- joins ------------------------------------------------------------------------------

    def join(
        self,
        other: Collection | Arrangement,
        on: Keys | None = None,
        *,
        left_on: Keys | None = None,
        right_on: Keys | None = None,
        suffixes: tuple[str, str] | None = None,
    ) -> Collection:
        """Pairs of rows with equal keys: key columns (left names), left's other columns,
        right's other columns. Names on both sides need ``suffixes=("_l", "_r")``."""
        from ddflow.joins import join

        return join("join", self, other, on, left_on, right_on, suffixes)

    def semijoin(
        self,
        other: Collection | Arrangement,
        on: Keys | None = None,
        *,
        left_on: Keys | None = None,
        right_on: Keys | None = None,
    ) -> Collection:
        """Rows whose key occurs in ``other``: each row with its own count, while the key's
        accumulated count in ``other`` is positive (set semantics, as SQL's ``EXISTS``)."""
        from ddflow.joins import join

        return join("semijoin", self, other, on, left_on, right_on, None)

    def antijoin(
        self,
        other: Collection | Arrangement,
        on: Keys | None = None,
        *,
        left_on: Keys | None = None,
        right_on: Keys | None = None,
    ) -> Collection:
        """Rows whose key does not occur in ``other`` (accumulated count not positive): this
        collection minus its ``semijoin``, never negative (SQL's ``NOT EXISTS``)."""
        from ddflow.joins import join

        return join("antijoin", self, other, on, left_on, right_on, None)

    # -- reductions -------------------------------------------------------------------------

    def reduce(
        self,
        by: Keys,
        agg: Aggregate | Callable[[Any], Any],
        *,
        columns: Sequence[str] | None = None,
    ) -> Collection:
        """Per key: ``by`` columns, then the aggregate's columns (``dd.min("dist")`` writes
        ``dist``). ``agg`` may be a Python reducer function (see ``dd.reducer``), whose output
        columns are ``columns``."""
        from ddflow.reducing import reduce_collection

        return reduce_collection(self, by, agg, columns, "reduce")

    def count(self, by: Keys | None = None) -> Collection:
        """``by`` columns (default: all) and ``count``, the signed sum of counts (absent at 0)."""
        from ddflow.aggregates import count
        from ddflow.reducing import reduce_collection

        keys = self.columns if by is None else by
        return reduce_collection(self, keys, count(), None, "count", project=True)

    def distinct(self) -> Collection:
        """Each record with positive accumulated count, with count 1."""
        from ddflow.aggregates import distinct
        from ddflow.reducing import reduce_collection

        return reduce_collection(self, self.columns, distinct(), None, "distinct")

    def threshold(self, fn: Callable[[Any], Any], *, vectorized: bool = False) -> Collection:
        """Each record with count ``fn(c)`` for its accumulated signed count ``c``.

        ``fn`` is called once per distinct count value in a batch (with a numpy int64), or
        once per batch with the int64 array of counts when ``vectorized``.
        """
        from ddflow.aggregates import ThresholdAggregate
        from ddflow.reducing import reduce_collection

        if not callable(fn):
            raise PlanError(f"threshold@{user_location()}: expected a function, got {fn!r}")
        agg = ThresholdAggregate(fn, vectorized)
        return reduce_collection(self, self.columns, agg, None, "threshold")

    def arrange_by_key(self, on: Keys) -> Arrangement:
        """This collection indexed by ``on``: a trace that joins and reduces share."""
        label = f"arrange_by_key@{user_location()}"
        return arrange(self, resolve_names(on, self.columns, label), label)

    def arrange_by_self(self) -> Arrangement:
        """This collection indexed by the whole record."""
        return arrange(self, self.columns, f"arrange_by_self@{user_location()}")

    # -- iteration --------------------------------------------------------------------------

    def iterate(
        self,
        body: Callable[[Collection], Collection],
        max_iterations: int | None = None,
    ) -> Collection:
        """The fixed point of ``body``, starting from this collection.

        Inside, ``body`` gets the iteration variable (this collection at iteration 0, then
        ``body``'s result at the previous iteration); collections from outside used in the body
        enter implicitly. Returns the result in this collection's scope. ``max_iterations``
        stops after that many iterations.
        """
        label = f"iterate@{user_location()}"
        if max_iterations is not None and (
            not is_int(max_iterations) or not 1 <= max_iterations <= _INT64_MAX
        ):
            raise PlanError(
                f"{label}: max_iterations must be None or an int from 1 to 2**63-1, "
                f"got {max_iterations!r}"
            )
        plan = self.flow._plan
        plan.check_building(label)
        mark = plan.mark()
        n_fns = len(self.flow._dispatcher)
        depth = plan.depth(self.scope) + 1
        dims = self.flow._times.dims or 1
        if dims + depth > MAX_TIME_DIMS:
            raise PlanError(
                f"{label}: iterate nested {depth} deep with {dims}-coordinate times needs "
                f"{dims + depth} time coordinates; the engine supports {MAX_TIME_DIMS}"
            )
        scope = plan.new_scope(self.scope, max_iterations, label)
        self.flow._times.max_depth = max(self.flow._times.max_depth, depth)
        try:
            source = enter_collection(self, scope, label)
            var = source._add(VariableOp(), self.columns, f"{label} (variable)")
            result = body(var)
            if not isinstance(result, Collection):
                raise PlanError(f"{label}: the body must return a Collection, got {result!r}")
            if result.flow is not self.flow:
                raise PlanError(
                    f"{label}: the body returned a collection of another dataflow ({result!r})"
                )
            if set(result.columns) != set(self.columns) or len(result.columns) != len(self.columns):
                raise PlanError(
                    f"{label}: the body returns columns {list(result.columns)}, the iteration "
                    f"variable has {list(self.columns)}"
                )
            if not plan.is_ancestor(result.scope, scope):
                raise PlanError(f"{label}: the body returned a collection from another scope")
            result = enter_collection(result, scope, label)
            if result.columns != self.columns:
                result = result._select_columns(self.columns, f"{label} (column order)")
            if result.node == var.node:
                result = var._add(ConcatOp(), self.columns, f"{label} (result)")
            plan.nodes[var.node]["result"] = result.node
            plan.close_scope(scope)
            return result._add(LeaveOp(), self.columns, f"{label} (leave)", scope=self.scope)
        except BaseException:
            plan.rollback(mark)
            self.flow._dispatcher.truncate(n_fns)
            raise

    # -- outputs ----------------------------------------------------------------------------

    def inspect(self, fn: Callable[[tuple[Any, ...], Any, int], Any]) -> Collection:
        """Passes the collection through, calling ``fn(record, time, diff)`` for each update.

        Inside ``iterate`` times carry the iteration coordinates. Runs a Python loop.
        """
        label = f"inspect@{user_location()}"
        entry = Registered(
            "inspect_py", fn, label, batch=False, to_user_time=self.flow._times.to_user
        )
        fn_id = self._register(entry)
        return self._add(InspectPyOp(fn_id, batch=False), self.columns, label, [_fn_name(fn)])

    def inspect_batch(self, fn: Callable[[dict[str, Any]], Any]) -> Collection:
        """Passes the collection through, calling ``fn`` with each batch of updates: a dict of
        the columns plus ``time`` (int64, shape (n, time coordinates)) and ``diff``."""
        label = f"inspect_batch@{user_location()}"
        self._check_reserved(label)
        fn_id = self._register(Registered("inspect_py", fn, label, batch=True))
        return self._add(InspectPyOp(fn_id, batch=True), self.columns, label, [_fn_name(fn)])

    def capture(self, errors: str = "raise", keep: str = "history") -> Capture:
        """Keeps this collection's output for ``updates()``, ``state()``, ``at(t)`` and
        ``subscribe(fn)``.

        ``errors``: ``"raise"`` (default) makes reading a time where an error update from
        upstream is live raise ``DataError``; ``"collect"`` returns the data anyway, with the
        errors beside it in ``errors()`` / ``errors_at(t)``.

        ``keep``: ``"history"`` (default) keeps every completed update, so ``updates()`` and
        ``at(t)`` answer for any completed time; ``"state"`` keeps only the accumulated
        collection at the capture's frontier (``state()``), so memory is bounded by the live
        data of a long-running job. ``subscribe`` works with either.
        """
        from ddflow.capture import Capture

        label = f"capture@{user_location()}"
        if errors not in ("raise", "collect"):
            raise PlanError(f'{label}: errors must be "raise" or "collect", got {errors!r}')
        if keep not in ("history", "state"):
            raise PlanError(f'{label}: keep must be "history" or "state", got {keep!r}')
        self._check_top(label)
        self._check_reserved(label)
        node = self._add(CaptureOp(), self.columns, label).node
        cap = Capture(self.flow, node, self.columns, label, errors=errors, keep=keep)
        self.flow._captures.append(cap)
        return cap

    def probe(self) -> Probe:
        """A probe on this collection's frontier: ``probe.done(t)``."""
        from ddflow.capture import Probe

        label = f"probe@{user_location()}"
        self._check_top(label)
        node = self._add(ProbeOp(), self.columns, label).node
        return Probe(self.flow, node, label)

    def _check_reserved(self, label: str) -> None:
        for reserved in ("time", "diff"):
            if reserved in self.columns:
                raise PlanError(
                    f"{label}: column {reserved!r} would clash with the updates' {reserved!r} "
                    f"column; rename it first (rename({reserved}=...))"
                )

    def _check_top(self, label: str) -> None:
        if self.scope != 0:
            raise PlanError(
                f"{label}: only top-level collections can be captured or probed; use the "
                f"collection that iterate() returns (or inspect() inside the body)"
            )


def _names(columns: Sequence[str], label: str) -> tuple[str, ...]:
    """Output column names given by the user."""
    names = (columns,) if isinstance(columns, str) else tuple(columns)
    if not names or not all(isinstance(c, str) for c in names):
        raise PlanError(f"{label}: columns must be a non-empty list of str, got {columns!r}")
    return names


def _fn_name(fn: Callable[..., Any]) -> str:
    """A function's qualified name for ``explain()``."""
    return str(getattr(fn, "__qualname__", repr(fn)))
