"""The Trace / TraceHandle bindings against a naive model: a list of (record, time, diff)
accumulated at probe times in the future of the compaction frontier."""

from __future__ import annotations

import gc
import itertools
from collections import defaultdict

import numpy as np
import pytest

from ddflow import _core
from ddflow import kernels as K
from ddflow.errors import InvalidValueError, TimeError, UnsortedInputError

Model = list[tuple[tuple, tuple, int]]


def _rows(cols: list[np.ndarray]) -> list[tuple]:
    return list(zip(*[c.tolist() for c in cols], strict=True)) if cols else []


def _model_from(cols: list[np.ndarray], times: np.ndarray, diffs: np.ndarray) -> Model:
    t2 = (times if times.ndim == 2 else times[:, None]).tolist()
    return [(r, tuple(t), int(d)) for r, t, d in zip(_rows(cols), t2, diffs.tolist(), strict=True)]


def _acc(model: Model, probe: tuple) -> dict[tuple, int]:
    out: dict[tuple, int] = defaultdict(int)
    for r, t, d in model:
        if all(a <= b for a, b in zip(t, probe, strict=True)):
            out[r] += d
    return {r: d for r, d in out.items() if d != 0}


def _consolidated(model: Model) -> dict[tuple, int]:
    out: dict[tuple, int] = defaultdict(int)
    for r, t, d in model:
        out[(r, t)] += d
    return {k: d for k, d in out.items() if d != 0}


def _probes(dims: int, hi: int) -> list[tuple]:
    return list(itertools.product(range(hi + 1), repeat=dims))


def _random_batch(rng: np.random.Generator, n: int, dims: int, t_lo: int, t_hi: int, kinds):
    cols = []
    for kind in kinds:
        if kind == "int64":
            cols.append(rng.integers(-6, 6, n, dtype=np.int64))
        elif kind == "str":
            cols.append(np.array([f"v{x}" for x in rng.integers(0, 5, n)], dtype=object))
        elif kind == "uint64":
            cols.append(rng.integers(0, 4, n).astype(np.uint64) << np.uint64(40))
        elif kind == "float64":
            cols.append(rng.integers(0, 3, n) / 2)
        elif kind == "bool":
            cols.append(rng.integers(0, 2, n).astype(bool))
    times = rng.integers(t_lo, t_hi, (n, dims), dtype=np.int64)
    diffs = rng.choice(np.array([-1, 1, 1, 2], dtype=np.int64), n)
    return cols, times, diffs


KIND_SETS = [
    ("int64", "int64"),
    ("str", "str"),
    ("int64", "str"),
    ("str", "int64"),
    ("int64", "str", "uint64"),
    ("uint64", "float64", "bool"),
    ("int64",),
]


@pytest.mark.parametrize("kinds", KIND_SETS)
@pytest.mark.parametrize("dims", [1, 2])
def test_from_columns_roundtrip(kinds: tuple[str, ...], dims: int) -> None:
    rng = np.random.default_rng(len(kinds) * 10 + dims)
    cols, times, diffs = _random_batch(rng, 400, dims, 0, 4, kinds)
    trace = K.Trace.from_columns(cols, 1, times, diffs)
    assert trace.dtypes == list(kinds) and trace.key_columns == 1 and trace.time_dims == dims
    oc, ot, od = trace.to_columns()
    assert [c.dtype for c in oc] == [c.dtype for c in cols]
    assert ot.shape == (len(od), dims)
    got = _model_from(oc, ot, od)
    assert _consolidated(got) == _consolidated(_model_from(cols, times, diffs))
    assert len(got) == len(_consolidated(got))  # no duplicates
    assert len(trace) == trace.len() == len(od)


@pytest.mark.parametrize("kinds", [("int64", "int64"), ("str", "int64", "str")])
@pytest.mark.parametrize("dims", [1, 2])
def test_inserts_and_compaction_match_model(kinds: tuple[str, ...], dims: int) -> None:
    rng = np.random.default_rng(dims * 31 + len(kinds))
    trace = K.Trace(list(kinds), key_columns=1, time_dims=dims)
    model: Model = []
    for rnd in range(12):
        cols, times, diffs = _random_batch(rng, 150, dims, rnd, rnd + 3, kinds)
        trace.insert(cols, times, diffs)
        model += _model_from(cols, times, diffs)
        if rnd % 3 == 2:
            frontier = [rnd - 1] + [1] * (dims - 1)
            trace.advance_compaction([frontier])
        trace.exert(1000)
        oc, ot, od = trace.to_columns()
        got = _model_from(oc, ot, od)
        f = trace.compaction_frontier()
        for p in _probes(dims, rnd + 3):
            if all(x >= y for x, y in zip(p, f[0], strict=True)):
                assert _acc(got, p) == _acc(model, p), (rnd, p)
    trace.exert()
    assert trace.n_batches() == 1


def test_compaction_bounds_stored_updates() -> None:
    rng = np.random.default_rng(7)
    trace = K.Trace(["int64", "int64"], 1)
    present: dict[tuple[int, int], int] = {}
    pairs = [(int(a), int(b)) for a, b in rng.integers(0, 30, (100, 2))]
    max_len = 0
    t = 0
    for _ in range(300):
        ks, vs, ds = [], [], []
        for _ in range(20):
            p = pairs[int(rng.integers(0, len(pairs)))]
            d = -1 if present.get(p, 0) > 0 else 1
            present[p] = present.get(p, 0) + d
            ks.append(p[0])
            vs.append(p[1])
            ds.append(d)
        trace.insert([np.array(ks), np.array(vs)], np.full(20, t), np.array(ds))
        t += 1
        trace.advance_compaction(t)
        max_len = max(max_len, len(trace))
    assert max_len < 1500, max_len  # 6000 updates inserted over 100 distinct pairs
    oc, _, od = trace.to_columns()
    expect = {p: c for p, c in present.items() if c}
    assert dict(zip(_rows(oc), od.tolist(), strict=True)) == expect


def test_handles_hold_back_compaction() -> None:
    trace = K.Trace(["int64", "int64"], 1)
    for t in range(5):
        trace.insert([np.array([1]), np.array([t])], np.array([t]), np.array([1]))
    h = trace.handle()
    assert trace.readers() == 2
    trace.advance_compaction(4)
    trace.exert()
    # The handle still sees every original time.
    _, ht, _ = h.to_columns()
    assert sorted(ht[:, 0].tolist()) == [0, 1, 2, 3, 4]
    # The trace's own reads are advanced to its frontier.
    _, tt, td = trace.to_columns()
    assert tt[:, 0].tolist() == [4] * 5 and td.tolist() == [1] * 5
    h.advance_compaction(2)
    assert h.compaction_frontier() == [[2]]
    h.release()
    assert h.released and trace.readers() == 1
    h.release()  # idempotent
    with pytest.raises(InvalidValueError, match="released"):
        h.to_columns()
    # Going backwards is an error.
    with pytest.raises(TimeError):
        trace.advance_compaction(3)


def test_handle_context_manager_and_gc_release() -> None:
    trace = K.Trace.from_static_pairs(np.array([1, 2]), np.array([3, 4]))
    with trace.handle() as h:
        assert trace.readers() == 2
        assert len(h) == 2
        assert h.dtypes == ["int64", "int64"]
    assert h.released and trace.readers() == 1
    raw = trace.raw.handle()
    assert trace.readers() == 2
    del raw
    gc.collect()
    assert trace.readers() == 1


def test_read_keys_key_history_read_range_int() -> None:
    rng = np.random.default_rng(11)
    k = rng.integers(-20, 20, 2000, dtype=np.int64)
    v = rng.integers(0, 50, 2000, dtype=np.int64)
    t = rng.integers(0, 3, 2000, dtype=np.int64)
    trace = K.Trace.from_columns([k, v], 1, t)
    model = _model_from([k, v], t, np.ones(2000, dtype=np.int64))
    cons = _consolidated(model)

    def expect(pred) -> dict:
        return {kk: d for kk, d in cons.items() if pred(kk[0][0])}

    q = np.array([5, -3, 5, 999, 0, -20], dtype=np.int64)
    oc, ot, od = trace.read_keys([q])
    got = _consolidated(_model_from(oc, ot, od))
    assert got == expect(lambda key: key in {5, -3, 0, -20})
    vc, vt, vd = trace.key_history(-3)
    assert len(vc) == 1
    hist = {
        ((-3, a), (b,)): c
        for a, b, c in zip(vc[0].tolist(), vt[:, 0].tolist(), vd.tolist(), strict=True)
    }
    assert hist == expect(lambda key: key == -3)
    assert trace.key_history((123,))[2].size == 0
    for lo, hi in [(-5, 5), (None, 0), (0, None), (-100, -10), (3, 3), (None, None), (7, 2)]:
        rc, rt, rd = trace.read_range(lo, hi)
        keys = rc[0].tolist()
        assert keys == sorted(keys)  # value order, negatives first
        lo_ = -(10**9) if lo is None else lo
        hi_ = 10**9 if hi is None else hi
        want = expect(lambda key, a=lo_, b=hi_: a <= key < b)
        assert _consolidated(_model_from(rc, rt, rd)) == want


def test_read_range_uint64_and_multi_column_keys() -> None:
    k = np.array([2**63 + 5, 3, 2**40, 3], dtype=np.uint64)
    v = np.array(["a", "b", "c", "d"], dtype=object)
    trace = K.Trace.from_columns([k, v], 1)
    rc, _, _ = trace.read_range(4, None)
    assert rc[0].tolist() == [2**40, 2**63 + 5]
    rc, _, _ = trace.read_range(None, 4)
    assert rc[0].tolist() == [3, 3] and sorted(rc[1].tolist()) == ["b", "d"]
    # Two key columns (str, int64): lookups by tuple and by columns.
    a = np.array(["x", "y", "x", "x"], dtype=object)
    b = np.array([1, 1, 2, 1], dtype=np.int64)
    c = np.array([10.0, 20.0, 30.0, 40.0])
    t2 = K.Trace.from_columns([a, b, c], 2)
    vc, _, vd = t2.key_history(("x", 1))
    assert sorted(vc[0].tolist()) == [10.0, 40.0] and vd.tolist() == [1, 1]
    oc, _, _ = t2.read_keys([np.array(["y", "x"], dtype=object), np.array([1, 2])])
    assert sorted(zip(oc[0].tolist(), oc[1].tolist(), oc[2].tolist(), strict=False)) == [
        ("x", 2, 30.0),
        ("y", 1, 20.0),
    ]
    with pytest.raises(_core_errors().SchemaTypeError):
        t2.read_range(0, 1)


def _core_errors():
    import ddflow.errors

    return ddflow.errors


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_from_static_pairs_matches_reference(dtype) -> None:
    rng = np.random.default_rng(5)
    src = rng.integers(0, 300, 5000).astype(dtype)
    dst = rng.integers(0, 300, 5000).astype(dtype)
    trace = K.Trace.from_static_pairs(src, dst)
    (os_, od_), ot, od = trace.to_columns()
    assert os_.dtype == dtype and od_.dtype == dtype
    pairs, counts = np.unique(np.stack([src, dst], 1), axis=0, return_counts=True)
    np.testing.assert_array_equal(os_, pairs[:, 0])
    np.testing.assert_array_equal(od_, pairs[:, 1])
    np.testing.assert_array_equal(od, counts)
    assert (ot == 0).all() and ot.shape == (len(od), 1)
    assert trace.n_batches() == 1


def test_from_static_pairs_wide_and_negative_ids() -> None:
    rng = np.random.default_rng(6)
    ids = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 100, dtype=np.int64)
    src = ids[rng.integers(0, 100, 3000)]
    dst = ids[rng.integers(0, 100, 3000)]
    trace = K.Trace.from_static_pairs(src, dst)
    (os_, od_), _, od = trace.to_columns()
    got = defaultdict(int)
    for a, b, c in zip(os_.tolist(), od_.tolist(), od.tolist(), strict=True):
        got[(a, b)] += c
    expect = defaultdict(int)
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        expect[(a, b)] += 1
    assert got == expect
    # Trace order is by two's-complement word: non-negative ids first.
    words = os_.view(np.uint64)
    assert (np.diff(words.astype(object)) >= 0).all()
    # One key column per src value, read back by key.
    key = int(src[0])
    vc, _, vd = trace.key_history(key)
    assert sum(vd.tolist()) == int((src == key).sum())


def test_from_static_pairs_str_ids_and_empty() -> None:
    src = np.array(["a", "b", "a", "a"], dtype=object)
    dst = np.array(["x", "y", "x", "z"], dtype=object)
    trace = K.Trace.from_static_pairs(src, dst)
    (os_, od_), _, od = trace.to_columns()
    assert sorted(zip(os_.tolist(), od_.tolist(), od.tolist(), strict=False)) == [
        ("a", "x", 2),
        ("a", "z", 1),
        ("b", "y", 1),
    ]
    assert trace.dtypes == ["str", "str"]
    empty = K.Trace.from_static_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64))
    assert len(empty) == 0 and empty.to_columns()[2].size == 0


def test_static_graph_is_narrowed() -> None:
    rng = np.random.default_rng(8)
    n = 200_000
    src = rng.integers(0, 20_000, n)
    dst = rng.integers(0, 20_000, n)
    small = K.Trace.from_static_pairs(src, dst)
    assert small.heap_bytes() / n <= 8
    big = K.Trace.from_static_pairs(src + 2**40, dst + 2**40)
    assert 8 < big.heap_bytes() / n <= 16


def test_insert_sorted_and_unsorted() -> None:
    trace = K.Trace(["int64", "int64"], 1)
    k = np.array([1, 1, 2, 5], dtype=np.int64)
    v = np.array([0, 3, 1, 1], dtype=np.int64)
    trace.insert([k, v], np.array([0, 0, 1, 0]), sorted=True)
    assert len(trace) == 4
    with pytest.raises(UnsortedInputError, match="sorted"):
        trace.insert([k[::-1].copy(), v], np.array([1, 1, 1, 1]), sorted=True)


def test_insert_behind_the_compaction_frontier_is_a_time_error() -> None:
    trace = K.Trace(["int64"], 1, time_dims=2)
    trace.insert([np.array([1])], np.array([[0, 0]]))
    trace.advance_compaction([[2, 0], [0, 2]])
    trace.insert([np.array([1])], np.array([[2, 1]]))
    with pytest.raises(TimeError, match="compaction frontier"):
        trace.insert([np.array([1])], np.array([[1, 1]]))
    assert trace.compaction_frontier() == [[0, 2], [2, 0]]


def test_upper_argument() -> None:
    trace = K.Trace(["int64"], 1)
    assert trace.upper() == [[0]]
    trace.insert([np.array([1, 2])], np.array([0, 3]))
    assert trace.upper() == [[4]]
    trace.insert([np.array([1])], np.array([5]), upper=10)
    assert trace.upper() == [[10]]
    with pytest.raises(TimeError, match="upper"):
        trace.insert([np.array([1])], np.array([11]), upper=11)
    with pytest.raises(TimeError, match="upper"):
        trace.insert([np.array([1])], np.array([12]), upper=5)


def test_defaults_and_zero_diffs() -> None:
    trace = K.Trace(["str"], 1)
    trace.insert([np.array(["a", "b", "a"], dtype=object)])
    trace.insert([np.array(["a"], dtype=object)], diffs=np.array([-2]))
    oc, ot, od = trace.to_columns()
    assert oc[0].tolist() == ["b"] and ot.tolist() == [[0]] and od.tolist() == [1]
    assert "Trace(" in repr(trace) and "TraceHandle(" in repr(trace.raw.handle())


def test_core_classes_directly() -> None:
    t = _core.Trace(["int64", "str"], 1, 2)
    t.insert([np.array([3, 3]), np.array(["p", "q"], dtype=object)], np.array([[0, 1], [1, 0]]))
    assert t.len() == 2 and t.heap_bytes() > 0
    h = t.handle()
    assert isinstance(h, _core.TraceHandle)
    (k, s), times, d = h.to_columns()
    assert k.tolist() == [3, 3] and sorted(s.tolist()) == ["p", "q"]
