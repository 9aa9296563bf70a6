"""JSON lines files: ``dd.io.jsonlines.read(flow, path, ...)`` and
``dd.io.jsonlines.write(collection, path)``.

One JSON object per line; a key absent from an object is a null, keys outside the schema are
ignored. A file is read with ``pyarrow.json`` against the schema (dates read as text, then
cast; durations as integers). When a file does not read as a whole, its lines are read in
halves until the lines that do not stand alone: each is an error update naming its line and,
where one field is at fault, the column. Types without ``schema=`` are those ``pyarrow.json``
infers from the first file. The sink writes the same form (see :mod:`ddflow.io.jsontext`).
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.json as pa_json

from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.io.filesink import FileSink, write_files
from ddflow.io.filesource import RawBatch, read_files
from ddflow.io.jsontext import encode
from ddflow.sources import RowError

__all__ = ["read", "write", "JSONLINES"]


_INFER_BYTES = 1 << 20
"""Bytes of the first file the types are inferred from."""


def _read_type(t: pa.DataType) -> pa.DataType:
    """The type ``pyarrow.json`` reads a column of type ``t`` as (cast afterwards)."""
    if pa.types.is_date(t):
        return pa.string()
    if pa.types.is_duration(t):
        return pa.int64()
    return t


def _parse(data: bytes, schema: pa.Schema) -> pa.Table:
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    table: pa.Table = pa_json.read_json(io.BytesIO(data), parse_options=options)
    return table


class JsonLinesFormat:
    """Newline-delimited JSON objects."""

    name = "jsonlines"
    suffix = ".jsonl"

    def infer(self, path: Path) -> pa.Schema:
        """The types ``pyarrow.json`` infers from the file's first lines (up to 1 MiB), or
        from its first line if those do not read together."""
        with open(path, "rb") as f:
            head = f.read(_INFER_BYTES)
        if len(head) == _INFER_BYTES:
            head = head[: head.rfind(b"\n") + 1] or head
        try:
            schema: pa.Schema = pa_json.read_json(io.BytesIO(head)).schema
        except pa.ArrowInvalid:
            first = head.lstrip().split(b"\n", 1)[0]
            schema = pa_json.read_json(io.BytesIO(first)).schema
        return schema

    def batches(self, path: Path, schema: pa.Schema) -> Iterator[RawBatch]:
        """The file's rows as one batch; lines that do not read are errors."""
        data = path.read_bytes()
        if not data.strip():
            return
        read_schema = pa.schema([pa.field(f.name, _read_type(f.type)) for f in schema])
        try:
            table = _parse(data, read_schema)
        except pa.ArrowInvalid:
            yield self._by_halves(data, read_schema, str(path))
            return
        if b"\n\n" in data or b"\n\r\n" in data or data[:1] in (b"\n", b"\r"):
            rows = _line_numbers(data.split(b"\n"))
        else:
            rows = np.arange(1, table.num_rows + 1, dtype=np.int64)
        yield RawBatch(table, rows)

    def _by_halves(self, data: bytes, schema: pa.Schema, origin: str) -> RawBatch:
        """Reads the lines in halves until the lines that do not read stand alone."""
        lines = data.split(b"\n")
        numbers = _line_numbers(lines)
        kept = [lines[i - 1] for i in numbers]
        tables: list[pa.Table] = []
        rows: list[npt.NDArray[np.int64]] = []
        errors: list[RowError] = []

        def read(lo: int, hi: int) -> None:
            try:
                table = _parse(b"\n".join(kept[lo:hi]), schema)
            except pa.ArrowInvalid as exc:
                if hi - lo == 1:
                    errors.append(_line_error(kept[lo], int(numbers[lo]), schema, origin, exc))
                    return
                mid = (lo + hi) // 2
                read(lo, mid)
                read(mid, hi)
                return
            tables.append(table)
            rows.append(numbers[lo:hi])

        read(0, len(kept))
        table = pa.concat_tables(tables) if tables else schema.empty_table()
        all_rows = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
        return RawBatch(table, all_rows, errors)

    def write(self, table: pa.Table, path: Path) -> None:
        """Writes ``table`` as JSON lines."""
        path.write_bytes(encode(table))


def _line_numbers(lines: list[bytes]) -> npt.NDArray[np.int64]:
    """The numbers (from 1) of the lines that are not blank."""
    return np.array([i + 1 for i, line in enumerate(lines) if line.strip()], dtype=np.int64)


def _line_error(
    line: bytes, number: int, schema: pa.Schema, origin: str, exc: Exception
) -> RowError:
    """The error for a line that does not read: the first field that does not read alone
    names the column."""
    text = line.decode("utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError as json_exc:
        return RowError(origin, number, None, f"not JSON: {json_exc}", text)
    if not isinstance(value, dict):
        return RowError(origin, number, None, "not a JSON object", text)
    for field in schema:
        try:
            _parse(line, pa.schema([field]))
        except pa.ArrowInvalid as field_exc:
            message = str(field_exc).removeprefix("JSON parse error: ")
            return RowError(origin, number, field.name, message, text)
    return RowError(origin, number, None, str(exc), text)


JSONLINES = JsonLinesFormat()
"""The JSON lines format."""


def read(
    flow: Dataflow,
    path: str | os.PathLike[str],
    schema: Any = None,
    watch: bool = False,
    time_column: str | None = None,
    name: str | None = None,
) -> Collection:
    """A new input of ``flow`` fed with the rows of the JSON lines file ``path`` (or of
    every file in the directory ``path``) while ``flow.run()`` runs; the arguments are those
    of :func:`ddflow.io.csv.read`."""
    return read_files(flow, JSONLINES, path, schema, watch, time_column, name)


def write(collection: Collection, path: str | os.PathLike[str]) -> FileSink:
    """Writes ``collection``'s updates (record columns, ``time``, ``diff``) to JSON lines
    files in the directory ``path``, one per range of completed times (see
    :mod:`ddflow.io.filesink`)."""
    return write_files(collection, path, JSONLINES)
