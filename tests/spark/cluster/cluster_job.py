"""The driver of the cluster tests, run in its own process (one SparkContext per process:
the test run's shared ``local[2]`` session stays alone): a classic SparkSession connected to
a standalone master, which runs BFS distance counts over ``history()`` with
``run_on_spark``, or only its executor version check.

``python tests/spark/cluster/cluster_job.py CONFIG.json``; the config holds ``master``
(``spark://...``), ``host`` (where the driver listens), ``mode`` (``bfs`` or ``versions``),
``executors`` (wait until this many have registered), ``dir`` (a directory the driver and
every executor reach: checkpoints and the reduce state store, unless ``state_dir`` says
otherwise), ``max_failures`` (attempts per task, default 8), ``ui_port`` (the driver's UI,
whose REST API the test watches), ``progress`` (a file that gets one line per superstep,
flushed: the test waits on it) and ``out`` (the JSON result: output rows as
``conftest.on_spark`` gives them, the phases, the executors Spark saw and why they were
removed, failed task attempts, wall-clock marks; or the ``ExecutorVersionError`` text).
The executors' Python is ``PYSPARK_PYTHON`` from the environment (the cluster's
``node-python``).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import urllib.request
import warnings
from typing import Any

import ddflow as dd

NODES, EDGES, UPDATES = 300, 1500, 300
"""The graph: several hundred nodes, a random edge set at time 0, then single-edge changes
each at its own time (small enough for the cluster tests to stay well under a minute)."""


JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""Java options of the driver and the executors (see ``_session``) when the config has no
``java_options`` (the tests pass theirs: ``tests/spark/jvm_options.py``)."""


def history(seed: int = 11) -> dict[str, Any]:
    """Edges at time 0 and ``UPDATES`` single-edge changes (an edge added, or a live one
    removed), each at its own time; root node 0. In ``conftest.Data``'s form."""
    rng = random.Random(seed)
    live = [(rng.randrange(NODES), rng.randrange(NODES)) for _ in range(EDGES)]
    rows = [(*e, 0, 1) for e in live]
    for t in range(1, UPDATES + 1):
        if rng.random() < 0.5:
            e = live.pop(rng.randrange(len(live)))
            rows.append((*e, t, -1))
        else:
            e = (rng.randrange(NODES), rng.randrange(NODES))
            live.append(e)
            rows.append((*e, t, 1))
    return {"edges": (("src", "dst"), rows), "roots": (("node",), [(0, 0, 1)])}


def bfs_counts(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    """BFS distance counts: ``dd.algorithms.bfs(edges, roots).count(by="dist")``."""
    edges_in, edges = flow.new_input(("src", "dst"), name="edges")
    roots_in, roots = flow.new_input(("node",), name="roots")
    counts = dd.algorithms.bfs(edges, roots).count(by="dist")
    return {"edges": edges_in, "roots": roots_in}, [counts]


def _session(cfg: dict[str, Any]) -> Any:
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(cfg["master"])
        .appName(f"ddflow-cluster-{cfg['mode']}")
        .config("spark.driver.host", cfg["host"])
        .config("spark.driver.bindAddress", cfg["host"])
        .config("spark.driver.memory", "1g")
        # Short runs on few cores: the client compiler and the serial collector start and
        # warm up the JVMs with less CPU than the defaults.
        .config("spark.driver.extraJavaOptions", cfg.get("java_options", JVM_OPTIONS))
        .config("spark.executor.extraJavaOptions", cfg.get("java_options", JVM_OPTIONS))
        .config("spark.executor.memory", "512m")
        .config("spark.executor.cores", "1")
        .config("spark.cores.max", str(cfg["executors"]))
        # A task on a lost executor is retried elsewhere (a lost executor counts as a task
        # failure): allow several; the stage whose shuffle files died with it is resubmitted.
        .config("spark.task.maxFailures", str(cfg.get("max_failures", 8)))
        .config("spark.stage.maxConsecutiveAttempts", "8")
        .config("spark.ui.enabled", "true")
        .config("spark.ui.port", str(cfg["ui_port"]))
        .config("spark.port.maxRetries", "0")
        .config("spark.ui.showConsoleProgress", "false")
        # One key partition per executor: the version check's first round of tasks (one
        # per partition) then gives every executor one.
        .config("spark.sql.shuffle.partitions", str(cfg["executors"]))
        .config("spark.default.parallelism", str(cfg["executors"]))
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )


def _wait_executors(spark: Any, n: int, timeout: float = 90.0) -> None:
    """Waits until ``n`` executors have registered with the driver."""
    sc = spark.sparkContext
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # The block managers: the driver's and one per executor.
        if sc._jsc.sc().getExecutorMemoryStatus().size() - 1 >= n:
            return
        time.sleep(0.2)
    raise TimeoutError(f"{n} executors did not register within {timeout} s")


def _executors(spark: Any) -> list[dict[str, Any]]:
    """Every executor of the application, live or removed, from the status store."""
    store = spark.sparkContext._jsc.sc().statusStore()
    found = []
    it = store.executorList(False).iterator()
    while it.hasNext():
        e = it.next()
        reason = e.removeReason()
        found.append(
            {
                "id": str(e.id()),
                "active": bool(e.isActive()),
                "failed_tasks": int(e.failedTasks()),
                "remove_reason": str(reason.get()) if reason.isDefined() else None,
            }
        )
    return found


def _failed_tasks(spark: Any, host: str, ui_port: int) -> int:
    """Failed task attempts over every stage of the application (a task on a lost executor
    is one), from the driver UI's REST API."""
    app = spark.sparkContext.applicationId
    url = f"http://{host}:{ui_port}/api/v1/applications/{app}/stages"
    with urllib.request.urlopen(url, timeout=10) as r:
        return sum(int(s["numFailedTasks"]) for s in json.load(r))


def main(config: str) -> None:
    with open(config) as f:
        cfg = json.load(f)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(here))))  # the repo
    warnings.simplefilter("ignore")
    from tests.spark.conftest import frames, on_spark

    from ddflow.spark import ExecutorVersionError, run_on_spark

    marks = {"start": time.time()}
    spark = _session(cfg)
    marks["session"] = time.time()
    spark.sparkContext.setLogLevel("WARN")
    spark.sparkContext.setCheckpointDir(os.path.join(cfg["dir"], "checkpoints"))
    _wait_executors(spark, cfg["executors"])
    marks["executors"] = time.time()
    out: dict[str, Any] = {"app": spark.sparkContext.applicationId, "marks": marks}
    if cfg["mode"] == "versions":
        flow = dd.Dataflow()
        sessions, outputs = bfs_counts(flow)
        dfs = frames(spark, history(), 1)
        try:
            inputs = {sessions[n]: df for n, df in dfs.items()}
            state_dir = os.path.join(cfg["dir"], "state")
            run_on_spark(spark, flow, inputs, outputs, state_dir=state_dir)
            out["error"] = None
        except ExecutorVersionError as exc:
            out["error"] = str(exc)
    else:
        progress = open(cfg["progress"], "a")  # noqa: SIM115 - closed below

        def log(line: str) -> None:
            progress.write(line + "\n")
            progress.flush()

        try:
            rows, result = on_spark(
                spark,
                bfs_counts,
                history(),
                checkpoint="reliable",
                state_dir=cfg.get("state_dir") or os.path.join(cfg["dir"], "state"),
                progress=log,
            )
            marks["run"] = time.time()
            out["rows"] = [[*r[:-2], list(r[-2]), r[-1]] for r in rows]
            out["phases"] = [s.phase for s in result.supersteps]
        except Exception as exc:  # the test reads the failure
            out["error"] = str(exc)
        finally:
            progress.close()
    out["executors"] = _executors(spark)
    out["failed_tasks"] = _failed_tasks(spark, cfg["host"], cfg["ui_port"])
    with open(cfg["out"], "w") as f:
        json.dump(out, f)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
