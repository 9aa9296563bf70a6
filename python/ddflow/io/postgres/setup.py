"""What the Postgres source sets up on the server: checks, the table's description, the
publication, the replication slot and the snapshot taken with it.

* **Settings**: logical decoding needs ``wal_level = logical`` (a server restart), a free
  replication slot (``max_replication_slots``) and a WAL sender for the snapshot
  (``max_wal_senders``); the role needs ``REPLICATION`` (or superuser) and must own the table
  (for the publication and the replica identity). :func:`check_server` says which is missing.
* **Names**: the publication and the slot are both ``ddflow_<schema>_<table>`` (lower case,
  other characters as ``_``; names longer than PostgreSQL's 63 bytes keep their first 54
  characters and a hash), so one dataflow at a time can follow a table on a server.
* **Replica identity**: an update or delete must carry the old row's values (its
  retraction), so the table is set to ``REPLICA IDENTITY FULL`` where it is not.
* **Slot and snapshot**: the slot is created on a replication connection
  (``replication=database``) inside a ``REPEATABLE READ`` transaction with
  ``USE_SNAPSHOT``, and the table is read in that same transaction: the snapshot holds
  exactly the transactions committed before the slot's first change, no more, no fewer. A
  stale slot of the same name that no one uses is dropped first.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

__all__ = [
    "TableInfo",
    "check_server",
    "describe",
    "drop_slot",
    "object_name",
    "prepare",
    "snapshot",
]


@dataclass(frozen=True)
class TableInfo:
    """A table as the catalog describes it."""

    oid: int
    schema: str
    name: str
    columns: tuple[tuple[str, int, int, str], ...]
    """Each column's name, type OID, type modifier and type name, in order."""
    key: tuple[str, ...]
    """The primary key's columns (every column where there is none)."""
    replica_identity: str

    @property
    def qualified(self) -> str:
        """``schema.table`` as text."""
        return f"{self.schema}.{self.name}"

    @property
    def ident(self) -> sql.Composable:
        """``schema.table`` as a quoted SQL identifier."""
        return sql.Identifier(self.schema, self.name)


def object_name(info: TableInfo) -> str:
    """The name of the table's publication and slot: ``ddflow_<schema>_<table>``."""
    name = re.sub(r"[^a-z0-9_]", "_", f"ddflow_{info.schema}_{info.name}".lower())
    if len(name) > 63:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[:54]}_{digest}"
    return name


def describe(conn: psycopg.Connection[Any], table: str, where: str) -> TableInfo:
    """The table named ``table`` (``name`` or ``schema.name``, as SQL reads it)."""
    found = conn.execute(
        "select c.oid, n.nspname, c.relname, c.relreplident from pg_class c "
        "join pg_namespace n on n.oid = c.relnamespace where c.oid = to_regclass(%s)",
        (table,),
    ).fetchone()
    if found is None:
        raise LookupError(f"{where}: no table {table!r} on the server")
    oid, schema, name, identity = found
    columns = conn.execute(
        "select attname, atttypid, atttypmod, format_type(atttypid, atttypmod) "
        "from pg_attribute where attrelid = %s and attnum > 0 and not attisdropped "
        "order by attnum",
        (oid,),
    ).fetchall()
    key = conn.execute(
        "select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid "
        "and a.attnum = any(i.indkey) where i.indrelid = %s and i.indisprimary "
        "order by array_position(i.indkey::int2[], a.attnum)",
        (oid,),
    ).fetchall()
    names = tuple(str(c[0]) for c in columns)
    return TableInfo(
        int(oid),
        str(schema),
        str(name),
        tuple((str(n), int(t), int(m), str(f)) for n, t, m, f in columns),
        tuple(str(k[0]) for k in key) or names,
        str(identity),
    )


def check_server(conn: psycopg.Connection[Any], where: str) -> None:
    """Raises ``RuntimeError`` saying what the server lacks for logical replication."""
    wal_level, slots, senders, may_replicate = conn.execute(
        "select current_setting('wal_level'), current_setting('max_replication_slots')::int, "
        "current_setting('max_wal_senders')::int, "
        "(select rolreplication or rolsuper from pg_roles where rolname = current_user)"
    ).fetchone() or (None, 0, 0, False)
    problems = []
    if wal_level != "logical":
        problems.append(
            f"wal_level is {wal_level!r}; set wal_level = logical (postgresql.conf, or "
            "ALTER SYSTEM SET wal_level = logical) and restart the server"
        )
    if slots < 1:
        problems.append("max_replication_slots is 0; set it to at least 1 (then restart)")
    if senders < 1:
        problems.append("max_wal_senders is 0; set it to at least 1 (then restart)")
    if not may_replicate:
        problems.append("the role lacks REPLICATION; ALTER ROLE ... WITH REPLICATION")
    if problems:
        raise RuntimeError(
            f"{where}: the server is not set up for logical replication: " + "; ".join(problems)
        )


def prepare(conn: psycopg.Connection[Any], info: TableInfo, name: str) -> None:
    """Sets the table's replica identity to FULL where needed, and creates the publication
    ``name`` for it (or adds the table to an existing one)."""
    if info.replica_identity != "f":
        conn.execute(sql.SQL("alter table {} replica identity full").format(info.ident))
    exists = conn.execute("select 1 from pg_publication where pubname = %s", (name,)).fetchone()
    if exists is None:
        conn.execute(
            sql.SQL("create publication {} for table {}").format(sql.Identifier(name), info.ident)
        )
        return
    has = conn.execute(
        "select 1 from pg_publication_tables where pubname = %s and schemaname = %s "
        "and tablename = %s",
        (name, info.schema, info.name),
    ).fetchone()
    if has is None:
        conn.execute(
            sql.SQL("alter publication {} add table {}").format(sql.Identifier(name), info.ident)
        )


def drop_slot(conn: psycopg.Connection[Any], name: str, where: str) -> None:
    """Drops the slot ``name`` if it exists; raises if another connection uses it."""
    row = conn.execute(
        "select active from pg_replication_slots where slot_name = %s", (name,)
    ).fetchone()
    if row is None:
        return
    if row[0]:
        raise RuntimeError(
            f"{where}: replication slot {name!r} is in use (another dataflow follows this " "table)"
        )
    conn.execute("select pg_drop_replication_slot(%s)", (name,))


def snapshot(conninfo: str, name: str, query: sql.Composed) -> list[tuple[Any, ...]]:
    """Creates the logical slot ``name`` (``pgoutput``) and returns the rows of ``query``
    read in the slot's snapshot."""
    with psycopg.connect(
        conninfo, replication="database", cursor_factory=psycopg.ClientCursor
    ) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        with conn.cursor() as cur:
            cur.execute(
                sql.SQL("CREATE_REPLICATION_SLOT {} LOGICAL pgoutput USE_SNAPSHOT").format(
                    sql.Identifier(name)
                )
            )
            cur.execute(query)
            rows = cur.fetchall()
        conn.commit()
    return rows
