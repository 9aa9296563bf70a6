"""Event time: watermarks and late records (``Collection.with_watermark``, ``Dataflow.late``).

``c.with_watermark("ts", lateness="5m")`` returns ``c`` without its late records. The
*watermark* is the greatest event time (``ts``) inserted so far minus the lateness, and it is
defined on logical times, so the output never depends on how updates were batched or on the
number of workers:

* the watermark **before** logical time ``t`` comes from the records inserted at times
  ``< t`` (each time's updates consolidated first; a record counts when its net diff at its
  time is positive, and a retraction never lowers the watermark);
* an update at time ``t`` whose event time is below the watermark before ``t`` is **late**:
  it does not reach downstream operators (an insertion or a retraction alike, so a result
  the watermark has passed never changes again); it goes to ``flow.late()`` instead, with
  the name of the ``with_watermark`` that dropped it. A null event time is late too;
* records at the same logical time never make each other late (a batch of a tick is judged
  against the ticks before it).

Windows that close (``emit="final"`` in :mod:`ddflow.windows`) use the watermark **after**
``t``, which counts the records at ``t`` too: a window ending at ``e`` is final at the first
time whose records bring the watermark to ``e`` or past it.

Event times are compared as int64: a temporal column (timestamp, date) by its nanoseconds
since the epoch, an integer column as it is. ``lateness`` is a duration string of fixed units
(``"30s"``, ``"5m"``, ``"1h30m"``; units ``ns``, ``us``, ``ms``, ``s``, ``m``, ``h``, ``d``,
``w``) or a ``datetime.timedelta`` for temporal columns, an ``int`` for integer columns.

The engine operator is ``watermark`` (``rust/ddflow-core/src/engine/operators/watermark.rs``):
every update goes to one worker, which keeps one running maximum. Its ``"expire"`` mode
retracts the records of a window one logical time after the window's final row is out, so
``group_by_dynamic(..., emit="final")`` keeps the state of open windows only (session
windows still keep every event time in their reducers' arrangements).
"""

from __future__ import annotations

import datetime
import re
import weakref
from dataclasses import dataclass, field

from ddflow.builder import Node, PlanBuilder
from ddflow.dtypes import INT64_MAX
from ddflow.errors import PlanError
from ddflow.expr import Expr, col, lit
from ddflow.plan import ConcatOp, SelectOp, WatermarkOp, user_location
from ddflow.times import is_int

__all__ = [
    "Span",
    "WatermarkInfo",
    "event_time_expr",
    "fresh_name",
    "late",
    "parse_span",
    "watermark_of",
    "with_watermark",
]

_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
    "w": 604_800_000_000_000,
}
_TERM = re.compile(r"(\d+)(ns|us|ms|mo|s|m|h|d|w|q|y)")


@dataclass(frozen=True)
class Span:
    """A length of event time: nanoseconds (``temporal``) or units of an integer column."""

    value: int
    temporal: bool

    def text(self) -> str:
        """The span as a duration string the ``.dt`` kernels read (``"300000000000ns"``),
        or as the integer it is."""
        return f"{self.value}ns" if self.temporal else str(self.value)


def parse_span(value: object, what: str, label: str, *, positive: bool = False) -> Span:
    """``value`` (a duration string, ``timedelta`` or ``int``) as a :class:`Span`;
    ``PlanError`` naming ``label`` and ``what`` otherwise (negative, or zero if
    ``positive``)."""
    if isinstance(value, bool):
        raise PlanError(f"{label}: {what} must be a duration or an int, got {value!r}")
    if is_int(value):
        span = Span(int(value), False)  # type: ignore[call-overload]
    elif isinstance(value, datetime.timedelta):
        micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
        span = Span(micros * 1_000, True)
    elif isinstance(value, str):
        span = Span(_parse_text(value, what, label), True)
    else:
        raise PlanError(
            f'{label}: {what} must be a duration string ("5m"), a datetime.timedelta or an '
            f"int, got {value!r}"
        )
    if span.value < 0 or (positive and span.value == 0) or span.value > INT64_MAX:
        need = "positive" if positive else "non-negative"
        raise PlanError(f"{label}: {what} must be {need} and fit int64, got {value!r}")
    return span


def _parse_text(text: str, what: str, label: str) -> int:
    """Nanoseconds in a duration string of fixed units."""
    pos, total = 0, 0
    for m in _TERM.finditer(text):
        if m.start() != pos:
            break
        unit = m.group(2)
        if unit not in _UNITS_NS:
            raise PlanError(
                f"{label}: {what} {text!r}: calendar unit {unit!r} has no fixed length; use "
                f"fixed units (ns, us, ms, s, m, h, d, w)"
            )
        total += int(m.group(1)) * _UNITS_NS[unit]
        pos = m.end()
    if pos != len(text) or not text:
        raise PlanError(
            f'{label}: {what} {text!r} is not a duration string like "30s", "5m" or "1h30m" '
            f"(units ns, us, ms, s, m, h, d, w)"
        )
    return total


def event_time_expr(column: str, span: Span) -> Expr:
    """The int64 event time of ``column``: nanoseconds since the epoch when ``span`` is
    temporal, the integer itself otherwise."""
    if span.temporal:
        return col(column).dt.epoch("ns")
    return col(column).cast("int64")


@dataclass(frozen=True)
class WatermarkInfo:
    """What windows need of a watermarked collection to close windows (``emit="final"``)."""

    data: Node
    """The collection before the watermark, with the int64 event time appended: the input of
    every ``watermark`` operator of this watermark (each keeps the same clock)."""
    column: str
    """The event-time column."""
    lateness: Span
    name: str
    """Names the watermark in ``flow.late()``."""

    @property
    def et_index(self) -> int:
        """The position of the int64 event time in ``data``."""
        return len(self.data.columns) - 1


@dataclass
class _FlowEvents:
    """The watermarks of one plan: by the node of their result, and their late records."""

    by_node: dict[int, WatermarkInfo] = field(default_factory=dict)
    late: list[tuple[str, Node]] = field(default_factory=list)


_PLANS: weakref.WeakKeyDictionary[PlanBuilder, _FlowEvents] = weakref.WeakKeyDictionary()


def _events(builder: PlanBuilder) -> _FlowEvents:
    return _PLANS.setdefault(builder, _FlowEvents())


def watermark_of(builder: PlanBuilder, node: Node) -> WatermarkInfo | None:
    """The watermark whose result ``node`` is (``with_watermark``'s), or None."""
    events = _PLANS.get(builder)
    return None if events is None else events.by_node.get(node.node)


def fresh_name(base: str, taken: tuple[str, ...] | list[str]) -> str:
    """``base``, with underscores appended until it is not in ``taken``."""
    while base in taken:
        base += "_"
    return base


def with_watermark(
    builder: PlanBuilder, node: Node, column: str, lateness: object, name: str | None = None
) -> Node:
    """``node`` without its late records (see the module docs); the late ones go to
    ``late(builder)``."""
    label = f"with_watermark@{user_location()}"
    cols = node.columns
    if not isinstance(column, str) or column not in cols:
        raise PlanError(
            f"{label}: event-time column {column!r} not found; available columns are "
            f"{list(cols)}"
        )
    if name is not None and not isinstance(name, str):
        raise PlanError(f"{label}: name must be a str, got {name!r}")
    span = parse_span(lateness, "lateness", label)
    if node.scope != 0:
        raise PlanError(f"{label}: a watermark needs a top-level collection (not in iterate)")
    dims = builder.times.dims
    if dims not in (None, 1):
        raise PlanError(
            f"{label}: a watermark needs int times (time_dims=1); this dataflow has "
            f"{dims}-coordinate times"
        )
    name = name or label
    with builder.atomic(label):
        et = fresh_name("__event_time", cols)
        exprs = [col(c).to_json() for c in cols] + [event_time_expr(column, span).to_json()]
        data = builder.add(
            SelectOp(exprs), [node], (*cols, et), label, [f"{et} = event time of {column}"]
        )
        note = [f"on time: {column} >= greatest earlier {column} - {lateness!r}"]
        index = len(cols)
        on_time = builder.add(
            WatermarkOp(index, span.value, "on_time", 0), [data], data.columns, label, note
        )
        out = builder.select_columns(on_time, cols, label)
        late_op = WatermarkOp(index, span.value, "late", 0)
        late_note = [f"late: {column} < greatest earlier {column} - {lateness!r}"]
        late_node = builder.add(late_op, [data], data.columns, f"{label} (late)", late_note)
        op_col = fresh_name("operator", cols)
        late_exprs = [col(c).to_json() for c in cols] + [lit(name).to_json()]
        late_out = builder.add(
            SelectOp(late_exprs), [late_node], (*cols, op_col), label, [f"{op_col} = {name!r}"]
        )
    events = _events(builder)
    events.by_node[out.node] = WatermarkInfo(data, column, span, name)
    events.late.append((name, late_out))
    return out


def late(builder: PlanBuilder, name: str | None = None) -> Node:
    """The late records dropped by the plan's watermarks (``Dataflow.late``)."""
    label = f"late@{user_location()}"
    found = _events(builder).late
    if name is not None:
        found = [(n, c) for n, c in found if n == name]
        if not found:
            names = [n for n, _ in _events(builder).late]
            raise PlanError(f"{label}: no watermark named {name!r}; the watermarks are {names}")
    if not found:
        raise PlanError(f"{label}: this dataflow has no with_watermark(...)")
    first = found[0][1]
    if any(c.columns != first.columns for _, c in found[1:]):
        raise PlanError(
            f"{label}: the watermarks {[n for n, _ in found]} drop records of different "
            f"columns; ask for one: flow.late(name)"
        )
    if len(found) == 1:
        return first
    with builder.atomic(label):
        return builder.add(ConcatOp(), [c for _, c in found], first.columns, label)
