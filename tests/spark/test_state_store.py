"""The reduce state store: versioned reads and writes, pruning and cleanup, and outputs equal
to the embedded engine's with the state in the store and in shuffled DataFrames."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.errors import PlanError
from ddflow.spark.tasks.store import StateStore

from .conftest import embedded, on_spark

pytestmark = pytest.mark.timeout(240)


def _table(values: list[int]) -> pa.Table:
    return pa.table({"k": pa.array(values, type=pa.int64())})


def test_store_reads_newest_version_below(tmp_path: Path) -> None:
    store = StateStore.create(str(tmp_path))
    assert store.load(3, 0, before=5) is None
    store.save(3, 0, 1, _table([1]))
    store.save(3, 0, 4, _table([4]))
    store.save(3, 1, 2, _table([2]))
    assert store.load(3, 0, before=1) is None
    assert store.load(3, 0, before=2)["k"].to_pylist() == [1]
    assert store.load(3, 0, before=5)["k"].to_pylist() == [4]
    assert store.load(3, 1, before=5)["k"].to_pylist() == [2]
    # A retried task rewrites the same version: the newer write replaces it.
    store.save(3, 0, 4, _table([40]))
    assert store.load(3, 0, before=5)["k"].to_pylist() == [40]
    leftovers = [f for f in os.listdir(Path(store.root) / "n3" / "b0") if f.endswith(".tmp")]
    assert leftovers == []


def test_store_prune_keeps_the_newest_readable_version(tmp_path: Path) -> None:
    store = StateStore.create(str(tmp_path))
    for v in (0, 1, 3):
        store.save(7, 0, v, _table([v]))
    store.save(7, 1, 0, _table([100]))
    store.prune(7, upto=1)
    assert sorted(os.listdir(Path(store.root) / "n7" / "b0")) == ["1.arrow", "3.arrow"]
    assert os.listdir(Path(store.root) / "n7" / "b1") == ["0.arrow"]
    assert store.load(7, 1, before=9)["k"].to_pylist() == [100]
    store.drop()
    assert not Path(store.root).exists()


def _bfs(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    edges_in, edges = flow.new_input(("src", "dst"), name="edges")
    roots_in, roots = flow.new_input(("node",), name="roots")
    dists = dd.algorithms.bfs(edges, roots)
    return {"edges": edges_in, "roots": roots_in}, [dists, dists.count(by="dist")]


def _graph(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    rows = [(rng.randrange(25), rng.randrange(25), rng.randrange(4), 1) for _ in range(70)]
    rows += [(s, d, t + 5, -1) for s, d, t, _ in rows[:15]]
    return {"edges": (("src", "dst"), rows), "roots": (("node",), [(0, 0, 1), (3, 2, 1)])}


@pytest.mark.parametrize("reduce_state", ["store", "shuffle"])
def test_bfs_equal_with_either_state(
    spark: SparkSession, tmp_path: Path, reduce_state: str
) -> None:
    data = _graph(11)
    want = embedded(_bfs, data)
    got, result = on_spark(spark, _bfs, data, reduce_state=reduce_state, state_dir=str(tmp_path))
    assert got == want
    # The run deletes its store when it returns.
    assert list(tmp_path.iterdir()) == []
    explained = result.explain()
    if reduce_state == "store":
        assert "fused superstep" in explained  # BFS's body runs fused on the store
    else:
        assert "state checkpointed" in explained


def test_bad_reduce_state_fails_before_any_job(spark: SparkSession) -> None:
    with pytest.raises(PlanError, match="reduce_state must be 'store' or 'shuffle'"):
        on_spark(spark, _bfs, _graph(1), reduce_state="memory")
