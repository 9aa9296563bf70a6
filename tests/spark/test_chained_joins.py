"""Chained joins on Spark: a TPC-H Q1-shaped plan (aggregates by separate reduces of one input,
joined back by chained joins on the group key) equals the embedded engine's output, both as a
key-local region (one engine stage, ``driver/key_regions.py``) and operator by operator with
each join's output consolidated (``DDFLOW_SPARK_KEY_REGIONS=0``); plans whose keys do not line
up take the operator-by-operator path and still agree.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession

import ddflow as dd

from .conftest import Rows, embedded, on_spark

pytestmark = pytest.mark.timeout(300)

# Executors cannot import this test module: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _history(seed: int, dims: int, n: int = 120) -> Rows:
    """Rows ``(g, h, q, p)`` over a few groups, each update at a random time, some retracted
    later (so every group's aggregates change at many times)."""
    rng = random.Random(seed)
    span = 10 if dims == 1 else 4
    rows: Rows = []
    for _ in range(n):
        rec = (rng.randrange(2), rng.randrange(2), rng.randrange(1, 9), rng.randrange(100))
        t = tuple(rng.randrange(span) for _ in range(dims))
        diff = rng.choice((1, 1, 2))
        rows.append((*rec, t if dims > 1 else t[0], diff))
        if rng.random() < 0.3:
            later = tuple(c + rng.randrange(1, 3) for c in t)
            rows.append((*rec, later if dims > 1 else later[0], -diff))
    return rows


def _largest(batch: Any) -> dict[str, Any]:
    """Python reducer: per group, the largest ``p`` with a positive count."""
    offsets = np.asarray(batch.offsets, dtype=np.int64)
    p = np.asarray(batch.values["p"], dtype=np.int64)
    c = np.asarray(batch.counts, dtype=np.int64)
    out = [
        int(p[a:b][c[a:b] > 0].max()) if (c[a:b] > 0).any() else 0
        for a, b in zip(offsets[:-1], offsets[1:], strict=True)
    ]
    return {"offsets": np.arange(len(out) + 1, dtype=np.int64), "top": np.asarray(out, np.int64)}


def _q1_shape(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    li_in, li = flow.new_input(("g", "h", "q", "p"), name="li")
    key = ["g", "h"]
    parts = [
        li.select("g", "h", sum_q=dd.col("q")).reduce(key, dd.sum("sum_q")),
        li.select("g", "h", sum_qp=dd.col("q") * dd.col("p")).reduce(key, dd.sum("sum_qp")),
        li.select("g", "h", avg_p=dd.col("p")).reduce(key, dd.mean("avg_p")),
        li.select("g", "h", min_p=dd.col("p")).reduce(key, dd.min("min_p")),
        li.select("g", "h").count(by=key),
        li.select("g", "h", "p").reduce(key, dd.reducer(_largest, ["top"])),
    ]
    out = parts[0]
    for p in parts[1:]:
        out = out.join(p, on=key)
    ratio = dd.col("sum_qp") // dd.col("sum_q")
    return {"li": li_in}, [out.select("g", "h", "sum_q", "avg_p", "count", "top", ratio=ratio)]


@pytest.fixture
def operator_by_operator(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Key-local regions off: every join a Spark equi-join, its output consolidated."""
    monkeypatch.setenv("DDFLOW_SPARK_KEY_REGIONS", "0")
    yield


@pytest.mark.parametrize("dims", [1, 2])
def test_q1_shape_as_a_region(spark: SparkSession, dims: int) -> None:
    data = {"li": (("g", "h", "q", "p"), _history(7 + dims, dims))}
    want = embedded(_q1_shape, data)
    got, result = on_spark(spark, _q1_shape, data, dims)
    assert got == want
    assert len(want) > 20
    assert "key-local region" in result.explain()


@pytest.mark.usefixtures("operator_by_operator")
@pytest.mark.parametrize("dims", [1, 2])
def test_q1_shape_joins_consolidated(spark: SparkSession, dims: int) -> None:
    data = {"li": (("g", "h", "q", "p"), _history(11 + dims, dims))}
    want = embedded(_q1_shape, data)
    got, result = on_spark(spark, _q1_shape, data, dims)
    assert got == want
    text = result.explain()
    assert "key-local region" not in text
    assert "consolidated" in text


def test_keys_that_do_not_line_up_run_operator_by_operator(spark: SparkSession) -> None:
    """Left key (g, h) against right key (h, g) of the same input: a key of one side is not
    in one partition with the same key of the other, so no region; a chain through a string
    key renamed by a select does form one."""

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("g", "h", "s", "v"), name="a")
        x = a.select("g", "h", "v").reduce(["g", "h"], dd.sum("v"))
        y = a.select("g", "h", "v").reduce(["g", "h"], dd.max("v"))
        crossed = x.join(y.select(g=dd.col("h"), h=dd.col("g"), m=dd.col("v")), on=["g", "h"])
        named = a.select(name=dd.col("s"), v=dd.col("v"))
        by_name = named.reduce("name", dd.sum("v")).join(named.count(by="name"), on="name")
        return {"a": ai}, [crossed, by_name]

    rng = random.Random(5)
    rows: Rows = [
        (rng.randrange(2), rng.randrange(2), rng.choice(["x", "y", "z"]), rng.randrange(9),
         rng.randrange(8), rng.choice((1, 1, -1)))
        for _ in range(60)
    ]  # fmt: skip
    data = {"a": (("g", "h", "s", "v"), rows)}
    want = embedded(build, data)
    got, result = on_spark(spark, build, data)
    assert got == want
    stages = result.explain()
    assert "key-local region" in stages
    crossed_join = [s for s in stages.splitlines() if " join (" in s and "region" not in s]
    assert crossed_join, stages


def test_region_data_error_raises(spark: SparkSession) -> None:
    """An expression error inside a region fails the job with the engine's DataError text."""

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("k", "v"), name="a")
        q = a.select("k", r=dd.lit(10) // dd.col("v"))
        out = q.reduce("k", dd.sum("r")).join(q.count(by="k"), on="k")
        return {"a": ai}, [out]

    data = {"a": (("k", "v"), [(1, 2, 0, 1), (1, 0, 1, 1), (2, 5, 0, 1)])}
    with pytest.raises(Exception, match="(?i)division by zero"):
        on_spark(spark, build, data)


@pytest.mark.parametrize("nulls_equal", [True, False])
def test_region_with_nulls(spark: SparkSession, nulls_equal: bool) -> None:
    """Null keys group together (grouping's rule), match in a ``nulls_equal`` join and in no
    other, and aggregates skip null values inside a region; nulls come back as nulls."""

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("k", "s", "v"), name="a")
        sums = a.select("k", "s", "v").reduce(["k", "s"], dd.sum("v"))
        counts = a.select("k", "s").count(by=["k", "s"])
        top = a.select("k", "s", m=dd.col("v")).reduce(["k", "s"], dd.max("m"))
        key = ["k", "s"]
        both = sums.join(counts, on=key, nulls_equal=nulls_equal)
        return {"a": ai}, [both.join(top, on=key, nulls_equal=nulls_equal)]

    rows: Rows = [
        (1, "x", 5, 0, 1),
        (1, None, None, 0, 1),
        (None, "y", 3, 1, 1),
        (None, None, None, 1, 2),
        (2, "x", 7, 1, 1),
        (1, None, 4, 2, 1),
        (None, "y", 3, 3, -1),
        (None, None, 8, 3, 1),
        (1, "x", 6, 4, 1),
    ]
    data = {"a": (("k", "s", "v"), rows)}
    want = embedded(build, data)
    got, result = on_spark(spark, build, data)
    assert got == want
    assert any(None in r for r in got) == nulls_equal
    assert "key-local region" in result.explain()
