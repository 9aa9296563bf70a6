"""On a standalone cluster where one worker's Python lacks ddflow (a venv without system
site packages, with only pyarrow), ``run_on_spark``'s executor check fails the run before
any data job with an ``ExecutorVersionError`` naming that executor's interpreter and Python
version; the executors that have the driver's ddflow pass."""

from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import pyarrow
import pytest

from .conftest import finish_job, job_config, start_job
from .standalone import Cluster


@pytest.fixture(scope="session")
def python_without_ddflow(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A venv's interpreter with pyarrow (what ``mapInArrow``'s Python worker imports; pyspark
    itself comes from Spark's ``pyspark.zip``) and no ddflow."""
    venv = tmp_path_factory.mktemp("venv-without-ddflow")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q"]
    pip += ["--disable-pip-version-check", f"pyarrow=={pyarrow.__version__}"]
    subprocess.run(pip, check=True, timeout=150)
    check = subprocess.run([python, "-c", "import ddflow"], capture_output=True)
    assert check.returncode != 0, "the venv imports ddflow"
    return python


@pytest.mark.timeout(240)
def test_executor_without_ddflow_is_named(
    cluster: Cluster, python_without_ddflow: str, tmp_path: Path
) -> None:
    bad = cluster.add_worker(python_without_ddflow, f"worker{len(cluster.workers)}-no-ddflow")
    try:
        cluster.wait_workers(len(cluster.live()), 90)
        executors = len(cluster.live())
        cfg = job_config(cluster, tmp_path, "versions", executors=executors)
        out = finish_job(start_job(cluster, cfg, tmp_path), cluster, tmp_path, timeout=150)
    finally:
        cluster.kill_worker(bad)
    assert len(out["executors"]) == executors + 1  # and the driver
    msg = out["error"]
    assert msg is not None, "the run passed the executor check"
    where = f"executor Python {python_without_ddflow} ({platform.python_version()})"
    assert f"{where} cannot import ddflow: ModuleNotFoundError" in msg, msg
    assert msg.count("executor Python") == 1, msg  # the other executors have ddflow
    assert f"driver Python {sys.executable}" in msg, msg
