"""Lattice kernels and interesting times against numpy / brute-force references, on
partially ordered multi-dimensional times."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddflow import _core
from ddflow import kernels as K


def _times(seed: int, n: int, k: int, hi: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, hi, (n, k), dtype=np.int64)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [0, 1, 100, 5000])
def test_less_equal_join_meet_match_numpy(k: int, n: int) -> None:
    a = _times(n + k, n, k)
    b = _times(n + k + 1, n, k)
    np.testing.assert_array_equal(_core.less_equal(a, b), np.all(a <= b, axis=1))
    np.testing.assert_array_equal(_core.join(a, b), np.maximum(a, b))
    np.testing.assert_array_equal(_core.meet(a, b), np.minimum(a, b))


def test_partial_order_has_incomparable_times() -> None:
    a = np.array([[1, 0]])
    b = np.array([[0, 1]])
    assert not _core.less_equal(a, b)[0] and not _core.less_equal(b, a)[0]
    np.testing.assert_array_equal(_core.join(a, b), [[1, 1]])
    np.testing.assert_array_equal(_core.meet(a, b), [[0, 0]])


def test_broadcast_single_time_and_mixed_dims() -> None:
    a = _times(1, 50, 2)
    one = np.array([[2, 3]])
    np.testing.assert_array_equal(_core.less_equal(a, one), np.all(a <= one, axis=1))
    np.testing.assert_array_equal(_core.join(one, a), np.maximum(a, one))
    # (n,) times are one-coordinate times; missing coordinates count as zero.
    s = np.array([0, 1, 4, 2], dtype=np.int64)
    out = _core.join(s, np.array([[1, 7]]))
    np.testing.assert_array_equal(out, [[1, 7], [1, 7], [4, 7], [2, 7]])
    one_d = _core.meet(s, np.array([3, 3, 3, 3], dtype=np.int64))
    assert one_d.ndim == 1
    np.testing.assert_array_equal(one_d, [0, 1, 3, 2])


def _advance_ref(times: np.ndarray, frontier: np.ndarray) -> np.ndarray:
    if len(frontier) == 0:
        return times
    joined = np.maximum(times[:, None, :], frontier[None, :, :])
    return joined.min(axis=1)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("m", [0, 1, 2, 4])
def test_advance_by_matches_reference(k: int, m: int) -> None:
    t = _times(k * 10 + m, 2000, k, hi=8)
    f = _core.antichain(_times(k + m + 100, m, k, hi=8)) if m else np.zeros((0, k), np.int64)
    out = _core.advance_by(t, f if m else [])
    np.testing.assert_array_equal(out, _advance_ref(t, f))


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 3).flatmap(
        lambda k: st.tuples(
            st.lists(st.lists(st.integers(0, 6), min_size=k, max_size=k), min_size=1, max_size=6),
            st.lists(st.lists(st.integers(0, 6), min_size=k, max_size=k), min_size=1, max_size=4),
            st.lists(st.lists(st.integers(0, 6), min_size=k, max_size=k), min_size=1, max_size=6),
        )
    )
)
def test_advance_by_preserves_comparisons_in_the_future(data) -> None:
    ts, fs, probes = (np.array(x, dtype=np.int64) for x in data)
    f = _core.antichain(fs)
    adv = _core.advance_by(ts, f)
    assert np.all(_core.less_equal(ts, adv))
    future = probes[_core.frontier_less_equal(f, probes)]
    for p in future:
        p1 = p[None, :]
        np.testing.assert_array_equal(_core.less_equal(ts, p1), _core.less_equal(adv, p1))


def _minimal(ts: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    le = lambda a, b: all(x <= y for x, y in zip(a, b, strict=True))  # noqa: E731
    s = set(ts)
    return sorted(t for t in s if not any(o != t and le(o, t) for o in s))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_antichain_and_frontier_less_equal(k: int) -> None:
    for seed in range(20):
        t = _times(seed, 12, k, hi=4)
        mins = _core.antichain(t)
        assert [tuple(r) for r in mins.tolist()] == _minimal([tuple(r) for r in t.tolist()])
        probes = _times(seed + 1000, 30, k, hi=5)
        expect = np.array([np.any(np.all(mins <= p, axis=1)) for p in probes])
        np.testing.assert_array_equal(_core.frontier_less_equal(mins, probes), expect)
    # The empty frontier has nothing in its future.
    assert not _core.frontier_less_equal([], _times(0, 3, k)).any()


def test_frontier_argument_forms() -> None:
    t = np.array([[0, 5], [3, 0], [4, 4]], dtype=np.int64)
    a = _core.frontier_less_equal([[1, 1]], t)
    b = _core.frontier_less_equal([1, 1], t)
    c = _core.frontier_less_equal(np.array([1, 1]), t)
    d = _core.frontier_less_equal(np.array([[1, 1]]), t)
    for x in (b, c, d):
        np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(a, [False, False, True])
    np.testing.assert_array_equal(_core.frontier_less_equal(2, np.array([1, 2, 3])), [0, 1, 1])
    np.testing.assert_array_equal(K.frontier_meet([[2, 0]], [[0, 2], [3, 3]]), [[0, 2], [2, 0]])


# --- interesting times -----------------------------------------------------------------


def _interesting_brute(edits: list[tuple], news: list[tuple]) -> list[tuple]:
    """Joins of a subset of edits with a non-empty subset of new times."""
    out = set()
    edits = sorted(set(edits))
    news = sorted(set(news))
    for r in range(1, len(news) + 1):
        for ns in itertools.combinations(news, r):
            base = tuple(max(c) for c in zip(*ns, strict=True))
            for q in range(0, len(edits) + 1):
                for es in itertools.combinations(edits, q):
                    out.add(tuple(max(c) for c in zip(base, *es, strict=True)))
    return sorted(out)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_interesting_times_match_reference_and_definition(k: int) -> None:
    for seed in range(25):
        rng = np.random.default_rng(seed * 7 + k)
        e = rng.integers(0, 4, (int(rng.integers(0, 6)), k), dtype=np.int64)
        n = rng.integers(0, 4, (int(rng.integers(1, 4)), k), dtype=np.int64)
        fast = _core.interesting_times(e, n)
        ref = _core.interesting_times_reference(e, n)
        np.testing.assert_array_equal(fast, ref)
        brute = _interesting_brute([tuple(r) for r in e.tolist()], [tuple(r) for r in n.tolist()])
        assert [tuple(r) for r in fast.tolist()] == brute


def test_interesting_times_many_2d() -> None:
    rng = np.random.default_rng(3)
    e = rng.integers(0, 40, (300, 2), dtype=np.int64)
    n = rng.integers(0, 40, (50, 2), dtype=np.int64)
    np.testing.assert_array_equal(
        _core.interesting_times(e, n), _core.interesting_times_reference(e, n)
    )


def test_interesting_times_1d_and_empty() -> None:
    e = np.array([5, 1], dtype=np.int64)
    n = np.array([3], dtype=np.int64)
    out = K.interesting_times(e, n)
    assert out.ndim == 1
    np.testing.assert_array_equal(out, [3, 5])
    assert len(K.interesting_times(e, np.zeros(0, dtype=np.int64))) == 0
    np.testing.assert_array_equal(K.interesting_times_reference(e, n), [3, 5])
