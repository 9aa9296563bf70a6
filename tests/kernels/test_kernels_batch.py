"""``_core.batch_arrange`` / ``batch_join`` / ``batch_reduce``: the engine's operators on whole
batches, checked against a direct computation on random small batches."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict

import numpy as np
import pytest

from ddflow import _core, errors

Batch = tuple[list[np.ndarray], np.ndarray, np.ndarray]


def _batch(rows: list[tuple[int, int, int, int]]) -> Batch:
    """``(key, val, time, diff)`` rows as a batch of two int64 columns and 1-D times."""
    cols = [np.array([r[i] for r in rows], dtype=np.int64) for i in (0, 1)]
    times = np.array([[r[2]] for r in rows], dtype=np.int64).reshape(len(rows), 1)
    return cols, times, np.array([r[3] for r in rows], dtype=np.int64)


def _counter(batch: Batch) -> dict[tuple[int, ...], int]:
    cols, times, diffs = batch
    out: Counter[tuple[int, ...]] = Counter()
    for i in range(len(diffs)):
        out[(*(int(c[i]) for c in cols), int(times[i][0]))] += int(diffs[i])
    return _nonzero(out)


def _nonzero(c: Counter[tuple[int, ...]]) -> dict[tuple[int, ...], int]:
    """The entries with a non-zero count (negative counts kept)."""
    return {k: v for k, v in c.items() if v}


def _rows(seed: int) -> list[tuple[int, int, int, int]]:
    rng = random.Random(seed)
    return [
        (rng.randrange(4), rng.randrange(5), rng.randrange(4), rng.choice([-1, 1, 2]))
        for _ in range(30)
    ]


@pytest.mark.parametrize("seed", range(5))
def test_arrange_join_reduce_match_direct_computation(seed: int) -> None:
    left = _core.batch_arrange(_batch(_rows(seed)), [1], 1)
    assert _counter(left) == {
        (v, k, t): d for (k, v, t), d in _counter(_batch(_rows(seed))).items()
    }
    right = _core.batch_arrange(_batch(_rows(seed + 100)), [0], 1)
    left = _core.batch_arrange(_batch(_rows(seed)), [0], 1)
    expected: Counter[tuple[int, ...]] = Counter()
    for (k, v, t), d in _counter(left).items():
        for (k2, w, t2), d2 in _counter(right).items():
            if k == k2:
                expected[(k, v, w, max(t, t2))] += d * d2
    joined = _core.batch_join("join", 1, left, right, 1)
    cols, times, diffs = joined
    got: Counter[tuple[int, ...]] = Counter()
    for i in range(len(diffs)):
        got[(int(cols[0][i]), int(cols[1][i]), int(cols[2][i]), int(times[i][0]))] += int(diffs[i])
    assert _nonzero(got) == _nonzero(expected)

    # count per key, accumulated at every time, equals the count of the accumulated input.
    cols, times, diffs = _core.batch_reduce(json.dumps({"kind": "count"}), 1, ["k", "v"], left, 1)
    for t in range(5):
        acc: defaultdict[int, int] = defaultdict(int)
        for (k, _, t0), d in _counter(left).items():
            if t0 <= t:
                acc[k] += d
        out: defaultdict[tuple[int, int], int] = defaultdict(int)
        for i in range(len(diffs)):
            if times[i][0] <= t:
                out[(int(cols[0][i]), int(cols[1][i]))] += int(diffs[i])
        assert {k: c for k, c in out.items() if c} == {(k, c): 1 for k, c in acc.items() if c}


def test_unarranged_join_input_and_bad_arguments_raise() -> None:
    b = _batch([(2, 0, 0, 1), (1, 0, 0, 1)])
    with pytest.raises(errors.UnsortedInputError, match="arrange"):
        _core.batch_join("join", 1, b, b, 1)
    with pytest.raises(errors.DdflowError, match="join kind"):
        _core.batch_join("outer", 1, b, b, 1)
    with pytest.raises(errors.PlanError, match="aggregate"):
        _core.batch_reduce('{"kind": "median"}', 1, ["k", "v"], _core.batch_arrange(b, [0], 1), 1)
