"""``join(how=...)`` against DuckDB: inner, left, right, outer, semi and anti joins.

Random histories with duplicate rows, null keys and retractions (counts stay non-negative, so
SQL's multiset semantics apply) go through every kind of join on one and two workers, with
and without ``nulls_equal``; the accumulated output at every time must equal DuckDB's answer
for the inputs at that time, recomputed from scratch. Then the shape of the outputs (key
columns, suffixes), the error messages, and the error update for a side whose dtypes are
not known yet.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import duckdb
import pytest

from .conftest import ddflow, requires_engine

pytestmark = [requires_engine, pytest.mark.timeout(120)]

TIMES = 8
HOWS = ("inner", "left", "right", "outer", "semi", "anti")

Row = tuple[Any, ...]
History = list[tuple[Row, int, int]]


def _history(rng: random.Random, n: int, value: Any) -> History:
    """``n`` updates: inserts of random rows (some keys null, some rows repeated) and
    retractions of rows present at that time."""
    out: History = []
    present: list[Row] = []
    for _ in range(n):
        t = rng.randrange(TIMES)
        live = [r for r, u, d in out if u <= t]
        if live and rng.random() < 0.3:
            r = rng.choice(live)
            # Retract only what is present at t and at every later time of the history.
            if _count(out, r, t) > 0 and all(_count(out, r, u) > 0 for u in range(t, TIMES)):
                out.append((r, t, -1))
                continue
        k = None if rng.random() < 0.15 else rng.randrange(5)
        r = (k, value(rng))
        present.append(r)
        out.append((r, t, rng.choice([1, 1, 2])))
    return out


def _count(hist: History, row: Row, t: int) -> int:
    return sum(d for r, u, d in hist if r == row and u <= t)


def _rows_at(hist: History, t: int) -> list[Row]:
    counts: Counter[Row] = Counter()
    for r, u, d in hist:
        if u <= t:
            counts[r] += d
    assert all(c >= 0 for c in counts.values())
    return [r for r, c in counts.items() for _ in range(c)]


def _sql(how: str, nulls_equal: bool) -> str:
    eq = "l.k IS NOT DISTINCT FROM r.k" if nulls_equal else "l.k = r.k"
    if how == "semi":
        return f"SELECT l.k, l.a FROM l WHERE EXISTS (SELECT 1 FROM r WHERE {eq})"
    if how == "anti":
        return f"SELECT l.k, l.a FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE {eq})"
    kind = {"inner": "INNER", "left": "LEFT", "right": "RIGHT", "outer": "FULL OUTER"}[how]
    return f"SELECT coalesce(l.k, r.k), l.a, r.b FROM l {kind} JOIN r ON {eq}"


def _state(cap: Any, t: int) -> Counter[Row]:
    table = cap.at(t).to_pydict()
    diffs = table.pop("diff")
    rows = list(zip(*table.values(), strict=True))
    out: Counter[Row] = Counter()
    for r, d in zip(rows, diffs, strict=True):
        out[r] += d
    return +out


@pytest.mark.parametrize("nulls_equal", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_every_time_matches_duckdb(seed: int, nulls_equal: bool) -> None:
    dd = ddflow()
    rng = random.Random(seed * 2 + nulls_equal)
    left = _history(rng, 40, lambda g: g.randrange(4))
    right = _history(rng, 30, lambda g: g.choice("xyz"))
    for workers in (1, 2):
        flow = dd.Dataflow(workers=workers)
        l_in, lc = flow.new_input({"k": int, "a": int})
        r_in, rc = flow.new_input({"k": int, "b": str})
        caps = {h: lc.join(rc, on="k", how=h, nulls_equal=nulls_equal).capture() for h in HOWS}
        for inp, hist in ((l_in, left), (r_in, right)):
            for r, t, d in hist:
                inp.update_at(r, time=t, diff=d)
            inp.advance_to(TIMES)
        flow.run_until(TIMES)
        con = duckdb.connect()
        for t in range(TIMES):
            con.execute("CREATE OR REPLACE TABLE l (k BIGINT, a BIGINT)")
            con.execute("CREATE OR REPLACE TABLE r (k BIGINT, b VARCHAR)")
            for name, hist in (("l", left), ("r", right)):
                rows = _rows_at(hist, t)
                if rows:
                    con.executemany(f"INSERT INTO {name} VALUES (?, ?)", rows)
            for how, cap in caps.items():
                want = Counter(con.execute(_sql(how, nulls_equal)).fetchall())
                assert _state(cap, t) == want, (workers, how, t)


def test_left_row_is_retracted_by_its_first_match_and_back() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    l_in, lc = flow.new_input({"k": int, "a": int})
    r_in, rc = flow.new_input({"k": int, "b": float})
    cap = lc.join(rc, on="k", how="left").capture()
    l_in.update_at((1, 10), time=0)
    l_in.update_at((None, 20), time=0)
    r_in.update_at((1, 1.5), time=1, diff=2)
    r_in.update_at((1, 1.5), time=2, diff=-2)
    r_in.update_at((None, 2.5), time=1)
    for i in (l_in, r_in):
        i.advance_to(3)
    flow.run_until(3)
    got = sorted(zip(*cap.updates().to_pydict().values(), strict=True), key=repr)
    assert got == sorted(
        [
            (1, 10, None, 0, 1),
            (None, 20, None, 0, 1),
            (1, 10, None, 1, -1),
            (1, 10, 1.5, 1, 2),
            (1, 10, 1.5, 2, -2),
            (1, 10, None, 2, 1),
        ],
        key=repr,
    )
    assert cap.updates().schema.field("b").type == "double"


def test_left_on_right_on_keeps_both_key_columns_and_computed_columns_get_dtypes() -> None:
    dd = ddflow()
    flow = dd.Dataflow(workers=2)
    l_in, lc = flow.new_input(("k", "v"))
    r_in, rc = flow.new_input(("id", "v"))
    right = rc.select(dd.col("id"), (dd.col("v") * 2).alias("v"), (dd.col("v") > 1).alias("big"))
    cap = lc.join(right, left_on="k", right_on="id", how="outer", suffixes=("_l", "_r"))
    assert cap.columns == ("k", "v_l", "id", "v_r", "big")
    out = cap.capture()
    l_in.update_at((1, "a"), time=0)
    l_in.update_at((2, "b"), time=0)
    r_in.update_at((2, 5), time=0)
    r_in.update_at((3, 1), time=0)
    for i in (l_in, r_in):
        i.advance_to(1)
    flow.run_until(1)
    assert _state(out, 0) == Counter(
        {(1, "a", None, None, None): 1, (2, "b", 2, 10, True): 1, (None, None, 3, 2, False): 1}
    )
    types = {f.name: str(f.type) for f in out.at(0).schema}
    assert types == {
        "k": "int64",
        "v_l": "string",
        "id": "int64",
        "v_r": "int64",
        "big": "bool",
        "diff": "int64",
    }


def test_on_gives_one_key_column_and_right_join_takes_the_right_key() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    l_in, lc = flow.new_input(("k", "a"))
    r_in, rc = flow.new_input(("k", "b"))
    j = lc.join(rc.arrange_by_key("k"), on="k", how="right")
    assert j.columns == ("k", "a", "b")
    out = j.capture()
    l_in.update_at((1, 1), time=0)
    r_in.update_at((2, 2), time=0)
    for i in (l_in, r_in):
        i.advance_to(1)
    flow.run_until(1)
    assert _state(out, 0) == Counter({(2, None, 2): 1})


def test_arrangement_join_how() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    l_in, lc = flow.new_input(("k", "a"))
    r_in, rc = flow.new_input(("k", "b"))
    out = lc.arrange_by_key("k").join(rc.arrange_by_key("k"), how="left").capture()
    l_in.update_at((1, 1), time=0)
    r_in.update_at((2, 2), time=0)
    for i in (l_in, r_in):
        i.advance_to(1)
    flow.run_until(1)
    assert _state(out, 0) == Counter({(1, 1, None): 1})


def test_errors() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    _, lc = flow.new_input(("k", "a"))
    _, rc = flow.new_input(("k", "a"))
    with pytest.raises(dd.PlanError, match="how must be one of"):
        lc.join(rc, on="k", how="full")  # type: ignore[arg-type]
    with pytest.raises(dd.PlanError, match="appear on both sides"):
        lc.join(rc, on="k", how="left")
    with pytest.raises(dd.PlanError, match="suffixes do not apply"):
        lc.join(rc, on="k", how="semi", suffixes=("_l", "_r"))
    with pytest.raises(dd.PlanError, match="nulls_equal must be a bool"):
        lc.join(rc, on="k", how="left", nulls_equal=1)  # type: ignore[arg-type]
    with pytest.raises(dd.PlanError, match="still leave duplicate"):
        lc.join(rc, left_on="a", right_on="k", how="outer", suffixes=("", ""))
    assert lc.join(rc, on="k", how="anti").columns == ("k", "a")
    with pytest.raises(dd.SchemaTypeError, match="needs a dtype"):
        dd.lit(None)


def test_typed_null_literal() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    inp, c = flow.new_input(("x",))
    e = dd.lit(None, "float64")
    assert repr(e) == 'lit(None, "float64")'
    out = c.select(dd.col("x"), e.alias("n"), dd.coalesce(e, dd.col("x")).alias("c")).capture()
    inp.update_at((3,), time=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert out.at(0).to_pylist() == [{"x": 3, "n": None, "c": 3.0, "diff": 1}]


def test_unknown_right_dtypes_are_an_error_update() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    l_in, lc = flow.new_input(("k", "a"))
    r_in, rc = flow.new_input(("k", "b"))
    cap = lc.join(rc, on="k", how="left").capture(errors="collect")
    l_in.update_at((1, 1), time=0)
    for i in (l_in, r_in):
        i.advance_to(1)
    flow.run_until(1)
    [err] = cap.errors_at(0)
    assert "no data of them has arrived yet" in str(err)


def test_left_join_pads_with_the_declared_dtypes_of_a_side_without_data() -> None:
    """A side that never received an update pads with the dtypes its input declared."""
    import datetime

    dd = ddflow()
    flow = dd.Dataflow()
    a_in, a = flow.new_input({"k": "int64", "x": "int64"})
    b_in, b = flow.new_input({"k": "int64", "y": "date32", "z": "decimal128(9, 2)"})
    out = a.join(b, on="k", how="left").capture()
    a_in.update_at((1, 10), time=0)
    a_in.advance_to(1)
    b_in.advance_to(1)
    flow.run_until(1)
    table = out.state()
    assert table.to_pylist() == [{"k": 1, "x": 10, "y": None, "z": None, "diff": 1}]
    assert str(table.schema.field("y").type) == "date32[day]"
    b_in.update_at((1, datetime.date(2000, 1, 1), None), time=1)
    a_in.advance_to(2)
    b_in.advance_to(2)
    flow.run_until(2)
    assert out.state().to_pylist() == [
        {"k": 1, "x": 10, "y": datetime.date(2000, 1, 1), "z": None, "diff": 1}
    ]
