"""The Postgres sink: a table kept equal to a collection, by primary key.

The sink captures the collection (``errors="collect"``: error updates stay in
``flow.errors()``) and, whenever the dataflow completes times, writes each completed time in
one transaction, in time order: the keys whose count dropped to zero are deleted, and each
key's last row that entered is upserted (``INSERT ... ON CONFLICT (key) DO UPDATE``; the
per-key state is :class:`~ddflow.io.keyed.KeyedState`, shared with the Delta Lake sink). A
reader of the table thus sees the collection at a completed time, never half of one. The
collection should hold at most one row per key; where it holds more, the key stays while any
of its rows does, and the last row upserted stands.

The table is created where it is missing (``CREATE TABLE IF NOT EXISTS``), its columns typed
from the collection's (:func:`~ddflow.io.postgres.pgtypes.sql_type`), with the primary key.

Delivery is *at least once*: a time is written after the dataflow completed it, and a run
that stops between completing a time and committing its transaction writes nothing of it;
a new run of the dataflow recomputes the collection and upserts every row again, which is
harmless, but it does not delete rows of the table that the new run never produces.

In a persistent dataflow (``dd.Dataflow(persistence=...)``) delivery is *exactly once*: each
time's transaction also records, in the table ``ddflow_sink_positions`` (one row per sink
table), that every time before the next one is written. A restarted dataflow replays its
inputs; the sink then rebuilds its per-key counts from the replayed updates but writes only
the times at and after its recorded position.
"""

from __future__ import annotations

import weakref
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.compute as pc
from psycopg import sql

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError
from ddflow.io.keyed import KeyedState
from ddflow.io.postgres.pgtypes import sql_type

__all__ = ["PostgresSink"]

_POSITIONS = (
    "create table if not exists ddflow_sink_positions (sink text primary key, upper bigint)"
)
_ADVANCE = (
    "insert into ddflow_sink_positions values (%s, %s) "
    "on conflict (sink) do update set upper = excluded.upper"
)


class PostgresSink:
    """Writes a collection's completed times into a PostgreSQL table, by primary key."""

    def __init__(
        self, collection: Collection, conninfo: str, table: str, primary_key: list[str]
    ) -> None:
        flow = collection.flow
        if not isinstance(flow, Dataflow):
            raise PlanError(f"postgres.write: expected a Collection, got {collection!r}")
        if not primary_key:
            raise PlanError("postgres.write: primary_key names no column")
        unknown = [k for k in primary_key if k not in collection.columns]
        if unknown:
            raise PlanError(
                f"postgres.write: primary key columns {unknown} are not columns of "
                f"{list(collection.columns)}"
            )
        flow.time_shape.fix(1)
        self.conninfo = conninfo
        self.table = table
        self.ident = sql.Identifier(*table.split("."))
        self.columns = list(collection.columns)
        self.primary_key = primary_key
        self.keyed = KeyedState(primary_key, self.columns)
        self._pending: list[pa.Table] = []
        self.capture: Capture = collection.capture(errors="collect", keep="state")
        self.capture.subscribe(self._take)
        self.transactions = 0
        """Transactions committed so far (one per completed time with updates)."""
        self.flow = flow
        self.position: int | None = None
        """In a persistent dataflow: every time before it is in the table (read from
        ``ddflow_sink_positions`` at the first write)."""
        self._conn: psycopg.Connection[Any] | None = None
        self._close: weakref.finalize | None = None
        """Closes the connection: at the end of a run, or when the sink is garbage."""
        flow.on_progress(self._progress)

    def _take(self, updates: pa.Table) -> None:
        self._pending.append(updates)

    def _progress(self, final: bool) -> None:
        """Writes the times completed since the last call; closes the connection at the end
        of a run (creating the table first if nothing was written)."""
        if self._pending:
            updates = pa.concat_tables(self._pending)
            self._pending = []
            self._write(updates)
        if final:
            if self._conn is None:
                state = self.capture.state()
                self._connect(state.schema)
            self._conn = None
            if self._close is not None:
                self._close()

    def _connect(self, schema: pa.Schema) -> psycopg.Connection[Any]:
        """The connection, opened (and the table created) at first use."""
        if self._conn is None:
            conn = psycopg.connect(self.conninfo, autocommit=True)
            columns = [
                sql.SQL("{} {}").format(
                    sql.Identifier(c),
                    sql.SQL(sql_type(schema.field(c).type, f"postgres.write: column {c!r}")),
                )
                for c in self.columns
            ]
            columns.append(
                sql.SQL("primary key ({})").format(
                    sql.SQL(", ").join(map(sql.Identifier, self.primary_key))
                )
            )
            conn.execute(
                sql.SQL("create table if not exists {} ({})").format(
                    self.ident, sql.SQL(", ").join(columns)
                )
            )
            if self.flow.persistence is not None:
                conn.execute(_POSITIONS)
                row = conn.execute(
                    "select upper from ddflow_sink_positions where sink = %s", (self.table,)
                ).fetchone()
                self.position = 0 if row is None else int(row[0])
            self._conn = conn
            self._close = weakref.finalize(self, conn.close)
        return self._conn

    def _write(self, updates: pa.Table) -> None:
        """One transaction per completed time, in time order."""
        conn = self._connect(updates.schema)
        delete, upsert = self._statements()
        times = pc.unique(updates["time"]).to_pylist()
        floor = None if self.position is None else max(self.position, self.flow.resumed_since)
        for t in sorted(times):
            part = updates.filter(pc.equal(updates["time"], t))
            upserts, deletes = self.keyed.apply(part)
            if floor is not None and t < floor:
                continue  # replayed after a restart: written before it (the counts are kept)
            gone = [tuple(r[k] for k in self.primary_key) for r in deletes.to_pylist()]
            rows = [tuple(r[c] for c in self.columns) for r in upserts.to_pylist()]
            with conn.transaction(), conn.cursor() as cur:
                if gone:
                    cur.executemany(delete, gone)
                if rows:
                    cur.executemany(upsert, rows)
                if floor is not None:
                    cur.execute(_ADVANCE, (self.table, t + 1))
            self.transactions += 1

    def _statements(self) -> tuple[sql.Composed, sql.Composed]:
        """The delete (by key) and upsert statements."""
        keys = sql.SQL(" and ").join(
            sql.SQL("{} = %s").format(sql.Identifier(k)) for k in self.primary_key
        )
        delete = sql.SQL("delete from {} where {}").format(self.ident, keys)
        others = [c for c in self.columns if c not in self.primary_key]
        on_conflict = (
            sql.SQL("do update set {}").format(
                sql.SQL(", ").join(
                    sql.SQL("{0} = excluded.{0}").format(sql.Identifier(c)) for c in others
                )
            )
            if others
            else sql.SQL("do nothing")
        )
        upsert = sql.SQL("insert into {} ({}) values ({}) on conflict ({}) {}").format(
            self.ident,
            sql.SQL(", ").join(map(sql.Identifier, self.columns)),
            sql.SQL(", ").join([sql.Placeholder()] * len(self.columns)),
            sql.SQL(", ").join(map(sql.Identifier, self.primary_key)),
            on_conflict,
        )
        return delete, upsert
