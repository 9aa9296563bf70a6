"""Event-time windows: ``group_by_dynamic`` (tumbling and hopping) and ``group_by_session``.

``c.group_by_dynamic("ts", every="1m", period=None, offset=None, group_by=[...])
.agg(...)`` puts each record in every window ``[start, start + period)`` holding its ``ts``,
with starts at ``offset + k * every`` (``period`` defaults to ``every``: tumbling windows;
a longer period gives hopping windows, a record in ``ceil(period / every)`` of them), and
aggregates each (window, keys) group as ``group_by(...).agg(...)`` does. Output columns:
``window_start``, ``window_end`` (of the ``ts`` column's dtype), the keys, the aggregates.

``c.group_by_session("ts", gap="5m", group_by=[...]).agg(...)``: per key, records whose event
times are less than ``gap`` apart (after sorting) share a session ``[first ts, last ts +
gap)``; a record that bridges two sessions merges them, and a retraction can split one. The
session of each distinct event time is recomputed per key by a vectorized Python reducer
(one call per batch of changed keys, over each key's distinct event times), then the records
are joined to their session and aggregated by the built-in ``group`` reduce.

``emit="updates"`` (default): windows change while records arrive (results retracted and
reinserted). ``emit="final"`` needs the collection returned by ``with_watermark`` on the
same column: a window's row appears once, at the first logical time whose records bring the
watermark to the window's end or past it, and is never retracted (records later in event
time than the watermark are dropped as late, so a passed window cannot change). Windows
over a collection without a watermark never close.

Durations are those of ``with_watermark`` (:mod:`ddflow.event_time`): fixed-unit strings or
``timedelta`` for timestamp and date columns (whole days for dates), ints for integer
columns. A record with a null event time belongs to no window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ddflow.aggregates import Aggregate, reducer
from ddflow.aggregates import max as agg_max
from ddflow.aggregates import min as agg_min
from ddflow.callbacks import ReduceBatch
from ddflow.errors import PlanError
from ddflow.event_time import (
    Span,
    WatermarkInfo,
    event_time_expr,
    fresh_name,
    parse_span,
    watermark_of,
)
from ddflow.expr import Expr, col
from ddflow.plan import WatermarkOp, user_location

if TYPE_CHECKING:
    from ddflow.collection import Collection

__all__ = ["DynamicGroupBy", "SessionGroupBy", "session_starts"]

Emit = Literal["updates", "final"]
_WINDOW = ("window_start", "window_end")


def _keys(group_by: str | Sequence[str] | None, coll: Collection, label: str) -> tuple[str, ...]:
    keys = (group_by,) if isinstance(group_by, str) else tuple(group_by or ())
    for k in keys:
        if k not in coll.columns:
            raise PlanError(
                f"{label}: group_by column {k!r} not found; available columns are "
                f"{list(coll.columns)}"
            )
        if k in _WINDOW:
            raise PlanError(f"{label}: a key may not be named {k!r} (an output column)")
    return keys


def _checked(coll: Collection, column: str, emit: str, label: str) -> WatermarkInfo | None:
    """The watermark ``emit="final"`` closes windows by (None for ``"updates"``)."""
    if column not in coll.columns:
        raise PlanError(
            f"{label}: event-time column {column!r} not found; available columns are "
            f"{list(coll.columns)}"
        )
    if emit not in ("updates", "final"):
        raise PlanError(f'{label}: emit must be "updates" or "final", got {emit!r}')
    if emit == "updates":
        return None
    wm = watermark_of(coll)
    if wm is None or wm.column != column:
        raise PlanError(
            f'{label}: emit="final" closes windows by a watermark: call it on the collection '
            f"that with_watermark({column!r}, ...) returns"
        )
    return wm


def _final(rows: Collection, wm: WatermarkInfo, end_et: Expr, span: Span, label: str) -> Collection:
    """``rows`` restricted to the windows the watermark has passed (``end_et <=`` the
    watermark after each time), through a ``watermark`` operator over ``wm``'s data."""
    if span.temporal != wm.lateness.temporal:
        raise PlanError(
            f"{label}: the windows' durations and the watermark's lateness must both be "
            f"durations (temporal columns) or both ints (integer columns)"
        )
    builder = rows.flow.builder
    with builder.atomic(label):
        end = fresh_name("__end_event_time", rows.columns)
        probes = rows.with_columns(**{end: end_et})
        op = WatermarkOp(wm.et_index, wm.lateness.value, "closed", len(rows.columns))
        node = builder.add(op, [wm.data, probes._ref()], probes.columns, f"{label} (final)")
        return rows._wrap(builder.select_columns(node, rows.columns, label))


class DynamicGroupBy:
    """Tumbling or hopping windows over an event-time column; :meth:`agg` aggregates them."""

    __slots__ = ("_coll", "_column", "_every", "_period", "_offset", "_keys", "_wm", "_label")

    def __init__(
        self,
        coll: Collection,
        column: str,
        every: object,
        period: object = None,
        offset: object = None,
        group_by: str | Sequence[str] | None = None,
        emit: Emit = "updates",
    ) -> None:
        """Built by ``Collection.group_by_dynamic``."""
        label = f"group_by_dynamic@{user_location()}"
        self._wm = _checked(coll, column, emit, label)
        self._keys = _keys(group_by, coll, label)
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
        self._coll, self._column, self._label = coll, column, label

    def __repr__(self) -> str:
        return f"DynamicGroupBy({self._column}, every={self._every}, period={self._period})"

    def agg(self, *aggs: Aggregate, **named: Aggregate) -> Collection:
        """Per window and key: ``window_start``, ``window_end``, the keys, the aggregates
        (as ``group_by(...).agg(...)``)."""
        label = f"group_by_dynamic.agg@{user_location()}"
        coll, ts = self._coll, self._column
        for name in _WINDOW:
            if name in coll.columns:
                raise PlanError(f"{label}: the input already has a column {name!r}")
        every, period, offset = self._every, self._period, self._offset
        copies = math.ceil(period.value / every.value)
        base = _start(col(ts), every, offset)
        builder = coll.flow.builder
        with builder.atomic(label):
            parts = []
            for k in range(copies):
                start = _shift(base, -k * every.value, every.temporal)
                end = _shift(start, period.value, every.temporal)
                part = coll.with_columns(window_start=start, window_end=end)
                parts.append(part.filter(col(ts) < col("window_end")))
            windows = parts[0].concat(*parts[1:]) if len(parts) > 1 else parts[0]
            rows = windows.group_by(*_WINDOW, *self._keys).agg(*aggs, **named)
            if self._wm is None:
                return rows
            end_et = event_time_expr("window_end", every)
            return _final(rows, self._wm, end_et, every, label)


def _start(ts: Expr, every: Span, offset: Span) -> Expr:
    """The start of the window of length ``every`` from ``offset`` holding ``ts``."""
    if not every.temporal:
        return (ts - offset.value) // every.value * every.value + offset.value
    shifted = _shift(ts, -offset.value, True)
    return _shift(shifted.dt.truncate(every.text()), offset.value, True)


def _shift(e: Expr, by: int, temporal: bool) -> Expr:
    """``e`` moved by ``by`` (nanoseconds for a temporal ``e``)."""
    if by == 0:
        return e
    return e.dt.offset_by(f"{by}ns") if temporal else e + by


class SessionGroupBy:
    """Session windows over an event-time column; :meth:`agg` aggregates them."""

    __slots__ = ("_coll", "_column", "_gap", "_keys", "_wm")

    def __init__(
        self,
        coll: Collection,
        column: str,
        gap: object,
        group_by: str | Sequence[str] | None = None,
        emit: Emit = "updates",
    ) -> None:
        """Built by ``Collection.group_by_session``."""
        label = f"group_by_session@{user_location()}"
        self._wm = _checked(coll, column, emit, label)
        self._keys = _keys(group_by, coll, label)
        self._gap = parse_span(gap, "gap", label, positive=True)
        self._coll, self._column = coll, column

    def __repr__(self) -> str:
        return f"SessionGroupBy({self._column}, gap={self._gap})"

    def agg(self, *aggs: Aggregate, **named: Aggregate) -> Collection:
        """Per session and key: ``window_start``, ``window_end``, the keys, the aggregates
        (as ``group_by(...).agg(...)``)."""
        label = f"group_by_session.agg@{user_location()}"
        coll, ts, gap = self._coll, self._column, self._gap
        for name in _WINDOW:
            if name in coll.columns or name in named:
                raise PlanError(f"{label}: {name!r} is an output column; rename the input's")
        taken = [*coll.columns, *named]
        et, start, last, last_et, skey = (
            fresh_name(n, taken)
            for n in ("__et", "__session", "__last", "__last_et", "__session_key")
        )
        keys = self._keys or (skey,)
        builder = coll.flow.builder
        with builder.atomic(label):
            extra: dict[str, Expr | int] = {et: event_time_expr(ts, gap)}
            if not self._keys:
                extra[skey] = 0
            timed = coll.with_columns(**extra).filter(col(et).is_not_null())
            pairs = timed.select(*keys, et)
            fn = reducer(session_starts(gap.value, et, start), [et, start])
            sessions = pairs.reduce(by=list(keys), agg=fn)
            joined = timed.join(sessions, on=[*keys, et], nulls_equal=True)
            hidden = {"window_start": agg_min(ts), last: agg_max(ts), last_et: agg_max(et)}
            grouped = joined.group_by(*keys, start).agg(*aggs, **named, **hidden)
            ours = {*keys, start, *hidden}
            values = [c for c in grouped.columns if c not in ours]
            end = col(last).dt.offset_by(gap.text()) if gap.temporal else col(last) + gap.value
            rows = grouped.select(
                "window_start", *self._keys, *values, window_end=end, **{last_et: col(last_et)}
            )
            rows = rows.select("window_start", "window_end", *self._keys, *values, last_et)
            if self._wm is not None:
                rows = _final(rows, self._wm, col(last_et) + gap.value, gap, label)
            return rows.select("window_start", "window_end", *self._keys, *values)


def session_starts(gap: int, et: str, start: str) -> Any:
    """A Python reducer giving, per key, each distinct event time ``et`` with the first event
    time of its session (``start``): sorted event times less than ``gap`` apart share one.
    Vectorized over the whole batch of keys."""

    def fn(batch: ReduceBatch) -> dict[str, npt.NDArray[np.int64]]:
        offsets = batch.offsets
        values = np.asarray(batch.values[et], dtype=np.int64)
        owner = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
        keep = np.asarray(batch.counts) > 0
        values, owner = values[keep], owner[keep]
        order = np.lexsort((values, owner))
        values, owner = values[order], owner[order]
        n = len(values)
        first = np.ones(n, dtype=bool)
        if n > 1:
            first[1:] = (owner[1:] != owner[:-1]) | (values[1:] - values[:-1] >= gap)
        begins = np.maximum.accumulate(np.where(first, np.arange(n), 0)) if n else owner
        counts = np.bincount(owner, minlength=len(offsets) - 1)
        out_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return {"offsets": out_offsets, et: values, start: values[begins]}

    return fn
