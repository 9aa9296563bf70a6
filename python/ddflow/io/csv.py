"""CSV files: ``dd.io.csv.read(flow, path, ...)`` and ``dd.io.csv.write(collection, path)``.

Read with ``pyarrow.csv`` in blocks, on one thread (so a line that does not parse has a
number). The first line holds the column names. Every column is read as text and then cast
to the input's type, so that a value that does not fit is an error update for its row alone;
in a non-string column the texts pyarrow reads as null (``""``, ``NULL``, ``NA``, ...) are
nulls, in a string column they stay text, as with ``pyarrow.csv.read_csv``. A line with too
many or too few values is an error update too. Types without ``schema=`` are those
``pyarrow.csv`` infers from the first block of the first file.
"""

from __future__ import annotations

import csv as _csv
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.io.filesink import FileSink, write_files
from ddflow.io.filesource import RawBatch, read_files
from ddflow.sources import RowError

__all__ = ["read", "write", "CSV"]

_BLOCK = 1 << 22
"""Bytes pyarrow parses at once (one batch)."""

_NULLS = pa.array(pa_csv.ConvertOptions().null_values, pa.string())
"""The texts pyarrow reads as null in a non-string column."""


class CsvFormat:
    """Comma-separated values with a header line."""

    name = "csv"
    suffix = ".csv"

    def infer(self, path: Path) -> pa.Schema:
        """The types ``pyarrow.csv`` infers from the file's first block."""
        options = pa_csv.ReadOptions(use_threads=False, block_size=_BLOCK)
        parse = pa_csv.ParseOptions(invalid_row_handler=lambda row: "skip")
        with pa_csv.open_csv(path, read_options=options, parse_options=parse) as reader:
            schema: pa.Schema = reader.schema
        return schema

    def batches(self, path: Path, schema: pa.Schema) -> Iterator[RawBatch]:
        """The file's rows in blocks, every column of ``schema`` as text (nulls made)."""
        with open(path, newline="", encoding="utf-8", errors="replace") as f:
            header = next(_csv.reader(f), [])
        wanted = [name for name in schema.names if name in header]
        skipped: list[RowError] = []

        def skip(row: Any) -> str:
            skipped.append(
                RowError(
                    str(path),
                    -1 if row.number is None else int(row.number) - 1,
                    None,
                    f"{row.actual_columns} values, the header has {row.expected_columns}",
                    row.text,
                )
            )
            return "skip"

        options = pa_csv.ReadOptions(use_threads=False, block_size=_BLOCK)
        parse = pa_csv.ParseOptions(invalid_row_handler=skip)
        convert = pa_csv.ConvertOptions(
            include_columns=wanted,
            column_types={name: pa.string() for name in wanted},
            check_utf8=False,  # text that is not UTF-8 is refused by the input, row by row
        )
        if path.stat().st_size == 0:
            return
        next_row = 1
        refused = np.zeros(0, dtype=np.int64)
        with pa_csv.open_csv(
            path, read_options=options, parse_options=parse, convert_options=convert
        ) as reader:
            for batch in reader:
                table = pa.Table.from_batches([batch])
                errors, skipped[:] = list(skipped), []
                refused = np.concatenate([refused, [e.row for e in errors]]).astype(np.int64)
                later = int(np.count_nonzero(refused >= next_row))
                span = np.arange(next_row, next_row + table.num_rows + later, dtype=np.int64)
                rows = span[~np.isin(span, refused)][: table.num_rows]
                if len(rows):
                    next_row = int(rows[-1]) + 1
                yield RawBatch(_with_nulls(table, schema), rows, errors)
        if skipped:
            yield RawBatch(schema.empty_table(), np.zeros(0, dtype=np.int64), list(skipped))

    def write(self, table: pa.Table, path: Path) -> None:
        """Writes ``table`` with a header line."""
        pa_csv.write_csv(table, path)


def _with_nulls(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The text columns bound for a non-string type with pyarrow's null texts as nulls."""
    columns = []
    for name in table.column_names:
        column = table[name]
        target = schema.field(name).type
        if not (pa.types.is_string(target) or pa.types.is_large_string(target)):
            column = pc.if_else(pc.is_in(column, value_set=_NULLS), None, column)
        columns.append(column)
    return pa.table(columns, names=table.column_names)


CSV = CsvFormat()
"""The CSV format."""


def read(
    flow: Dataflow,
    path: str | os.PathLike[str],
    schema: Any = None,
    watch: bool = False,
    time_column: str | None = None,
    name: str | None = None,
) -> Collection:
    """A new input of ``flow`` fed with the rows of the CSV file ``path`` (or of every file
    in the directory ``path``) while ``flow.run()`` runs.

    ``schema`` takes what ``flow.new_input`` takes (names, ``{name: dtype}``, a
    ``pyarrow.Schema``); without it, or for names given without a type, the types are
    inferred from the first file. ``watch=True`` keeps reading new files of the directory
    as they appear, each once, until ``flow.stop()``. ``time_column`` names the column that
    gives each row's logical time (default: the processing time in milliseconds). A row
    that does not fit is an error update naming the file, row and column. ``name`` names
    the input (default: the file or directory's name).
    """
    return read_files(flow, CSV, path, schema, watch, time_column, name)


def write(collection: Collection, path: str | os.PathLike[str]) -> FileSink:
    """Writes ``collection``'s updates (record columns, ``time``, ``diff``) to CSV files in
    the directory ``path``, one per range of completed times (see
    :mod:`ddflow.io.filesink`)."""
    return write_files(collection, path, CSV)
