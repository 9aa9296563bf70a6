"""The Postgres crash test's parts: a writer committing random transactions to the source
table, the pipeline process (``tests/persist/pg_pipeline.py``) killed with SIGKILL at random
points while it writes, and the check of the sink table against a recompute of the source.

Shared by ``tests/io/postgres/test_postgres_restart.py`` (4 kills, in CI) and
``benches/persistence.py`` (20 kills).
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tests.io.postgres.helpers import sql
from tests.persist.pg_pipeline import SINK, SOURCE

ROOT = Path(__file__).resolve().parents[2]
SLOT = f"ddflow_public_{SOURCE}"
"""The replication slot the pipeline's source keeps between runs."""


@dataclass
class CrashRun:
    """What a crash run did and found."""

    kills: int
    transactions: int
    """Transactions committed to the source table, over all runs."""
    rows: int
    """Rows in the source table at the end."""
    seconds: float
    """Wall time from the first start to the sink's catching up after the last."""
    catch_up: float
    """Seconds the last run took to bring the sink equal to the recompute."""
    equal: bool
    """Whether the sink table equals the recompute of the source table."""
    slot_kept: bool


def transact(conninfo: str, rng: random.Random, next_id: list[int]) -> None:
    """One random transaction on the source table: inserts, an update, maybe a delete."""
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


def expected(conninfo: str) -> set[tuple[object, ...]]:
    """The sink's rows recomputed from the source table: (owner, accounts, total)."""
    query = f"select owner, count(*), sum(balance) from {SOURCE} group by owner"
    return set(sql(conninfo, query))


def sink_rows(conninfo: str) -> list[tuple[object, ...]]:
    """The sink table's rows (a list: a duplicate would show)."""
    if sql(conninfo, f"select to_regclass('{SINK}')") == [(None,)]:
        return []  # not created yet
    return list(sql(conninfo, f"select owner, n, total from {SINK}"))


def start(conninfo: str, state: Path) -> subprocess.Popen[bytes]:
    """Starts the pipeline process."""
    command = [sys.executable, "-m", "tests.persist.pg_pipeline", conninfo, str(state)]
    return subprocess.Popen(command, cwd=ROOT)


def crash_run(
    conninfo: str, state: Path, kills: int, seed: int, catch_up: float = 90.0
) -> CrashRun:
    """Creates the source table (40 accounts), then ``kills`` times: starts the pipeline,
    commits random transactions from another thread, kills the pipeline with SIGKILL 1 to
    4 s after its start, and commits one more transaction while nothing runs. Finally starts
    it once more and waits (up to ``catch_up`` seconds) for the sink table to equal the
    recompute of the source table; drops the replication slot it kept."""
    sql(
        conninfo,
        f"drop table if exists {SOURCE}, {SINK}",
        f"create table {SOURCE} (id int primary key, owner text not null, balance bigint)",
        f"insert into {SOURCE} select i, 'o' || (i % 5), i * 10 from generate_series(1, 40) i",
    )
    rng = random.Random(seed)
    next_id = [40]
    transactions = [0]
    began = time.monotonic()
    for _ in range(kills):
        process = start(conninfo, state)
        stop = threading.Event()

        def write(seed: int, stop: threading.Event = stop) -> None:
            local = random.Random(seed)
            while not stop.is_set():
                transact(conninfo, local, next_id)
                transactions[0] += 1
                time.sleep(0.02)

        writer = threading.Thread(target=write, args=(rng.randint(0, 10**6),))
        writer.start()
        time.sleep(rng.uniform(1.0, 4.0))
        process.kill()
        process.wait()
        stop.set()
        writer.join()
        # Between runs the table changes too (nothing follows it then).
        transact(conninfo, rng, next_id)
        transactions[0] += 1

    process = start(conninfo, state)
    try:
        last = time.monotonic()
        deadline = last + catch_up
        want = expected(conninfo)
        while sorted(sink_rows(conninfo)) != sorted(want) and time.monotonic() < deadline:
            time.sleep(0.2)
        caught_up = time.monotonic()
        rows = sink_rows(conninfo)
        equal = len(rows) == len(set(rows)) and set(rows) == want
        alive = process.poll() is None
    finally:
        process.kill()
        process.wait()
    assert alive, "the pipeline stopped"
    slots = sql(conninfo, "select slot_name from pg_replication_slots")
    kept = (SLOT,) in slots
    if kept:
        sql(conninfo, f"select pg_drop_replication_slot('{SLOT}')")
    (count,) = sql(conninfo, f"select count(*) from {SOURCE}")[0]
    return CrashRun(
        kills, transactions[0], int(count), caught_up - began, caught_up - last, equal, kept
    )
