"""BFS distance counts on a real Spark standalone cluster (a master and two 1-core workers,
each its own JVM with its own executor and Python workers) equal the embedded engine's,
while one executor JVM is SIGKILLed in the middle of a superstep, or its whole worker is.

The kill comes from a thread of the test: it waits until the driver has finished
``KILL_AFTER`` supersteps (the ``progress=`` lines) and the victim executor runs a task (the
driver UI's REST API), freezes the executor JVM (SIGSTOP), checks that the driver still sees
the task running, then kills (SIGKILL). The test asserts that the kill happened with a task
running and supersteps still to come, that Spark saw the executor go, and that the output
history equals a run of the same flow on the embedded engine. Checkpoints are reliable
(``checkpoint="reliable"``, files in a directory every process reaches, as is the reduce
state store's ``state_dir``): a local checkpoint's blocks die with their executor.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ..conftest import embedded
from .cluster_job import bfs_counts, history
from .conftest import finish_job, job_config, start_job
from .standalone import Cluster, Worker, cmdline

KILL_AFTER = 1
"""Supersteps the driver finishes before the victim is killed (the loop runs more)."""


def _executor_id(pid: int) -> str:
    args = cmdline(pid).split()
    return args[args.index("--executor-id") + 1]


def _active_tasks(host: str, ui_port: int, executor: str) -> int:
    """Tasks the driver's UI shows running on ``executor`` (0 when it cannot tell yet)."""
    base = f"http://{host}:{ui_port}/api/v1/applications"
    try:
        with urllib.request.urlopen(base, timeout=2) as r:
            app = json.load(r)[0]["id"]
        with urllib.request.urlopen(f"{base}/{app}/executors", timeout=2) as r:
            for e in json.load(r):
                if e["id"] == executor:
                    return int(e["activeTasks"])
    except (OSError, ValueError, KeyError, IndexError):
        pass
    return 0


def _supersteps(progress: Path) -> int:
    try:
        lines = progress.read_text().splitlines()
    except OSError:
        return 0
    return sum(line.startswith("superstep") for line in lines)


def _killer(
    cluster: Cluster, victim: Worker, what: str, cfg: dict[str, Any], done: threading.Event
) -> dict[str, Any]:
    """Kills ``victim``'s executor (``what="executor"``) or the whole worker mid-run, from a
    thread; the returned dict records when (filled in by the thread)."""
    record: dict[str, Any] = {}
    progress = Path(cfg["progress"])

    def run() -> None:
        while not done.is_set() and _supersteps(progress) < KILL_AFTER:
            time.sleep(0.05)
        pids = victim.executors()
        if done.is_set() or not pids:
            record["missed"] = f"run over: {done.is_set()}, executors: {pids}"
            return
        executor = _executor_id(pids[0])
        deadline = time.monotonic() + 30
        active = 0
        while not done.is_set() and time.monotonic() < deadline:
            if _active_tasks(cfg["host"], cfg["ui_port"], executor):
                # Freeze the executor JVM, then ask again once messages in flight have
                # landed: a task the driver still sees running cannot finish any more.
                os.kill(pids[0], signal.SIGSTOP)
                time.sleep(0.5)
                active = _active_tasks(cfg["host"], cfg["ui_port"], executor)
                if active:
                    break
                os.kill(pids[0], signal.SIGCONT)
            time.sleep(0.02)
        if not active:
            record["missed"] = f"the victim ran no task (run over: {done.is_set()})"
            return
        if what == "executor":
            os.kill(pids[0], signal.SIGKILL)
        else:
            cluster.kill_worker(victim)
        record.update(
            executor=executor,
            pid=pids[0],
            active_tasks=active,
            supersteps_before=_supersteps(progress),
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    record["thread"] = thread
    return record


@pytest.mark.timeout(170)
@pytest.mark.parametrize("what", ["executor", "worker"])
def test_bfs_equals_embedded_with_a_victim_killed_mid_run(
    cluster: Cluster, tmp_path: Path, what: str
) -> None:
    data = history()
    want = embedded(bfs_counts, data)
    victim = cluster.live()[-1]
    if cluster.network is not None:  # each worker on its own address, in its own namespace
        assert len({cluster.host, *(w.host for w in cluster.live())}) == 3
    cfg = job_config(cluster, tmp_path, "bfs", executors=2)
    done = threading.Event()
    proc = start_job(cluster, cfg, tmp_path)
    record = _killer(cluster, victim, what, cfg, done)
    try:
        out = finish_job(proc, cluster, tmp_path, timeout=150)
    finally:
        done.set()
        record["thread"].join(timeout=10)
    assert "error" not in out, out["error"]
    assert "missed" not in record, record
    # Killed mid-run: a task was running on the victim, and supersteps followed.
    assert record["active_tasks"] >= 1, record
    steps = [p for p in out["phases"] if p.startswith("superstep")]
    assert len(steps) > record["supersteps_before"], (record, out["phases"])
    # Spark saw the executor go, and the task it ran fail (then retried elsewhere).
    lost = {e["id"]: e for e in out["executors"]}[record["executor"]]
    assert not lost["active"] and lost["remove_reason"], lost
    assert out["failed_tasks"] >= 1, out["executors"]
    if what == "worker":
        assert victim.proc.poll() is not None
    got = sorted(((*r[:-2], tuple(r[-2]), r[-1]) for r in out["rows"]), key=repr)
    assert got == want
    assert len({r[-2] for r in want}) > 30  # output updates at many times  # updates at many times
