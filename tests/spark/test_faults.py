"""Faults: a Python worker killed in the middle of a superstep, on a ``local[2,4]`` master
(task retries allowed), does not change the output. The job runs in its own process with its
own Spark session (``fault_job.py``), so the test run's shared ``local[2]`` session is left
alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import embedded
from .fault_job import KILL_AT, builder, history, identity

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("mode", ["map", "fused"])
def test_killed_worker_mid_superstep_gives_identical_output(tmp_path: Path, mode: str) -> None:
    marker = tmp_path / "killed"
    out = tmp_path / "out.json"
    job = Path(__file__).with_name("fault_job.py")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, str(job), str(marker), str(out), mode],
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert marker.exists(), "the worker was never killed"
    got = json.loads(out.read_text())
    assert got["failed_tasks"] >= 1
    # The kill happened inside the loop, after superstep KILL_AT had started.
    assert len(got["supersteps"]) > KILL_AT
    assert ("fused superstep" in got["explain"]) == (mode == "fused")
    rows = [(*r[:-2], tuple(r[-2]), r[-1]) for r in got["rows"]]
    want = embedded(builder(identity), history())
    assert sorted(rows, key=repr) == want
