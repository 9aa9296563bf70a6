"""Spark-vs-embedded equality of single operators over random histories with many distinct
times, 1-D and 2-D (partially ordered) times."""

from __future__ import annotations

import random
import sys
from typing import Any

import numpy as np
import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession

import ddflow as dd

from .conftest import Rows, check_equal

pytestmark = pytest.mark.timeout(240)

# Executors cannot import this test module: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _time(rng: random.Random, dims: int, span: int) -> Any:
    if dims == 1:
        return rng.randrange(span)
    return tuple(rng.randrange(span) for _ in range(dims))


def updates(rng: random.Random, n: int, arity: int, keys: int, dims: int, span: int) -> Rows:
    """``n`` random updates of int records ``(k, v, ...)`` with small keys and diffs +-1/2."""
    rows: Rows = []
    for _ in range(n):
        rec = (rng.randrange(keys), *(rng.randrange(5) for _ in range(arity - 1)))
        rows.append((*rec, _time(rng, dims, span), rng.choice((1, 1, 1, -1, 2))))
    return rows


def two_inputs(seed: int, dims: int) -> dict[str, Any]:
    rng = random.Random(seed)
    span = 12 if dims == 1 else 4
    return {
        "a": (("k", "v"), updates(rng, 60, 2, 6, dims, span)),
        "b": (("k", "w"), updates(rng, 40, 2, 6, dims, span)),
    }


@pytest.mark.parametrize("dims", [1, 2])
def test_joins(spark: SparkSession, dims: int) -> None:
    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("k", "v"), name="a")
        bi, b = flow.new_input(("k", "w"), name="b")
        return {"a": ai, "b": bi}, [a.join(b, on="k"), a.semijoin(b, on="k"), a.antijoin(b, on="k")]

    got = check_equal(spark, build, two_inputs(1 + dims, dims), dims)
    assert {r[0] for r in got} == {0, 1, 2}


def _total_positive(batch: Any) -> dict[str, Any]:
    """Python reducer: per key, the count-weighted sum of values with positive count."""
    offsets = np.asarray(batch.offsets, dtype=np.int64)
    v = np.asarray(batch.values["v"], dtype=np.int64)
    c = np.asarray(batch.counts, dtype=np.int64)
    w = np.where(c > 0, v * c, 0)
    n = len(offsets) - 1
    totals = np.add.reduceat(w, offsets[:-1]) if n and len(w) else np.zeros(n, dtype=np.int64)
    return {"offsets": np.arange(n + 1, dtype=np.int64), "total": totals.astype(np.int64)}


@pytest.mark.parametrize("dims", [1, 2])
def test_reduce(spark: SparkSession, dims: int) -> None:
    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("k", "v"), name="a")
        outs = [
            a.reduce(by="k", agg=dd.min("v")),
            a.reduce(by="k", agg=dd.max("v")),
            a.reduce(by="k", agg=dd.sum("v")),
            a.count(by="k"),
            a.distinct(),
            a.reduce(by="k", agg=dd.top_k("v", 2)),
            a.threshold(lambda c: c * c - c),
            a.reduce(by="k", agg=dd.reducer(_total_positive, ["total"])),
        ]
        return {"a": ai}, outs

    data = {"a": two_inputs(7 + dims, dims)["a"]}
    got = check_equal(spark, build, data, dims)
    assert len({r[0] for r in got}) == 8


def test_expressions_and_linear(spark: SparkSession) -> None:
    rng = random.Random(3)
    rows = [
        (rng.randrange(-5, 6), rng.uniform(-2, 2), rng.choice(["x", "y"]), rng.random() < 0.5,
         rng.randrange(15), rng.choice((1, -1, 2)))
        for _ in range(80)
    ]  # fmt: skip

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("i", "f", "s", "b"), name="a")
        col = dd.col
        compiled = a.select(
            x=col("i") + 1 - col("i") * 0.5,
            y=dd.when(col("s") == "x").then(col("i")).otherwise(-col("i")),
            z=(col("f") > 0.5) | ~col("b"),
            w=col("i").cast("float64") + col("f"),
        )
        native = a.select(q=col("i") // 2, r=col("i") % 3, t=col("f") / 2)
        filtered = a.filter((col("i") >= 0) & (col("s") != "y")).select("i", "s")
        mixed = filtered.concat(a.select("i", "s").negate()).consolidate()
        scaled = a.select("i").scale(3).concat(a.select("i").scale(0))
        return {"a": ai}, [compiled, native, filtered, mixed, scaled]

    check_equal(spark, build, {"a": (("i", "f", "s", "b"), rows)})


def _double(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {"k": cols["k"], "v2": cols["v"] * 2}


def _repeat(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    rows = np.repeat(np.arange(len(cols["k"]), dtype=np.int64), np.maximum(cols["v"], 0) % 3)
    return {"k": cols["k"][rows], "__row__": rows}


def test_python_functions(spark: SparkSession) -> None:
    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("k", "v"), name="a")
        mapped = a.map(_double)
        kept = a.filter(lambda c: c["v"] % 2 == 0)
        flat = a.flat_map(_repeat)
        return {"a": ai}, [mapped, kept, flat, mapped.count(by="k")]

    check_equal(spark, build, {"a": two_inputs(11, 1)["a"]})


@pytest.mark.parametrize("dims", [1, 2])
def test_iterate_reachability(spark: SparkSession, dims: int) -> None:
    rng = random.Random(20 + dims)
    span = 10 if dims == 1 else 4
    edges = []
    for _ in range(30):
        src, dst = rng.randrange(8), rng.randrange(8)
        born = _time(rng, dims, span)
        edges.append((src, dst, born, 1))
        if rng.random() < 0.3:  # removed later (counts never go negative: a fixed point exists)
            if dims == 1:
                gone: Any = born + 1 + rng.randrange(span)
            else:
                gone = tuple(x + rng.randrange(3) for x in born)
            edges.append((src, dst, gone, -1))
    roots = [(0, _time(rng, dims, 2), 1), (5, _time(rng, dims, span), 1)]

    def build(flow: dd.Dataflow) -> Any:
        ei, e = flow.new_input(("src", "dst"), name="edges")
        ri, r = flow.new_input(("node",), name="roots")
        reach = dd.algorithms.reachability(e, r)
        capped = dd.algorithms.bfs(e, r, max_iterations=2)
        return {"edges": ei, "roots": ri}, [reach, capped]

    data = {"edges": (("src", "dst"), edges), "roots": (("node",), roots)}
    check_equal(spark, build, data, dims)


def test_iterate_antijoin_with_a_variant_right_side(spark: SparkSession) -> None:
    """An antijoin inside an iterate whose two sides change at every iteration: its delta at
    superstep ``i`` adds the left's delta once (``dA_i x B - A_<i x dB_i`` must not add
    ``A_<i`` again)."""

    def build(flow: dd.Dataflow) -> Any:
        si, seeds = flow.new_input(("k",), name="seeds")

        def body(v: dd.Collection) -> dd.Collection:
            grown = v.concat(v.select(k=dd.col("k") + 1).filter(dd.col("k") <= 6)).distinct()
            odd = grown.filter(dd.col("k") % 2 == 1).select(k=dd.col("k") + 1)
            return seeds.concat(grown.antijoin(odd, on="k")).distinct()

        return {"seeds": si}, [seeds.iterate(body, max_iterations=20)]

    rng = random.Random(5)
    rows: Rows = []
    for k in rng.sample(range(7), 4):
        t = rng.randrange(6)
        rows.append((k, t, 1))
        if rng.random() < 0.5:
            rows.append((k, t + rng.randrange(1, 4), -1))
    got = check_equal(spark, build, {"seeds": (("k",), rows)})
    assert got
