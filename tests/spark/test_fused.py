"""Fused supersteps (``ddflow.spark.driver.fused``): iterate bodies of the shape reduce -> variable
-> join with a loop-invariant arrangement -> expressions -> reduce run as one stage per
superstep, and give exactly the embedded engine's output; bodies of other shapes take the
general path, with the same output."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow import col, lit
from ddflow.aggregates import min as agg_min

from .conftest import REMOTE, embedded, on_spark

pytestmark = pytest.mark.timeout(240)


def _times(rng: random.Random, dims: int, span: int) -> Any:
    if dims == 1:
        return rng.randrange(span)
    return tuple(rng.randrange(span) for _ in range(dims))


def _later(t: Any, rng: random.Random) -> Any:
    if isinstance(t, tuple):
        return tuple(x + rng.randrange(3) for x in t)
    return t + 1 + rng.randrange(4)


def _edges(seed: int, dims: int, nodes: int, n: int, weighted: bool = False) -> list[Any]:
    rng = random.Random(seed)
    rows: list[Any] = []
    for _ in range(n):
        src, dst = rng.randrange(nodes), rng.randrange(nodes)
        w = (rng.randrange(1, 5),) if weighted else ()
        t = _times(rng, dims, 5)
        rows.append((src, dst, *w, t, 1))
        if rng.random() < 0.3:
            rows.append((src, dst, *w, _later(t, rng), -1))
    return rows


def _check(spark: SparkSession, build: Any, data: Any, dims: int, fused: bool) -> None:
    want = embedded(build, data)
    got, result = on_spark(spark, build, data, dims)
    assert got == want
    # Spark Connect takes the general path (driver/fused.py's ``detect``; README.md).
    assert ("fused superstep" in result.explain()) == (fused and REMOTE is None)


@pytest.mark.parametrize("dims", [1, 2])
def test_weighted_sssp_fused(spark: SparkSession, dims: int) -> None:
    def build(flow: dd.Dataflow) -> Any:
        ei, e = flow.new_input(("src", "dst", "w"), name="edges")
        ri, r = flow.new_input(("node",), name="roots")
        dists = dd.algorithms.sssp(e, r, weight="w", prioritized=False)
        return {"edges": ei, "roots": ri}, [dists, dists.count(by="dist")]

    data = {
        "edges": (("src", "dst", "w"), _edges(3 + dims, dims, 12, 40, weighted=True)),
        "roots": (("node",), [(0, _times(random.Random(dims), dims, 2), 1)]),
    }
    _check(spark, build, data, dims, fused=True)


def test_string_keys_filter_and_limit(spark: SparkSession) -> None:
    """String keys, a filter between the join and the reduce, and max_iterations."""
    rows = [(f"n{s}", f"n{d}", t, df) for s, d, t, df in _edges(9, 1, 15, 45)]

    def build(flow: dd.Dataflow) -> Any:
        ei, e = flow.new_input(("src", "dst"), name="edges")
        ri, r = flow.new_input(("node",), name="roots")
        start = r.select("node", hops=lit(0))

        def step(d: dd.Collection) -> dd.Collection:
            return (
                d.join(e, left_on="node", right_on="src")
                .select(node=col("dst"), hops=col("hops") + 1)
                .filter(col("node") != "n3")
                .concat(start)
                .reduce(by="node", agg=agg_min("hops"))
            )

        near = start.iterate(step, max_iterations=3)
        far = start.iterate(step)
        return {"edges": ei, "roots": ri}, [near, far]

    data = {"edges": (("src", "dst"), rows), "roots": (("node",), [("n0", 0, 1), ("n4", 2, 1)])}
    _check(spark, build, data, 1, fused=True)


def test_two_column_key(spark: SparkSession) -> None:
    """A grid walk keyed by (x, y): Spark's bucket hash over two columns on both sides."""
    rng = random.Random(5)
    rows = []
    for _ in range(60):
        x, y = rng.randrange(5), rng.randrange(5)
        dx, dy = rng.choice([(0, 1), (1, 0), (0, -1), (-1, 0)])
        t = rng.randrange(4)
        rows.append((x, y, x + dx, y + dy, t, 1))
        if rng.random() < 0.25:
            rows.append((x, y, x + dx, y + dy, t + 2, -1))

    def build(flow: dd.Dataflow) -> Any:
        ei, e = flow.new_input(("x", "y", "x2", "y2"), name="moves")
        ri, r = flow.new_input(("x", "y"), name="starts")
        start = r.select("x", "y", steps=lit(0))

        def step(d: dd.Collection) -> dd.Collection:
            return (
                d.join(e, on=["x", "y"])
                .select(x=col("x2"), y=col("y2"), steps=col("steps") + 1)
                .concat(start)
                .reduce(by=["x", "y"], agg=agg_min("steps"))
            )

        return {"moves": ei, "starts": ri}, [start.iterate(step)]

    data = {
        "moves": (("x", "y", "x2", "y2"), rows),
        "starts": (("x", "y"), [(0, 0, 0, 1), (2, 2, 3, 1)]),
    }
    _check(spark, build, data, 1, fused=True)


def test_other_shapes_take_the_general_path(spark: SparkSession) -> None:
    """The variable joined on a column that is not the reduce's key: not fused, same output."""

    def build(flow: dd.Dataflow) -> Any:
        ei, e = flow.new_input(("src", "dst"), name="edges")
        ri, r = flow.new_input(("node",), name="roots")
        start = r.select("node", dist=lit(0))

        def step(d: dd.Collection) -> dd.Collection:
            return (
                d.join(e, left_on="dist", right_on="src")
                .select(node=col("dst"), dist=col("dist") + 1)
                .filter(col("dist") < 6)
                .concat(start)
                .reduce(by="node", agg=agg_min("dist"))
            )

        return {"edges": ei, "roots": ri}, [start.iterate(step)]

    data = {"edges": (("src", "dst"), _edges(4, 1, 8, 25)), "roots": (("node",), [(0, 0, 1)])}
    _check(spark, build, data, 1, fused=False)


@pytest.mark.skipif(REMOTE is not None, reason="Spark Connect does not fuse supersteps")
def test_explain_spark_names_the_fused_body(spark: SparkSession) -> None:
    from ddflow.spark import explain_spark

    from .conftest import frames

    flow = dd.Dataflow()
    ei, e = flow.new_input(("src", "dst"), name="edges")
    ri, r = flow.new_input(("node",), name="roots")
    counts = dd.algorithms.bfs(e, r).count(by="dist")
    data = {"edges": (("src", "dst"), _edges(2, 1, 6, 10)), "roots": (("node",), [(0, 0, 1)])}
    dfs = frames(spark, data, 1)
    text = explain_spark(spark, flow, {ei: dfs["edges"], ri: dfs["roots"]}, [counts])
    lines = {line.split(":")[0].strip(): line for line in text.splitlines()}
    joins = [v for k, v in lines.items() if k.endswith(" join")]
    assert joins and all("fused superstep's task" in v for v in joins)
    assert any("fused superstep: one mapInArrow" in v for k, v in lines.items() if "reduce" in k)
    assert any("written once into the store" in v for v in lines.values())
    assert any("read once" in v for k, v in lines.items() if k.endswith(" leave"))
