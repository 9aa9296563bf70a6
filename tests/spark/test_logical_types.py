"""Arrow's logical types on Spark: every case runs on the embedded engine and through
``run_on_spark`` and the whole output histories must be identical, Arrow types included
(Spark's results are read as Arrow: ``date``, ``timestamp`` in the session time zone,
``timestamp_ntz``, ``interval day to second``, ``decimal(p, s)``, ``int``).

Cases: every type passed through with nulls; decimal and date/timestamp expressions
(arithmetic, comparisons, ``.dt.*``, casts incl. ``strict=False``); ``group_by`` aggregates
(``sum``/``mean`` of decimals, ``min``/``max`` of dates and timestamps,
``count_distinct``) keyed by ints and by dates; a left join carrying dates and decimals; a
key-local region; binary keys, extremes and joins; a Python function (it gets a date as its
days); and what is refused: a decimal beyond 64 bits (naming the column) and an output dtype
Spark cannot hold (before any job).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import ddflow as dd
from ddflow.errors import SchemaTypeError
from ddflow.expr import col
from ddflow.spark import SparkResult, run_on_spark

pytestmark = pytest.mark.timeout(240)

UTC = dt.UTC
A_SPARK = T.StructType(
    [
        T.StructField("k", T.LongType()),
        T.StructField("d", T.DateType()),
        T.StructField("ts", T.TimestampType()),
        T.StructField("n", T.TimestampNTZType()),
        T.StructField("p", T.DecimalType(12, 2)),
        T.StructField("du", T.DayTimeIntervalType()),
        T.StructField("i", T.IntegerType()),
        T.StructField("s", T.StringType()),
    ]
)
A_ROWS: list[tuple[Any, ...]] = [
    # k, d, ts, n, p, du, i, s, time, diff
    (1, dt.date(1995, 3, 15), dt.datetime(1995, 3, 15, 12, 30, tzinfo=UTC),
     dt.datetime(1995, 3, 15, 1, 2, 3), Decimal("12.50"), dt.timedelta(hours=2), 7,
     "1995-03-15", 0, 1),
    (1, dt.date(1996, 1, 31), None, dt.datetime(2000, 1, 1), Decimal("-0.07"), None, None,
     "12.5", 0, 1),
    (2, None, dt.datetime(1970, 1, 1, tzinfo=UTC), None, None, dt.timedelta(days=-1, seconds=5),
     -3, None, 0, 1),
    (None, dt.date(1969, 12, 31), dt.datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC),
     dt.datetime(1969, 12, 31, 23, 59), Decimal("99999999.99"), dt.timedelta(0), 0, "oops",
     1, 1),
    (2, dt.date(1995, 3, 15), dt.datetime(1995, 3, 15, tzinfo=UTC), None, Decimal("0.01"),
     dt.timedelta(microseconds=1), 2**31 - 1, "1995-03-16", 1, 2),
    (1, dt.date(1996, 1, 31), None, dt.datetime(2000, 1, 1), Decimal("-0.07"), None, None,
     "12.5", 2, -1),
    (3, dt.date(2000, 2, 29), None, None, Decimal("3.33"), None, None, None, 2, 1),
]  # fmt: skip
B_SPARK = T.StructType(
    [
        T.StructField("k", T.LongType()),
        T.StructField("since", T.DateType()),
        T.StructField("rate", T.DecimalType(10, 3)),
        T.StructField("bin", T.BinaryType()),
    ]
)
B_ROWS: list[tuple[Any, ...]] = [
    (1, dt.date(1990, 1, 1), Decimal("1.125"), b"\x00\xff", 0, 1),
    (2, None, Decimal("-2.000"), b"", 0, 1),
    (2, dt.date(1990, 1, 1), None, None, 1, 1),
    (None, dt.date(2001, 1, 1), Decimal("0.001"), b"\xc3\xa9", 1, 1),
    (1, dt.date(1990, 1, 1), Decimal("1.125"), b"\x00\xff", 2, -1),
    (2, dt.date(1990, 1, 2), Decimal("1.000"), b"\x7f", 2, 1),
]


def _dtypes(tz: str) -> dict[str, dict[str, str]]:
    return {
        "a": {
            "k": "int64",
            "d": "date32",
            "ts": f"timestamp[us, tz={tz}]",
            "n": "timestamp[us]",
            "p": "decimal128(12, 2)",
            "du": "duration[us]",
            "i": "int32",
            "s": "str",
        },
        "b": {"k": "int64", "since": "date32", "rate": "decimal128(10, 3)", "bin": "binary"},
    }


Case = Callable[[dd.Collection, dd.Collection], list[dd.Collection]]


def _feed(ai: dd.InputSession, bi: dd.InputSession, types: dict[str, dict[str, str]]) -> None:
    """Feeds the rows of A and B (their own times and diffs) into the two inputs, and
    closes them."""
    for sess, schema, rows in ((ai, A_SPARK, A_ROWS), (bi, B_SPARK, B_ROWS)):
        names = schema.names
        cols = {
            c: pa.array([r[j] for r in rows], dd.logical_types.arrow_type(types[sess.name][c]))
            for j, c in enumerate(names)
        }
        times = np.array([r[len(names)] for r in rows], dtype=np.int64)
        diffs = np.array([r[len(names) + 1] for r in rows], dtype=np.int64)
        sess.update_batch(pa.table(cols), times=times, diffs=diffs)
        sess.close()


def _embedded(case: Case, tz: str) -> list[pa.Table]:
    flow = dd.Dataflow()
    types = _dtypes(tz)
    ai, a = flow.new_input(types["a"], name="a")
    bi, b = flow.new_input(types["b"], name="b")
    caps = [o.capture() for o in case(a, b)]
    _feed(ai, bi, types)
    flow.run()
    return [cap.updates() for cap in caps]


def _frames(spark: SparkSession) -> dict[str, DataFrame]:
    out = {}
    for name, schema, rows in (("a", A_SPARK, A_ROWS), ("b", B_SPARK, B_ROWS)):
        fields = [
            *schema.fields,
            T.StructField("time", T.LongType()),
            T.StructField("diff", T.LongType()),
        ]
        out[name] = spark.createDataFrame(rows, T.StructType(fields))
    return out


def _on_spark(
    spark: SparkSession, case: Case, **kwargs: Any
) -> tuple[list[pa.Table | None], SparkResult]:
    flow = dd.Dataflow()
    tz = _tz(spark)
    types = _dtypes(tz)
    ai, a = flow.new_input(types["a"], name="a")
    bi, b = flow.new_input(types["b"], name="b")
    outputs = case(a, b)
    dfs = _frames(spark)
    result = run_on_spark(spark, flow, {ai: dfs["a"], bi: dfs["b"]}, outputs, **kwargs)
    return [_arrow(result[o]) for o in outputs], result


def _arrow(df: DataFrame) -> pa.Table | None:
    """``df``'s rows as Arrow, in the types Spark gives Arrow (None when it has no row)."""
    # The class, not the frame: a Spark Connect DataFrame (pyspark 4.3) answers any attribute
    # with a Column.
    if callable(getattr(type(df), "_collect_as_arrow", None)):
        batches = df._collect_as_arrow()
        return pa.Table.from_batches(batches) if batches else None
    connect: Any = df  # a Spark Connect DataFrame
    table = connect._to_table()[0]
    return table if table.num_rows else None


def _tz(spark: SparkSession) -> str:
    return str(spark.conf.get("spark.sql.session.timeZone"))


def _rows(table: pa.Table) -> list[str]:
    return sorted(repr(tuple(r.values())) for r in table.to_pylist())


def check(spark: SparkSession, case: Case, **kwargs: Any) -> str:
    """Asserts the Spark run's outputs equal the embedded engine's, types and rows; returns
    how the run went (``explain()``)."""
    want = _embedded(case, _tz(spark))
    got, result = _on_spark(spark, case, **kwargs)
    for w, g in zip(want, got, strict=True):
        if g is None:  # no rows: Spark gave no batch
            assert w.num_rows == 0
            continue
        assert g.schema.names == w.schema.names
        assert [f.type for f in g.schema] == [f.type for f in w.schema], (g.schema, w.schema)
        assert _rows(g) == _rows(w)
    return result.explain()


DAY = dt.date(1995, 3, 15)

CASES: dict[str, Case] = {
    "passthrough": lambda a, b: [a, b, a.select("d", "p", "ts", x=col("k"))],
    "decimal": lambda a, b: [
        a.select(
            "k",
            mul=col("p") * 2,
            add=col("p") + dd.lit(Decimal("0.005")),
            div=col("p") / 3,
            neg=-col("p"),
            f=col("p").cast("float64"),
            r=col("p").cast("decimal128(14, 1)"),
            big=col("p") > dd.lit(Decimal("1")),
        ),
        a.filter(col("p") < 1),
    ],
    "dates": lambda a, b: [
        a.select(
            "k",
            y=col("d").dt.year(),
            wd=col("d").dt.weekday(),
            h=col("ts").dt.hour(),
            later=col("d") + col("du"),
            span=col("ts") - col("ts").dt.truncate("1d"),
            q=col("d").dt.offset_by("3mo"),
            mth=col("ts").dt.truncate("1mo"),
            ep=col("n").dt.epoch("s"),
            ds=col("d").cast("str"),
            cmp=col("d") < col("n"),
        ),
        a.filter(col("d") >= dd.lit(DAY)),
    ],
    # Compiled to Spark Columns (columns_logical.py): comparisons and null tests.
    "compiled": lambda a, b: [
        a.filter(col("d") >= dd.lit(DAY)),
        a.filter(col("p") < dd.lit(Decimal("0.05"))),
        a.filter(col("ts").is_null() | (col("ts") > col("ts"))),
        a.select(
            "k",
            "d",
            e=col("d") == dd.lit(DAY),
            lt=col("p") <= dd.lit(Decimal("12.500")),
            nn=col("n").is_not_null(),
            ts=col("ts") != col("ts"),
        ),
    ],
    "casts": lambda a, b: [
        a.select(
            "k",
            d=col("s").cast("date32", strict=False),
            p=col("s").cast("decimal128(10, 2)", strict=False),
            w=col("i").cast("int64"),
            i2=col("i") + 1,
            s2=col("p").cast("str"),
        )
    ],
    "group_by": lambda a, b: [
        a.group_by("k").agg(
            n=dd.count(),
            sp=dd.sum("p"),
            mp=dd.mean("p"),
            lo=dd.min("d"),
            hi=dd.max("ts"),
            nd=dd.count_distinct("d"),
            si=dd.sum("i"),
            mi=dd.max("i"),
            ldu=dd.min("du"),
        ),
        a.group_by("d").agg(sp=dd.sum("p"), nts=dd.count_distinct("ts")),
        a.select("d", "p").distinct(),
    ],
    "left_join": lambda a, b: [
        a.select("k", "d", "p").join(b, on="k", how="left"),
        a.select("k", "d", "p")
        .join(b, on="k")
        .select("k", after=col("d") > col("since"), cost=col("p") * col("rate")),
    ],
    "key_region": lambda a, b: [
        a.group_by("k")
        .agg(sp=dd.sum("p"), lo=dd.min("d"))
        .join(a.group_by("k").agg(mp=dd.mean("p"), n=dd.count_distinct("ts")), on="k")
    ],
    "ordered_strings": lambda a, b: [
        a.select(
            "k", lt=col("s") < "13", bt=col("s").is_between("1", "2"), le=col("s") <= col("s")
        ),
        b.select("k", lo=col("bin") < dd.lit(b"\x7f"), hi=col("bin") >= dd.lit(b"")),
    ],
    "binary": lambda a, b: [
        b.group_by("bin").agg(n=dd.count(), lo=dd.min("rate")),
        b.group_by("k").agg(lo=dd.min("bin"), hi=dd.max("bin"), nb=dd.count_distinct("bin")),
        b.filter(col("bin") == dd.lit(b"\x00\xff")),
        b.select("k", "bin").join(b.select("bin", "since"), on="bin"),
    ],
    "python": lambda a, b: [
        a.filter(col("d").is_not_null() & col("k").is_not_null())
        .select("k", "d")
        .map(lambda c: {"k": c["k"], "days": c["d"] + 1})
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_logical_types_on_spark_equal_embedded(spark: SparkSession, case: str) -> None:
    how = check(spark, CASES[case])
    if case == "key_region":
        assert "key-local region" in how
    if case == "compiled":
        assert "Rust expression evaluator" not in how, how


def test_logical_types_in_a_loop_on_spark_equal_embedded(spark: SparkSession) -> None:
    """A reduce inside an iterate keeps decimals and dates in its state store (and in a
    shuffled state)."""

    def case(a: dd.Collection, b: dd.Collection) -> list[dd.Collection]:
        # Keys (k, d) with a null date: the store's null-safe key matching on a date.
        start = a.filter(col("k").is_not_null()).select(
            "k", "d", p=col("p").fill_null(dd.lit(Decimal("0.01")).cast("decimal128(12, 2)"))
        )

        def body(x: dd.Collection) -> dd.Collection:
            step = x.filter(col("p") < 100).select(
                "k", "d", p=(col("p") * 2).cast("decimal128(12, 2)")
            )
            return step.concat(start).group_by("k", "d").agg(p=dd.max("p"))

        # Six iterations: rows leave the loop (p reaches 100) and the null-filled 0.01
        # (doubled each time) is still growing when the cap ends the loop, on both engines.
        return [start.iterate(body, max_iterations=6)]

    for reduce_state in ("store", "shuffle"):
        check(spark, case, reduce_state=reduce_state)


def test_a_decimal_beyond_64_bits_fails_naming_the_column(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input({"k": "int64", "p": "decimal128(30, 2)"}, name="wide")
    schema = "k long, p decimal(30,2), time long, diff long"
    df = spark.createDataFrame([(1, Decimal("1e17"), 0, 1)], schema)
    out = a.select("k", "p")
    with pytest.raises(Exception, match="column 'p': value .* does not fit"):
        run_on_spark(spark, flow, {ai: df}, [out])[out].collect()


def test_an_output_dtype_spark_cannot_hold_is_refused_before_any_job(
    spark: SparkSession,
) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input({"k": "int64", "ts": f"timestamp[us, tz={_tz(spark)}]"}, name="t")
    df = spark.createDataFrame([], "k long, ts timestamp, time long, diff long")
    out = a.select(ns=col("ts").cast("timestamp[ns]"))
    with pytest.raises(SchemaTypeError, match=r"timestamp\[ns\].*no exact Spark type"):
        run_on_spark(spark, flow, {ai: df}, [out])


def _paths(flow: dd.Dataflow) -> tuple[dd.InputSession, dd.InputSession, dd.Collection]:
    """Shortest paths with decimal weights and a date per root: a fused loop's shape."""
    ei, edges = flow.new_input(
        {"src": "int64", "dst": "int64", "w": "decimal128(6, 2)"}, name="edges"
    )
    ri, roots = flow.new_input(
        {"node": "int64", "d": "decimal128(12, 2)", "on": "date32"}, name="roots"
    )

    def body(dist: dd.Collection) -> dd.Collection:
        step = dist.join(edges, left_on="node", right_on="src").select(
            node=col("dst"), d=(col("d") + col("w")).cast("decimal128(12, 2)"), on=col("on")
        )
        return step.concat(roots).group_by("node").agg(d=dd.min("d"), on=dd.max("on"))

    return ei, ri, roots.iterate(body, max_iterations=10)


EDGE_ROWS = [
    (0, 1, Decimal("1.25"), 0, 1),
    (1, 2, Decimal("0.50"), 0, 1),
    (0, 2, Decimal("9.99"), 0, 1),
    (2, 3, Decimal("0.01"), 1, 1),
    (1, 2, Decimal("0.50"), 2, -1),
]
ROOT_ROWS = [
    (0, Decimal("0.00"), dt.date(2020, 1, 1), 0, 1),
    (3, Decimal("-1.00"), None, 1, 1),
]


def test_a_fused_loop_over_decimals_and_dates_equals_embedded(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ei, ri, out = _paths(flow)
    cap = out.capture()
    for sess, rows in ((ei, EDGE_ROWS), (ri, ROOT_ROWS)):
        names = sess.columns
        cols = {
            c: pa.array([r[j] for r in rows], dd.logical_types.arrow_type(str(sess.dtypes[c])))
            for j, c in enumerate(names)
        }
        sess.update_batch(
            pa.table(cols),
            times=np.array([r[-2] for r in rows]),
            diffs=np.array([r[-1] for r in rows]),
        )
        sess.close()
    flow.run()
    want = cap.updates()
    flow = dd.Dataflow()
    ei, ri, out = _paths(flow)
    edges = spark.createDataFrame(
        EDGE_ROWS, "src long, dst long, w decimal(6,2), time long, diff long"
    )
    roots = spark.createDataFrame(
        ROOT_ROWS, "node long, d decimal(12,2), on date, time long, diff long"
    )
    result = run_on_spark(spark, flow, {ei: edges, ri: roots}, [out])
    got = _arrow(result[out])
    assert got is not None
    assert [f.type for f in got.schema] == [f.type for f in want.schema]
    assert _rows(got) == _rows(want)
    assert "fused superstep:" in result.explain()


def test_errors_beside_logical_types_are_collected_as_on_embedded(spark: SparkSession) -> None:
    """A decimal divided by a zero int32 is an error update; with ``errors="collect"`` the
    other rows flow on (decimals, dates) and the errors equal the embedded engine's."""

    def case(a: dd.Collection, b: dd.Collection) -> list[dd.Collection]:
        return [a.select("k", "d", q=col("p") / col("i")).group_by("d").agg(s=dd.sum("q"))]

    tz = _tz(spark)
    flow = dd.Dataflow()
    types = _dtypes(tz)
    ai, a = flow.new_input(types["a"], name="a")
    bi, b = flow.new_input(types["b"], name="b")
    (out,) = case(a, b)
    cap = out.capture(errors="collect")
    _feed(ai, bi, types)
    flow.run()
    want_errors = sorted(
        (e["message"], e["values"], e["time"], e["diff"]) for e in cap.errors().to_pylist()
    )
    assert want_errors  # the zero divisor

    flow = dd.Dataflow()
    ai, a = flow.new_input(types["a"], name="a")
    bi, b = flow.new_input(types["b"], name="b")
    (out,) = case(a, b)
    dfs = _frames(spark)
    result = run_on_spark(spark, flow, {ai: dfs["a"], bi: dfs["b"]}, [out], errors="collect")
    got = _arrow(result[out])
    assert got is not None
    assert [f.type for f in got.schema] == [f.type for f in cap.updates().schema]
    assert _rows(got) == _rows(cap.updates())
    got_errors = sorted(
        (r["message"], r["values"], r["time"], r["diff"]) for r in result.errors(out).collect()
    )
    assert got_errors == want_errors


def test_a_spark_type_without_a_dtype_is_refused_before_any_job(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k", "b"), name="lists")
    df = spark.createDataFrame([], "k long, b array<int>, time long, diff long")
    with pytest.raises(SchemaTypeError, match="column 'b': Spark type array<int> is not supp"):
        run_on_spark(spark, flow, {ai: df}, [a])


def test_declared_narrow_integers_and_float32_keep_their_width(spark: SparkSession) -> None:
    """``smallint``/``tinyint``/``float`` inputs declared ``int16``/``int8``/``float32`` stay
    those dtypes on both backends (undeclared, they would be read as int64 / float64)."""
    types = {"k": "int64", "h": "int16", "b": "int8", "f": "float32"}
    rows = [(1, 300, -5, 1.5, 0, 1), (1, None, 7, None, 0, 1), (2, -2, None, 0.1, 1, 1)]

    def outputs(a: dd.Collection) -> list[dd.Collection]:
        return [
            a,
            a.select("k", h1=col("h") + 1, f2=col("f") * 2, b=col("b")),
            a.group_by("k").agg(sh=dd.sum("h"), mb=dd.max("b"), mf=dd.min("f"), sf=dd.sum("f")),
        ]

    flow = dd.Dataflow()
    ai, a = flow.new_input(types, name="narrow")
    caps = [o.capture() for o in outputs(a)]
    ai.update_batch(
        pa.table(
            {
                c: pa.array([r[j] for r in rows], dd.logical_types.arrow_type(t))
                for j, (c, t) in enumerate(types.items())
            }
        ),
        times=np.array([r[4] for r in rows]),
        diffs=np.array([r[5] for r in rows]),
    )
    ai.close()
    flow.run()
    want = [c.updates() for c in caps]

    flow = dd.Dataflow()
    ai, a = flow.new_input(types, name="narrow")
    outs = outputs(a)
    df = spark.createDataFrame(rows, "k long, h short, b byte, f float, time long, diff long")
    result = run_on_spark(spark, flow, {ai: df}, outs)
    for o, w in zip(outs, want, strict=True):
        got = _arrow(result[o])
        assert got is not None
        assert [f.type for f in got.schema] == [f.type for f in w.schema]
        assert _rows(got) == _rows(w)
