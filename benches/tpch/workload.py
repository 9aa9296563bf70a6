"""The TPC-H workload in a ddflow dataflow: the tables as inputs, queries as captures, the
initial load at time 0 and refresh batch ``i`` at time ``i``.

``Workload(queries, sf)`` builds one dataflow holding the given queries; an input is made
only for the tables those queries read. ``load(tables)`` feeds the encoded tables at time 0
and runs to completion; ``refresh(batch)`` feeds a refresh pair at its own time (inserts
with diff +1, deletes with diff -1) and runs it. ``result(query, t)`` is the capture's
collection at time ``t``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa
from benches.tpch.encoding import encode_table
from benches.tpch.queries import build
from benches.tpch.refresh import Refresh

import ddflow as dd

__all__ = ["EncodedRefresh", "Workload", "encode_refresh"]

EncodedRefresh = tuple[int, dict[str, pa.Table], dict[str, pa.Table]]
"""A refresh pair in engine encodings: its time, inserted and deleted rows by table."""


def encode_refresh(refresh: Refresh) -> EncodedRefresh:
    """A refresh pair with its rows in engine encodings."""
    inserts = {name: encode_table(table) for name, table in refresh.inserts.items()}
    deletes = {name: encode_table(table) for name, table in refresh.deletes.items()}
    return refresh.index, inserts, deletes


class _Inputs(Mapping[str, dd.Collection]):
    """The tables as a mapping that makes a dataflow input on first use."""

    def __init__(self, flow: dd.Dataflow, columns: Mapping[str, Sequence[str]]) -> None:
        self.flow = flow
        self.columns = columns
        self.sessions: dict[str, dd.InputSession] = {}
        self.collections: dict[str, dd.Collection] = {}

    def __getitem__(self, name: str) -> dd.Collection:
        if name not in self.collections:
            session, collection = self.flow.new_input(tuple(self.columns[name]), name=name)
            self.sessions[name] = session
            self.collections[name] = collection
        return self.collections[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)


class Workload:
    """Queries over TPC-H tables in one dataflow, fed the initial load and refreshes."""

    def __init__(
        self,
        queries: Sequence[str],
        sf: float,
        columns: Mapping[str, Sequence[str]],
        workers: int = 1,
    ) -> None:
        """``columns``: each table's column names (those of the tables fed later)."""
        self.flow = dd.Dataflow(workers=workers)
        self.inputs = _Inputs(self.flow, columns)
        self.captures = {q: build(q, self.inputs, sf).capture() for q in queries}
        self.time = 0

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables the queries read (those with an input)."""
        return tuple(self.inputs.sessions)

    def _advance(self, time: int) -> None:
        for session in self.inputs.sessions.values():
            session.advance_to(time + 1)
        self.flow.run_until(time + 1)
        self.time = time + 1

    def load(self, tables: Mapping[str, pa.Table]) -> None:
        """Feeds the tables (engine encodings) at time 0 and runs until time 0 is done."""
        for name, session in self.inputs.sessions.items():
            session.update_batch(tables[name], times=0)
        self._advance(0)

    def refresh(self, batch: EncodedRefresh) -> None:
        """Feeds one refresh pair at its time and runs until that time is done."""
        time, inserts, deletes = batch
        for name, session in self.inputs.sessions.items():
            if name in deletes and deletes[name].num_rows:
                session.update_batch(deletes[name], times=time, diffs=-1)
            if name in inserts and inserts[name].num_rows:
                session.update_batch(inserts[name], times=time, diffs=1)
        self._advance(time)

    def result(self, query: str, time: int) -> pa.Table:
        """Query ``query``'s result at ``time`` (record columns and ``diff``)."""
        return self.captures[query].at(time)
