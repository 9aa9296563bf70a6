"""PostgreSQL: ``dd.io.postgres.read(flow, conninfo, table, schema=None)`` follows a table
through logical replication, ``dd.io.postgres.write(collection, conninfo, table,
primary_key=[...])`` keeps a table equal to a collection.

Both use psycopg 3 (the optional extra ``ddflow[postgres]``). The pieces:
:mod:`~ddflow.io.postgres.setup` (server checks, publication, slot, snapshot),
:mod:`~ddflow.io.postgres.pgoutput` (the replication messages),
:mod:`~ddflow.io.postgres.pgtypes` (column types both ways),
:mod:`~ddflow.io.postgres.rows` (rows made to fit the input),
:mod:`~ddflow.io.postgres.source` and :mod:`~ddflow.io.postgres.sink`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.dtypes import dtype_name
from ddflow.errors import PlanError, SchemaTypeError
from ddflow.input import InputSession
from ddflow.io.postgres.pgtypes import arrow_type_of
from ddflow.logical_types import arrow_type
from ddflow.sources import SourceError

if TYPE_CHECKING:
    from ddflow.io.postgres.setup import TableInfo
    from ddflow.io.postgres.sink import PostgresSink

__all__ = ["read", "write"]


def read(
    flow: Dataflow,
    conninfo: str,
    table: str,
    schema: Any = None,
    name: str | None = None,
) -> Collection:
    """A collection following the PostgreSQL table ``table`` while ``flow.run()`` runs: the
    rows of an initial snapshot, then every committed insert, update and delete (an update
    is its old row's retraction and its new row), read through logical replication.

    ``conninfo`` is a libpq connection string or URI; ``table`` is ``name`` or
    ``schema.name``. ``schema`` takes what ``flow.new_input`` takes and picks the columns to
    read; without it every column is read, each as its type (see
    :mod:`~ddflow.io.postgres.pgtypes`); names given without a type (or with ``None``) keep
    the table's.

    Each poll's changes get one processing time, and a transaction is never split, so its
    changes share a time and later commits never get earlier times. A value that does not
    fit its column is an error update naming the table, the row's key and the column. The
    server needs ``wal_level = logical``; the source creates the publication and the slot
    ``ddflow_<schema>_<table>``, sets the table's ``REPLICA IDENTITY FULL``, and drops the
    slot when the run ends (see :mod:`~ddflow.io.postgres.setup`).
    """
    if not isinstance(flow, Dataflow):
        raise PlanError(f"postgres.read: expected a Dataflow, got {flow!r}")
    where = f"postgres.read({table!r})"
    # psycopg is the optional extra ddflow[postgres]: imported only when a connector is used.
    import psycopg

    from ddflow.io.postgres.setup import check_server, describe
    from ddflow.io.postgres.source import PostgresSource

    try:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            check_server(conn, where)
            info = describe(conn, table, where)
    except psycopg.Error as exc:
        raise SourceError(f"{where}: {exc}") from exc
    except (RuntimeError, LookupError) as exc:
        raise SourceError(str(exc)) from exc
    target = _schema(schema, info, where)
    source = PostgresSource(conninfo, info, target)
    label = name or info.name
    entering_in, entering = flow.new_input(target, name=label)
    leaving_in, leaving = flow.new_input(target, name=f"{label} (retractions)")
    flow.attach_source(entering_in, source)
    flow.attach_source(leaving_in, source.retractions)
    return entering.concat(leaving.negate())


def write(
    collection: Collection, conninfo: str, table: str, primary_key: Sequence[str]
) -> PostgresSink:
    """Keeps the PostgreSQL table ``table`` equal to ``collection``: for each completed
    time, one transaction deletes the rows whose key left and upserts the rows that
    entered (by ``primary_key``). Creates the table where missing, with column types from
    the collection's (see :mod:`~ddflow.io.postgres.sink`)."""
    from ddflow.io.postgres.sink import PostgresSink  # psycopg only when used (see read)

    return PostgresSink(collection, conninfo, table, list(primary_key))


def _schema(schema: Any, info: TableInfo, where: str) -> pa.Schema:
    """The input's schema: the columns of ``schema`` (all by default), each of the type
    given or else of the table's type."""
    columns = {c[0]: c for c in info.columns}
    if schema is None:
        names: Sequence[str] = list(columns)
        dtypes: Sequence[Any] = [None] * len(names)
    elif isinstance(schema, Mapping):
        names = list(schema)
        typed = {k: v for k, v in schema.items() if v is not None}
        given = dict(zip(*InputSession.parse_columns(typed), strict=True)) if typed else {}
        dtypes = [given.get(k) for k in names]
    else:
        spec = (
            schema
            if isinstance(schema, pa.Schema)
            else ((schema,) if isinstance(schema, str) else tuple(schema))
        )
        names, dtypes = InputSession.parse_columns(spec)
    fields = []
    for column, dtype in zip(names, dtypes, strict=True):
        if column not in columns:
            raise SchemaTypeError(
                f"{where}: {info.qualified} has no column {column!r} (it has {list(columns)})"
            )
        if dtype is not None:
            fields.append(pa.field(column, arrow_type(dtype_name(dtype))))
            continue
        _, oid, typmod, type_name = columns[column]
        t = arrow_type_of(oid, typmod, type_name, f"{where}: column {column!r}")
        fields.append(pa.field(column, t))
    return pa.schema(fields)
