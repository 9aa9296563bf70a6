"""Arrow's logical types end to end on the embedded engine: dates, timestamps, durations,
decimals, narrow integers and float32 go in from Arrow and Python scalars, through
expressions and aggregates, and come out as the same Arrow types; results are checked
against DuckDB run on the same rows (decimal arithmetic, aggregates, date functions) and
Python's ``datetime`` (calendar offsets)."""

from __future__ import annotations

import datetime
import random
from decimal import ROUND_HALF_UP, Decimal

import duckdb
import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.errors import InvalidValueError, SchemaTypeError

D = Decimal


def _final(capture: dd.Capture) -> list[tuple[object, ...]]:
    """The capture's accumulated rows (each repeated by its count), sorted by text."""
    table = capture.updates()
    cols = [c for c in table.column_names if c not in ("time", "diff")]
    acc: dict[tuple[object, ...], int] = {}
    for row in table.to_pylist():
        key = tuple(row[c] for c in cols)
        acc[key] = acc.get(key, 0) + row["diff"]
    out = [k for k, n in acc.items() for _ in range(n)]
    assert all(n >= 0 for n in acc.values())
    return sorted(out, key=repr)


def _run(schema: pa.Schema, table: pa.Table, build):  # type: ignore[no-untyped-def]
    flow = dd.Dataflow()
    inp, c = flow.new_input(schema)
    capture = build(c).capture()
    inp.update_batch(table, times=[0] * table.num_rows)
    inp.advance_to(1)
    flow.run_until(1)
    return capture


def _random_table(seed: int, n: int = 200) -> pa.Table:
    rng = random.Random(seed)

    def maybe(v: object) -> object:
        return None if rng.random() < 0.1 else v

    rows = {
        "k": [rng.randrange(5) for _ in range(n)],
        "d": [
            maybe(datetime.date(1992, 1, 1) + datetime.timedelta(days=rng.randrange(2600)))
            for _ in range(n)
        ],
        "p": [maybe(D(rng.randrange(-(10**7), 10**7)) / 100) for _ in range(n)],
        "q": [maybe(D(rng.randrange(0, 11)) / 100) for _ in range(n)],
        "ts": [
            maybe(datetime.datetime(2020, 1, 1) + datetime.timedelta(seconds=rng.randrange(10**8)))
            for _ in range(n)
        ],
    }
    return pa.table(
        {
            "k": pa.array(rows["k"], pa.int32()),
            "d": pa.array(rows["d"], pa.date32()),
            "p": pa.array(rows["p"], pa.decimal128(12, 2)),
            "q": pa.array(rows["q"], pa.decimal128(12, 2)),
            "ts": pa.array(rows["ts"], pa.timestamp("us")),
        }
    )


def test_types_round_trip_with_nulls() -> None:
    table = pa.table(
        {
            "i8": pa.array([1, None, -128], pa.int8()),
            "u32": pa.array([0, 4_000_000_000, None], pa.uint32()),
            "f32": pa.array([1.5, None, -0.25], pa.float32()),
            "d": pa.array([datetime.date(1970, 1, 1), None, datetime.date(1, 1, 1)], pa.date32()),
            "ts": pa.array([0, None, -1], pa.timestamp("ns", tz="UTC")),
            "dur": pa.array(
                [datetime.timedelta(days=2), None, datetime.timedelta(0)], pa.duration("ms")
            ),
            "dec": pa.array([D("-1.05"), None, D("99999999.99")], pa.decimal128(10, 2)),
            "s": pa.array(["a", None, "c"], pa.string_view()),
        }
    )
    want = table.set_column(7, "s", table["s"].cast(pa.string()))
    for declared in (True, False):
        flow = dd.Dataflow()
        inp, c = flow.new_input(table.schema if declared else tuple(table.column_names))
        capture = c.capture()
        inp.update_batch(table, times=[0, 0, 0])
        inp.advance_to(1)
        flow.run_until(1)
        out = capture.updates().select(table.column_names)
        assert sorted(out.to_pylist(), key=repr) == sorted(want.to_pylist(), key=repr)
        if declared:
            assert out.schema == want.schema
        else:
            # Undeclared narrow integers and float32 widen to int64 / float64, as numpy's do;
            # dates, timestamps, durations and decimals keep their types.
            widened = {"i8": pa.int64(), "u32": pa.int64(), "f32": pa.float64()}
            for field in want.schema:
                assert out.schema.field(field.name).type == widened.get(field.name, field.type)


def test_declared_schema_and_python_scalars() -> None:
    flow = dd.Dataflow()
    schema = pa.schema([("d", pa.date32()), ("p", pa.decimal128(12, 2)), ("k", pa.int16())])
    inp, c = flow.new_input(schema)
    capture = c.capture()
    inp.update_at((datetime.date(1995, 3, 15), D("12.5"), 7), time=0)
    inp.update_at((None, None, None), time=0)
    # Arrow columns of other widths convert when nothing is lost.
    inp.update_batch(
        pa.table(
            {
                "d": pa.array([datetime.date(2000, 1, 1)]),
                "p": pa.array([3], pa.int64()),
                "k": pa.array([3], pa.int64()),
            }
        ),
        times=[0],
    )
    with pytest.raises(InvalidValueError, match="column 'k'"):
        inp.update_at((datetime.date(2000, 1, 1), D("1"), 70_000), time=0)
    with pytest.raises(InvalidValueError, match="column 'p'"):
        inp.update_at((datetime.date(2000, 1, 1), D("1.234"), 1), time=0)
    with pytest.raises(SchemaTypeError, match="column 'd'"):
        inp.update_batch(
            pa.table({"d": pa.array([1.5]), "p": pa.array([1]), "k": pa.array([1])}), times=[0]
        )
    inp.advance_to(1)
    flow.run_until(1)
    table = capture.updates()
    assert table.schema.field("p").type == pa.decimal128(12, 2)
    assert table.schema.field("k").type == pa.int16()
    assert _final(capture) == sorted(
        [
            (datetime.date(1995, 3, 15), D("12.50"), 7),
            (None, None, None),
            (datetime.date(2000, 1, 1), D("3.00"), 3),
        ],
        key=repr,
    )


def test_decimal_values_beyond_64_bits_are_refused() -> None:
    flow = dd.Dataflow()
    inp, _ = flow.new_input(("p",))
    big = pa.array([D("1"), D(10**20)], pa.decimal128(38, 0))
    with pytest.raises(InvalidValueError, match=r"column 'p'.*row 1"):
        inp.update_batch(pa.table({"p": big}), times=[0, 0])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_decimal_and_date_expressions_match_duckdb(seed: int) -> None:
    table = _random_table(seed)
    capture = _run(
        table.schema,
        table,
        lambda c: c.select(
            "k",
            (dd.col("p") * (1 - dd.col("q"))).alias("net"),
            (dd.col("p") + dd.col("q")).alias("s"),
            (dd.col("p") - dd.lit(D("0.005"))).alias("m"),
            (dd.col("d") <= dd.lit(datetime.date(1998, 12, 1))).alias("early"),
            dd.col("d").dt.year().alias("y"),
            dd.col("d").dt.month().alias("mo"),
            dd.col("d").dt.weekday().alias("wd"),
            dd.col("ts").dt.hour().alias("h"),
            (dd.col("ts") > dd.col("d")).alias("after"),
        ),
    )
    con = duckdb.connect()
    con.register("t", table)
    want = con.execute(
        """select k, p * (1 - q), p + q, p - 0.005, d <= date '1998-12-01', year(d),
                  month(d), isodow(d), hour(ts), ts > d from t"""
    ).fetchall()
    assert _final(capture) == sorted(want, key=repr)


@pytest.mark.parametrize("seed", [4, 5])
def test_group_by_aggregates_of_decimals_and_dates_match_duckdb(seed: int) -> None:
    table = _random_table(seed)
    capture = _run(
        table.schema,
        table,
        lambda c: c.group_by("k").agg(
            total=dd.sum("p"),
            avg=dd.mean("p"),
            lo=dd.min("d"),
            hi=dd.max("ts"),
            n=dd.count("p"),
        ),
    )
    con = duckdb.connect()
    con.register("t", table)
    rows = con.execute("select k, sum(p), min(d), max(ts), count(p) from t group by k").fetchall()
    # DuckDB's avg of a decimal is a double: the exact mean, at scale 2 + 4, half away from 0.
    want = [
        (
            k,
            total,
            None if n == 0 else (total / n).quantize(D("0.000001"), ROUND_HALF_UP),
            lo,
            hi,
            n,
        )
        for k, total, lo, hi, n in rows
    ]
    got = _final(capture)
    assert capture.updates().schema.field("total").type == pa.decimal128(38, 2)
    assert capture.updates().schema.field("avg").type == pa.decimal128(38, 6)
    assert got == sorted(want, key=repr)


def test_calendar_offsets_and_truncation() -> None:
    days = [datetime.date(2024, 1, 31), datetime.date(1995, 3, 15), datetime.date(2023, 12, 31)]
    table = pa.table({"d": pa.array(days, pa.date32())})
    capture = _run(
        table.schema,
        table,
        lambda c: c.select(
            "d",
            dd.col("d").dt.offset_by("1mo").alias("m1"),
            dd.col("d").dt.offset_by("-1y").alias("y1"),
            dd.col("d").dt.truncate("1q").alias("q"),
            dd.col("d").dt.epoch("d").alias("e"),
            (dd.col("d") + datetime.timedelta(days=1)).alias("t"),
        ),
    )
    got = {row[0]: row[1:] for row in _final(capture)}
    assert got[datetime.date(2024, 1, 31)][:3] == (
        datetime.date(2024, 2, 29),
        datetime.date(2023, 1, 31),
        datetime.date(2024, 1, 1),
    )
    assert got[datetime.date(1995, 3, 15)][2] == datetime.date(1995, 1, 1)
    assert (
        got[datetime.date(2023, 12, 31)][3]
        == (datetime.date(2023, 12, 31) - datetime.date(1970, 1, 1)).days
    )
    assert got[datetime.date(2023, 12, 31)][4] == datetime.datetime(2024, 1, 1)
    with pytest.raises(dd.errors.PlanError, match="duration string"):
        dd.col("d").dt.offset_by("3 months")


def test_casts_between_numeric_decimal_and_temporal_dtypes() -> None:
    table = pa.table(
        {
            "p": pa.array([D("1.25"), D("-1.25"), None], pa.decimal128(12, 2)),
            "d": pa.array([datetime.date(2000, 1, 2), datetime.date(1969, 12, 31), None]),
        }
    )
    capture = _run(
        table.schema,
        table,
        lambda c: c.select(
            dd.col("p").cast("decimal128(12, 1)").alias("p1"),
            dd.col("p").cast("int64").alias("i"),
            dd.col("p").cast("float64").alias("f"),
            dd.col("d").cast("timestamp[s]").alias("ts"),
            dd.col("d").cast("int32").alias("days"),
        ),
    )
    assert _final(capture) == sorted(
        [
            (D("1.3"), 1, 1.25, datetime.datetime(2000, 1, 2), 10958),
            (D("-1.3"), -1, -1.25, datetime.datetime(1969, 12, 31), -1),
            (None, None, None, None, None),
        ],
        key=repr,
    )


def test_decimal_overflow_is_an_error_update() -> None:
    table = pa.table({"p": pa.array([D("90000000000000000.00"), D("1.00")], pa.decimal128(19, 2))})
    flow = dd.Dataflow()
    inp, c = flow.new_input(table.schema)
    out = c.select((dd.col("p") * dd.col("p")).alias("sq")).capture(errors="collect")
    inp.update_batch(table, times=[0, 0])
    inp.advance_to(1)
    flow.run_until(1)
    assert _final(out) == [(D("1.0000"),)]
    errors = flow.errors_at(0)
    assert len(errors) == 1
    assert "overflow" in errors[0]["message"]
    assert "select" in errors[0]["operator"]
    assert "p=90000000000000000.00" in str(errors[0]["values"]) or "90000000000000000.00" in str(
        errors[0]
    )


@pytest.mark.parametrize("seed", [6, 7])
def test_count_distinct_matches_duckdb_through_retractions(seed: int) -> None:
    rng = random.Random(seed)
    flow = dd.Dataflow()
    inp, c = flow.new_input({"k": "int64", "u": "int64", "x": "int64"})
    capture = c.group_by("k").agg(users=dd.count_distinct("u"), n=dd.count()).capture()
    live: list[tuple[int, int | None, int]] = []
    con = duckdb.connect()
    for t in range(6):
        for _ in range(30):
            if live and rng.random() < 0.3:
                row = live.pop(rng.randrange(len(live)))
                inp.update_at(row, time=t, diff=-1)
            else:
                u = None if rng.random() < 0.1 else rng.randrange(6)
                row = (rng.randrange(3), u, rng.randrange(100))
                live.append(row)
                inp.update_at(row, time=t)
        inp.advance_to(t + 1)
        flow.run_until(t + 1)
        table = pa.table(
            {"k": [r[0] for r in live], "u": pa.array([r[1] for r in live], pa.int64())}
        )
        con.register("t", table)
        want = con.execute("select k, count(distinct u), count(*) from t group by k").fetchall()
        assert _final_at(capture, t) == sorted(want, key=repr)


def _final_at(capture: dd.Capture, t: int) -> list[tuple[object, ...]]:
    table = capture.updates()
    rows = [r for r in table.to_pylist() if r["time"] <= t]
    acc: dict[tuple[object, ...], int] = {}
    cols = [c for c in table.column_names if c not in ("time", "diff")]
    for row in rows:
        key = tuple(row[c] for c in cols)
        acc[key] = acc.get(key, 0) + row["diff"]
    return sorted([k for k, n in acc.items() for _ in range(n)], key=repr)


def test_casts_from_and_to_str_strict_and_lax() -> None:
    texts = [" 42 ", "-7", "x", None, "1995-03-15", "12.345"]
    table = pa.table({"s": pa.array(texts, pa.string())})
    strict = _run(
        table.schema,
        table,
        lambda c: c.filter(dd.col("s").str.contains("^ *-?[0-9]+ *$")).select(
            dd.col("s").cast("int16").alias("i")
        ),
    )
    assert _final(strict) == [(-7,), (42,)]
    lax = _run(
        table.schema,
        table,
        lambda c: c.select(
            "s",
            dd.col("s").cast("int64", strict=False).alias("i"),
            dd.col("s").cast("date32", strict=False).alias("d"),
            dd.col("s").cast("decimal128(10, 2)", strict=False).alias("p"),
            dd.col("s").cast("float64", strict=False).alias("f"),
        ),
    )
    got = {row[0]: row[1:] for row in _final(lax)}
    assert got[" 42 "] == (42, None, D("42.00"), 42.0)
    assert got["x"] == (None, None, None, None)
    assert got[None] == (None, None, None, None)
    assert got["1995-03-15"] == (None, datetime.date(1995, 3, 15), None, None)
    assert got["12.345"] == (None, None, D("12.35"), 12.345)
    # A strict cast of a str that does not parse is an error update naming it.
    flow = dd.Dataflow()
    inp, c = flow.new_input(table.schema)
    out = c.select(dd.col("s").cast("int64").alias("i")).capture(errors="collect")
    inp.update_batch(table, times=[0] * len(texts))
    inp.advance_to(1)
    flow.run_until(1)
    messages = [e["message"] for e in flow.errors_at(0)]
    assert any('"x" is not a valid int64' in m for m in messages), messages
    assert out.state().num_rows >= 0
    formatted = _run(
        pa.schema([("p", pa.decimal128(6, 2)), ("d", pa.date32()), ("f", pa.float64())]),
        pa.table(
            {
                "p": pa.array([D("-1.50")], pa.decimal128(6, 2)),
                "d": pa.array([datetime.date(2001, 2, 3)]),
                "f": pa.array([0.1]),
            }
        ),
        lambda c: c.select(*(dd.col(n).cast("str").alias(n) for n in ("p", "d", "f"))),
    )
    assert _final(formatted) == [("-1.50", "2001-02-03", "0.1")]
