"""Event-time windows: ``group_by_dynamic`` (tumbling and hopping) and ``group_by_session``.

``c.group_by_dynamic("ts", every="1m", period=None, offset=None, group_by=[...])
.agg(...)`` puts each record in every window ``[start, start + period)`` holding its ``ts``,
with starts at ``offset + k * every`` (``period`` defaults to ``every``: tumbling windows;
a longer period gives hopping windows, a record in ``ceil(period / every)`` of them), and
aggregates each (window, keys) group as ``group_by(...).agg(...)`` does. Output columns:
``window_start``, ``window_end`` (of the ``ts`` column's dtype), the keys, the aggregates.

``c.group_by_session("ts", gap="5m", group_by=[...]).agg(...)``: per key, records whose event
times are less than ``gap`` apart (after sorting) share a session ``[first ts, last ts +
gap)``; a record that bridges two sessions merges them, and a retraction can split one. Each
distinct event time's session is found in two passes of vectorized Python reducers (one call
per batch of changed groups; see :func:`_session_of`): runs within buckets of event time,
then the runs at the buckets' edges merged per key. The records are then joined to their
session and aggregated by the built-in ``group`` reduce.

``emit="updates"`` (default): windows change while records arrive (results retracted and
reinserted); every window stays in the reduce's state. ``emit="final"`` needs the
collection returned by ``with_watermark`` on the same column: a window's row appears once,
at the first logical time whose records bring the watermark to the window's end or past
it, and is never retracted (records with event times below the watermark are dropped as
late, so a passed window cannot change). For ``group_by_dynamic``, the window's records are
then retracted from its reduce one logical time later (``watermark`` in ``"expire"`` mode,
which holds each open window's records, only the columns the aggregates read, until then;
the final output drops that retraction), so only open windows keep state. Windows over a
collection without a watermark never close.

Durations are those of ``with_watermark`` (:mod:`ddflow.event_time`): fixed-unit strings or
``timedelta`` for timestamp and date columns (whole days for dates), ints for integer
columns. A record with a null event time belongs to no window.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from ddflow.aggregates import Aggregate, ColumnAggregate, CountAggregate, reducer
from ddflow.aggregates import max as agg_max
from ddflow.aggregates import min as agg_min
from ddflow.builder import Node, PlanBuilder
from ddflow.callbacks import ReduceBatch
from ddflow.dtypes import INT64_MAX
from ddflow.errors import PlanError
from ddflow.event_time import (
    Span,
    WatermarkInfo,
    event_time_expr,
    fresh_name,
    parse_span,
    watermark_of,
)
from ddflow.expr import Expr, check_columns, coalesce, col, expr_text, lit
from ddflow.grouping import group_aggregate
from ddflow.joins import join
from ddflow.outer_joins import outer_join
from ddflow.plan import ConcatOp, FilterOp, SelectOp, WatermarkOp, user_location
from ddflow.reducing import reduce_collection

__all__ = ["DynamicGroupBy", "Emit", "SessionGroupBy", "local_runs", "merged_runs"]

H = TypeVar("H")
"""The collection handle type that ``agg`` returns."""

Emit = Literal["updates", "final"]
_WINDOW = ("window_start", "window_end")


class _Steps:
    """Adds record-wise nodes under one label (the handles' ``select`` / ``filter`` at the
    builder's level)."""

    def __init__(self, builder: PlanBuilder, label: str) -> None:
        self.builder = builder
        self.label = label

    def select(self, node: Node, items: dict[str, Expr]) -> Node:
        """One column per item, named by its key."""
        for e in items.values():
            check_columns(e, node.columns, self.label)
        notes = [f"{n} = {expr_text(e)}" for n, e in items.items()]
        exprs = [e.to_json() for e in items.values()]
        return self.builder.add(SelectOp(exprs), [node], tuple(items), self.label, notes)

    def with_columns(self, node: Node, items: dict[str, Expr]) -> Node:
        """Every column of ``node``, then ``items``."""
        return self.select(node, {**{c: col(c) for c in node.columns}, **items})

    def filter(self, node: Node, predicate: Expr) -> Node:
        """The rows where ``predicate`` holds."""
        check_columns(predicate, node.columns, self.label)
        op = FilterOp(predicate.to_json())
        return self.builder.add(op, [node], node.columns, self.label, [expr_text(predicate)])


def _keys(group_by: str | Sequence[str] | None, node: Node, label: str) -> tuple[str, ...]:
    keys = (group_by,) if isinstance(group_by, str) else tuple(group_by or ())
    for k in keys:
        if k not in node.columns:
            raise PlanError(
                f"{label}: group_by column {k!r} not found; available columns are "
                f"{list(node.columns)}"
            )
        if k in _WINDOW:
            raise PlanError(f"{label}: a key may not be named {k!r} (an output column)")
    return keys


def _checked(
    builder: PlanBuilder, node: Node, column: str, emit: str, label: str
) -> WatermarkInfo | None:
    """The watermark ``emit="final"`` closes windows by (None for ``"updates"``)."""
    if column not in node.columns:
        raise PlanError(
            f"{label}: event-time column {column!r} not found; available columns are "
            f"{list(node.columns)}"
        )
    if emit not in ("updates", "final"):
        raise PlanError(f'{label}: emit must be "updates" or "final", got {emit!r}')
    if emit == "updates":
        return None
    wm = watermark_of(builder, node)
    if wm is None or wm.column != column:
        raise PlanError(
            f'{label}: emit="final" closes windows by a watermark: call it on the collection '
            f"that with_watermark({column!r}, ...) returns"
        )
    return wm


def _final(steps: _Steps, rows: Node, wm: WatermarkInfo, end_et: Expr, span: Span) -> Node:
    """``rows`` restricted to the windows the watermark has passed (``end_et <=`` the
    watermark after each time), through a ``watermark`` operator over ``wm``'s data."""
    if span.temporal != wm.lateness.temporal:
        raise PlanError(
            f"{steps.label}: the windows' durations and the watermark's lateness must both be "
            f"durations (temporal columns) or both ints (integer columns)"
        )
    end = fresh_name("__end_event_time", rows.columns)
    probes = steps.with_columns(rows, {end: end_et})
    op = WatermarkOp(wm.et_index, wm.lateness.value, "closed", len(rows.columns))
    label = f"{steps.label} (final)"
    note = [f"released once the watermark after a time reaches {end}"]
    node = steps.builder.add(op, [wm.data, probes], probes.columns, label, note)
    return steps.builder.select_columns(node, rows.columns, steps.label)


class DynamicGroupBy(Generic[H]):
    """Tumbling or hopping windows over an event-time column; :meth:`agg` aggregates them."""

    __slots__ = (
        "_builder",
        "_node",
        "_wrap",
        "_column",
        "_every",
        "_period",
        "_offset",
        "_keys",
        "_wm",
    )

    def __init__(
        self,
        builder: PlanBuilder,
        node: Node,
        wrap: Callable[[Node], H],
        column: str,
        every: object,
        period: object = None,
        offset: object = None,
        group_by: str | Sequence[str] | None = None,
        emit: Emit = "updates",
    ) -> None:
        """Built by ``Collection.group_by_dynamic``."""
        label = f"group_by_dynamic@{user_location()}"
        self._wm = _checked(builder, node, column, emit, label)
        self._keys = _keys(group_by, node, label)
        self._every = parse_span(every, "every", label, positive=True)
        self._period = self._every if period is None else parse_span(period, "period", label)
        self._offset = (
            Span(0, self._every.temporal) if offset is None else parse_span(offset, "offset", label)
        )
        spans = (self._every, self._period, self._offset)
        if len({s.temporal for s in spans}) > 1:
            raise PlanError(f"{label}: every, period and offset must all be durations or ints")
        if self._period.value == 0:
            raise PlanError(f"{label}: period must be positive, got {period!r}")
        self._builder, self._node, self._wrap, self._column = builder, node, wrap, column

    def __repr__(self) -> str:
        return f"DynamicGroupBy({self._column}, every={self._every}, period={self._period})"

    def agg(self, *aggs: Aggregate, **named: Aggregate) -> H:
        """Per window and key: ``window_start``, ``window_end``, the keys, the aggregates
        (as ``group_by(...).agg(...)``)."""
        label = f"group_by_dynamic.agg@{user_location()}"
        node, ts, builder = self._node, self._column, self._builder
        for name in _WINDOW:
            if name in node.columns:
                raise PlanError(f"{label}: the input already has a column {name!r}")
        every, period, offset = self._every, self._period, self._offset
        copies = math.ceil(period.value / every.value)
        base = _start(col(ts), every, offset)
        steps = _Steps(builder, label)
        with builder.atomic(label):
            parts = []
            for k in range(copies):
                start = _shift(base, -k * every.value, every.temporal)
                end = _shift(start, period.value, every.temporal)
                part = steps.with_columns(node, {"window_start": start, "window_end": end})
                parts.append(steps.filter(part, col(ts) < col("window_end")))
            windows = parts[0]
            if len(parts) > 1:
                windows = builder.add(ConcatOp(), parts, parts[0].columns, label)
            keys = (*_WINDOW, *self._keys)
            if self._wm is not None:
                windows = _read_only(steps, windows, keys, (*aggs, *named.values()))
                expired = _expired(steps, windows, self._wm, every)
                windows = builder.add(ConcatOp(), [windows, expired], windows.columns, label)
            rows = group_aggregate(builder, windows, keys, aggs, named, label)
            if self._wm is not None:
                rows = _final(steps, rows, self._wm, event_time_expr("window_end", every), every)
            return self._wrap(rows)


def _read_only(
    steps: _Steps, windows: Node, keys: tuple[str, ...], aggs: Sequence[Aggregate]
) -> Node:
    """``windows`` restricted to the keys and the columns the aggregates read (plain
    columns only: expressions are still computed by ``group_aggregate``), or ``windows``
    itself when it has no other column or an aggregate names a column it lacks (reported
    by ``group_aggregate``). The expiry holds each open window's records until it closes:
    without the event time and the unread columns, records of one window that differ only
    there are held once, with their count."""
    read = set(keys)
    for agg in aggs:
        if isinstance(agg, ColumnAggregate | CountAggregate):
            if agg.expr is not None:
                read.update(agg.expr.columns())
            elif agg.column is not None:
                read.add(agg.column)
        else:
            return windows  # not a group aggregate: group_aggregate says so
    if not read <= set(windows.columns) or len(read) == len(windows.columns):
        return windows
    return steps.select(windows, {c: col(c) for c in windows.columns if c in read})


def _expired(steps: _Steps, windows: Node, wm: WatermarkInfo, every: Span) -> Node:
    """The records of ``windows`` retracted one logical time after the watermark passes
    their window's end, when the window's final row is out: fed to the reduce beside them,
    they empty its state for closed windows."""
    builder, label = steps.builder, f"{steps.label} (expire)"
    end = fresh_name("__end_event_time", windows.columns)
    probes = steps.with_columns(windows, {end: event_time_expr("window_end", every)})
    op = WatermarkOp(wm.et_index, wm.lateness.value, "expire", len(windows.columns))
    note = [f"retracted the time after the watermark reaches {end}"]
    node = builder.add(op, [wm.data, probes], probes.columns, label, note)
    return builder.select_columns(node, windows.columns, label)


def _start(ts: Expr, every: Span, offset: Span) -> Expr:
    """The start of the window of length ``every`` from ``offset`` holding ``ts``."""
    if not every.temporal:
        if offset.value == 0:
            return ts // every.value * every.value
        return (ts - offset.value) // every.value * every.value + offset.value
    shifted = _shift(ts, -offset.value, True)
    return _shift(shifted.dt.truncate(every.text()), offset.value, True)


def _shift(e: Expr, by: int, temporal: bool) -> Expr:
    """``e`` moved by ``by`` (nanoseconds for a temporal ``e``)."""
    if by == 0:
        return e
    return e.dt.offset_by(f"{by}ns") if temporal else e + by


class SessionGroupBy(Generic[H]):
    """Session windows over an event-time column; :meth:`agg` aggregates them."""

    __slots__ = ("_builder", "_node", "_wrap", "_column", "_gap", "_keys", "_wm")

    def __init__(
        self,
        builder: PlanBuilder,
        node: Node,
        wrap: Callable[[Node], H],
        column: str,
        gap: object,
        group_by: str | Sequence[str] | None = None,
        emit: Emit = "updates",
    ) -> None:
        """Built by ``Collection.group_by_session``."""
        label = f"group_by_session@{user_location()}"
        self._wm = _checked(builder, node, column, emit, label)
        self._keys = _keys(group_by, node, label)
        self._gap = parse_span(gap, "gap", label, positive=True)
        self._builder, self._node, self._wrap, self._column = builder, node, wrap, column

    def __repr__(self) -> str:
        return f"SessionGroupBy({self._column}, gap={self._gap})"

    def agg(self, *aggs: Aggregate, **named: Aggregate) -> H:
        """Per session and key: ``window_start``, ``window_end``, the keys, the aggregates
        (as ``group_by(...).agg(...)``)."""
        label = f"group_by_session.agg@{user_location()}"
        node, ts, gap, builder = self._node, self._column, self._gap, self._builder
        for name in _WINDOW:
            if name in node.columns or name in named:
                raise PlanError(f"{label}: {name!r} is an output column; rename the input's")
        taken = [*node.columns, *named]
        et, start, last, last_et, skey = (
            fresh_name(n, taken)
            for n in ("__et", "__session", "__last", "__last_et", "__session_key")
        )
        keys = self._keys or (skey,)
        steps = _Steps(builder, label)
        with builder.atomic(label):
            extra = {et: event_time_expr(ts, gap)}
            if not self._keys:
                extra[skey] = lit(0)
            timed = steps.filter(steps.with_columns(node, extra), col(et).is_not_null())
            sessions = _session_of(steps, timed, keys, et, start, gap.value, taken)
            on = [*keys, et]
            joined = join(builder, "join", timed, sessions, on, None, None, None, label, True)
            hidden = {"window_start": agg_min(ts), last: agg_max(ts), last_et: agg_max(et)}
            grouped = group_aggregate(
                builder, joined, (*keys, start), aggs, {**named, **hidden}, label
            )
            ours = {*keys, start, *hidden}
            values = [c for c in grouped.columns if c not in ours]
            end = col(last).dt.offset_by(gap.text()) if gap.temporal else col(last) + gap.value
            items: dict[str, Expr] = {"window_start": col("window_start"), "window_end": end}
            items.update({c: col(c) for c in (*self._keys, *values, last_et)})
            rows = steps.select(grouped, items)
            if self._wm is not None:
                rows = _final(steps, rows, self._wm, col(last_et) + gap.value, gap)
            out = ("window_start", "window_end", *self._keys, *values)
            return self._wrap(builder.select_columns(rows, out, label))


SESSION_BUCKET_GAPS = 64
"""Event times are cut into buckets of this many gaps for the first pass of sessions."""


def _session_of(
    steps: _Steps,
    timed: Node,
    keys: tuple[str, ...],
    et: str,
    start: str,
    gap: int,
    taken: list[str],
) -> Node:
    """``(keys, et, start)``: each distinct event time of each key with the first event time
    of its session, in two passes so that no reducer call reads a key's whole history.

    1. Per key and bucket of ``SESSION_BUCKET_GAPS`` gaps (``et // width``): the *runs* of
       the bucket's sorted event times (less than ``gap`` apart): a row per event time with
       its run's first event time (``edge`` false), and a row per first or last run of the
       bucket with its first and last event time (``edge`` true). A new event time changes
       its own row and at most two run rows, not the rows of the rest of its run.
    2. Per key, over those first and last runs only (at most two per bucket): runs less than
       ``gap`` apart merge into one session. A run inside a bucket never merges (its
       neighbours in the bucket are ``gap`` or more away, and buckets are wider than
       ``gap``), so its session starts where it starts.
    """
    builder, label = steps.builder, steps.label
    width = gap * SESSION_BUCKET_GAPS if gap <= INT64_MAX // SESSION_BUCKET_GAPS else gap
    bucket, first, last, edge, merged = (
        fresh_name(n, taken) for n in ("__bucket", "__run", "__run_last", "__edge", "__merged")
    )
    own = {k: col(k) for k in keys}
    pairs = steps.select(timed, {**own, bucket: col(et) // width, et: col(et)})
    fn = reducer(local_runs(gap, et, first, last, edge), [et, first, last, edge])
    runs = reduce_collection(builder, pairs, [*keys, bucket], fn, None, label)
    edges = steps.select(steps.filter(runs, col(edge)), {**own, first: col(first), last: col(last)})
    fn = reducer(merged_runs(gap, first, last, merged), [first, merged])
    sessions = reduce_collection(builder, edges, list(keys), fn, None, label)
    each = steps.select(steps.filter(runs, ~col(edge)), {**own, first: col(first), et: col(et)})
    on = [*keys, first]
    mapped = outer_join(builder, "left", each, sessions, on, None, None, None, label, True)
    return steps.select(mapped, {**own, et: col(et), start: coalesce(col(merged), col(first))})


def _owners(batch: ReduceBatch, column: str) -> tuple[npt.NDArray[Any], ...]:
    """The batch's ``column`` values with positive counts and the index of each one's key,
    sorted by key, then value."""
    offsets = batch.offsets
    values = np.asarray(batch.values[column], dtype=np.int64)
    owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    keep = np.asarray(batch.counts) > 0
    values, owner = values[keep], owner[keep]
    order = np.lexsort((values, owner))
    return values[order], owner[order], order, keep


def _out_offsets(owner: npt.NDArray[np.int64], keys: int) -> npt.NDArray[np.int64]:
    counts = np.bincount(owner, minlength=keys)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


def local_runs(gap: int, et: str, first: str, last: str, edge: str) -> Any:
    """A Python reducer giving, per key, a row ``(et, first, 0, False)`` for each distinct
    event time with the first event time of its run (sorted event times less than ``gap``
    apart share a run), and a row ``(first, first, last, True)`` for the key's first and
    last runs. Vectorized over the batch."""

    def fn(batch: ReduceBatch) -> dict[str, npt.NDArray[Any]]:
        values, owner, _, _ = _owners(batch, et)
        n = len(values)
        new_owner = np.ones(n, dtype=bool)
        new_owner[1:] = owner[1:] != owner[:-1]
        begins = new_owner.copy()
        begins[1:] |= values[1:] - values[:-1] >= gap
        ends = np.ones(n, dtype=bool)
        ends[:-1] = begins[1:]
        run = np.cumsum(begins) - 1
        run_first = np.flatnonzero(begins)
        run_last = np.flatnonzero(ends)
        owner_ends = np.ones(n, dtype=bool)
        owner_ends[:-1] = new_owner[1:]
        edges = np.flatnonzero(new_owner[run_first] | owner_ends[run_last])
        firsts = values[run_first]
        # Per key: its event times' rows, then its edge runs' rows.
        rows_owner = np.concatenate([owner, owner[run_first[edges]]])
        order = np.argsort(rows_owner, kind="stable")
        return {
            "offsets": _out_offsets(rows_owner, len(batch.offsets) - 1),
            et: np.concatenate([values, firsts[edges]])[order],
            first: np.concatenate([firsts[run], firsts[edges]])[order],
            last: np.concatenate([np.zeros(n, np.int64), values[run_last[edges]]])[order],
            edge: np.concatenate([np.zeros(n, bool), np.ones(len(edges), bool)])[order],
        }

    return fn


def merged_runs(gap: int, first: str, last: str, merged: str) -> Any:
    """A Python reducer giving, per key, each run (``first``, ``last``) with the first event
    time of the session it belongs to (``merged``): runs less than ``gap`` apart merge."""

    def fn(batch: ReduceBatch) -> dict[str, npt.NDArray[np.int64]]:
        starts, owner, order, keep = _owners(batch, first)
        ends = np.asarray(batch.values[last], dtype=np.int64)[keep][order]
        n = len(starts)
        begins = np.ones(n, dtype=bool)
        if n > 1:
            begins[1:] = (owner[1:] != owner[:-1]) | (starts[1:] - ends[:-1] >= gap)
        head = np.maximum.accumulate(np.where(begins, np.arange(n), 0)) if n else owner
        return {
            "offsets": _out_offsets(owner, len(batch.offsets) - 1),
            first: starts,
            merged: starts[head],
        }

    return fn
