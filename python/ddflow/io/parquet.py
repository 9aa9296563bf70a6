"""Parquet files: ``dd.io.parquet.read(flow, path, ...)`` and
``dd.io.parquet.write(collection, path)``.

Read with ``pyarrow.parquet`` one row group batch at a time (the columns of the schema only);
a column whose type differs from the input's is cast, and a value that does not cast is an
error update for its row. Types without ``schema=`` are those of the first file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.io.filesink import FileSink, write_files
from ddflow.io.filesource import RawBatch, read_files

__all__ = ["read", "write", "PARQUET"]

_BATCH = 1 << 16
"""Rows read at once."""


class ParquetFormat:
    """Apache Parquet."""

    name = "parquet"
    suffix = ".parquet"

    def infer(self, path: Path) -> pa.Schema:
        """The file's schema."""
        schema: pa.Schema = pq.read_schema(path)
        return schema

    def batches(self, path: Path, schema: pa.Schema) -> Iterator[RawBatch]:
        """The file's rows in batches, the columns of ``schema`` that it has."""
        with pq.ParquetFile(path) as f:
            wanted = [name for name in schema.names if name in f.schema_arrow.names]
            first = 1
            for batch in f.iter_batches(batch_size=_BATCH, columns=wanted):
                rows = np.arange(first, first + batch.num_rows, dtype=np.int64)
                first += batch.num_rows
                yield RawBatch(pa.Table.from_batches([batch]), rows)

    def write(self, table: pa.Table, path: Path) -> None:
        """Writes ``table`` as one Parquet file."""
        pq.write_table(table, path)


PARQUET = ParquetFormat()
"""The Parquet format."""


def read(
    flow: Dataflow,
    path: str | os.PathLike[str],
    schema: Any = None,
    watch: bool = False,
    time_column: str | None = None,
    name: str | None = None,
) -> Collection:
    """A new input of ``flow`` fed with the rows of the Parquet file ``path`` (or of every
    file in the directory ``path``) while ``flow.run()`` runs; the arguments are those of
    :func:`ddflow.io.csv.read`."""
    return read_files(flow, PARQUET, path, schema, watch, time_column, name)


def write(collection: Collection, path: str | os.PathLike[str]) -> FileSink:
    """Writes ``collection``'s updates (record columns, ``time``, ``diff``) to Parquet files
    in the directory ``path``, one per range of completed times (see
    :mod:`ddflow.io.filesink`)."""
    return write_files(collection, path, PARQUET)
