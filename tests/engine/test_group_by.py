"""``group_by(...).agg(...)`` against the brute-force model and DuckDB.

Random multiset histories (counts may go negative; 1-D and 2-D times; 1 and 2 workers) go
through a keyed and a global ``group_by``; the captured updates and every ``at(t)`` on the
grid must equal the model's (``model.Aggs``), and the errors live at each time must be exactly
the model's undefined groups (``min``/``max`` without a positive value in a group whose
counts do not sum to 0). DuckDB computes the same aggregates with SQL over snapshots of histories
whose counts stay non-negative (where SQL's multiset semantics apply).
"""

from __future__ import annotations

import math
import random
from typing import Any

import duckdb
import numpy as np
import pytest

from . import model as m
from .conftest import (
    assert_matches_model,
    ddflow,
    engine_time,
    feed,
    new_flow,
    random_multiset_history,
    requires_engine,
)

pytestmark = [requires_engine, pytest.mark.timeout(60)]

COLUMNS = ("k", "x", "y")
MAX_TIME = {1: 5, 2: 2}
PARTS: tuple[tuple[str, str, str | None], ...] = (
    ("n", "count", None),
    ("s", "sum", "x"),
    ("avg", "mean", "y"),
    ("lo", "min", "x"),
    ("hi", "max", "y"),
    ("e", "sum", "__e"),
)


LINEAR_PARTS: tuple[tuple[str, str, str | None], ...] = (
    ("n", "count", None),
    ("s", "sum", "x"),
    ("avg", "mean", "y"),
    ("e", "sum", "__e"),
)
"""Counts and int64 sums / means only: with 1-D times the engine keeps running totals."""


def _aggs(dd: Any) -> dict[str, Any]:
    return {
        "n": dd.count(),
        "s": dd.sum("x"),
        "avg": dd.mean("y"),
        "lo": dd.min("x"),
        "hi": dd.max("y"),
        "e": dd.sum(dd.col("x") * 2 - dd.col("y")),
    }


def _with_e(rel: m.Rel) -> m.Rel:
    return m.with_columns(rel, __e=lambda r: r["x"] * 2 - r["y"])


def _keyed_model(rels: dict[str, m.Rel]) -> m.Rel:
    return m.reduce(_with_e(rels["a"]), "k", m.Aggs(PARTS))


def _global_model(rels: dict[str, m.Rel]) -> m.Rel:
    rel = m.with_columns(_with_e(rels["a"]), __g=lambda r: 0)
    out = m.reduce(rel, "__g", m.Aggs(PARTS))
    return m.select(out, **{name: (lambda r, n=name: r[n]) for name, _, _ in PARTS})


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("dims", [1, 2])
def test_running_totals_match_model(dims: int, seed: int) -> None:
    dd = ddflow()
    rng = random.Random(seed * 31 + dims)
    hist = random_multiset_history(
        rng, COLUMNS, dims=dims, n=30, domain=4, max_time=MAX_TIME[dims] * 2
    )
    flow = new_flow(dims)
    inp, c = flow.new_input(COLUMNS)
    parts = {n: a for n, a in _aggs(dd).items() if n in {p[0] for p in LINEAR_PARTS}}
    cap = c.group_by("k").agg(**parts).capture(errors="collect")
    feed(inp, hist, columns=COLUMNS, batch=seed % 2 == 1)
    inp.close()
    flow.run()
    res = m.evaluate(
        {"a": (COLUMNS, hist)}, lambda rels: m.reduce(_with_e(rels["a"]), "k", m.Aggs(LINEAR_PARTS))
    )
    assert_matches_model(cap, res, upto=MAX_TIME[dims] * 2)


def _undefined(hist: list[m.Update], t: m.Time, keyed: bool) -> int:
    """The number of present groups at ``t`` with an undefined part (an error each)."""
    rel = _with_e(m.Rel(COLUMNS, m.accumulate(hist, t)))
    cols = rel.columns
    groups: dict[Any, list[tuple[m.Record, int]]] = {}
    for r, c in rel.counts.items():
        key = r[0] if keyed else 0
        vals = tuple(v for i, v in enumerate(r) if not keyed or i != 0)
        groups.setdefault(key, []).append((vals, c))
    vcols = cols[1:] if keyed else cols
    return sum(m.Aggs(PARTS).undefined(vcols, g) for g in groups.values())


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "global"])
def test_group_by_matches_model(keyed: bool, dims: int, workers: int, seed: int) -> None:
    dd = ddflow()
    rng = random.Random(seed * 97 + dims * 7 + workers)
    hist = random_multiset_history(rng, COLUMNS, dims=dims, n=14, domain=4, max_time=MAX_TIME[dims])
    flow = new_flow(dims, workers=workers)
    inp, c = flow.new_input(COLUMNS)
    grouped = c.group_by("k") if keyed else c.group_by()
    cap = grouped.agg(**_aggs(dd)).capture(errors="collect")
    feed(inp, hist, columns=COLUMNS, batch=seed % 2 == 1)
    inp.close()
    flow.run()
    model = _keyed_model if keyed else _global_model
    res = m.evaluate({"a": (COLUMNS, hist)}, model)
    assert_matches_model(cap, res, upto=MAX_TIME[dims])
    for t in m.grid(dims, MAX_TIME[dims]):
        live = cap.errors_at(engine_time(t))
        assert sum(int(e["count"]) for e in live) == _undefined(hist, t, keyed), t
        assert all(e["count"] == 1 for e in live)


def _nonnegative_history(rng: random.Random, rows: int) -> list[tuple[tuple[Any, ...], int, int]]:
    """Inserts and deletes of present rows (so counts stay >= 0) of
    ``(k1, k2, price, disc, qty, d)``, one per time."""
    present: list[tuple[Any, ...]] = []
    out = []
    for t in range(rows):
        if present and rng.random() < 0.3:
            r = present.pop(rng.randrange(len(present)))
            out.append((r, t, -1))
        else:
            r = (
                rng.randrange(3),
                rng.choice(["a", "b"]),
                rng.randrange(1, 100) / 4,
                rng.choice([0.0, 0.25, 0.5]),
                rng.randrange(-5, 20),
                rng.choice(["apple", "kiwi", "fig", "Zed", "éclair"]),
            )
            present.append(r)
            out.append((r, t, 1))
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_group_by_matches_duckdb(seed: int) -> None:
    dd = ddflow()
    rng = random.Random(seed)
    hist = _nonnegative_history(rng, 60)
    cols = ("k1", "k2", "price", "disc", "qty", "d")
    flow = dd.Dataflow(workers=2)
    inp, c = flow.new_input(cols)
    cap = (
        c.group_by("k1", "k2")
        .agg(
            total=dd.sum(dd.col("price") * (1 - dd.col("disc"))),
            n=dd.count(),
            q=dd.sum("qty"),
            avg=dd.mean("qty"),
            lo=dd.min("d"),
            hi=dd.max("d"),
            top=dd.max("price"),
        )
        .capture()
    )
    for r, t, d in hist:
        inp.update_at(r, time=t, diff=d)
    inp.close()
    flow.run()
    con = duckdb.connect()
    for t in (0, 10, 25, 59):
        rows = [r for r, u, d in hist if u <= t for _ in range(d if d > 0 else 0)]
        for r, u, d in hist:
            if u <= t and d < 0:
                rows.remove(r)
        con.execute(
            "CREATE OR REPLACE TABLE t (k1 BIGINT, k2 VARCHAR, price DOUBLE, "
            "disc DOUBLE, qty BIGINT, d VARCHAR)"
        )
        if rows:
            con.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", rows)
        want = con.execute(
            "SELECT k1, k2, sum(price * (1 - disc)), count(*), sum(qty), avg(qty), min(d), "
            "max(d), max(price) FROM t GROUP BY k1, k2 ORDER BY k1, k2"
        ).fetchall()
        got_table = cap.at(t)
        got = sorted(zip(*(col.to_pylist() for col in got_table.columns), strict=True))
        assert [g[-1] for g in got] == [1] * len(got)
        assert len(got) == len(want), t
        for g, w in zip(got, want, strict=True):
            assert g[:2] == w[:2] and g[3:5] == w[3:5] and g[6:9] == w[6:9], (t, g, w)
            assert math.isclose(g[2], w[2], rel_tol=1e-12, abs_tol=1e-9), (t, g, w)
            assert math.isclose(g[5], w[5], rel_tol=1e-12), (t, g, w)


def test_global_aggregate_over_empty_and_cancelled_collections() -> None:
    """No row while the collection is empty (unlike SQL's count(*) = 0), nor while its counts
    sum to 0 (records that cancel in count, whatever their values)."""
    dd = ddflow()
    flow = dd.Dataflow()
    inp, c = flow.new_input({"x": "int64"})
    both = c.group_by().agg(n=dd.count(), s=dd.sum("x")).capture()
    with_mean = c.group_by().agg(dd.mean("x")).capture(errors="collect")
    inp.advance_to(1)
    flow.run_until(1)
    assert both.at(0).num_rows == 0 and with_mean.at(0).num_rows == 0
    inp.update_at((3,), time=1, diff=1)
    inp.update_at((5,), time=1, diff=-1)
    inp.update_at((2,), time=2, diff=2)
    inp.advance_to(3)
    flow.run_until(3)
    assert both.at(1).num_rows == 0
    assert with_mean.at(1).num_rows == 0
    assert with_mean.errors_at(1) == []
    assert both.at(2).to_pylist() == [{"n": 2, "s": 2, "diff": 1}]
    assert with_mean.at(2).to_pylist() == [{"x": 1.0, "diff": 1}]
    assert with_mean.errors_at(2) == []


def test_output_dtypes_and_order() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    inp, c = flow.new_input({"k": "str", "i": "int64", "f": "float64", "b": "bool"})
    out = (
        c.group_by("k")
        .agg(dd.sum("f"), dd.max("b"), si=dd.sum("i"), m=dd.mean("i"), n=dd.count(), lo=dd.min("k"))
        .capture()
    )
    inp.update_batch(
        {
            "k": np.array(["a", "a"], dtype=object),
            "i": np.array([1, 4]),
            "f": np.array([0.5, 0.25]),
            "b": np.array([False, True]),
        },
        times=0,
    )
    inp.advance_to(1)
    flow.run_until(1)
    table = out.at(0)
    assert table.column_names == ["k", "f", "b", "si", "m", "n", "lo", "diff"]
    assert [str(t) for t in table.schema.types[:7]] == [
        "string",
        "double",
        "bool",
        "int64",
        "double",
        "int64",
        "string",
    ]
    assert table.to_pylist() == [
        {"k": "a", "f": 0.75, "b": True, "si": 5, "m": 2.5, "n": 2, "lo": "a", "diff": 1}
    ]
