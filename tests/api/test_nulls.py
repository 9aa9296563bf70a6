"""SQL nulls on the embedded engine: inputs with nulls (Arrow, numpy masked arrays, None),
captures returning Arrow nulls, the null expression nodes, joins and aggregates.

Nulls are one reserved word per dtype (``rust/ddflow-core/src/encoding.rs``); these tests
check that they cross the boundary both ways, group and join as SQL says, and that a null
reaching an operation without null semantics yet is an error update, never a wrong value.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.dtypes import NULL_WORDS

SCHEMA = {"k": "int64", "x": "float64", "b": "bool", "s": "str"}


def _flow() -> tuple[dd.Dataflow, dd.InputSession, dd.Collection]:
    flow = dd.Dataflow()
    inp, coll = flow.new_input(SCHEMA)
    return flow, inp, coll


def _run(flow: dd.Dataflow, *inputs: dd.InputSession, time: int = 1) -> None:
    for i in inputs:
        i.advance_to(time)
    flow.run_until(time)


def _rows(cap: dd.Capture) -> list[dict[str, Any]]:
    """The capture's state as sorted dicts (nulls as None, sorted first)."""
    rows = cap.state().to_pylist()
    return sorted(rows, key=lambda r: [(v is not None, v) for v in r.values()])


TABLE = pa.table(
    {
        "k": pa.array([1, None, 3, None]),
        "x": pa.array([None, 2.5, float("nan"), -0.0]),
        "b": pa.array([True, None, False, None]),
        "s": pa.array(["a", None, "c", ""]),
    }
)


def test_arrow_nulls_round_trip_through_a_capture() -> None:
    flow, inp, coll = _flow()
    cap = coll.capture()
    inp.update_batch(TABLE)
    _run(flow, inp)
    assert cap.updates().schema.field("k").type == pa.int64()
    rows = [{c: r[c] for c in SCHEMA} for r in cap.state().to_pylist()]
    assert _normal(rows) == _normal(TABLE.to_pylist())
    assert cap.state().column("k").null_count == 2
    assert cap.state().column("x").null_count == 1
    assert cap.state().column("b").null_count == 2
    assert cap.state().column("s").null_count == 1
    # NaN stays a value (not null), and so does the empty string.
    xs = cap.state().column("x").to_pylist()
    assert any(v is not None and v != v for v in xs)
    assert "" in cap.state().column("s").to_pylist()
    assert cap.at(0).num_rows == 4


def _normal(rows: list[dict[str, Any]]) -> list[str]:
    """Rows comparable as text: NaN as "nan", -0.0 as 0.0 (stored as 0.0), sorted."""

    def value(v: Any) -> Any:
        if isinstance(v, float):
            return "nan" if v != v else v + 0.0
        return v

    return sorted(repr({k: value(v) for k, v in r.items()}) for r in rows)


def test_update_at_none_and_the_fast_path() -> None:
    flow, inp, coll = _flow()
    cap = coll.capture()
    inp.update_at((1, 1.5, True, "a"), time=0)
    inp.update_at((None, None, None, None), time=0)
    inp.update_at((2, None, False, None), time=0, diff=2)
    _run(flow, inp)
    assert _rows(cap) == [
        {"k": None, "x": None, "b": None, "s": None, "diff": 1},
        {"k": 1, "x": 1.5, "b": True, "s": "a", "diff": 1},
        {"k": 2, "x": None, "b": False, "s": None, "diff": 2},
    ]


def test_none_before_the_dtype_is_known_is_refused() -> None:
    flow = dd.Dataflow()
    inp, _ = flow.new_input(("a",))
    with pytest.raises(dd.SchemaTypeError, match="column 'a'.*None.*dtype"):
        inp.update_at(None, time=0)


def test_int64_min_is_refused_at_the_boundary() -> None:
    flow, inp, _ = _flow()
    with pytest.raises(dd.InvalidValueError, match=r"column 'k'.*-9223372036854775808"):
        inp.update_at((-(2**63), 0.0, True, "a"), time=0)
    bad = np.array([5, -(2**63)], dtype=np.int64)
    cols = {"k": bad, "x": [0.0, 1.0], "b": [True, True], "s": ["a", "b"]}
    with pytest.raises(dd.InvalidValueError, match=r"column 'k'.*row 1"):
        inp.update_batch(cols)
    with pytest.raises(dd.InvalidValueError, match=r"column 'k'.*row 1"):
        inp.update_batch({**cols, "k": pa.array([None, -(2**63)], pa.int64())})


def test_masked_arrays_lists_and_polars() -> None:
    flow, inp, coll = _flow()
    cap = coll.capture()
    inp.update_batch(
        {
            "k": np.ma.masked_array([1, 2], mask=[False, True]),
            "x": [None, 1.0],
            "b": np.ma.masked_array([True, False], mask=[True, False]),
            "s": ["a", None],
        }
    )
    polars = pytest.importorskip("polars")
    frame = polars.DataFrame(
        {"k": [7, None], "x": [None, 2.0], "b": [None, True], "s": [None, "z"]}
    )
    inp.update_batch(frame)
    _run(flow, inp)
    assert _rows(cap) == [
        {"k": None, "x": 1.0, "b": False, "s": None, "diff": 1},
        {"k": None, "x": 2.0, "b": True, "s": "z", "diff": 1},
        {"k": 1, "x": None, "b": None, "s": "a", "diff": 1},
        {"k": 7, "x": None, "b": None, "s": None, "diff": 1},
    ]


def test_int_nulls_widen_to_a_float_column() -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"x": "float64"})
    cap = coll.capture()
    inp.update_batch({"x": pa.array([1, None], pa.int64())})
    _run(flow, inp)
    assert sorted(cap.state().column("x").to_pylist(), key=repr) == [1.0, None]


def test_null_words_match_the_core() -> None:
    # The Python mirror of encoding.rs's null words: a null crosses as exactly these.
    assert NULL_WORDS["int64"] == 1 << 63
    assert np.isnan(np.array([NULL_WORDS["float64"]], dtype=np.uint64).view(np.float64)[0])


def test_null_expressions() -> None:
    flow, inp, coll = _flow()
    cap = coll.select(
        "k",
        dd.col("x").fill_null(-1.0).alias("xf"),
        dd.col("s").is_null().alias("s_null"),
        dd.col("b").is_not_null().alias("b_set"),
        dd.coalesce(dd.col("k"), dd.lit(0)).alias("k0"),
        dd.coalesce(dd.col("x"), dd.col("k")).alias("xk"),
    ).capture()
    inp.update_batch(TABLE)
    _run(flow, inp)
    got = _normal(
        [
            {c: r[c] for c in ("k", "xf", "s_null", "b_set", "k0", "xk")}
            for r in cap.state().to_pylist()
        ]
    )
    # coalesce(x, k): a null x takes k (as float64); null where both are null: none here.
    assert got == _normal(
        [
            {"k": 1, "xf": -1.0, "s_null": False, "b_set": True, "k0": 1, "xk": 1.0},
            {"k": None, "xf": 2.5, "s_null": True, "b_set": False, "k0": 0, "xk": 2.5},
            {
                "k": 3,
                "xf": float("nan"),
                "s_null": False,
                "b_set": True,
                "k0": 3,
                "xk": float("nan"),
            },
            {"k": None, "xf": 0.0, "s_null": False, "b_set": False, "k0": 0, "xk": 0.0},
        ]
    )


def test_sql_null_semantics_in_expressions() -> None:
    flow, inp, coll = _flow()
    kept = coll.filter(dd.col("x") > 1.0).capture()  # a null predicate drops the row
    cap = coll.select(
        "s",
        (dd.col("k") * 2).alias("k2"),  # null in, null out
        (dd.col("k") > 1).alias("gt"),
        ((dd.col("k") > 1) | dd.col("b")).alias("either"),  # Kleene
        ((dd.col("k") > 1) & dd.col("b")).alias("both"),
        dd.when(dd.col("b")).then(1).otherwise(0).alias("w"),  # null condition: otherwise
        dd.col("s").str.to_uppercase().alias("up"),  # functions propagate
        (dd.col("k") // 0).alias("div"),  # fails, except where k is null
    ).capture(errors="collect")
    inp.update_batch(TABLE)
    _run(flow, inp)
    assert [r["x"] for r in _rows(kept)] == [2.5]
    rows = {r["s"]: r for r in cap.state().to_pylist()}
    assert set(rows) == {None, ""}  # the rows with k = 1 and 3 failed on // 0
    assert len(cap.errors().to_pylist()) == 2
    for r in rows.values():
        assert (r["k2"], r["gt"], r["div"]) == (None, None, None)
        assert r["either"] is None and r["both"] is None  # b is null too
        assert r["w"] == 0
    assert rows[""]["up"] == "" and rows[None]["up"] is None


def test_an_int64_result_of_the_null_word_is_an_overflow() -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"a": "int64"})
    cap = coll.select((dd.col("a") - 1).alias("a")).capture(errors="collect")
    inp.update_batch({"a": [-(2**63) + 1, 5]})
    _run(flow, inp)
    assert cap.state().column("a").to_pylist() == [4]
    assert "overflow" in str(cap.errors().to_pylist()[0]).lower()


def _keyed() -> tuple[dd.Dataflow, list[dd.InputSession], Any]:
    flow = dd.Dataflow()
    a_in, a = flow.new_input({"k": "int64", "x": "str"})
    b_in, b = flow.new_input({"k": "int64", "y": "int64"})
    return flow, [a_in, b_in], (a, b)


def _feed(inputs: list[dd.InputSession]) -> None:
    a_in, b_in = inputs
    a_in.update_batch({"k": [1, None, 2], "x": ["p", "q", "r"]})
    b_in.update_batch(
        {"k": pa.array([1, None, 3, 3], pa.int64()), "y": pa.array([10, 20, None, None])}
    )


def test_null_keys_never_match_in_joins() -> None:
    flow, inputs, (a, b) = _keyed()
    join = a.join(b, on="k").capture()
    eq = a.join(b, on="k", nulls_equal=True).capture()
    semi = a.semijoin(b, on="k").capture()
    anti = a.antijoin(b, on="k").capture()
    arranged = a.arrange_by_key("k").join(b.arrange_by_key("k")).capture()
    _feed(inputs)
    _run(flow, *inputs)
    assert _rows(join) == [{"k": 1, "x": "p", "y": 10, "diff": 1}]
    assert _rows(arranged) == [{"k": 1, "x": "p", "y": 10, "diff": 1}]
    assert _rows(eq) == [
        {"k": None, "x": "q", "y": 20, "diff": 1},
        {"k": 1, "x": "p", "y": 10, "diff": 1},
    ]
    assert _rows(semi) == [{"k": 1, "x": "p", "diff": 1}]
    # NOT EXISTS: the null key matches nothing, so its row stays.
    assert _rows(anti) == [{"k": None, "x": "q", "diff": 1}, {"k": 2, "x": "r", "diff": 1}]


def test_aggregates_skip_nulls_and_null_keys_group() -> None:
    flow, inputs, (_, b) = _keyed()
    grouped = (
        b.group_by("k")
        .agg(
            n=dd.count(),
            ny=dd.count("y"),
            s=dd.sum("y"),
            m=dd.mean("y"),
            lo=dd.min("y"),
            hi=dd.max("y"),
        )
        .capture()
    )
    single = b.reduce("k", dd.sum("y")).capture()
    distinct = b.select("y").distinct().capture()
    _feed(inputs)
    _run(flow, *inputs)
    assert _rows(grouped) == [
        {"k": None, "n": 1, "ny": 1, "s": 20, "m": 20.0, "lo": 20, "hi": 20, "diff": 1},
        {"k": 1, "n": 1, "ny": 1, "s": 10, "m": 10.0, "lo": 10, "hi": 10, "diff": 1},
        {"k": 3, "n": 2, "ny": 0, "s": None, "m": None, "lo": None, "hi": None, "diff": 1},
    ]
    assert _rows(single) == [
        {"k": None, "y": 20, "diff": 1},
        {"k": 1, "y": 10, "diff": 1},
        {"k": 3, "y": None, "diff": 1},
    ]
    # distinct treats nulls as equal.
    assert _rows(distinct) == [
        {"y": None, "diff": 1},
        {"y": 10, "diff": 1},
        {"y": 20, "diff": 1},
    ]


def test_count_of_a_column_in_reduce_is_refused_clearly() -> None:
    flow = dd.Dataflow()
    _, b = flow.new_input({"k": "int64", "y": "int64"})
    with pytest.raises(dd.PlanError, match=r"count\('y'\).*group_by"):
        b.reduce("k", dd.count("y"))


def test_aggregates_match_duckdb_with_nulls() -> None:
    duckdb = pytest.importorskip("duckdb")
    rng = np.random.default_rng(7)
    n = 400
    keys = rng.integers(0, 6, n)
    vals = rng.integers(-50, 50, n)
    table = pa.table(
        {
            "k": pa.array(keys, mask=rng.random(n) < 0.15),
            "v": pa.array(vals, mask=rng.random(n) < 0.3),
        }
    )
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"k": "int64", "v": "int64"})
    cap = (
        coll.group_by("k")
        .agg(n=dd.count(), nv=dd.count("v"), s=dd.sum("v"), lo=dd.min("v"), hi=dd.max("v"))
        .capture()
    )
    inp.update_batch(table)
    _run(flow, inp)
    got = sorted(
        (tuple(r[c] for c in ("k", "n", "nv", "s", "lo", "hi")) for r in cap.state().to_pylist()),
        key=repr,
    )
    con = duckdb.connect()
    con.register("src", table)
    con.execute("CREATE TABLE t AS SELECT * FROM src")
    want = sorted(
        con.execute(
            "SELECT k, count(*), count(v), sum(v)::BIGINT, min(v), max(v) FROM t GROUP BY k"
        ).fetchall(),
        key=repr,
    )
    assert got == want


def test_nulls_reaching_a_python_function_are_error_updates() -> None:
    flow, inp, coll = _flow()
    cap = coll.select("k").map(lambda cols: {"k": cols["k"] + 1}).capture(errors="collect")
    inp.update_batch(TABLE)
    _run(flow, inp)
    assert sorted(cap.state().column("k").to_pylist()) == [2, 4]
    (error,) = cap.errors().to_pylist()
    assert "null int64" in error["message"] and error["diff"] == 2


def test_coalesce_aligns_decimal_scales_integers_floats_and_dates() -> None:
    """``coalesce``/``fill_null`` bring decimals of different scales, a decimal with an
    integer or a float, and a date with a timestamp to one form, as ``when`` does."""
    schema = pa.schema(
        [
            ("a", pa.decimal128(12, 2)),
            ("b", pa.decimal128(10, 3)),
            ("d", pa.date32()),
            ("t", pa.timestamp("us")),
        ]
    )
    flow = dd.Dataflow()
    inp, c = flow.new_input(schema)
    out = c.select(
        ab=dd.coalesce(dd.col("a"), dd.col("b")),
        a0=dd.col("a").fill_null(0),
        af=dd.col("a").fill_null(0.5),
        ba=dd.coalesce(dd.col("b"), dd.col("a"), dd.lit(Decimal("7.1"))),
        dt=dd.coalesce(dd.col("d"), dd.col("t")),
    ).capture()
    rows = [
        {"a": Decimal("1.25"), "b": Decimal("2.125"), "d": None, "t": dt.datetime(2000, 1, 2, 3)},
        {"a": None, "b": Decimal("-0.001"), "d": dt.date(1999, 12, 31), "t": None},
        {"a": None, "b": None, "d": None, "t": None},
    ]
    inp.update_batch(pa.Table.from_pylist(rows, schema=schema), times=0)
    inp.advance_to(1)
    flow.run_until(1)
    got = out.at(0)
    # SQL's rule, as `when` and `+` use it: the most integer digits (an int64 has 19) and
    # the largest scale.
    assert [f.type for f in got.schema][:5] == [
        pa.decimal128(13, 3),
        pa.decimal128(21, 2),
        pa.float64(),
        pa.decimal128(13, 3),
        pa.timestamp("us"),
    ]
    assert sorted(got.drop_columns(["diff"]).to_pylist(), key=repr) == sorted(
        [
            {"ab": Decimal("1.250"), "a0": Decimal("1.25"), "af": 1.25,
             "ba": Decimal("2.125"), "dt": dt.datetime(2000, 1, 2, 3)},
            {"ab": Decimal("-0.001"), "a0": Decimal("0.00"), "af": 0.5,
             "ba": Decimal("-0.001"), "dt": dt.datetime(1999, 12, 31)},
            {"ab": None, "a0": Decimal("0.00"), "af": 0.5, "ba": Decimal("7.100"), "dt": None},
        ],
        key=repr,
    )  # fmt: skip
