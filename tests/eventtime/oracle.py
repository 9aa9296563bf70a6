"""A brute-force model of event time: the watermark, late records and windows recomputed
from scratch at every logical time from the whole input history, in plain Python.

Records are ``(ts, k, x)`` with int ``ts`` (``None``: no event time); an update is
``(record, time, diff)`` at an int logical time. Nothing here shares code with ddflow.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

Record = tuple[int | None, str | None, int]
Update = tuple[Record, int, int]
Row = tuple[object, ...]


def consolidated_at(updates: Iterable[Update], t: int) -> dict[Record, int]:
    """The net diff per record of the updates at exactly time ``t``."""
    net: dict[Record, int] = defaultdict(int)
    for r, time, d in updates:
        if time == t:
            net[r] += d
    return {r: d for r, d in net.items() if d != 0}


@dataclass
class Split:
    """The input split by the watermark, and the watermark after each time."""

    on_time: list[Update]
    late: list[Update]
    after: dict[int, int | None]
    """The watermark after each time (counting the records at that time)."""


def split(updates: list[Update], lateness: int, times: range) -> Split:
    """Each time's consolidated updates judged against the greatest event time inserted at
    earlier times minus ``lateness``."""
    best: int | None = None
    on_time: list[Update] = []
    late: list[Update] = []
    after: dict[int, int | None] = {}
    for t in times:
        here = consolidated_at(updates, t)
        w = None if best is None else best - lateness
        for r, d in here.items():
            is_late = r[0] is None or (w is not None and r[0] < w)
            (late if is_late else on_time).append((r, t, d))
        for r, d in here.items():
            if d > 0 and r[0] is not None:
                best = r[0] if best is None else max(best, r[0])
        after[t] = None if best is None else best - lateness
    return Split(on_time, late, after)


def state(updates: Iterable[Update], t: int) -> dict[Record, int]:
    """The accumulated collection at ``t``."""
    acc: dict[Record, int] = defaultdict(int)
    for r, time, d in updates:
        if time <= t:
            acc[r] += d
    return {r: c for r, c in acc.items() if c != 0}


def _aggregate(groups: dict[Row, list[tuple[Record, int]]]) -> list[Row]:
    """Per group key: count, sum of x, max of x over records with positive count."""
    rows = []
    for key, members in groups.items():
        n = sum(c for _, c in members)
        if n == 0:
            continue
        s = sum(r[2] * c for r, c in members)
        mx = max(r[2] for r, c in members if c > 0)
        rows.append((*key, n, s, mx))
    return rows


def dynamic(
    coll: dict[Record, int], every: int, period: int, offset: int, keyed: bool
) -> list[Row]:
    """Rows ``(start, end, [k,] n, s, mx)`` of the windows ``[offset + j * every, + period)``."""
    groups: dict[Row, list[tuple[Record, int]]] = defaultdict(list)
    for r, c in coll.items():
        ts = r[0]
        if ts is None:
            continue
        j = (ts - offset) // every
        while offset + j * every + period > ts:
            start = offset + j * every
            key: Row = (start, start + period, r[1]) if keyed else (start, start + period)
            groups[key].append((r, c))
            j -= 1
    return _aggregate(groups)


def sessions(coll: dict[Record, int], gap: int, keyed: bool) -> list[Row]:
    """Rows ``(start, end, [k,] n, s, mx)``: per key, sorted distinct event times less than
    ``gap`` apart share a session ``[first, last + gap)``."""
    by_key: dict[object, dict[Record, int]] = defaultdict(dict)
    for r, c in coll.items():
        if r[0] is not None:
            by_key[r[1] if keyed else None][r] = c
    groups: dict[Row, list[tuple[Record, int]]] = defaultdict(list)
    for k, members in by_key.items():
        times = sorted({r[0] for r, c in members.items() if c > 0 and r[0] is not None})
        runs: list[list[int]] = []
        for ts in times:
            if runs and ts - runs[-1][-1] < gap:
                runs[-1].append(ts)
            else:
                runs.append([ts])
        for run in runs:
            key: Row = (run[0], run[-1] + gap, k) if keyed else (run[0], run[-1] + gap)
            for r, c in members.items():
                if run[0] <= r[0] <= run[-1]:  # type: ignore[operator]
                    groups[key].append((r, c))
    return _aggregate(groups)


def closed(rows: list[Row], watermark: int | None) -> list[Row]:
    """The rows of windows whose end (column 1) the watermark has reached."""
    return [r for r in rows if watermark is not None and r[1] <= watermark]  # type: ignore[operator]
