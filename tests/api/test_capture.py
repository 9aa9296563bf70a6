"""``Capture``: consolidation, ordering, completeness, ``at(t)`` and subscribers (fake engine)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import ddflow as dd

from .conftest import FakeEngine


def _setup(engines: list[FakeEngine], dims: int = 1) -> tuple[dd.Dataflow, dd.Capture, FakeEngine]:
    flow = dd.Dataflow(time_dims=dims)
    inp, coll = flow.new_input(("k", "s"))
    cap = coll.capture()
    flow.step()
    return flow, cap, engines[0]


def _raw(
    k: list[int], s: list[str], times: list[list[int]], diffs: list[int]
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    return (
        [np.array(k, dtype=np.int64), np.array(s, dtype=object)],
        np.array(times, dtype=np.int64),
        np.array(diffs, dtype=np.int64),
    )


def test_updates_are_consolidated_sorted_and_complete_only(engines: list[FakeEngine]) -> None:
    flow, cap, engine = _setup(engines)
    engine.captures[cap.node] = [
        _raw(
            [2, 1, 1, 3, 1, 4],
            ["b", "a", "a", "c", "z", "d"],
            [[1], [0], [0], [1], [1], [5]],
            [1, 1, 1, 1, 1, 1],
        ),
        _raw([4, 2, 2], ["d", "b", "b"], [[5], [2], [2]], [-1, 1, 1]),
    ]
    engine.frontiers[cap.node] = [[2]]
    table = cap.updates()
    assert table.column_names == ["k", "s", "time", "diff"]
    assert table.schema.field("time").type == pa.int64()
    assert table.schema.field("s").type == pa.string()
    assert table.to_pylist() == [
        {"k": 1, "s": "a", "time": 0, "diff": 2},
        {"k": 1, "s": "z", "time": 1, "diff": 1},
        {"k": 2, "s": "b", "time": 1, "diff": 1},
        {"k": 3, "s": "c", "time": 1, "diff": 1},
    ]
    engine.frontiers[cap.node] = []
    table = cap.updates()  # (4, d) @ 5 cancels to zero: dropped
    rows = [(r["k"], r["time"], r["diff"]) for r in table.to_pylist()]
    assert rows == [(1, 0, 2), (1, 1, 1), (2, 1, 1), (3, 1, 1), (2, 2, 2)]


def test_at_accumulates_and_requires_completeness(engines: list[FakeEngine]) -> None:
    flow, cap, engine = _setup(engines)
    engine.captures[cap.node] = [
        _raw([1, 2, 1, 3], ["a", "b", "a", "c"], [[0], [1], [2], [4]], [1, 1, -1, 1])
    ]
    engine.frontiers[cap.node] = [[3]]
    assert cap.at(1).to_pylist() == [{"k": 1, "s": "a", "diff": 1}, {"k": 2, "s": "b", "diff": 1}]
    assert cap.at(2).to_pylist() == [{"k": 2, "s": "b", "diff": 1}]
    with pytest.raises(dd.TimeError, match="not complete"):
        cap.at(3)
    assert cap.done(2) and not cap.done(3)
    assert cap.frontier() == [3]


def test_tuple_times(engines: list[FakeEngine]) -> None:
    flow, cap, engine = _setup(engines, dims=2)
    engine.captures[cap.node] = [
        _raw([1, 2, 3], ["a", "b", "c"], [[1, 0], [0, 1], [1, 1]], [1, 1, 1])
    ]
    engine.frontiers[cap.node] = [[2, 0], [0, 2], [1, 1]]
    table = cap.updates()
    assert table.schema.field("time").type == pa.list_(pa.int64(), 2)
    assert table.to_pylist() == [
        {"k": 2, "s": "b", "time": [0, 1], "diff": 1},
        {"k": 1, "s": "a", "time": [1, 0], "diff": 1},
    ]
    assert cap.at((1, 0)).to_pylist() == [{"k": 1, "s": "a", "diff": 1}]
    with pytest.raises(dd.TimeError):
        cap.at((1, 1))


def test_subscribers_get_each_completed_interval_once(engines: list[FakeEngine]) -> None:
    flow, cap, engine = _setup(engines)
    seen: list[list[dict[str, object]]] = []
    cap.subscribe(lambda t: seen.append(t.to_pylist()))
    engine.captures[cap.node] = [_raw([1, 2], ["a", "b"], [[0], [1]], [1, 1])]
    engine.frontiers[cap.node] = [[1]]
    flow.run_until(1)
    assert seen == [[{"k": 1, "s": "a", "time": 0, "diff": 1}]]
    cap.updates()
    engine.frontiers[cap.node] = [[2]]
    flow.step()
    assert seen[-1] == [{"k": 2, "s": "b", "time": 1, "diff": 1}]
    flow.step()
    assert len(seen) == 2


def test_empty_capture_and_log(engines: list[FakeEngine]) -> None:
    flow = dd.Dataflow()
    _, coll = flow.new_input(("k",))
    cap = coll.capture()
    assert cap.updates().column_names == ["k", "time", "diff"]
    assert flow.log() == []
    with pytest.raises(dd.TimeError):
        cap.at(0)
    flow.run()
    assert flow.log_table().num_rows == 1
