"""Issue 16 on Spark: plans with ``advance_iteration`` or ``delay`` (prioritized SSSP and
label propagation) fail before any Spark job with an error naming the operator."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import UnsupportedOperatorError, run_on_spark

from .conftest import frames

pytestmark = pytest.mark.timeout(180)


def test_prioritized_sssp_is_rejected_before_any_job(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    edges_in, edges = flow.new_input(("src", "dst", "w"), name="edges")
    roots_in, roots = flow.new_input(("node",), name="roots")
    dists = dd.algorithms.sssp(edges, roots, prioritized=True)
    data = {
        "edges": (("src", "dst", "w"), [(0, 1, 3, 0, 1)]),
        "roots": (("node",), [(0, 0, 1)]),
    }
    dfs = frames(spark, data, 1)
    sc = spark.sparkContext
    sc.setJobGroup("issue16-reject", "advance_iteration must fail before any job")
    try:
        with pytest.raises(
            UnsupportedOperatorError, match=r"advance_iteration@.*'advance_iteration'"
        ):
            run_on_spark(spark, flow, {edges_in: dfs["edges"], roots_in: dfs["roots"]}, [dists])
        assert list(sc.statusTracker().getJobIdsForGroup("issue16-reject")) == []
    finally:
        sc.setJobGroup("", "")


def test_delay_is_rejected_with_its_name(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input(("x",), name="xs")
    out = coll.delay()
    dfs = frames(spark, {"xs": (("x",), [(1, 0, 1)])}, 1)
    with pytest.raises(UnsupportedOperatorError, match=r"delay@.*'delay' is not supported"):
        run_on_spark(spark, flow, {inp: dfs["xs"]}, [out])
