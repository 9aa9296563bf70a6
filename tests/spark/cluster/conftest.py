"""Fixtures of the cluster tests: a Spark standalone cluster (``standalone.Cluster``: a
master and workers started from the pyspark pip package, each worker 1 core) in a temporary
directory, shared by the tests and stopped at the end even when a test fails; and the driver
job (``cluster_job.py``) run in its own process against it, one Spark application per test.

The workers run in their own network namespaces (``standalone.Network``) where the machine
allows (root, ``ip``), else on 127.0.0.1; ``DDFLOW_SPARK_CLUSTER_NETNS=0`` turns the
namespaces off, ``=1`` makes their absence fail the tests.

Without Java the tests skip with that reason; anything else that fails to start fails.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..jvm_options import java_options
from .standalone import Cluster, Network, free_port, java_missing, netns_missing

JOB = Path(__file__).with_name("cluster_job.py")

NETNS = os.environ.get("DDFLOW_SPARK_CLUSTER_NETNS", "auto")
"""``auto`` (namespaces where possible), ``0`` (never) or ``1`` (required)."""

GOOD_WORKERS = 2
"""Workers whose executors run this interpreter (which has ddflow)."""


@pytest.fixture(scope="session")
def _cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The standalone cluster of the test run (started once: about 20 s of JVM starts on
    this project's 2-core machine); killed at the end, also after failures."""
    reason = java_missing()
    if reason is not None:
        pytest.skip(reason)
    network = None
    if NETNS != "0":
        why = netns_missing()
        if why is None:
            network = Network()
        elif NETNS == "1":
            pytest.fail(f"DDFLOW_SPARK_CLUSTER_NETNS=1: {why}")
    root = tmp_path_factory.mktemp("spark-cluster")
    cluster = Cluster(root, [sys.executable] * GOOD_WORKERS, network)
    # A test run ended by SIGTERM runs no fixture teardown: stop the cluster from the signal
    # handler, then die of the signal as before, so no master, worker, namespace or bridge
    # outlives the run.
    previous = signal.getsignal(signal.SIGTERM)
    if previous == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, functools.partial(_stop_and_die, cluster))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        if previous == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, previous)


def _stop_and_die(cluster: Cluster, signum: int, frame: Any) -> None:
    for job in list(_JOBS):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(job.pid, signal.SIGKILL)
    cluster.stop()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


@pytest.fixture
def cluster(_cluster: Cluster) -> Cluster:
    """The cluster with ``GOOD_WORKERS`` live workers running this interpreter: workers a
    previous test killed are replaced."""
    good = [w for w in _cluster.live() if w.python == sys.executable]
    for _ in range(GOOD_WORKERS - len(good)):
        _cluster.add_worker(sys.executable, f"worker{len(_cluster.workers)}")
    _cluster.wait_workers(len(_cluster.live()), 90)
    return _cluster


def job_config(cluster: Cluster, tmp: Path, mode: str, executors: int) -> dict[str, Any]:
    """The config of one ``cluster_job.py`` run (see its doc); ``dir`` is shared by the driver
    and every executor (one machine: a plain temporary directory)."""
    shared = tmp / "shared"
    shared.mkdir(exist_ok=True)
    return {
        "master": cluster.url,
        "host": cluster.host,
        "mode": mode,
        "executors": executors,
        "dir": str(shared),
        "ui_port": free_port(cluster.host),
        "progress": str(tmp / "progress.txt"),
        "out": str(tmp / "out.json"),
        "java_options": java_options(),
    }


_JOBS: set[subprocess.Popen[str]] = set()
"""The driver processes running now (each in its own session), killed on SIGTERM."""


def start_job(cluster: Cluster, cfg: dict[str, Any], tmp: Path) -> subprocess.Popen[str]:
    """Starts the driver process (its stdout and stderr go to ``tmp/driver.log``)."""
    path = tmp / "job.json"
    path.write_text(json.dumps(cfg))
    env = dict(os.environ)
    env["PYSPARK_PYTHON"] = cluster.node_python
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    log = open(tmp / "driver.log", "w")  # noqa: SIM115 - the child owns it
    try:
        proc = subprocess.Popen(
            [sys.executable, str(JOB), str(path)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=tmp,  # a relative path the driver creates goes there
            text=True,
            start_new_session=True,
        )
        _JOBS.add(proc)
        return proc
    finally:
        log.close()


def finish_job(proc: subprocess.Popen[str], cluster: Cluster, tmp: Path, timeout: float) -> Any:
    """Waits for the driver; returns its JSON result, or fails with its log and the
    cluster's (the driver is killed if it overruns)."""
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        code = None
    finally:
        _JOBS.discard(proc)
    if code != 0:
        log = (tmp / "driver.log").read_text(errors="replace")
        pytest.fail(f"driver exited with {code}:\n{log[-6000:]}\n{cluster.logs(1500)}")
    return json.loads((tmp / "out.json").read_text())
