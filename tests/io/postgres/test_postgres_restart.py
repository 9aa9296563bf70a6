"""A persistent Postgres-to-Postgres pipeline killed with SIGKILL at random points, while
transactions change its source table, and restarted each time: the sink table ends equal to
a recompute over the source table's final state (every change read once: a change read
twice or lost would show in the counts and totals), with no new snapshot after the first
run (the replication slot is kept between runs). The parts are ``tests/persist/pg_crash.py``,
which ``benches/persistence.py`` runs with 20 kills.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.persist.pg_crash import crash_run

pytestmark = pytest.mark.timeout(300)


def test_killed_and_restarted_reads_every_change_once(conninfo: str, tmp_path: Path) -> None:
    run = crash_run(conninfo, tmp_path / "state", kills=4, seed=3)
    assert run.equal
    assert run.slot_kept  # kept for the next run
