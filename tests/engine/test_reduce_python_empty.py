"""A Python reducer (and a threshold function) is never called for a key whose input
accumulates to nothing: in differential dataflow a key with empty input has empty output.

Before the fix, a key retracted completely was handed to the reducer with zero values; a
reducer that writes a row for every key it is given put ``(key, 0)`` into the output where
the key no longer existed, and one that fails on the key kept its error live forever.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ddflow as dd

from .conftest import requires_engine

pytestmark = [requires_engine, pytest.mark.timeout(60)]


def _sizes(seen: list[int]) -> Any:
    def reducer(batch: Any) -> dict[str, Any]:
        offsets = np.asarray(batch.offsets, dtype=np.int64)
        sizes = np.diff(offsets)
        seen.extend(int(s) for s in sizes)
        return {"offsets": np.arange(len(sizes) + 1, dtype=np.int64), "n": sizes}

    return reducer


def _run(times: list[Any], diffs: list[int], reducer: Any) -> tuple[list[Any], list[Any]]:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k", "v"))
    out = a.reduce(by="k", agg=dd.reducer(reducer, columns=["n"]))
    cap = out.capture(errors="collect")
    n = len(diffs)
    ai.update_batch(
        {"k": np.zeros(n, dtype=np.int64), "v": np.ones(n, dtype=np.int64)},
        times=np.array(times, dtype=np.int64),
        diffs=np.array(diffs, dtype=np.int64),
    )
    ai.close()
    flow.run()
    rows = [(r["k"], r["n"], r["time"], r["diff"]) for r in cap.updates().to_pylist()]
    errors = [(e["values"], e["time"], e["diff"]) for e in cap.errors().to_pylist()]
    return rows, errors


def test_a_retracted_key_gets_no_output_row_and_is_not_passed_to_the_reducer() -> None:
    seen: list[int] = []
    rows, _ = _run([2, 5], [1, -1], _sizes(seen))
    assert rows == [(0, 1, 2, 1), (0, 1, 5, -1)]
    assert 0 not in seen


def test_two_dimensional_times() -> None:
    # +1 at (0, 1) and -1 at (1, 0): the key holds one value (count 1, then count -1) at
    # those two times and nothing from their join (1, 1) on, where both output rows retract
    # (before the fix, the reducer was called there and wrote (0, 0)).
    seen: list[int] = []
    rows, _ = _run([[0, 1], [1, 0]], [1, -1], _sizes(seen))
    rows = [(k, n, tuple(t), d) for k, n, t, d in rows]
    assert sorted(rows) == [(0, 1, (0, 1), 1), (0, 1, (1, 0), 1), (0, 1, (1, 1), -2)]
    assert 0 not in seen


def test_an_error_retracts_when_the_failing_key_is_retracted() -> None:
    def fails_on_key_zero(batch: Any) -> dict[str, Any]:
        if len(batch.offsets) > 1 and (np.asarray(batch.keys["k"]) == 0).any():
            raise ZeroDivisionError("key 0")
        return {"offsets": np.zeros(1, dtype=np.int64), "n": np.zeros(0, dtype=np.int64)}

    rows, errors = _run([2, 5], [1, -1], fails_on_key_zero)
    assert rows == []
    assert errors == [("k=0", 2, 1), ("k=0", 5, -1)]
