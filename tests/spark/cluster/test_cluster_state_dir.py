"""A ``state_dir`` that is not one directory for every process fails the run with an error
naming the store, the executor's host and its working directory, instead of giving wrong
output. Here the path is relative: the driver and each executor resolve it in their own
working directory, as a path on each node's own disk would be, so a task would read no
state where another executor (or the driver) wrote it."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import finish_job, job_config, start_job
from .standalone import Cluster


@pytest.mark.timeout(170)
def test_state_dir_not_shared_fails_naming_the_executor(cluster: Cluster, tmp_path: Path) -> None:
    cfg = job_config(cluster, tmp_path, "bfs", executors=2)
    cfg["state_dir"] = "state-on-each-node"
    cfg["max_failures"] = 1  # the error is the same on every attempt
    out = finish_job(start_job(cluster, cfg, tmp_path), cluster, tmp_path, timeout=150)
    msg = out.get("error")
    assert msg is not None, "the run gave output from a state store its executors do not share"
    assert "the reduce state store 'state-on-each-node/ddflow-state-" in msg, msg
    assert "is not visible from this executor" in msg, msg
    # The executor's working directory: <worker>/work/<application>/<executor id>.
    assert f"/work/{out['app']}/" in msg, msg
