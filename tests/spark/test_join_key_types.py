"""Column dtypes the plan puts side by side (a join key, a concat) are checked before any
Spark job, as the embedded engine checks an input's first batch: an int64 key joined with a
string or double column is refused with the engine's own ``SchemaTypeError`` message, where
Spark would compare them after an implicit cast (``"1"`` and ``" 1"`` matching ``1``;
``2**53 + 1`` matching ``2.0**53``). Integer Spark types of any width are all int64 and
join as before."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import ddflow as dd
from ddflow.spark import run_on_spark

from .conftest import check_equal, embedded

pytestmark = pytest.mark.timeout(180)


def _join(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    ai, a = flow.new_input(("k", "v"), name="left")
    bi, b = flow.new_input(("k", "w"), name="right")
    return {"left": ai, "right": bi}, [a.join(b, on="k")]


def _concat(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    ai, a = flow.new_input(("k", "v"), name="left")
    bi, b = flow.new_input(("k", "w"), name="right")
    return {"left": ai, "right": bi}, [a.concat(b.select(k=dd.col("k"), v=dd.col("w")))]


def _never_read(df: DataFrame, column: str) -> DataFrame:
    """``df`` whose ``column`` fails any job that reads it: the refusal must come first."""
    boom = F.raise_error(F.lit("a Spark job read the input"))
    return df.withColumn(column, F.when(F.col("diff") != 0, boom).otherwise(F.col(column)))


def _refused(spark: SparkSession, build: object, left: DataFrame, right: DataFrame) -> str:
    flow = dd.Dataflow()
    sessions, outputs = build(flow)  # type: ignore[operator]
    inputs = {sessions["left"]: left, sessions["right"]: _never_read(right, "k")}
    with pytest.raises(dd.SchemaTypeError) as info:
        run_on_spark(spark, flow, inputs, outputs)
    return str(info.value)


def _engine_message(build: object, right_key: object) -> str:
    data = {
        "left": (("k", "v"), [(1, 10, 0, 1)]),
        "right": (("k", "w"), [(right_key, 20, 0, 1)]),
    }
    with pytest.raises(dd.SchemaTypeError) as info:
        embedded(build, data)  # type: ignore[arg-type]
    return str(info.value)


@pytest.mark.parametrize(
    ("typ", "keys", "engine_key"),
    [
        ("string", ["1", " 1"], "1"),
        ("double", [float(2**53)], float(2**53)),
    ],
)
def test_int_join_key_beside_string_or_double_is_refused_with_the_engine_message(
    spark: SparkSession, typ: str, keys: list[object], engine_key: object
) -> None:
    left = spark.createDataFrame(
        [(1, 10, 0, 1), (2**53 + 1, 11, 0, 1)], "k long, v long, time long, diff long"
    )
    right = spark.createDataFrame(
        [(k, 20, 0, 1) for k in keys], f"k {typ}, w long, time long, diff long"
    )
    msg = _refused(spark, _join, left, right)
    want = _engine_message(_join, engine_key)
    assert want in msg, (msg, want)
    assert 'column "k" of input "right"' in msg and "join@" in msg, msg
    assert "read the input" not in msg


def test_concat_of_int_and_string_is_refused(spark: SparkSession) -> None:
    left = spark.createDataFrame([(1, 10, 0, 1)], "k long, v long, time long, diff long")
    right = spark.createDataFrame([("1", 20, 0, 1)], "k string, w long, time long, diff long")
    msg = _refused(spark, _concat, left, right)
    assert _engine_message(_concat, "1") in msg, msg


def test_int_and_long_keys_still_join(spark: SparkSession) -> None:
    data = {
        "left": (("k", "v"), [(1, 10, 0, 1), (2, 11, 1, 1)]),
        "right": (("k", "w"), [(1, 20, 0, 1), (2, 21, 2, 1), (3, 22, 0, 1)]),
    }
    want = embedded(_join, data)
    flow = dd.Dataflow()
    sessions, outputs = _join(flow)
    left = spark.createDataFrame(
        [(1, 10, 0, 1), (2, 11, 1, 1)], "k long, v long, time long, diff long"
    )
    right = spark.createDataFrame(
        [(1, 20, 0, 1), (2, 21, 2, 1), (3, 22, 0, 1)], "k int, w long, time long, diff long"
    )
    result = run_on_spark(spark, flow, {sessions["left"]: left, sessions["right"]: right}, outputs)
    got = sorted(
        (
            (0, r["k"], r["v"], r["w"], (r["time"],), r["diff"])
            for r in result[outputs[0]].collect()
        ),
        key=repr,
    )
    assert got == want
    assert check_equal(spark, _join, data)
