"""Delta Lake: ``dd.io.deltalake.read(flow, uri, ...)`` reads a table's current version and,
with ``watch=True``, follows its new versions; ``dd.io.deltalake.write(collection, uri,
primary_key=None)`` appends a collection's updates to a table, or keeps a table equal to the
collection by primary key.

Both use the ``deltalake`` package (delta-rs; the optional extra ``ddflow[deltalake]``), so
``uri`` is a local path or any URI it opens (``s3://``, ``az://``, ``gs://``, with
``storage_options=``). The pieces: :mod:`~ddflow.io.deltalake.source` and
:mod:`~ddflow.io.deltalake.sink`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError, SchemaTypeError
from ddflow.io.conform import resolve_schema
from ddflow.sources import SourceError

if TYPE_CHECKING:
    from ddflow.io.deltalake.sink import DeltaSink

__all__ = ["read", "write"]


def read(
    flow: Dataflow,
    uri: str | os.PathLike[str],
    schema: Any = None,
    watch: bool = False,
    time_column: str | None = None,
    name: str | None = None,
    storage_options: dict[str, str] | None = None,
) -> Collection:
    """A collection holding the rows of the Delta table at ``uri`` while ``flow.run()`` runs:
    the table's version when the run starts, as one logical time; with ``watch=True``, then
    every new version, each at its own time: appended rows enter, and rows that a
    ``delete``, ``update`` or ``merge`` removes or changes leave (their new rows enter).
    Where the table has the change data feed on (``delta.enableChangeDataFeed``) a
    version's changes are read from it; otherwise from the data files the version added and
    removed (see :mod:`~ddflow.io.deltalake.source`).

    ``schema`` takes what ``flow.new_input`` takes and picks the columns to read (all by
    default; names without a type keep the table's). Times are the run loop's processing
    times, or, with ``time_column=``, each row's value of that column (an integer,
    timestamp or date column, as for the file sources; the table must then be
    append-only). A value that does not fit its column is an error update naming the table,
    the version, the row and the column.
    """
    if not isinstance(flow, Dataflow):
        raise PlanError(f"deltalake.read: expected a Dataflow, got {flow!r}")
    from ddflow.io.deltalake.source import DeltaSource, open_table

    path = os.fspath(uri)
    where = f"deltalake.read({path!r})"
    try:
        table = open_table(path, storage_options)
    except Exception as exc:  # deltalake's TableNotFoundError, an OSError, ...
        raise SourceError(f"{where}: {exc}") from exc

    def infer() -> pa.Schema:
        return pa.schema(table.schema().to_arrow())

    target = resolve_schema(schema, infer, where)
    if time_column is not None:
        if time_column not in target.names:
            raise PlanError(
                f"{where}: time_column {time_column!r} is not a column of {target.names}"
            )
        t = target.field(time_column).type
        if not (pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date32(t)):
            raise SchemaTypeError(
                f"{where}: time_column {time_column!r} is {t}; it must be an integer, "
                "timestamp or date column"
            )
    source = DeltaSource(path, target, watch, time_column, storage_options)
    label = name or os.path.basename(path.rstrip("/")) or path
    entering_in, entering = flow.new_input(target, name=label)
    leaving_in, leaving = flow.new_input(target, name=f"{label} (retractions)")
    flow.attach_source(entering_in, source)
    flow.attach_source(leaving_in, source.retractions)
    return entering.concat(leaving.negate())


def write(
    collection: Collection,
    uri: str | os.PathLike[str],
    primary_key: list[str] | tuple[str, ...] | None = None,
    storage_options: dict[str, str] | None = None,
) -> DeltaSink:
    """Writes ``collection`` to the Delta table at ``uri`` (created where missing): without
    ``primary_key``, its updates (record columns, ``time``, ``diff``), one append commit per
    range of completed times; with it, the collection's current rows, one ``MERGE`` commit
    per completed time that upserts each key's new row and deletes the keys that left (see
    :mod:`~ddflow.io.deltalake.sink`)."""
    from ddflow.io.deltalake.sink import DeltaSink

    key = None if primary_key is None else list(primary_key)
    return DeltaSink(collection, uri, key, storage_options)
