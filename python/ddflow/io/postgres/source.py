"""The Postgres source: a table's snapshot, then its changes through logical replication.

:class:`PostgresSource` feeds one input with the rows that enter the table and its companion
:class:`Retractions` feeds a second input with the rows that leave it; ``read`` returns the
first minus the second (sources hand over rows, not diffs). At its first poll the source
prepares the server (:mod:`~ddflow.io.postgres.setup`), creates the replication slot and reads
the table in the slot's snapshot: every row of the snapshot goes out in that one poll, so
the snapshot is one logical time. Each later poll asks the slot for the changes committed
since (``pg_logical_slot_get_binary_changes`` with the ``pgoutput`` plugin, at most one poll
every ``poll_seconds``), decodes them (:mod:`~ddflow.io.postgres.pgoutput`) and hands them
over: an insert as the new row, a delete as the old row's retraction, an update as both.
The server returns whole transactions only, so a transaction never spans two polls; the run
loop stamps each poll with one processing time, so every change of a transaction gets the
same time and a later commit never gets an earlier time than an earlier one.

A value that does not fit its column becomes an error update naming the table, the row's key
and the column (:mod:`~ddflow.io.postgres.rows`); the retraction of such a row is dropped,
as the row never went in. A ``TRUNCATE``, a change of the columns read, or a table whose
replica identity is no longer ``FULL`` stops the run with a :class:`~ddflow.sources.SourceError`
(restart it for a fresh snapshot). Closing the source (the run's end) drops the slot, so the
server keeps no WAL for it; the publication stays.
"""

from __future__ import annotations

import decimal
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import psycopg
import pyarrow as pa
from psycopg import pq, sql

from ddflow.io.postgres import pgoutput
from ddflow.io.postgres.rows import Unreadable, to_table
from ddflow.io.postgres.setup import TableInfo, drop_slot, object_name, prepare, snapshot
from ddflow.sources import Source, SourceBatch, SourceError

__all__ = ["PostgresSource", "Retractions"]

Loader = Callable[[bytes], Any]


class Retractions(Source):
    """The rows leaving the table, as its :class:`PostgresSource` read them (polled right
    after it in the same tick, so at the same time)."""

    def __init__(self, source: PostgresSource) -> None:
        self.source = source
        self.name = f"{source.name} (retractions)"
        self.pending: list[SourceBatch] = []

    def poll(self) -> list[SourceBatch]:
        """The retractions read by the last poll of the source."""
        out, self.pending = self.pending, []
        return out

    @property
    def ended(self) -> bool:
        """Never: the table is followed until the run stops."""
        return False

    def offset(self) -> Any:
        """Nothing of its own: its source's offset says where both resume."""
        return {}

    def resume(self, offset: Any) -> None:
        """Nothing to do (its source resumes both)."""


class PostgresSource(Source):
    """Follows one table: its snapshot, then its committed changes."""

    poll_seconds = 0.05
    """Seconds between two requests for changes."""
    changes_per_poll = 100_000
    """Changes one request asks for (the server completes the last transaction)."""

    def __init__(self, conninfo: str, info: TableInfo, schema: pa.Schema) -> None:
        self.conninfo = conninfo
        self.info = info
        self.schema = schema
        self.slot = object_name(info)
        self.name = f"postgres source {info.qualified!r}"
        self.retractions = Retractions(self)
        self.lsn = 0
        """The end of the last transaction handed over (a WAL position)."""
        self._conn: psycopg.Connection[Any] | None = None
        self._loaders: list[Loader] = []
        self._relations: dict[int, tuple[list[int], list[int]]] = {}
        """Per relation id: the positions of the columns read and of the key columns."""
        self._count = 0
        self._next = 0.0
        self._failure: RuntimeError | None = None
        self._acknowledged = 0
        self._release: weakref.finalize | None = None
        """Drops the slot: at ``close()``, or when the source is garbage (a run that was
        stopped keeps its source open for the next ``run()``)."""

    # -- the Source interface -----------------------------------------------------------------

    def poll(self) -> list[SourceBatch]:
        """The snapshot at the first poll; then the changes committed since the last one.
        A change the source cannot follow (a ``TRUNCATE``, a column dropped) fails the
        poll, after the changes before it are handed over."""
        if self._failure is not None:
            raise self._failure
        if self._conn is None:
            return self._start()
        if time.monotonic() < self._next:
            return []
        self._next = time.monotonic() + self.poll_seconds
        # A durable source only peeks: the slot moves on once the dataflow has logged the
        # changes (acknowledge), so a crash before that reads them again.
        function = "peek" if self.durable else "get"
        rows = self._conn.execute(
            f"select data from pg_logical_slot_{function}_binary_changes(%s, NULL, %s, "
            "'proto_version', '1', 'publication_names', %s)",
            (self.slot, self.changes_per_poll, self.slot),
        ).fetchall()
        handed_over = self.lsn
        entering: list[tuple[pgoutput.Value, ...]] = []
        leaving: list[tuple[pgoutput.Value, ...]] = []
        enter_pos: list[tuple[list[int], list[int]]] = []
        leave_pos: list[tuple[list[int], list[int]]] = []
        pending = (0, 0)  # how many rows entering and leaving are of whole transactions
        try:
            for (data,) in rows:
                message = pgoutput.decode(bytes(data))
                if isinstance(message, pgoutput.Relation):
                    self._relation(message)
                elif isinstance(message, pgoutput.Change):
                    self._change(message, entering, enter_pos, leaving, leave_pos)
                elif isinstance(message, pgoutput.Truncate):
                    if self.info.oid in message.relids:
                        raise RuntimeError(
                            f"table {self.info.qualified} was truncated; the source does not "
                            "follow TRUNCATE (restart the dataflow for a fresh snapshot)"
                        )
                elif isinstance(message, pgoutput.Commit):
                    if message.end_lsn <= handed_over:  # peeked again: handed over before
                        n_in, n_out = pending
                        del entering[n_in:], enter_pos[n_in:], leaving[n_out:], leave_pos[n_out:]
                        continue
                    self.lsn = message.end_lsn
                    pending = (len(entering), len(leaving))
        except RuntimeError as exc:
            if pending == (0, 0):
                raise
            self._failure = exc  # raised at the next poll: first hand over what committed
        n_in, n_out = pending
        self.retractions.pending += self._batches(
            leaving[:n_out], leave_pos[:n_out], keep_errors=False
        )
        return self._batches(entering[:n_in], enter_pos[:n_in], keep_errors=True)

    @property
    def ended(self) -> bool:
        """Never: the table is followed until the run stops."""
        return False

    def close(self) -> None:
        """Drops the replication slot (a durable source keeps it for the next run) and
        closes the connection."""
        if self.durable and self._conn is not None:
            self._conn.close()
        self._conn = None
        if self._release is not None:
            self._release()

    def offset(self) -> Any:
        """Whether the snapshot was handed over, the end of the last transaction handed
        over (a WAL position) and the rows numbered so far."""
        return {"started": self._conn is not None, "lsn": self.lsn, "rows": self._count}

    def resume(self, offset: Any) -> None:
        """Follows the slot again from after ``offset``'s transaction (the snapshot was
        read by an earlier run); the slot must still be there."""
        if not offset["started"]:
            return
        conn = psycopg.connect(self.conninfo, autocommit=True)
        row = conn.execute(
            "select 1 from pg_replication_slots where slot_name = %s", (self.slot,)
        ).fetchone()
        if row is None:
            conn.close()
            raise SourceError(
                f"{self.name}: replication slot {self.slot!r} is gone, so the changes since "
                "the checkpoint cannot be read; start over with a new persistence directory"
            )
        self._loaders = [self._loader(conn, f) for f in self.schema]
        self._conn = conn
        self.lsn = int(offset["lsn"])
        self._count = int(offset["rows"])

    def acknowledge(self, offset: Any) -> None:
        """Moves the slot past the transactions handed over (the dataflow logged them), so
        the server can recycle their WAL."""
        if self._conn is not None and offset["lsn"] > self._acknowledged:
            lsn = int(offset["lsn"])
            self._conn.execute(
                "select pg_replication_slot_advance(%s, %s::pg_lsn)",
                (self.slot, f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"),
            )
            self._acknowledged = lsn

    # -- reading --------------------------------------------------------------------------------

    def _start(self) -> list[SourceBatch]:
        """Prepares the server, creates the slot and hands over the table's snapshot."""
        conn = psycopg.connect(self.conninfo, autocommit=True)
        try:
            prepare(conn, self.info, self.slot)
            drop_slot(conn, self.slot, self.name)
            self._loaders = [self._loader(conn, f) for f in self.schema]
            columns = sql.SQL(", ").join(
                sql.SQL("{}::text").format(sql.Identifier(c[0])) for c in self.info.columns
            )
            query = sql.SQL("select {} from {}").format(columns, self.info.ident)
            rows = snapshot(self.conninfo, self.slot, query)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        if not self.durable:
            self._release = weakref.finalize(self, _release, conn, self.slot, self.name)
        names = [c[0] for c in self.info.columns]
        read = [names.index(f.name) for f in self.schema]
        key = [names.index(k) for k in self.info.key]
        return self._batches(rows, [(read, key)] * len(rows), keep_errors=True, text=True)

    def _loader(self, conn: psycopg.Connection[Any], field: pa.Field) -> Loader:
        """Parses a value's text as the column's type (text as it is for ``str``)."""
        if pa.types.is_string(field.type):
            return lambda b: b.decode("utf-8")
        oid = next(c[1] for c in self.info.columns if c[0] == field.name)
        cls = conn.adapters.get_loader(oid, pq.Format.TEXT)
        if cls is None:
            return lambda b: b.decode("utf-8")
        load = cls(oid, conn).load
        if pa.types.is_floating(field.type):
            return lambda b: _float(load(b))
        return load

    def _relation(self, message: pgoutput.Relation) -> None:
        """Where the columns read (and the key) are in the relation's tuples."""
        if (message.namespace, message.name) != (self.info.schema, self.info.name):
            return
        names = [c.name for c in message.columns]
        old = {c[0]: c[1] for c in self.info.columns}
        for f in self.schema:
            if f.name not in names:
                raise RuntimeError(
                    f"column {f.name!r} of {self.info.qualified} was dropped or renamed "
                    "(restart the dataflow)"
                )
            if message.columns[names.index(f.name)].type_oid != old[f.name]:
                raise RuntimeError(
                    f"column {f.name!r} of {self.info.qualified} changed its type "
                    "(restart the dataflow)"
                )
        key = [names.index(k) for k in self.info.key if k in names]
        self._relations[message.relid] = ([names.index(f.name) for f in self.schema], key)

    def _change(
        self,
        change: pgoutput.Change,
        entering: list[tuple[pgoutput.Value, ...]],
        enter_pos: list[tuple[list[int], list[int]]],
        leaving: list[tuple[pgoutput.Value, ...]],
        leave_pos: list[tuple[list[int], list[int]]],
    ) -> None:
        """Sorts one change into rows entering and rows leaving the table."""
        positions = self._relations.get(change.relid)
        if positions is None:
            return
        if change.kind in ("U", "D") and (change.old is None or change.old_is_key):
            raise RuntimeError(
                f"{self.info.qualified} sent an {'update' if change.kind == 'U' else 'delete'} "
                "without the old row; its replica identity must stay FULL "
                f"(ALTER TABLE {self.info.qualified} REPLICA IDENTITY FULL)"
            )
        if change.old is not None:
            leaving.append(change.old)
            leave_pos.append(positions)
        if change.new is not None:
            new = change.new
            if change.old is not None and pgoutput.UNCHANGED in new:
                new = tuple(
                    o if n is pgoutput.UNCHANGED else n
                    for n, o in zip(new, change.old, strict=True)
                )
            entering.append(new)
            enter_pos.append(positions)

    def _batches(
        self,
        raw: Sequence[tuple[Any, ...]],
        positions: Sequence[tuple[list[int], list[int]]],
        keep_errors: bool,
        text: bool = False,
    ) -> list[SourceBatch]:
        """Rows as the server sent them (values as bytes of text, or as ``str`` where
        ``text``) converted to the input's types, column by column; a batch, or none."""
        if not raw:
            return []
        columns = []
        for j, field in enumerate(self.schema):
            values = [row[p[0][j]] for row, p in zip(raw, positions, strict=True)]
            if text and pa.types.is_string(field.type):
                columns.append(values)
                continue
            if text:
                values = [None if v is None else v.encode() for v in values]
            columns.append(self._load_column(j, values))
        first = self._count + 1
        self._count += len(raw)
        numbers = np.arange(first, first + len(raw), dtype=np.int64)

        def key_of(i: int) -> str:
            return self._key(raw[i], positions[i][1])

        table, kept, errors = to_table(columns, self.schema, numbers, key_of, self.info.qualified)
        if not keep_errors:
            errors = []
        if table.num_rows == 0 and not errors:
            return []
        return [SourceBatch(table, self.info.qualified, kept, errors=errors)]

    def _load_column(self, j: int, values: list[pgoutput.Value]) -> list[Any]:
        """Column ``j``'s values from their text (one call per value; the careful path,
        value by value, only where one fails)."""
        load = self._loaders[j]
        try:
            return [None if v is None else load(v) for v in values]  # type: ignore[arg-type]
        except Exception:
            return [self._load(j, v) for v in values]

    def _load(self, j: int, value: pgoutput.Value) -> Any:
        """Column ``j``'s value from its text (an :class:`Unreadable` where it does not
        parse)."""
        if value is None:
            return None
        if isinstance(value, pgoutput._Unchanged):
            return Unreadable("an unchanged TOASTed value that the server did not send", "?")
        try:
            return self._loaders[j](value)
        except Exception as exc:
            return Unreadable(
                f"{value.decode('utf-8', 'replace')!r} does not load: {exc}",
                value.decode("utf-8", "replace"),
            )

    def _key(self, row: tuple[Any, ...], key: list[int]) -> str:
        """``(k1, k2)=(v1, v2)``, as PostgreSQL names a row by its key."""
        names = ", ".join(self.info.key)
        values = ", ".join(_text(row[p]) for p in key)
        return f"({names})=({values})"


def _release(conn: psycopg.Connection[Any], slot: str, name: str) -> None:
    """Drops the slot and closes the connection (nothing to do if the server is gone)."""
    try:
        drop_slot(conn, slot, name)
    except (psycopg.Error, RuntimeError):
        pass
    finally:
        conn.close()


def _text(value: Any) -> str:
    """A value of a tuple as text for a message."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    return "null" if value is None else repr(value)


def _float(value: Any) -> Any:
    """A ``numeric`` read into a float column as a float."""
    return float(value) if isinstance(value, decimal.Decimal) else value
