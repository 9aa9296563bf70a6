"""A constant collection (``Dataflow.constant``) on the Spark backend equals the embedded
engine: alone (every dtype), joined with an input, entered into an iterate, under SQL's
global aggregate over no rows, and in incremental runs (part of the first run only)."""

from __future__ import annotations

import datetime
import decimal
import random
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tests.spark.conftest import Data, check_equal, embedded
from tests.spark.test_incremental_state import _consolidated, _random_graph, _run_chunks, _split

import ddflow as dd

ROWS = [
    (1, 1.5, True, "a", datetime.date(2024, 2, 29), decimal.Decimal("1.25"), b"\x00\xff"),
    (None, float("inf"), None, None, None, None, None),
    (-3, None, False, "ü", datetime.date(1970, 1, 1), decimal.Decimal("-0.50"), b""),
]
SCHEMA = {
    "i": "int64",
    "f": "float64",
    "b": "bool",
    "s": "str",
    "d": "date32",
    "m": "decimal128(9, 2)",
    "y": "binary",
}


def _build(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    const = flow.constant(ROWS, SCHEMA)
    names = flow.constant([(k, f"n{k}") for k in range(0, 8, 2)], {"k": "int64", "name": "str"})
    a_in, a = flow.new_input({"k": "int64", "v": "int64"})
    e_in, edges = flow.new_input(("src", "dst"))
    roots = flow.constant([(0,), (3,)], {"node": "int64"})
    dists = dd.algorithms.bfs(edges, roots)
    totals = dd.sql("select count(*) as n, sum(v) as s from a where v > 100", {"a": a})
    return {"a": a_in, "edges": e_in}, [const, a.join(names, on="k"), dists, totals]


def _data(rng: random.Random) -> Data:
    a = [(rng.randrange(8), rng.randrange(5), rng.randrange(4), 1) for _ in range(20)]
    a += [(1, 200, 2, 1), (1, 200, 3, -1)]
    edges = [(rng.randrange(8), rng.randrange(8), rng.randrange(4), 1) for _ in range(14)]
    return {"a": (("k", "v"), a), "edges": (("src", "dst"), edges)}


@pytest.mark.timeout(400)
def test_constants_equal_the_embedded_engine(spark: SparkSession) -> None:
    data = _data(random.Random(11))
    got = check_equal(spark, _build, data)
    assert sum(1 for r in got if r[0] == 0) == len(ROWS)
    # SQL's row over no rows: at time 0, gone at 2 when v=200 arrives, back at 3
    assert [r for r in got if r[0] == 3] == [
        (3, 0, None, (0,), 1),
        (3, 0, None, (2,), -1),
        (3, 0, None, (3,), 1),
        (3, 1, 200, (2,), 1),
        (3, 1, 200, (3,), -1),
    ]


def _bfs_from_constant(flow: dd.Dataflow) -> tuple[dict[str, Any], list[dd.Collection]]:
    e_in, edges = flow.new_input(("src", "dst"))
    roots = flow.constant([(0,)], {"node": "int64"})
    dists = dd.algorithms.bfs(edges, roots)
    return {"edges": e_in}, [dists.count(by="dist"), dists]


@pytest.mark.timeout(600)
def test_incremental_runs_take_the_constant_once(spark: SparkSession, tmp_path: Any) -> None:
    rng = random.Random(5)
    data = _random_graph(rng, 12, 16, 12)
    del data["roots"]
    want = embedded(_bfs_from_constant, data)
    got = _run_chunks(spark, _bfs_from_constant, _split(data, [1, 7]), str(tmp_path / "s"))
    assert _consolidated(got) == want
