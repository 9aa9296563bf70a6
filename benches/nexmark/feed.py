"""Nexmark events into a dataflow: the inputs, the queries on them, and the batches.

Nexmark is insert-only. Batch ``i`` holds the events ``i * size .. (i + 1) * size - 1`` of
every table (cut by event time, which grows with the event number) and is fed at logical
time ``i`` with ``update_batch``, whole Arrow slices, never row by row.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
from benches.nexmark.generate import BASE_TIME, SCHEMAS, event_time
from benches.nexmark.queries import QUERIES, TABLES_READ

import ddflow as dd

__all__ = ["Inputs", "batches", "between", "build", "feed"]

Inputs = dict[str, dd.InputSession]


def build(flow: dd.Dataflow, queries: Iterable[str]) -> tuple[Inputs, dict[str, dd.Collection]]:
    """The inputs the queries read (``person``, ``auction``, ``bid``, named so) and each
    query's result collection (``dd.sql`` of its text)."""
    wanted = sorted({t for q in queries for t in TABLES_READ[q]})
    sessions: Inputs = {}
    tables: dict[str, dd.Collection] = {}
    for name in wanted:
        sessions[name], tables[name] = flow.new_input(dict(SCHEMAS[name]), name=name)
    results = {q: dd.sql(QUERIES[q], {t: tables[t] for t in TABLES_READ[q]}) for q in queries}
    return sessions, results


def between(
    tables: dict[str, pa.Table],
    first: int,
    end: int,
    rate: int = 100,
    base_time: int = BASE_TIME,
) -> dict[str, pa.Table]:
    """The rows of events ``first .. end - 1`` of each table (each in event order)."""
    lo, hi = event_time(np.array([first, end], dtype=np.int64), rate, base_time)
    out = {}
    for name, table in tables.items():
        times = table["date_time"].to_numpy()
        a, b = np.searchsorted(times, [lo, hi], side="left")
        out[name] = table.slice(int(a), int(b - a))
    return out


def batches(
    tables: dict[str, pa.Table],
    events: int,
    size: int,
    rate: int = 100,
    base_time: int = BASE_TIME,
) -> list[dict[str, pa.Table]]:
    """The first ``events`` events cut into batches of ``size``; the last may be shorter
    (each table's event times read once, not once per batch)."""
    starts = np.arange(0, events, size, dtype=np.int64)
    bounds = event_time(np.append(starts, events), rate, base_time)
    cuts = {
        name: np.searchsorted(table["date_time"].to_numpy(), bounds, side="left")
        for name, table in tables.items()
    }
    return [
        {
            name: table.slice(int(cuts[name][k]), int(cuts[name][k + 1] - cuts[name][k]))
            for name, table in tables.items()
        }
        for k in range(len(starts))
    ]


def feed(sessions: Inputs, batch: dict[str, pa.Table], time: int) -> None:
    """Feeds one batch at ``time`` and advances every input past it."""
    for name, session in sessions.items():
        table = batch[name]
        if table.num_rows:
            session.update_batch(table, times=time)
        session.advance_to(time + 1)
