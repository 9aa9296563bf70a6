"""The fault-injection job of ``test_faults.py``, run in its own process with its own
``local[2,4]`` Spark session (four attempts per task), apart from the test run's shared
session.

``python tests/spark/fault_job.py MARKER OUT [map|fused]``: runs BFS over ``history()`` on
Spark and kills a Python worker (SIGKILL) once (``MARKER`` is created atomically) in the
middle of a superstep. ``map``: an identity Python ``map`` inside the loop body kills its
worker the first time it sees a distance of ``KILL_AT`` (the body takes the general path).
``fused``: plain BFS, which runs as fused supersteps; the fused task of superstep ``KILL_AT``
kills its worker right after writing its reduce state to the store, before emitting anything
(``DDFLOW_SPARK_FAULT``), so the retry finds a state version of its own superstep already
written. Writes the output rows (as ``conftest.on_spark`` gives them), the
number of failed task attempts and the supersteps to ``OUT`` as JSON.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

import ddflow as dd
from ddflow.aggregates import min as agg_min

KILL_AT = 3


def history(seed: int = 7, nodes: int = 40, edges: int = 90, updates: int = 40) -> dict[str, Any]:
    """A random graph at time 0 and single-edge changes, each at its own time."""
    rng = random.Random(seed)
    live = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(edges)]
    rows = [(*e, 0, 1) for e in live]
    for t in range(1, updates + 1):
        if rng.random() < 0.5:
            e = live.pop(rng.randrange(len(live)))
            rows.append((*e, t, -1))
        else:
            e = (rng.randrange(nodes), rng.randrange(nodes))
            live.append(e)
            rows.append((*e, t, 1))
    return {"edges": (("src", "dst"), rows), "roots": (("node",), [(0, 0, 1)])}


def builder(step_fn: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]] | None) -> Any:
    """A dataflow builder: BFS whose loop body passes the distances through ``step_fn``
    (None: no map, so the body can be fused)."""

    def build(flow: dd.Dataflow) -> Any:
        edges_in, edges = flow.new_input(("src", "dst"), name="edges")
        roots_in, roots = flow.new_input(("node",), name="roots")
        nodes = roots.select("node", dist=dd.lit(0))

        def step(dists: dd.Collection) -> dd.Collection:
            mapped = dists if step_fn is None else dists.map(step_fn)
            return (
                mapped.join(edges, left_on="node", right_on="src")
                .select(node=dd.col("dst"), dist=dd.col("dist") + 1)
                .concat(nodes)
                .reduce(by="node", agg=agg_min("dist"))
            )

        dists = nodes.iterate(step)
        return {"edges": edges_in, "roots": roots_in}, [dists, dists.count(by="dist")]

    return build


def identity(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The loop body's map on the embedded engine."""
    return {"node": cols["node"], "dist": cols["dist"]}


def killer(marker: str) -> Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]:
    """``identity``, except that the first batch holding distance ``KILL_AT`` kills its
    process (the Spark Python worker), once."""

    def fn(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if len(cols["dist"]) and (cols["dist"] == KILL_AT).any():
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                pass
            else:
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        return {"node": cols["node"], "dist": cols["dist"]}

    return fn


def main(marker: str, out: str, mode: str) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    sys.path.insert(0, os.path.dirname(os.path.dirname(here)))  # the repo: tests.spark
    os.environ["PYSPARK_PYTHON"] = sys.executable
    if mode == "fused":
        from ddflow.spark.tasks.fused import FAULT_ENV

        os.environ[FAULT_ENV] = f"{KILL_AT}:{marker}"  # inherited by the executors' workers
    warnings.simplefilter("ignore")
    from tests.spark.conftest import on_spark
    from tests.spark.session import local_session

    spark = local_session("local[2,4]", partitions=4, app="ddflow-fault-test")
    spark.sparkContext.setLogLevel("OFF")
    build = builder(killer(marker) if mode == "map" else None)
    rows, result = on_spark(spark, build, history())
    tracker = spark.sparkContext.statusTracker()
    failed = 0
    for step in result.supersteps:
        for s in step.stage_ids:
            info = tracker.getStageInfo(s)
            failed += info.numFailedTasks if info is not None else 0
    with open(out, "w") as f:
        json.dump(
            {
                "rows": [list(r[:-2]) + [list(r[-2]), r[-1]] for r in rows],
                "failed_tasks": failed,
                "supersteps": [s.phase for s in result.supersteps],
                "explain": result.explain(),
            },
            f,
        )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "map")
