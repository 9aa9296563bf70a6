"""The Spark Declarative Pipelines example (``ddflow.examples.spark_pipeline``) run with the
``spark-pipelines`` CLI (pyspark 4.1+), twice, with a new source file between the runs.

Oracles: after each run the ``distances`` table equals a full recompute of BFS over every
source row on the embedded engine; the second refresh read only the new file (its log of
files and rows), and it succeeded while the first run's file was unreadable garbage, so it
cannot have read it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pyspark
import pytest

from ddflow.examples import spark_pipeline as example

CLI = Path(pyspark.__file__).parent / "bin" / "spark-pipelines"

pytestmark = pytest.mark.skipif(
    not CLI.exists(), reason=f"pyspark {pyspark.__version__} has no spark-pipelines (4.1+)"
)


def _run(project: Path) -> float:
    """One ``spark-pipelines run`` in ``project``; its wall time in seconds."""
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.pop("SPARK_HOME", None)
    env["SPARK_CONF_DIR"] = str(project / "conf")
    env.pop("DDFLOW_SPARK_REMOTE", None)
    start = time.perf_counter()
    proc = subprocess.run(
        [str(CLI), "run"],
        cwd=project, env=env, capture_output=True, text=True, timeout=400,
    )  # fmt: skip
    took = time.perf_counter() - start
    runs = len(list(project.glob("run-*.log")))
    (project / f"run-{runs + 1}.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, f"spark-pipelines run failed:\n{proc.stdout}\n{proc.stderr}"
    return took


@pytest.mark.timeout(900)
def test_second_run_reads_only_new_rows_and_equals_a_recompute(tmp_path: Path) -> None:
    project = tmp_path / "reach"
    # 240 edges over 40 nodes: every node is reached within 3 hops (4 after the second
    # file's changes), so the first run's BFS on the DataFrame path takes 2 fewer supersteps
    # than with 120 edges (5 hops), and the second file still changes the distances.
    example.init(project, nodes=40, edges=240, seed=3)
    first = _run(project)
    assert example.read_view(project).equals(example.recompute(project))
    old = sorted((project / "source").glob("*.parquet"))
    new = example.add(project, inserts=10, deletes=5, seed=4)
    # The first run's file becomes garbage during the second run: reading it would fail.
    backup = tmp_path / "backup.parquet"
    shutil.copy(old[0], backup)
    old[0].write_bytes(b"not parquet " * 100)
    try:
        second = _run(project)
    finally:
        shutil.copy(backup, old[0])
    got, want = example.read_view(project), example.recompute(project)
    assert got.num_rows > 0
    assert got.equals(want)
    log = example.refreshes(project)
    assert [r["time"] for r in log] == [0, 1]
    assert log[1]["files"] == {"edges": [str(new)]}
    assert log[1]["rows"] == {"edges": pq.read_metadata(new).num_rows}
    print(f"spark-pipelines run: first {first:.1f} s, second {second:.1f} s")
