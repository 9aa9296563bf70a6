"""A persistent Postgres-to-Postgres pipeline killed with SIGKILL at random points, while
transactions change its source table, and restarted each time: the sink table ends equal to
a recompute over the source table's final state (every change read once: a change read
twice or lost would show in the counts and totals), with no new snapshot after the first
run.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from tests.io.postgres.helpers import sql
from tests.persist.pg_pipeline import SINK, SOURCE

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[3]


def _transact(conninfo: str, rng: random.Random, next_id: list[int]) -> None:
    """One random transaction on the source table: inserts, an update, a delete."""
    statements = []
    for _ in range(rng.randint(1, 3)):
        next_id[0] += 1
        owner = f"o{rng.randint(0, 6)}"
        statements.append(
            f"insert into {SOURCE} values ({next_id[0]}, '{owner}', {rng.randint(1, 500)})"
        )
    target = rng.randint(1, next_id[0])
    statements.append(
        f"update {SOURCE} set balance = balance + {rng.randint(1, 9)}, "
        f"owner = 'o{rng.randint(0, 6)}' where id = {target}"
    )
    if rng.random() < 0.3:
        statements.append(f"delete from {SOURCE} where id = {rng.randint(1, next_id[0])}")
    sql(conninfo, *statements)


def _expected(conninfo: str) -> set[tuple[object, ...]]:
    return set(
        sql(
            conninfo,
            f"select owner, count(*), sum(balance) from {SOURCE} group by owner",
        )
    )


def _sink(conninfo: str) -> set[tuple[object, ...]]:
    if sql(conninfo, f"select to_regclass('{SINK}')") == [(None,)]:
        return set()  # not created yet
    return set(sql(conninfo, f"select owner, n, total from {SINK}"))


def _start(conninfo: str, state: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tests.persist.pg_pipeline", conninfo, str(state)]
    return subprocess.Popen(command, cwd=ROOT)


def test_killed_and_restarted_reads_every_change_once(conninfo: str, tmp_path: Path) -> None:
    sql(
        conninfo,
        f"drop table if exists {SOURCE}, {SINK}",
        f"create table {SOURCE} (id int primary key, owner text not null, balance bigint)",
        f"insert into {SOURCE} select i, 'o' || (i % 5), i * 10 from generate_series(1, 40) i",
    )
    state = tmp_path / "state"
    rng = random.Random(3)
    next_id = [40]
    for _ in range(4):
        process = _start(conninfo, state)
        stop = threading.Event()

        def write(seed: int, stop: threading.Event = stop) -> None:
            local = random.Random(seed)
            while not stop.is_set():
                _transact(conninfo, local, next_id)
                time.sleep(0.02)

        writer = threading.Thread(target=write, args=(rng.randint(0, 10**6),))
        writer.start()
        time.sleep(rng.uniform(1.0, 4.0))
        process.kill()
        process.wait()
        stop.set()
        writer.join()
        # Between runs the table changes too (nothing follows it then).
        _transact(conninfo, rng, next_id)

    process = _start(conninfo, state)
    try:
        deadline = time.monotonic() + 90
        expected = _expected(conninfo)
        while _sink(conninfo) != expected and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _sink(conninfo) == expected
        assert process.poll() is None, "the pipeline stopped"
    finally:
        process.kill()
        process.wait()
    slots = sql(conninfo, "select slot_name from pg_replication_slots")
    assert ("ddflow_public_accounts_restart",) in slots  # kept for the next run
    sql(conninfo, "select pg_drop_replication_slot('ddflow_public_accounts_restart')")
