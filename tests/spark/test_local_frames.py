"""The Arrow update-table operations of small incremental runs on the driver
(``local_frames.py``) and its layer cache, against plain-Python recomputations over random
tables (null keys, string keys, both sides larger in turn). No Spark session."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from ddflow.errors import DataError
from ddflow.spark.driver import local_frames as lf
from ddflow.spark.driver.local_continuation import LayerCache

pytestmark = pytest.mark.timeout(60)


def _table(rows: list[tuple[Any, ...]], types: list[pa.DataType]) -> pa.Table:
    n = len(types) - 2
    names = [f"_c{i}" for i in range(n)] + ["_t0", "_d"]
    cols = [pa.array([r[j] for r in rows], type=t) for j, t in enumerate(types)]
    return pa.table(cols, names=names)


def _rows(table: pa.Table | None) -> list[tuple[Any, ...]]:
    if table is None:
        return []
    return sorted(zip(*[table[c].to_pylist() for c in table.column_names], strict=True), key=repr)


def _consolidated(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    total: Counter[tuple[Any, ...]] = Counter()
    for r in rows:
        total[r[:-1]] += r[-1]
    return sorted(((*k, d) for k, d in total.items() if d), key=repr)


def _random(rng: random.Random, n: int, keys: list[Any], string: bool) -> pa.Table:
    rows = []
    for _ in range(n):
        v: Any = rng.choice(["a", "b", None]) if string else rng.randrange(4)
        rows.append((rng.choice(keys), v, rng.randrange(5), rng.choice([-2, -1, 1, 3])))
    types = [pa.int64(), pa.string() if string else pa.int64(), pa.int64(), pa.int64()]
    return _table(rows, types)


@pytest.mark.parametrize("seed", range(20))
def test_join_semi_and_consolidate_match_python(seed: int) -> None:
    rng = random.Random(seed)
    keys: list[Any] = [None, 1, 2, 3, 4, 5]
    left = _random(rng, rng.randrange(1, 40), keys, string=True)
    right = _random(rng, rng.randrange(1, 40), keys, string=False)
    # Join on the first column: a null key never matches; time the greatest, diff the product.
    want = []
    for lk, lv, lt, ld in _rows(left):
        for rk, rv, rt, rd in _rows(right):
            if lk is not None and lk == rk:
                want.append((lk, lv, rv, max(lt, rt), ld * rd))
    got = lf.join_updates(left, right, 1, 2, 2, ["_t0"], False, "join")
    assert _consolidated(_rows(got)) == _consolidated(want)
    semi_want = [(lk, lv, t, d) for lk, lv, _rv, t, d in want]
    semi = lf.join_updates(left, right, 1, 2, 2, ["_t0"], True, "join")
    assert _consolidated(_rows(semi)) == _consolidated(semi_want)
    # A semi-join on keys is null-safe (a reduce's keys), on one and on two columns.
    ks = lf.key_set(right, 1)
    present = {r[0] for r in _rows(right)}
    assert _rows(lf.semi(left, ks, 1)) == [r for r in _rows(left) if r[0] in present]
    pairs = {(r[0], r[1]) for r in _rows(left) if rng.random() < 0.5}
    if pairs:
        keyset = pa.table(
            {
                "_c0": pa.array([p[0] for p in pairs], pa.int64()),
                "_c1": pa.array([p[1] for p in pairs], pa.string()),
            }
        )
        assert _rows(lf.semi(left, keyset, 2)) == [r for r in _rows(left) if r[:2] in pairs]
    assert _rows(lf.consolidate(left, "x")) == _consolidated(_rows(left))
    assert _rows(lf.negate(left)) == sorted(((*r[:-1], -r[-1]) for r in _rows(left)), key=repr)


def test_a_consolidated_sum_outside_int64_raises() -> None:
    big = 2**62
    table = _table([(1, 0, big), (1, 0, big)], [pa.int64(), pa.int64(), pa.int64()])
    with pytest.raises(DataError, match="leaves int64"):
        lf.consolidate(table, "sum")
    table = _table([(1, 0, big)], [pa.int64(), pa.int64(), pa.int64()])
    with pytest.raises(DataError, match="a join's diff product leaves int64"):
        lf.join_updates(table, table, 1, 1, 1, ["_t0"], False, "a join")


def test_the_layer_cache_drops_the_least_recently_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDFLOW_SPARK_LAYER_CACHE_MB", "1")
    cache = LayerCache()
    loads: list[str] = []

    def load(name: str) -> pa.Table:
        loads.append(name)
        return pa.table({"x": pa.array(range(50_000), pa.int64())})  # 400 kB

    for name in ["a", "b", "a", "c", "a", "b"]:
        table = cache.get(name, lambda name=name: load(name))  # type: ignore[misc]
        assert table is not None and table.num_rows == 50_000
    # a, b fit; c pushes out b (a was used since); b is read again.
    assert loads == ["a", "b", "c", "b"]
