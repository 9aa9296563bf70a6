"""Data errors inside Spark tasks: a record that makes an operator fail (an expression's
division by zero, a user function's exception, an aggregate's overflow) fails the run with a
``DataError`` naming the operator, the message, the values and the time: the error update
the embedded engine gives for it (obtained by rerunning the failing batch on the engine's own
operator). Inside an iterate the supersteps run eagerly and ``run_on_spark`` raises the
``DataError``; outside, the lazy output's first Spark job fails with the same text."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import run_on_spark

from .conftest import frames

pytestmark = pytest.mark.timeout(240)

DATA = {"a": (("k",), [(2, 0, 1), (0, 3, 1), (5, 4, 1)])}


def _run(spark: SparkSession, build: Any) -> Any:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k",), name="a")
    out = build(a)
    df = frames(spark, DATA, 1)["a"]
    return run_on_spark(spark, flow, {ai: df}, [out]), out


def test_division_by_zero_in_a_loop_raises_data_error(spark: SparkSession) -> None:
    def build(a: dd.Collection) -> dd.Collection:
        return a.iterate(lambda x: x.select(k=dd.lit(10) // dd.col("k")).concat(x).distinct())

    with pytest.raises(dd.DataError) as info:
        _run(spark, build)
    msg = str(info.value)
    assert "select@" in msg and "division by zero" in msg and "k=0" in msg, msg
    assert "time (3" in msg, msg


def test_error_at_top_level_fails_the_output_job_with_the_engine_error(
    spark: SparkSession,
) -> None:
    def build(a: dd.Collection) -> dd.Collection:
        return a.select(q=dd.lit(10) // dd.col("k"))

    result, out = _run(spark, build)
    with pytest.raises(Exception) as info:
        result[out].collect()
    msg = str(info.value)
    assert "ddflow data error on Spark" in msg and "division by zero" in msg, msg
    assert "k=0" in msg, msg
