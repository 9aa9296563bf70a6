"""BFS over a random changing graph on Spark equals the embedded engine (with as many
supersteps as iterations, not iterations times rounds); input validation and unsupported
operators fail before any Spark job runs."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import ddflow as dd
from ddflow.errors import ColumnNotFoundError, PlanError, SchemaTypeError
from ddflow.spark import UnsupportedOperatorError, explain_spark, run_on_spark

from .conftest import embedded, on_spark

pytestmark = pytest.mark.timeout(240)


def bfs_counts(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    edges_in, edges = flow.new_input(("src", "dst"), name="edges")
    roots_in, roots = flow.new_input(("node",), name="roots")
    dists = dd.algorithms.bfs(edges, roots)
    return {"edges": edges_in, "roots": roots_in}, [dists.count(by="dist"), dists]


def random_graph(seed: int, nodes: int, edges: int, updates: int) -> dict[str, Any]:
    """A random graph at time 0, then ``updates`` single-edge changes, each at its own time
    (an edge added, or a random existing edge removed)."""
    rng = random.Random(seed)
    live: list[tuple[int, int]] = []
    rows = []
    for _ in range(edges):
        e = (rng.randrange(nodes), rng.randrange(nodes))
        live.append(e)
        rows.append((*e, 0, 1))
    for t in range(1, updates + 1):
        if live and rng.random() < 0.5:
            e = live.pop(rng.randrange(len(live)))
            rows.append((*e, t, -1))
        else:
            e = (rng.randrange(nodes), rng.randrange(nodes))
            live.append(e)
            rows.append((*e, t, 1))
    return {"edges": (("src", "dst"), rows), "roots": (("node",), [(0, 0, 1)])}


def test_bfs_random_graph(spark: SparkSession) -> None:
    data = random_graph(5, nodes=30, edges=80, updates=100)
    want = embedded(bfs_counts, data)
    got, result = on_spark(spark, bfs_counts, data)
    assert got == want
    times = {r[-2] for r in got}
    assert len(times) > 20  # many distinct output times
    max_dist = max(r[2] for r in want if r[0] == 1)
    steps = [s for s in result.supersteps if s.phase.startswith("superstep")]
    # One superstep per iteration (the deepest distance + a final empty one, + 1 for the
    # iteration that retracts distances that got longer), independent of the 100 rounds.
    assert len(steps) <= max_dist + 4
    assert "loop-invariant" in result.explain()


def _data(spark: SparkSession) -> dict[str, Any]:
    edges = spark.createDataFrame([(0, 1, 0, 1)], "src long, dst long, time long, diff long")
    roots = spark.createDataFrame([(0, 0, 1)], "node long, time long, diff long")
    return {"edges": edges, "roots": roots}


def _no_jobs(spark: SparkSession, fn: Any) -> None:
    """Runs ``fn`` (which must raise) and checks that it started no Spark job."""
    sc = spark.sparkContext
    group = f"validation-{random.random()}"
    sc.setJobGroup(group, "validation")
    try:
        fn()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert sc.statusTracker().getJobIdsForGroup(group) == []


def test_validation_errors(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    (ins, (counts, _dists)) = bfs_counts(flow)
    frames = _data(spark)
    edges, roots = frames["edges"], frames["roots"]

    def run(e: Any, r: Any = roots, outs: Any = (counts,)) -> Any:
        return run_on_spark(spark, flow, {ins["edges"]: e, ins["roots"]: r}, list(outs))

    with pytest.raises(ColumnNotFoundError, match="input 'edges': column 'dst' missing"):
        _no_jobs(spark, lambda: run(edges.drop("dst")))
    listed = edges.withColumn("src", F.array(F.lit(1)))
    with pytest.raises(SchemaTypeError, match="input 'edges', column 'src': Spark type array"):
        _no_jobs(spark, lambda: run(listed))
    # A date is a dtype (date32), but not one a node id joins with.
    dated = edges.withColumn("src", F.to_date(F.lit("2020-01-01")))
    with pytest.raises(SchemaTypeError, match='column "src" of input "edges".*date32'):
        _no_jobs(spark, lambda: run(dated))
    with pytest.raises(SchemaTypeError, match="input 'edges', column 'time': Spark type double"):
        _no_jobs(spark, lambda: run(edges.withColumn("time", edges["time"].cast("double"))))
    with pytest.raises(ColumnNotFoundError, match="input 'roots': no time column"):
        _no_jobs(spark, lambda: run(edges, roots.drop("time")))
    two_d = roots.selectExpr("node", "time as time_0", "time as time_1", "diff")
    with pytest.raises(SchemaTypeError, match="2 time coordinate"):
        _no_jobs(spark, lambda: run(edges, two_d))
    with pytest.raises(PlanError, match="no DataFrame for input 'roots'"):
        _no_jobs(spark, lambda: run_on_spark(spark, flow, {ins["edges"]: edges}, [counts]))
    # Null times are only visible in the data: the first job fails naming input and column.
    nulls = spark.createDataFrame([(0, 1, None, 1)], "src long, dst long, time long, diff long")
    with pytest.raises(Exception, match="input 'edges', column 'time': null value"):
        run(nulls)[counts].collect()


def test_unsupported_operator_fails_before_any_job(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ei, edges = flow.new_input(("src", "dst"), name="edges")
    ri, roots = flow.new_input(("node",), name="roots")
    seen = edges.inspect(lambda rec, t, d: None)
    out = dd.algorithms.bfs(seen, roots)
    frames = _data(spark)
    with pytest.raises(UnsupportedOperatorError, match=r"inspect@.*operator 'inspect_py'"):
        _no_jobs(
            spark,
            lambda: run_on_spark(spark, flow, {ei: frames["edges"], ri: frames["roots"]}, [out]),
        )
    text = explain_spark(spark, flow, {ei: frames["edges"], ri: frames["roots"]}, [edges])
    assert "input" in text
