"""The TPC-H workload in a ddflow dataflow: the tables as inputs, queries as captures, the
initial load at time 0 and refresh batch ``i`` at time ``i``.

``Workload(queries, sf, schemas)`` builds one dataflow holding the given queries; an input is
made only for the tables those queries read, declared with the table's Arrow schema (TPC-H's
own types: ``date32``, ``decimal128(15, 2)``, ...). ``load(tables)`` feeds the tables at time
0 and runs to completion; ``refresh(batch)`` feeds a refresh pair at its own time (inserts
with diff +1, deletes with diff -1) and runs it. ``result(query, t)`` is the capture's
collection at time ``t``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pyarrow as pa
import sqlglot
from benches.tpch.queries import build
from benches.tpch.refresh import Refresh
from benches.tpch.sql import sql_text
from sqlglot import exp

import ddflow as dd

__all__ = ["Workload"]


class _Inputs(Mapping[str, dd.Collection]):
    """The tables as a mapping that makes a dataflow input on first use."""

    def __init__(self, flow: dd.Dataflow, schemas: Mapping[str, pa.Schema]) -> None:
        self.flow = flow
        self.schemas = schemas
        self.sessions: dict[str, dd.InputSession] = {}
        self.collections: dict[str, dd.Collection] = {}

    def __getitem__(self, name: str) -> dd.Collection:
        if name not in self.collections:
            session, collection = self.flow.new_input(self.schemas[name], name=name)
            self.sessions[name] = session
            self.collections[name] = collection
        return self.collections[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.schemas)

    def __len__(self) -> int:
        return len(self.schemas)


def _from_sql(query: str, inputs: _Inputs, sf: float) -> dd.Collection:
    """Query ``query`` built by ``dd.sql`` over the tables its text names (only those get
    an input, as with the hand-written plans)."""
    text = sql_text(query, sf)
    names = {t.name for t in sqlglot.parse_one(text, read="duckdb").find_all(exp.Table)}
    return dd.sql(text, {n: inputs[n] for n in sorted(names) if n in inputs.schemas})


class Workload:
    """Queries over TPC-H tables in one dataflow, fed the initial load and refreshes."""

    def __init__(
        self,
        queries: list[str] | tuple[str, ...],
        sf: float,
        schemas: Mapping[str, pa.Schema],
        workers: int = 1,
        sql: bool = False,
    ) -> None:
        """``schemas``: each table's Arrow schema (its TPC-H types). ``sql``: each query
        built by ``dd.sql`` from its SQL text (``benches/tpch/sql.py``) instead of the
        hand-written plan (``queries.py``)."""
        self.flow = dd.Dataflow(workers=workers)
        self.inputs = _Inputs(self.flow, schemas)
        self.captures = {
            q: (_from_sql(q, self.inputs, sf) if sql else build(q, self.inputs, sf)).capture()
            for q in queries
        }
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
        """Feeds the tables at time 0 and runs until time 0 is done."""
        for name, session in self.inputs.sessions.items():
            session.update_batch(tables[name], times=0)
        self._advance(0)

    def refresh(self, batch: Refresh) -> None:
        """Feeds one refresh pair at its time (``batch.index``) and runs until that time is
        done."""
        for name, session in self.inputs.sessions.items():
            deletes, inserts = batch.deletes.get(name), batch.inserts.get(name)
            if deletes is not None and deletes.num_rows:
                session.update_batch(deletes, times=batch.index, diffs=-1)
            if inserts is not None and inserts.num_rows:
                session.update_batch(inserts, times=batch.index, diffs=1)
        self._advance(batch.index)

    def result(self, query: str, time: int) -> pa.Table:
        """Query ``query``'s result at ``time`` (record columns and ``diff``)."""
        return self.captures[query].at(time)
