"""``python -m ddflow.doctor --spark`` starts its own local Spark session in a fresh
interpreter: with executors on this interpreter it prints the ddflow version they import and
exits 0; with ``PYSPARK_PYTHON`` pointing at an interpreter without ddflow (a bare virtual
environment) it names the problem and exits 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ddflow import _core

pytestmark = pytest.mark.timeout(180)


def _doctor(executor_python: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYSPARK_PYTHON": executor_python}
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    return subprocess.run(
        [sys.executable, "-m", "ddflow.doctor", "--spark"],
        capture_output=True,
        text=True,
        env=env,
        timeout=170,
    )


def test_executors_with_this_ddflow_pass() -> None:
    done = _doctor(sys.executable)
    assert done.returncode == 0, done.stdout + done.stderr
    version = _core.__version__
    executors = [ln for ln in done.stdout.splitlines() if ln.startswith("spark executors")]
    assert executors, done.stdout
    for line in executors:
        assert f"ddflow {version} (_core {version})" in line, done.stdout
    assert done.stdout.rstrip().endswith("no problems found")


def test_executors_without_ddflow_fail(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")],
        check=True,
        timeout=60,
    )
    bare = str(tmp_path / "bare" / "bin" / "python")
    done = _doctor(bare)
    assert done.returncode == 1, done.stdout + done.stderr
    problems = [ln for ln in done.stdout.splitlines() if ln.startswith("problem: ")]
    assert len(problems) == 1, done.stdout
    assert f"PYSPARK_PYTHON={bare}" in problems[0]
    assert "set PYSPARK_PYTHON to an interpreter with ddflow" in problems[0]
    assert "No module named" in problems[0]
    assert done.stdout.rstrip().endswith("1 problem(s) found")
