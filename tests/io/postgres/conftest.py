"""Fixtures of the Postgres connector tests: one real server for the session (see
``server.py``), a connection string to it, and a helper that runs a dataflow while another
thread changes tables.

The tests skip only when no PostgreSQL server binary exists on the machine (``.ci/run``
installs Debian's ``postgresql`` package where it is missing).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from tests.io.postgres.server import Server, find_bin_dir, start

import ddflow as dd


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL server with ``wal_level=logical`` in a temporary directory."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in "
            "/usr/lib/postgresql/*/bin: apt-get install postgresql"
        )
    server = start(bin_dir)
    yield server
    server.stop()


@pytest.fixture
def conninfo(postgres_server: Server) -> str:
    """A libpq connection string to the session's server."""
    return postgres_server.conninfo


def sql(conninfo: str, *statements: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Runs ``statements`` in one transaction; returns the last one's rows (if any)."""
    with psycopg.connect(conninfo) as conn:
        cur = conn.cursor()
        for statement in statements:
            cur.execute(statement, params)
        return cur.fetchall() if cur.description else []


class Watched:
    """A collection's current contents, kept by ``dd.subscribe`` callbacks (thread-safe),
    and every update seen with its time."""

    def __init__(self, collection: dd.Collection) -> None:
        self.lock = threading.Lock()
        self.state: Counter[tuple[Any, ...]] = Counter()
        self.updates: list[dict[str, Any]] = []
        self.columns = list(collection.columns)
        dd.subscribe(collection, self._on_change)

    def _on_change(self, updates: pa.Table) -> None:
        with self.lock:
            for row in updates.to_pylist():
                self.updates.append(row)
                record = tuple(row[c] for c in self.columns)
                self.state[record] += row["diff"]
                if self.state[record] == 0:
                    del self.state[record]

    def contents(self) -> Counter[tuple[Any, ...]]:
        """A copy of the current contents."""
        with self.lock:
            return Counter(self.state)


def run_while(
    flow: dd.Dataflow,
    work: Callable[[], None],
    done: Callable[[], bool],
    timeout: float = 30.0,
) -> None:
    """Runs ``flow`` in this thread while ``work()`` changes tables in another; stops it once
    ``work`` has returned and ``done()`` holds, or after ``timeout`` seconds. Re-raises a
    failure of ``work``."""
    failures: list[BaseException] = []

    def driver() -> None:
        try:
            work()
            deadline = time.monotonic() + timeout
            while not done() and time.monotonic() < deadline:
                time.sleep(0.02)
        except BaseException as exc:
            failures.append(exc)
        finally:
            flow.stop()

    thread = threading.Thread(target=driver)
    thread.start()
    try:
        flow.run()
    finally:
        thread.join()
    if failures:
        raise failures[0]
