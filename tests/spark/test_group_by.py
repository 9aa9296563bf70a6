"""``group_by(...).agg(...)`` on Spark equals the embedded engine: keyed (one and two keys)
and global, with an expression argument, over random histories with retractions and many
distinct times, 1-D and 2-D; and with ``errors="collect"`` over negative counts, where
undefined means and minimums are the same error rows on both backends."""

from __future__ import annotations

import random
from typing import Any

import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import run_on_spark

from .conftest import Rows, check_equal, frames

pytestmark = pytest.mark.timeout(240)

COLUMNS = ("k", "v", "f", "s")
WORDS = ("ant", "bee", "cat", "Dog")


def _time(rng: random.Random, dims: int, span: int) -> tuple[int, ...]:
    return tuple(rng.randrange(span) for _ in range(dims))


def histories(seed: int, dims: int, n: int, retract_only_present: bool) -> Rows:
    """Random ``(k, v, f, s)`` inserts; a share is retracted at a time at or after the
    insert (so counts stay non-negative), or, unless ``retract_only_present``, anywhere."""
    rng = random.Random(seed)
    span = 12 if dims == 1 else 4
    rows: Rows = []
    for _ in range(n):
        rec = (rng.randrange(4), rng.randrange(-3, 9), rng.randrange(-8, 9) / 2, rng.choice(WORDS))
        t = _time(rng, dims, span)
        rows.append((*rec, t if dims > 1 else t[0], rng.choice((1, 1, 2))))
        if rng.random() < 0.4:
            if retract_only_present:
                later = tuple(rng.randrange(x, span) for x in t)
            else:
                later = _time(rng, dims, span)
            rows.append((*rec, later if dims > 1 else later[0], -1))
    return rows


def _aggs() -> dict[str, Any]:
    return {
        "n": dd.count(),
        "total": dd.sum("v"),
        "fs": dd.sum("f"),
        "avg": dd.mean("v"),
        "lo": dd.min("s"),
        "hi": dd.max("f"),
        "w": dd.sum(dd.col("v") * (1 - dd.col("f"))),
    }


@pytest.mark.parametrize("dims", [1, 2])
def test_group_by_on_spark_equals_embedded(spark: SparkSession, dims: int) -> None:
    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(COLUMNS, name="a")
        outs = [
            a.group_by("k").agg(**_aggs()),
            a.group_by("k", "s").agg(dd.max("v"), m=dd.mean("f")),
            a.group_by().agg(**_aggs()),
        ]
        return {"a": ai}, outs

    data = {"a": (COLUMNS, histories(3 + dims, dims, 50, retract_only_present=True))}
    got = check_equal(spark, build, data, dims)
    assert {r[0] for r in got} == {0, 1, 2}


def test_group_by_errors_on_spark_equal_embedded(spark: SparkSession) -> None:
    rows = histories(11, 1, 40, retract_only_present=False)

    def build(flow: dd.Dataflow) -> tuple[dd.InputSession, dd.Collection]:
        ai, a = flow.new_input(COLUMNS, name="a")
        return ai, a.group_by("k").agg(**_aggs())

    flow = dd.Dataflow()
    inp, out = build(flow)
    cap = out.capture(errors="collect")
    for *rec, t, d in rows:
        inp.update_at(tuple(rec), time=t, diff=d)
    inp.close()
    flow.run()
    want = sorted(tuple(r.values()) for r in cap.updates().to_pylist())
    want_errors = sorted((r["message"], r["time"], r["diff"]) for r in cap.errors().to_pylist())
    assert want_errors, "the history must make some group undefined"

    flow2 = dd.Dataflow()
    inp2, out2 = build(flow2)
    df = frames(spark, {"a": (COLUMNS, rows)}, 1)["a"]
    result = run_on_spark(spark, flow2, {inp2: df}, [out2], errors="collect")
    got = sorted(tuple(r) for r in result[out2].collect())
    assert got == want
    got_errors = sorted((r["message"], r["time"], r["diff"]) for r in result.errors(out2).collect())
    assert got_errors == want_errors
