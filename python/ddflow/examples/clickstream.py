"""Event-time windows over a generated clickstream: page views per page and tumbling window,
and sessions per user, each given once when the watermark closes it; late views set aside.

``python -m ddflow.examples.clickstream [--events N] [--users U] [--pages P] [--window W]
[--lateness L] [--gap G] [--batch B] [--seed S] [--workers K]``

``U`` users visit a site: each visit is a few page views some seconds apart, and the
visits start at random over ``N / 2`` seconds of event time (``N`` views in all). A view
reaches the dataflow a few seconds after it happened (out of order), and about one in a
hundred much later. The views arrive in batches of ``B`` seconds of arrival time, one
logical time each. ``with_watermark("ts", lateness=L s)`` sets aside the views behind the
watermark (the greatest event time of the earlier batches minus ``L``) in ``flow.late()``;
``group_by_dynamic`` counts the on-time views per page in tumbling windows of ``W`` seconds
and ``group_by_session`` counts each user's views in sessions (views less than ``G``
seconds apart), both with ``emit="final"``: a window or session is given once, in the batch
whose views bring the watermark past its end. After each batch the example prints what
became final and the late views; at the end it checks every window, session and late view
against a recount in Python (an ``emit="updates"`` view of the windows covers those that
are still open).
"""

from __future__ import annotations

import argparse
import datetime
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pyarrow as pa

import ddflow as dd

__all__ = [
    "CLICKS",
    "Click",
    "Outputs",
    "Results",
    "build",
    "generate",
    "main",
    "mismatches",
    "recount",
    "results_of",
]

CLICKS = pa.schema([("ts", pa.timestamp("ms")), ("user", pa.string()), ("page", pa.string())])
"""A page view: when it happened (event time), by whom, which page."""

START = datetime.datetime(2026, 1, 1, 12, 0, 0)
"""Event time and arrival time 0."""

LATE_SHARE = 0.01
"""The share of views that arrive much later than the others."""

SHOWN = 5
"""Differences from the recount printed at most."""

_PAGES = ("/home", "/search", "/product", "/cart", "/checkout", "/account", "/help", "/blog")
_MS = datetime.timedelta(milliseconds=1)
_EPOCH = datetime.datetime(1970, 1, 1)
"""Windows start at whole multiples of their length from the Unix epoch."""


class Click(NamedTuple):
    """A generated page view and the logical time (batch) it arrives at."""

    ts: datetime.datetime
    user: str
    page: str
    time: int


def page_names(pages: int) -> list[str]:
    """``pages`` page paths, the common ones first."""
    return [_PAGES[i] if i < len(_PAGES) else f"/page{i}" for i in range(pages)]


def generate(
    events: int, users: int, pages: int, lateness: int, batch: int, seed: int
) -> list[Click]:
    """``events`` views in arrival order (see the module docs); ``lateness`` and ``batch``
    in seconds."""
    rng = random.Random(seed)
    names = page_names(pages)
    span_ms = max(events, 1) * 500
    views: list[tuple[int, str, str]] = []
    while len(views) < events:
        user = f"u{rng.randrange(users):02d}"
        ts = rng.randrange(span_ms)
        for _ in range(min(1 + int(rng.expovariate(0.25)), events - len(views))):
            page = names[min(int(rng.expovariate(0.5)), pages - 1)]
            views.append((ts, user, page))
            ts += rng.randint(1_000, 20_000)
    arrivals = []
    for ts, user, page in views:
        if rng.random() < LATE_SHARE:
            delay = rng.randint(3 * lateness * 1000, 10 * lateness * 1000 + 1000)
        else:
            delay = int(rng.expovariate(1 / 3000))
        arrivals.append((ts + delay, ts, user, page))
    arrivals.sort()
    return [
        Click(START + ts * _MS, user, page, arrival // (batch * 1000))
        for arrival, ts, user, page in arrivals
    ]


class Outputs(NamedTuple):
    """The captures of :func:`build`."""

    windows: dd.Capture
    """Final views per page and window: ``window_start, window_end, page, views``."""
    open_windows: dd.Capture
    """The same windows with ``emit="updates"``: kept up to date, closed or not."""
    sessions: dd.Capture
    """Final sessions: ``window_start, window_end, user, views``."""
    late: dd.Capture
    """The late views: ``ts, user, page, operator``."""


def build(
    flow: dd.Dataflow, window: int, lateness: int, gap: int
) -> tuple[dd.InputSession, Outputs]:
    """The clicks input (:data:`CLICKS`) and the captures; durations in seconds."""
    clicks_in, clicks = flow.new_input(CLICKS)
    on_time = clicks.with_watermark(
        "ts", lateness=datetime.timedelta(seconds=lateness), name="clicks"
    )
    every = f"{window}s"
    outputs = Outputs(
        windows=on_time.group_by_dynamic("ts", every=every, group_by="page", emit="final")
        .agg(views=dd.count())
        .capture(),
        open_windows=on_time.group_by_dynamic("ts", every=every, group_by="page")
        .agg(views=dd.count())
        .capture(),
        sessions=on_time.group_by_session("ts", gap=f"{gap}s", group_by="user", emit="final")
        .agg(views=dd.count())
        .capture(),
        late=flow.late("clicks").capture(),
    )
    return clicks_in, outputs


@dataclass
class Results:
    """Windows, sessions and late views, each with its count (1 for each row once):
    recounted in Python (:func:`recount`) or read from the captures (:func:`results_of`)."""

    late: Counter[Click] = field(default_factory=Counter)
    """The views behind the watermark, at the time they arrive."""
    windows: Counter[tuple[datetime.datetime, str, int]] = field(default_factory=Counter)
    """``(window start, page, views)`` of every window, closed or not."""
    final_windows: Counter[tuple[datetime.datetime, str, int, int]] = field(default_factory=Counter)
    """``(window start, page, views, time)`` of each window the watermark closed, at the
    time it closed."""
    final_sessions: Counter[tuple[str, datetime.datetime, datetime.datetime, int, int]] = field(
        default_factory=Counter
    )
    """``(user, start, end, views, time)`` of each session the watermark closed."""


def mismatches(got: Results, expected: Results) -> list[str]:
    """Each row whose count differs, as ``what: row: got G, expected E``."""
    lines = []
    for what in ("late", "windows", "final_windows", "final_sessions"):
        have, want = getattr(got, what), getattr(expected, what)
        for row in sorted(have.keys() | want.keys(), key=str):
            if have[row] != want[row]:
                lines.append(f"{what}: {row}: got {have[row]}, expected {want[row]}")
    return lines


def recount(clicks: Sequence[Click], window: int, lateness: int, gap: int) -> Results:
    """The windows, sessions and late views of ``clicks`` (in arrival order), by the rules of
    ``docs/how-to/event-time.md``: a view is late when its event time is below the greatest
    event time of the earlier logical times minus ``lateness``; a window or session is final
    at the first time whose views bring that watermark to its end or past it."""
    out = Results()
    lag = datetime.timedelta(seconds=lateness)
    width = datetime.timedelta(seconds=window)
    ticks: dict[int, list[Click]] = {}
    for click in clicks:
        ticks.setdefault(click.time, []).append(click)
    greatest: datetime.datetime | None = None
    closed_by: list[tuple[datetime.datetime, int]] = []  # (watermark after t, t), rising
    on_time: list[Click] = []
    for t in sorted(ticks):
        for click in ticks[t]:
            if greatest is not None and click.ts < greatest - lag:
                out.late[click] += 1
            else:
                on_time.append(click)
        latest = max(c.ts for c in ticks[t])
        greatest = latest if greatest is None else max(greatest, latest)
        if not closed_by or greatest - lag > closed_by[-1][0]:
            closed_by.append((greatest - lag, t))

    def final_time(end: datetime.datetime) -> int | None:
        return next((t for mark, t in closed_by if mark >= end), None)

    views: Counter[tuple[datetime.datetime, str]] = Counter(
        (_EPOCH + (click.ts - _EPOCH) // width * width, click.page) for click in on_time
    )
    for (start, page), n in views.items():
        out.windows[start, page, n] += 1
        closed = final_time(start + width)
        if closed is not None:
            out.final_windows[start, page, n, closed] += 1
    by_user: dict[str, list[datetime.datetime]] = {}
    for click in on_time:
        by_user.setdefault(click.user, []).append(click.ts)
    pause = datetime.timedelta(seconds=gap)
    for user, times in by_user.items():
        times.sort()
        first = 0
        for i in range(1, len(times) + 1):
            if i == len(times) or times[i] - times[i - 1] >= pause:
                end = times[i - 1] + pause
                closed = final_time(end)
                if closed is not None:
                    out.final_sessions[user, times[first], end, i - first, closed] += 1
                first = i
    return out


def results_of(
    final_windows: Sequence[dict[str, Any]],
    final_sessions: Sequence[dict[str, Any]],
    late: Sequence[dict[str, Any]],
    windows: pa.Table,
) -> Results:
    """:class:`Results` from the rows of the captures (updates of the final windows,
    sessions and late views; the state of the ``emit="updates"`` windows)."""
    out = Results()
    for r in final_windows:
        out.final_windows[r["window_start"], r["page"], r["views"], r["time"]] += r["diff"]
    for r in final_sessions:
        row = (r["user"], r["window_start"], r["window_end"], r["views"], r["time"])
        out.final_sessions[row] += r["diff"]
    for r in late:
        out.late[Click(r["ts"], r["user"], r["page"], r["time"])] += r["diff"]
    for r in windows.to_pylist():
        out.windows[r["window_start"], r["page"], r["views"]] += r["diff"]
    return out


class _Fresh:
    """The updates of each newly completed logical time (a capture subscriber)."""

    def __init__(self, capture: dd.Capture) -> None:
        self.rows: list[dict[str, Any]] = []
        capture.subscribe(self)

    def __call__(self, table: pa.Table) -> None:
        self.rows += table.to_pylist()

    def take(self) -> list[dict[str, Any]]:
        rows, self.rows = self.rows, []
        return rows


def _clock(ts: datetime.datetime) -> str:
    return f"{ts:%H:%M:%S}"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _print_round(
    t: int,
    batch: int,
    arrivals: int,
    windows: list[dict[str, Any]],
    sessions: list[dict[str, Any]],
    late: list[dict[str, Any]],
) -> None:
    """What became final at time ``t`` and the late views."""
    until = START + datetime.timedelta(seconds=(t + 1) * batch)
    print(f"time {t} (arrivals until {until:%H:%M:%S}, {arrivals} views):")
    starts: dict[object, list[dict[str, Any]]] = {}
    for row in windows:
        starts.setdefault(row["window_start"], []).append(row)
    for rows in starts.values():
        rows.sort(key=lambda r: (-r["views"], r["page"]))
        counts = ", ".join(f"{r['page']} {r['views']}" for r in rows)
        span = f"{_clock(rows[0]['window_start'])}-{_clock(rows[0]['window_end'])}"
        print(f"  window {span} final: {counts}")
    if sessions:
        sessions.sort(key=lambda r: (r["window_start"], r["user"]))
        shown = ", ".join(
            f"{r['user']} {_clock(r['window_start'])}-{_clock(r['window_end'])} "
            + _plural(r["views"], "view")
            for r in sessions[:3]
        )
        more = f" and {len(sessions) - 3} more" if len(sessions) > 3 else ""
        print(f"  {_plural(len(sessions), 'session')} final: {shown}{more}")
    for row in late:
        print(f"  late: {row['user']} {row['page']} at {_clock(row['ts'])}")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.clickstream", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--events", type=int, default=2000, help="page views (default 2000)")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--pages", type=int, default=6)
    parser.add_argument("--window", type=int, default=60, help="window length in seconds")
    parser.add_argument("--lateness", type=int, default=10, help="watermark lag in seconds")
    parser.add_argument("--gap", type=int, default=30, help="session gap in seconds")
    parser.add_argument("--batch", type=int, default=10, help="seconds of arrivals per time")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="worker threads (default 1)")
    args = parser.parse_args(argv)
    sizes = ("events", "users", "pages", "window", "gap", "batch", "workers")
    if min(getattr(args, name) for name in sizes) < 1:
        parser.error(", ".join(f"--{name}" for name in sizes) + " must be at least 1")
    if args.lateness < 0:
        parser.error("--lateness must be >= 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; prints what becomes final after each batch and checks it all."""
    args = _parse(argv)
    clicks = generate(args.events, args.users, args.pages, args.lateness, args.batch, args.seed)
    flow = dd.Dataflow(workers=args.workers)
    clicks_in, outputs = build(flow, args.window, args.lateness, args.gap)
    windows, sessions, late = (_Fresh(c) for c in (outputs.windows, outputs.sessions, outputs.late))
    final_windows: list[dict[str, Any]] = []
    final_sessions: list[dict[str, Any]] = []
    late_views: list[dict[str, Any]] = []
    last = clicks[-1].time
    i = 0
    for t in range(last + 1):
        arrived = []
        while i < len(clicks) and clicks[i].time == t:
            arrived.append(clicks[i])
            i += 1
        if arrived:
            clicks_in.update_batch(
                pa.Table.from_pylist([c._asdict() for c in arrived], CLICKS), times=t
            )
        clicks_in.advance_to(t + 1)
        flow.run_until(t + 1)
        new = windows.take(), sessions.take(), late.take()
        if any(new):
            _print_round(t, args.batch, len(arrived), *new)
        final_windows += new[0]
        final_sessions += new[1]
        late_views += new[2]
    expected = recount(clicks, args.window, args.lateness, args.gap)
    got = results_of(final_windows, final_sessions, late_views, outputs.open_windows.state())
    wrong = mismatches(got, expected)
    print(
        f"{len(clicks)} views: {sum(expected.late.values())} late, "
        f"{sum(expected.final_windows.values())} of {sum(expected.windows.values())} page "
        f"windows and {sum(expected.final_sessions.values())} sessions final"
    )
    for line in wrong[:SHOWN]:
        print(f"  differs from the recount: {line}")
    print(f"windows, sessions and late views match a recount: {not wrong}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    raise SystemExit(main())
