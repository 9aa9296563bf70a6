"""A four-edge BFS example (``tests/engine/test_bfs_four_edge_example.py``), followed by a
count by distance, gives the embedded engine's output on Spark, also with reliable checkpoints and
a progress callback."""

from __future__ import annotations

import pathlib

import pytest
from pyspark.sql import SparkSession

import ddflow as dd

from .conftest import check_equal, embedded, on_spark

pytestmark = pytest.mark.timeout(180)


def bfs_counts(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    edges_in, edges = flow.new_input(("src", "dst"), name="edges")
    roots_in, roots = flow.new_input(("node",), name="roots")
    counts = dd.algorithms.bfs(edges, roots).count(by="dist")
    return {"edges": edges_in, "roots": roots_in}, [counts]


def test_four_edge_example(spark: SparkSession) -> None:
    data = {
        "edges": (("src", "dst"), [(0, 3, 0, 1), (0, 2, 5, 1), (2, 3, 10, 1), (0, 3, 11, -1)]),
        "roots": (("node",), [(0, 0, 1)]),
    }
    got = check_equal(spark, bfs_counts, data)
    assert (0, 2, 1, (11,), 1) in got  # dist 2 appears once (0,3) is removed


def test_four_edge_example_reliable_checkpoints_and_progress(
    spark: SparkSession, tmp_path: pathlib.Path
) -> None:
    data = {
        "edges": (("src", "dst"), [(0, 3, 0, 1), (0, 2, 5, 1), (2, 3, 10, 1), (0, 3, 11, -1)]),
        "roots": (("node",), [(0, 0, 1)]),
    }
    spark.sparkContext.setCheckpointDir(str(tmp_path))
    lines: list[str] = []
    got, result = on_spark(spark, bfs_counts, data, checkpoint="reliable", progress=lines.append)
    assert got == embedded(bfs_counts, data)
    assert [s.phase for s in result.supersteps] == [f"superstep {i}" for i in range(3)]
    assert len(lines) == 3 and lines[0].startswith("superstep 0:")
    assert any(tmp_path.iterdir())  # reliable checkpoints were written
