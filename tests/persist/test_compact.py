"""Compaction equals its naive reference: every accepted row once per copy, its time moved
up to ``frontier - 1`` when before it, equal (row, time) counts summed; late rows and bad
rows kept as errors; layers merged give what compacting their ticks at once gives, and a
layer advanced to a later frontier gives what compacting its ticks to that frontier gives.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from ddflow.persist.compact import advance, compact
from ddflow.persist.records import Snapshot, Tick
from ddflow.sources import RowError, SourceBatch

_rows = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 3)), st.sampled_from(["a", "b", None])),
    min_size=0,
    max_size=12,
)


@st.composite
def _ticks(draw: st.DrawFn) -> list[Tick]:
    ticks = []
    frontier = 0
    for seq in range(1, draw(st.integers(1, 6)) + 1):
        batches = []
        for _ in range(draw(st.integers(0, 3))):
            rows = draw(_rows)
            timed = draw(st.booleans())
            table = pa.table(
                {"x": pa.array([r[0] for r in rows], pa.int64()), "s": [r[1] for r in rows]}
            )
            times = (
                np.array([draw(st.integers(0, frontier + 5)) for _ in rows], np.int64)
                if timed
                else None
            )
            errors = [RowError(f"f{seq}", 99, "x", "bad", "x='?'")] if draw(st.booleans()) else []
            origin = draw(st.sampled_from(["f1", "f2", "f3"]))
            batches.append((0, SourceBatch(table, origin, None, times, errors)))
        target = frontier + draw(st.integers(0, 3))
        ticks.append(Tick(seq, frontier + 1, frontier, target, batches, [None]))
        frontier = target
    return ticks


def _naive(ticks: list[Tick], floor: int) -> Counter[tuple[object, ...]]:
    out: Counter[tuple[object, ...]] = Counter()
    for tick in ticks:
        for _, batch in tick.batches:
            for i, row in enumerate(batch.table.to_pylist()):
                t = tick.now if batch.times is None else int(batch.times[i])
                if batch.times is not None and t < tick.frontier:
                    continue  # late
                out[(row["x"], row["s"], max(t, floor))] += 1
    return out


def _state(snapshot: Snapshot | None) -> Counter[tuple[object, ...]]:
    out: Counter[tuple[object, ...]] = Counter()
    if snapshot is None:
        return out
    for row, t, d in zip(
        snapshot.table.to_pylist(), snapshot.times.tolist(), snapshot.diffs.tolist(), strict=True
    ):
        out[(row["x"], row["s"], t)] += d
    return out


def _late(ticks: list[Tick]) -> int:
    return sum(
        int((batch.times < tick.frontier).sum())
        for tick in ticks
        for _, batch in tick.batches
        if batch.times is not None
    )


@settings(max_examples=150, deadline=None)
@given(_ticks(), st.integers(1, 12), st.integers(0, 6))
def test_compaction_equals_the_naive_reference(ticks: list[Tick], frontier: int, cut: int) -> None:
    snapshot = compact(0, [], ticks, frontier)
    assert _state(snapshot) == _naive(ticks, frontier - 1)
    bad = sum(len(b.errors) for t in ticks for _, b in t.batches) + _late(ticks)
    assert (0 if snapshot is None else len(snapshot.errors)) == bad
    # Two layers (the ticks split at ``cut``) merged equal the ticks compacted at once.
    first = compact(0, [], ticks[:cut], frontier)
    second = compact(0, [], ticks[cut:], frontier)
    merged = compact(0, [s for s in (first, second) if s is not None], [], frontier + 2)
    assert _state(merged) == _naive(ticks, frontier + 1)
    if merged is not None:
        assert all(merged.origins[o] in {"f1", "f2", "f3"} for o in merged.origin.tolist())


@settings(max_examples=150, deadline=None)
@given(_ticks(), st.integers(1, 12), st.integers(0, 6))
def test_an_advanced_layer_equals_compaction_to_the_later_frontier(
    ticks: list[Tick], frontier: int, later: int
) -> None:
    snapshot = compact(0, [], ticks, frontier)
    if snapshot is None:
        return
    advanced = advance(snapshot, frontier + later)
    assert _state(advanced) == _naive(ticks, frontier + later - 1)
    assert all(e.time is not None and e.time >= frontier + later - 1 for e in advanced.errors)
    assert len(advanced.errors) == len(snapshot.errors)
