"""``Collection`` and ``Arrangement``: the handles users build dataflows with.

A :class:`Collection` is a multiset of records changing over time, at one node of the plan;
its record-wise operators come from :class:`~ddflow.records.RecordOperators`, and this module
adds those that combine collections or keep state (``concat``, joins, reductions, ``iterate``)
and the outputs (``capture``, ``probe``). An :class:`Arrangement` is a collection indexed by
key, whose one trace many joins and reduces share, also inside ``iterate`` (through
``enter_arrangement``, without a copy); ``Collection.arrange_by_key(on=...)`` and
``arrange_by_self()`` return one. Its columns are the key columns, then the other columns in
the source collection's order.

The node-level work is done by the operator builders (:mod:`ddflow.joins`,
:mod:`ddflow.reducing`, :mod:`ddflow.builder`); the handles check their arguments, hand the
builders their nodes and wrap the nodes they get back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ddflow import event_time, grouping, joins, outer_joins, reducing, windows
from ddflow.aggregates import Aggregate, ThresholdAggregate, count, distinct
from ddflow.builder import ArrangedNode, Node, resolve_names
from ddflow.capture import Capture, Probe
from ddflow.dtypes import INT64_MAX
from ddflow.errors import PlanError
from ddflow.plan import CaptureOp, ConcatOp, JoinKind, LeaveOp, ProbeOp, VariableOp, user_location
from ddflow.records import PlanOwner, RecordOperators
from ddflow.times import MAX_TIME_DIMS, is_int
from ddflow.traces import TraceHandle

__all__ = ["Collection", "Arrangement", "enter_collection"]

Keys = str | Sequence[str]


class Collection(RecordOperators):
    """A collection of records with named columns, at one node of a dataflow plan."""

    __slots__ = ()

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
        _same_flow(label, *items)
        builder = self._builder
        scope = builder.common_scope(label, *(item.scope for item in items))
        with builder.atomic(label):
            aligned = []
            for item in items:
                ref = builder.enter(item._ref(), scope, label)
                if ref.columns != self.columns:
                    ref = builder.select_columns(ref, self.columns, f"{label} (column order)")
                aligned.append(ref)
            return self._wrap(builder.add(ConcatOp(), aligned, self.columns, label))

    # -- joins ------------------------------------------------------------------------------

    def join(
        self,
        other: Collection | Arrangement,
        on: Keys | None = None,
        *,
        left_on: Keys | None = None,
        right_on: Keys | None = None,
        suffixes: tuple[str, str] | None = None,
        nulls_equal: bool = False,
        how: outer_joins.JoinHow = "inner",
    ) -> Collection:
        """Pairs of rows with equal keys: key columns (left names), left's other columns,
        right's other columns. Names on both sides need ``suffixes=("_l", "_r")``. A null key
        matches nothing (SQL), or other null keys with ``nulls_equal=True``.

        ``how``: ``"inner"`` (default); ``"left"`` also gives each left row whose key has no
        match, once, with nulls in the right's columns (retracted when a match arrives);
        ``"right"`` the same for the right's rows; ``"outer"`` both; ``"semi"`` / ``"anti"``
        are :meth:`semijoin` / :meth:`antijoin`. With ``on=`` there is one key column per
        key, holding the key of whichever side has the row (SQL ``USING``); with
        ``left_on=`` / ``right_on=`` naming other columns, left and right joins keep both
        sides' key columns (left keys, left values, right keys, right values; the missing
        side's null), as SQL's ``ON``. Semantics and null dtypes: :mod:`ddflow.outer_joins`."""
        return _join("join", self, other, on, left_on, right_on, suffixes, nulls_equal, how)

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
        return _join("semijoin", self, other, on, left_on, right_on, None)

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
        return _join("antijoin", self, other, on, left_on, right_on, None)

    # -- SQL --------------------------------------------------------------------------------

    def sql(self, query: str, dialect: str | None = None) -> Collection:
        """The collection of a SQL query that reads this collection as the table ``self``:
        ``c.sql("SELECT k, sum(x) AS s FROM self GROUP BY k")`` (see ``dd.sql``)."""
        # Imported here: ddflow.sql sits on top of the package and imports this module.
        from ddflow.sql import sql

        return sql(query, {"self": self}, dialect)

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
        return self._reduce(by, agg, columns, f"reduce@{user_location()}")

    def count(self, by: Keys | None = None) -> Collection:
        """``by`` columns (default: all) and ``count``, the signed sum of counts (absent at 0)."""
        keys = self.columns if by is None else by
        return self._reduce(keys, count(), None, f"count@{user_location()}", project=True)

    def distinct(self) -> Collection:
        """Each record with positive accumulated count, with count 1."""
        return self._reduce(self.columns, distinct(), None, f"distinct@{user_location()}")

    def threshold(self, fn: Callable[[Any], Any], *, vectorized: bool = False) -> Collection:
        """Each record with count ``fn(c)`` for its accumulated signed count ``c``.

        ``fn`` is called once per distinct count value in a batch (with a numpy int64), or
        once per batch with the int64 array of counts when ``vectorized``.
        """
        label = f"threshold@{user_location()}"
        if not callable(fn):
            raise PlanError(f"{label}: expected a function, got {fn!r}")
        agg = ThresholdAggregate(fn, vectorized)
        return self._reduce(self.columns, agg, None, label)

    def group_by(self, *keys: str) -> grouping.GroupBy[Collection]:
        """This collection grouped by ``keys`` (none: one global group), for several
        aggregates per group: ``c.group_by("k").agg(total=dd.sum("x"), n=dd.count())``
        (semantics in :mod:`ddflow.grouping`)."""
        label = f"group_by@{user_location()}"
        return grouping.GroupBy(self._builder, self._ref(), keys, self._wrap, label)

    # -- event time (ddflow.event_time, ddflow.windows) ---------------------------------------

    def with_watermark(self, column: str, lateness: object, name: str | None = None) -> Collection:
        """This collection without its late records: those whose event time ``column`` is
        below the watermark (the greatest event time inserted at earlier logical times minus
        ``lateness``: ``"5m"``, a ``timedelta``, or an int for integer columns). The late
        records go to ``flow.late()`` (semantics in :mod:`ddflow.event_time`)."""
        return self._wrap(
            event_time.with_watermark(self._builder, self._ref(), column, lateness, name)
        )

    def group_by_dynamic(
        self,
        column: str,
        every: object,
        period: object = None,
        offset: object = None,
        group_by: Keys | None = None,
        emit: windows.Emit = "updates",
    ) -> windows.DynamicGroupBy[Collection]:
        """Tumbling (``period`` = ``every``) or hopping windows over event time ``column``:
        ``.agg(...)`` gives ``window_start``, ``window_end``, the keys and the aggregates;
        ``emit="final"`` once per window when the watermark passes its end (semantics in
        :mod:`ddflow.windows`)."""
        return windows.DynamicGroupBy(
            self._builder, self._ref(), self._wrap, column, every, period, offset, group_by, emit
        )

    def group_by_session(
        self,
        column: str,
        gap: object,
        group_by: Keys | None = None,
        emit: windows.Emit = "updates",
    ) -> windows.SessionGroupBy[Collection]:
        """Session windows over event time ``column``: records less than ``gap`` apart share a
        session (see :mod:`ddflow.windows`); ``.agg(...)`` as ``group_by_dynamic``."""
        return windows.SessionGroupBy(
            self._builder, self._ref(), self._wrap, column, gap, group_by, emit
        )

    def _reduce(
        self,
        by: Keys,
        agg: Aggregate | Callable[[Any], Any],
        columns: Sequence[str] | None,
        label: str,
        project: bool = False,
    ) -> Collection:
        ref = reducing.reduce_collection(
            self._builder, self._ref(), by, agg, columns, label, project=project
        )
        return self._wrap(ref)

    def arrange_by_key(self, on: Keys) -> Arrangement:
        """This collection indexed by ``on``: a trace that joins and reduces share."""
        label = f"arrange_by_key@{user_location()}"
        return self._arrange(resolve_names(on, self.columns, label), label)

    def arrange_by_self(self) -> Arrangement:
        """This collection indexed by the whole record."""
        return self._arrange(self.columns, f"arrange_by_self@{user_location()}")

    def _arrange(self, key: Sequence[str], label: str) -> Arrangement:
        return Arrangement(self.flow, self._builder.arrange(self._ref(), key, label))

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
            not is_int(max_iterations) or not 1 <= max_iterations <= INT64_MAX
        ):
            raise PlanError(
                f"{label}: max_iterations must be None or an int from 1 to 2**63-1, "
                f"got {max_iterations!r}"
            )
        builder = self._builder
        plan, times = builder.plan, builder.times
        with builder.atomic(label):
            depth = plan.depth(self.scope) + 1
            dims = times.dims or 1
            if dims + depth > MAX_TIME_DIMS:
                raise PlanError(
                    f"{label}: iterate nested {depth} deep with {dims}-coordinate times needs "
                    f"{dims + depth} time coordinates; the engine supports {MAX_TIME_DIMS}"
                )
            scope = plan.new_scope(self.scope, max_iterations, label)
            times.max_depth = max(times.max_depth, depth)
            source = self._wrap(builder.enter(self._ref(), scope, label))
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
            ref = builder.enter(result._ref(), scope, label)
            if ref.columns != self.columns:
                ref = builder.select_columns(ref, self.columns, f"{label} (column order)")
            if ref.node == var.node:
                ref = builder.add(ConcatOp(), [ref], self.columns, f"{label} (result)")
            plan.nodes[var.node]["result"] = ref.node
            plan.close_scope(scope)
            left = builder.add(LeaveOp(), [ref], self.columns, f"{label} (leave)", scope=self.scope)
            return self._wrap(left)

    # -- outputs ----------------------------------------------------------------------------

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
        label = f"capture@{user_location()}"
        if errors not in ("raise", "collect"):
            raise PlanError(f'{label}: errors must be "raise" or "collect", got {errors!r}')
        if keep not in ("history", "state"):
            raise PlanError(f'{label}: keep must be "history" or "state", got {keep!r}')
        self._check_top(label)
        self._check_reserved(label)
        node = self._add(CaptureOp(), self.columns, label).node
        return self.flow.new_capture(node, self.columns, label, errors, keep)

    def probe(self) -> Probe:
        """A probe on this collection's frontier: ``probe.done(t)``."""
        label = f"probe@{user_location()}"
        self._check_top(label)
        node = self._add(ProbeOp(), self.columns, label).node
        return self.flow.new_probe(node, label)

    def _check_top(self, label: str) -> None:
        if self.scope != 0:
            raise PlanError(
                f"{label}: only top-level collections can be captured or probed; use the "
                f"collection that iterate() returns (or inspect() inside the body)"
            )


class Arrangement:
    """A keyed, shared index of a collection (an ``arrange`` node of the plan)."""

    __slots__ = ("flow", "node", "key", "columns", "scope", "source")

    def __init__(self, flow: PlanOwner, ref: ArrangedNode) -> None:
        """Wraps an arranged node; built by ``Collection.arrange_by_key`` and
        ``Dataflow.import_trace``."""
        self.flow = flow
        self.node = ref.node
        self.key = ref.key
        """The key column names."""
        self.columns = ref.columns
        """Key columns, then value columns."""
        self.scope = ref.scope
        self.source = None if ref.source is None else Collection(flow, *_fields(ref.source))
        """The collection that was arranged (in its own scope); None for an arrangement
        imported from another dataflow (``Dataflow.import_trace``)."""

    @property
    def vals(self) -> tuple[str, ...]:
        """The value (non-key) column names."""
        return self.columns[len(self.key) :]

    def __repr__(self) -> str:
        return (
            f"Arrangement(#{self.node}, key=({', '.join(self.key)}), "
            f"vals=({', '.join(self.vals)}), scope {self.scope})"
        )

    def _ref(self) -> ArrangedNode:
        source = None if self.source is None else self.source._ref()
        return ArrangedNode(self.node, self.key, self.columns, self.scope, source)

    def as_collection(self) -> Collection:
        """The arranged collection itself, in this arrangement's scope."""
        if self.source is None:
            raise PlanError(
                f"{self!r} was imported from another dataflow; join or reduce it instead"
            )
        return enter_collection(self.source, self.scope, self.flow.builder.label(self.node))

    def trace(self) -> TraceHandle:
        """A handle on this (top-level) arrangement's trace that other dataflows can import
        (``Dataflow.import_trace``). Until ``close()`` (or until it is dropped) the trace is
        not compacted past the handle's frontier (``set_frontier``)."""
        op = self.flow.builder.op(self.node)
        if self.scope != 0 or op != "arrange":
            raise PlanError(
                f"{self!r}: only top-level arrangements built in this dataflow have trace "
                f"handles (this one is {op!r} in scope {self.scope})"
            )
        return self.flow.new_trace_handle(self.node, self.key, self.columns)

    def join(
        self,
        other: Collection | Arrangement,
        on: str | Sequence[str] | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
        suffixes: tuple[str, str] | None = None,
        nulls_equal: bool = False,
        how: outer_joins.JoinHow = "inner",
    ) -> Collection:
        """Joins on this arrangement's key (see ``Collection.join``, also for ``how``)."""
        return _join("join", self, other, on, left_on, right_on, suffixes, nulls_equal, how)

    def semijoin(
        self,
        other: Collection | Arrangement,
        on: str | Sequence[str] | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
    ) -> Collection:
        """Rows whose key occurs in ``other`` (see ``Collection.semijoin``)."""
        return _join("semijoin", self, other, on, left_on, right_on, None)

    def antijoin(
        self,
        other: Collection | Arrangement,
        on: str | Sequence[str] | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
    ) -> Collection:
        """Rows whose key does not occur in ``other`` (see ``Collection.antijoin``)."""
        return _join("antijoin", self, other, on, left_on, right_on, None)

    def reduce(
        self,
        agg: Aggregate | Callable[[Any], Any],
        *,
        columns: Sequence[str] | None = None,
    ) -> Collection:
        """Reduces each key's values with ``agg`` (see ``Collection.reduce``)."""
        return self._reduce(agg, columns, f"reduce@{user_location()}")

    def count(self) -> Collection:
        """``(key..., count)``: the signed sum of counts per key, absent when zero."""
        return self._reduce(count(), None, f"count@{user_location()}")

    def distinct(self) -> Collection:
        """Each (key, value) row with positive count, once."""
        return self._reduce(distinct(), None, f"distinct@{user_location()}")

    def _reduce(
        self, agg: Aggregate | Callable[[Any], Any], columns: Sequence[str] | None, label: str
    ) -> Collection:
        ref = reducing.reduce_arranged(self.flow.builder, self._ref(), agg, columns, label)
        return Collection(self.flow, *_fields(ref))


def enter_collection(coll: Collection, scope: int, label: str) -> Collection:
    """``coll`` seen inside ``scope`` (a scope it encloses), through cached ``enter`` nodes."""
    if coll.scope == scope:
        return coll
    return coll._wrap(coll.flow.builder.enter(coll._ref(), scope, label))


def _fields(ref: Node) -> tuple[int, tuple[str, ...], int]:
    return ref.node, ref.columns, ref.scope


def _same_flow(label: str, *items: Collection | Arrangement) -> PlanOwner:
    """The one dataflow all ``items`` belong to, or ``PlanError``."""
    flow = items[0].flow
    for item in items[1:]:
        if item.flow is not flow:
            raise PlanError(f"{label}: combines collections of different dataflows")
    return flow


def _join(
    kind: JoinKind,
    left: Collection | Arrangement,
    right: Collection | Arrangement,
    on: Keys | None,
    left_on: Keys | None,
    right_on: Keys | None,
    suffixes: tuple[str, str] | None,
    nulls_equal: bool = False,
    how: str = "inner",
) -> Collection:
    """A join of ``kind`` between two handles; ``join``'s ``how`` picks another kind or an
    outer join."""
    label = f"{kind}@{user_location()}"
    outer_joins.check_how(how, label)
    if not isinstance(nulls_equal, bool):
        raise PlanError(f"{label}: nulls_equal must be a bool, got {nulls_equal!r}")
    if how in ("semi", "anti"):
        if suffixes is not None:
            raise PlanError(
                f"{label}: how={how!r} keeps only the left's columns; suffixes do not apply"
            )
        kind = "semijoin" if how == "semi" else "antijoin"
    if not isinstance(right, Collection | Arrangement):
        raise PlanError(f"{label}: expected a Collection or Arrangement, got {right!r}")
    flow = _same_flow(label, left, right)
    args = (left._ref(), right._ref(), on, left_on, right_on, suffixes, label, nulls_equal)
    if how in ("left", "right", "outer"):
        ref = outer_joins.outer_join(flow.builder, cast(outer_joins.OuterHow, how), *args)
    else:
        ref = joins.join(flow.builder, kind, *args)
    return Collection(flow, *_fields(ref))
