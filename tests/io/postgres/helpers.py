"""Helpers of the Postgres connector tests: SQL in one transaction, a collection's contents
kept by callbacks, and a run of a dataflow while another thread changes tables.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
import pyarrow as pa

import ddflow as dd


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
    ``work`` has returned and ``done()`` holds, or after ``timeout`` seconds (or as soon as
    the run ends by itself, failing). Re-raises a failure of ``work``."""
    failures: list[BaseException] = []
    ended = threading.Event()

    def driver() -> None:
        try:
            work()
            deadline = time.monotonic() + timeout
            while not ended.is_set() and not done() and time.monotonic() < deadline:
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
        ended.set()
        thread.join()
    if failures:
        raise failures[0]
