"""Helpers for the Delta Lake tests: a run driven one table version at a time, and oracles.

:class:`Steps` changes the source table from inside the run: it is a source of its own,
attached before the Delta sources so that the run loop polls it first in each tick, after
the previous tick's updates were completed and written by the sinks. Once the Delta source
has handed over the version the last step made, it calls ``check(version)`` and makes the
next step; after the last check it stops the run. Everything runs in the run loop's thread,
so each version is checked exactly once, whatever the machine's speed (a version that
changes no rows is checked too: the source moves past it without a tick).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable

import ddflow as dd
from ddflow.io.deltalake.source import DeltaSource
from ddflow.sources import Source, SourceBatch


class Steps(Source):
    """Makes ``steps`` one after another, each once the source handed over the last one.
    Create it before reading the Delta tables (it must be polled first)."""

    name = "test steps"

    def __init__(
        self,
        flow: dd.Dataflow,
        uri: str,
        steps: Sequence[Callable[[], Any]],
        check: Callable[[int], None],
    ) -> None:
        self.flow = flow
        self.uri = uri
        self.steps = list(steps)
        self.check = check
        self.checked: list[int] = []
        self.waiting_for: int | None = None
        session, _ = flow.new_input(("unused",), name="steps")
        flow.attach_source(session, self)

    def poll(self) -> list[SourceBatch]:
        sources = [s for s in self.flow._loop.sources if isinstance(s, DeltaSource)]
        version = sources[0].version if sources else None
        if version is None or (self.waiting_for is not None and version < self.waiting_for):
            return []
        if self.checked and self.checked[-1] == version:
            return []
        self.check(version)
        self.checked.append(version)
        while self.steps:
            self.steps.pop(0)()
            self.waiting_for = DeltaTable(self.uri).version()
            if self.waiting_for > version:
                return []
            # The step committed nothing (a delete matching no row): on to the next.
        self.flow.stop()
        return []

    @property
    def ended(self) -> bool:
        return False


def multiset(table: pa.Table, columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    """The rows of ``table`` (its ``columns``) as a multiset."""
    return Counter(tuple(r[c] for c in columns) for r in table.select(list(columns)).to_pylist())


def accumulate(updates: pa.Table, columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    """The collection that an update table (``columns``, ``time``, ``diff``) accumulates
    to, as a multiset (asserting no count is negative)."""
    total: Counter[tuple[Any, ...]] = Counter()
    for r in updates.to_pylist():
        total[tuple(r[c] for c in columns)] += r["diff"]
    assert all(n >= 0 for n in total.values()), total
    return +total


def table_at(uri: str, version: int | None = None) -> pa.Table:
    """The Delta table's rows at ``version`` (the newest by default)."""
    return DeltaTable(uri, version=version).to_pyarrow_table()


def times_sorted(table: pa.Table) -> bool:
    """Whether an update table's ``time`` column never decreases."""
    times = table["time"]
    return len(times) < 2 or bool(pc.all(pc.less_equal(times[:-1], times[1:])).as_py())
