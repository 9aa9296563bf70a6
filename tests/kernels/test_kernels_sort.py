"""Sorting and consolidation kernels against numpy / pure-Python references."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ddflow import _core
from ddflow import kernels as K

I64 = np.iinfo(np.int64)
U64 = np.iinfo(np.uint64)

# Sizes on both sides of the comparison-sort threshold (256).
SIZES = [0, 1, 2, 7, 255, 256, 257, 5000, 100_000]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _values(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    if kind == "ids":
        return rng.integers(0, 1_000_000, n, dtype=np.int64)
    if kind == "small":
        return rng.integers(-3, 3, n, dtype=np.int64)
    if kind == "i64":
        return rng.integers(I64.min, I64.max, n, dtype=np.int64, endpoint=True)
    if kind == "u64":
        return rng.integers(0, U64.max, n, dtype=np.uint64, endpoint=True)
    if kind == "const":
        return np.full(n, 42, dtype=np.int64)
    raise AssertionError(kind)


KINDS = ["ids", "small", "i64", "u64", "const"]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kind", KINDS)
def test_sort_values_matches_numpy(n: int, kind: str) -> None:
    v = _values(_rng(n), n, kind)
    out = _core.sort_values(v)
    assert out.dtype == v.dtype
    np.testing.assert_array_equal(out, np.sort(v))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kkind", KINDS)
@pytest.mark.parametrize("vkind", ["ids", "i64", "u64", "small"])
def test_sort_pairs_matches_lexsort(n: int, kkind: str, vkind: str) -> None:
    rng = _rng(n + 17)
    k = _values(rng, n, kkind)
    v = _values(rng, n, vkind)
    ko, vo = _core.sort_pairs(k, v)
    order = np.lexsort((v, k))
    assert ko.dtype == k.dtype and vo.dtype == v.dtype
    np.testing.assert_array_equal(ko, k[order])
    np.testing.assert_array_equal(vo, v[order])


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.int64, st.integers(0, 600), elements=st.integers(I64.min, I64.max)),
    st.data(),
)
def test_sort_pairs_property(k: np.ndarray, data: st.DataObject) -> None:
    v = data.draw(
        hnp.arrays(np.int64, len(k), elements=st.integers(I64.min, I64.max)), label="vals"
    )
    ko, vo = _core.sort_pairs(k, v)
    order = np.lexsort((v, k))
    np.testing.assert_array_equal(ko, k[order])
    np.testing.assert_array_equal(vo, v[order])


def test_sort_accepts_non_contiguous_views() -> None:
    v = _values(_rng(3), 2000, "ids")[::2]
    np.testing.assert_array_equal(_core.sort_values(v), np.sort(v))
    k = _values(_rng(4), 2000, "ids")[::-2]
    ko, vo = _core.sort_pairs(k, v)
    order = np.lexsort((v, k))
    np.testing.assert_array_equal(ko, k[order])
    np.testing.assert_array_equal(vo, v[order])


def test_inputs_are_not_modified() -> None:
    k = _values(_rng(5), 10_000, "ids")
    v = _values(_rng(6), 10_000, "ids")
    k0, v0 = k.copy(), v.copy()
    _core.sort_pairs(k, v)
    _core.sort_values(k)
    np.testing.assert_array_equal(k, k0)
    np.testing.assert_array_equal(v, v0)


# --- consolidation ---------------------------------------------------------------------


def _reference_consolidate(
    columns: list[np.ndarray], times: np.ndarray, diffs: np.ndarray
) -> dict[tuple, int]:
    acc: dict[tuple, int] = defaultdict(int)
    t2 = times if times.ndim == 2 else times[:, None]
    for i in range(len(diffs)):
        rec = tuple(c[i].item() if isinstance(c[i], np.generic) else c[i] for c in columns)
        acc[(rec, tuple(int(x) for x in t2[i]))] += int(diffs[i])
    return {k: d for k, d in acc.items() if d != 0}


def _as_dict(columns: list[np.ndarray], times: np.ndarray, diffs: np.ndarray) -> dict:
    t2 = times if times.ndim == 2 else times[:, None]
    out = {}
    for i in range(len(diffs)):
        rec = tuple(c[i].item() if isinstance(c[i], np.generic) else c[i] for c in columns)
        key = (rec, tuple(int(x) for x in t2[i]))
        assert key not in out, "consolidated output has a duplicate (record, time)"
        assert diffs[i] != 0
        out[key] = int(diffs[i])
    return out


def _random_updates(seed: int, n: int, dims: int, with_str: bool):
    rng = _rng(seed)
    cols = [rng.integers(-5, 5, n, dtype=np.int64)]
    if with_str:
        cols.append(np.array([f"s{x}" for x in rng.integers(0, 4, n)], dtype=object))
    cols.append(rng.integers(0, 3, n).astype(np.uint64))
    times = rng.integers(0, 3, (n, dims), dtype=np.int64)
    diffs = rng.integers(-2, 3, n, dtype=np.int64)
    return cols, times, diffs


@pytest.mark.parametrize("n", [0, 1, 50, 300, 5000])
@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("with_str", [False, True])
def test_consolidate_matches_reference(n: int, dims: int, with_str: bool) -> None:
    cols, times, diffs = _random_updates(n * 10 + dims, n, dims, with_str)
    oc, ot, od = _core.consolidate(cols, times, diffs)
    assert ot.shape == (len(od), dims)
    assert [c.dtype for c in oc] == [c.dtype for c in cols]
    assert _as_dict(oc, ot, od) == _reference_consolidate(cols, times, diffs)
    if not with_str:
        # Numeric records come back sorted by value, then time (lexicographic).
        keys = [tuple(int(c[i]) for c in oc) + tuple(ot[i]) for i in range(len(od))]
        assert keys == sorted(keys)


def test_consolidate_one_dimensional_times_stay_1d() -> None:
    cols = [np.array([3, 1, 3, 1], dtype=np.int64)]
    oc, ot, od = _core.consolidate(cols, np.array([5, 0, 5, 1]), np.array([1, 2, 1, 3]))
    assert ot.ndim == 1
    np.testing.assert_array_equal(oc[0], [1, 1, 3])
    np.testing.assert_array_equal(ot, [0, 1, 5])
    np.testing.assert_array_equal(od, [2, 3, 2])


def test_consolidate_float_and_bool_columns() -> None:
    f = np.array([0.5, -0.0, 0.0, np.nan, np.nan, -1.5, 0.5])
    b = np.array([True, False, False, True, True, False, True])
    t = np.zeros(7, dtype=np.int64)
    d = np.array([1, 1, 1, 1, 1, 1, -1])
    (of, ob), _, od = _core.consolidate([f, b], t, d)
    # -0.0 == 0.0, NaNs are equal, (0.5, True) cancels.
    assert list(od) == [1, 2, 2]
    np.testing.assert_array_equal(of[:2], [-1.5, 0.0])
    assert np.isnan(of[2])
    np.testing.assert_array_equal(ob, [False, False, True])


def test_consolidate_cancels_everything() -> None:
    cols = [np.array([1, 1], dtype=np.int64), np.array(["a", "a"], dtype=object)]
    oc, ot, od = _core.consolidate(cols, np.array([[2, 3], [2, 3]]), np.array([4, -4]))
    assert len(od) == 0 and len(oc[0]) == 0 and ot.shape == (0, 2)


def test_consolidate_large_against_numpy() -> None:
    rng = _rng(99)
    n = 200_000
    k = rng.integers(0, 1000, n, dtype=np.int64)
    t = rng.integers(0, 10, n, dtype=np.int64)
    d = rng.integers(-1, 2, n, dtype=np.int64)
    (ok,), ot, od = _core.consolidate([k], t, d)
    flat = k * 10 + t
    u, inv = np.unique(flat, return_inverse=True)
    sums = np.bincount(inv, weights=d, minlength=len(u)).astype(np.int64)
    keep = sums != 0
    np.testing.assert_array_equal(ok, (u // 10)[keep])
    np.testing.assert_array_equal(ot, (u % 10)[keep])
    np.testing.assert_array_equal(od, sums[keep])


def test_consolidate_sums_through_large_partial_sums() -> None:
    # i64::MAX + 1 - 1 fits: only the total matters.
    cols = [np.zeros(3, dtype=np.int64)]
    d = np.array([I64.max, 1, -1], dtype=np.int64)
    _, _, od = _core.consolidate(cols, np.zeros(3, dtype=np.int64), d)
    assert list(od) == [I64.max]


@pytest.mark.parametrize("n", [0, 1, 300, 20_000])
def test_consolidate_pairs_matches_reference(n: int) -> None:
    rng = _rng(n + 5)
    k = rng.integers(-50, 50, n, dtype=np.int64)
    v = rng.integers(0, 20, n).astype(np.uint64)
    d = rng.integers(-2, 3, n, dtype=np.int64)
    ok, ov, od = _core.consolidate_pairs(k, v, d)
    acc: dict[tuple[int, int], int] = defaultdict(int)
    for a, b, c in zip(k.tolist(), v.tolist(), d.tolist(), strict=True):
        acc[(a, b)] += c
    expect = sorted((a, b, c) for (a, b), c in acc.items() if c != 0)
    assert list(zip(ok.tolist(), ov.tolist(), od.tolist(), strict=True)) == expect
    assert ok.dtype == np.int64 and ov.dtype == np.uint64


def test_facade_matches_core_and_accepts_lists_and_arrow() -> None:
    import pyarrow as pa

    k = [5, 3, 5, 1]
    v = pa.array([0, 9, 1, 2], type=pa.int32())
    ko, vo = K.sort_pairs(k, v)
    np.testing.assert_array_equal(ko, [1, 3, 5, 5])
    np.testing.assert_array_equal(vo, [2, 9, 0, 1])
    oc, ot, od = K.consolidate(
        [pa.array(["x", "y", "x"]), np.array([1, 2, 1], dtype=np.int16)],
        [[0], [1], [0]],
        pa.chunked_array([[1, 1], [1]]),
    )
    got = {(a, int(b), int(t), int(d)) for a, b, t, d in zip(*oc, ot[:, 0], od, strict=True)}
    assert got == {("x", 1, 0, 2), ("y", 2, 1, 1)}
    np.testing.assert_array_equal(K.sort_values(np.array([3, 1, 2], dtype=np.uint8)), [1, 2, 3])
    K.release_sort_buffers()
