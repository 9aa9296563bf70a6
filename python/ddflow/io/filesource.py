"""A source reading files of one format, and the ``read`` every file connector shares.

:class:`FileSource` takes the files of a :class:`~ddflow.io.files.FileSet` one after another
and reads each as Arrow batches through its :class:`Format` (``csv``, ``jsonlines``,
``parquet``), casts them to the input's schema (:func:`~ddflow.io.conform.conform`) and, with
``time_column=``, takes each row's logical time from that column: an integer column as it
is, a timestamp as milliseconds since the epoch, a date as the milliseconds of its midnight.
A row whose time is null or negative is an error update. One poll reads up to
``rows_per_poll`` rows, so a large file spreads over several ticks of the run loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError, SchemaTypeError
from ddflow.io.conform import conform, resolve_schema
from ddflow.io.files import FileSet
from ddflow.sources import RowError, Source, SourceBatch, SourceError

__all__ = ["FileSource", "Format", "RawBatch", "assign_times", "millis", "read_files"]


@dataclass
class RawBatch:
    """Rows of one file as a format reads them, before they are made to fit the schema."""

    table: pa.Table
    rows: npt.NDArray[np.int64]
    """Each row's number in the file, from 1."""
    errors: list[RowError] = field(default_factory=list)
    """Rows the format could not read at all (a CSV line with too many values)."""


class Format(Protocol):
    """One file format: how to read a file's schema and rows, and write a table."""

    name: str
    """The connector's name (``"csv"``)."""
    suffix: str
    """The suffix of the files its sink writes (``".csv"``)."""

    def infer(self, path: Path) -> pa.Schema:
        """The schema of a file's columns, as the format infers it."""
        ...

    def batches(self, path: Path, schema: pa.Schema) -> Iterator[RawBatch]:
        """A file's rows in batches, columns named as in the file (those of ``schema`` that
        are there, and maybe others); a column's type may differ from ``schema``'s."""
        ...

    def write(self, table: pa.Table, path: Path) -> None:
        """Writes ``table`` to a new file at ``path``."""
        ...


class FileSource(Source):
    """Reads the files of a :class:`FileSet` in one format, for one input."""

    rows_per_poll = 1_000_000
    """Rows one poll reads at most (it reads at least one batch)."""

    def __init__(
        self,
        fmt: Format,
        files: FileSet,
        schema: pa.Schema,
        time_column: str | None = None,
    ) -> None:
        self.fmt = fmt
        self.files = files
        self.schema = schema
        self.time_column = time_column
        self.timed = time_column is not None
        self.name = f"{fmt.name} source {str(files.path)!r}"
        self._file: Path | None = None
        self._batches: Iterator[RawBatch] | None = None
        self._failure: SourceError | None = None
        self._consumed = 0
        """Batches of the current file handed over (its offset)."""

    def poll(self) -> list[SourceBatch]:
        """Reads up to ``rows_per_poll`` rows of the files ready now."""
        if self._failure is not None:
            raise self._failure
        out: list[SourceBatch] = []
        rows = 0
        while rows < self.rows_per_poll:
            if self._batches is None:
                path = self.files.next()
                if path is None:
                    break
                self._file, self._batches = path, self.fmt.batches(path, self.schema)
                self._consumed = 0
            assert self._file is not None
            try:
                raw = next(self._batches, None)
                if raw is None:
                    self.files.done(self._file)
                    self._file, self._batches = None, None
                    continue
                self._consumed += 1
                batch = self._batch(raw, str(self._file))
            except Exception as exc:
                failure = SourceError(f"reading {self._file}: {exc}")
                failure.__cause__ = exc
                if not out:
                    raise failure from exc
                self._failure = failure  # raised at the next poll: first push what was read
                break
            rows += raw.table.num_rows
            out.append(batch)
        return out

    def _batch(self, raw: RawBatch, origin: str) -> SourceBatch:
        table, rows, errors = conform(raw.table, self.schema, origin, raw.rows)
        batch = SourceBatch(table, origin, rows, errors=raw.errors + errors)
        if self.time_column is not None:
            assign_times(batch, self.time_column)
        return batch

    def offset(self) -> Any:
        """The files taken, and how many batches of the one being read were handed over
        (a file's batches are the same whenever it is read: the format reads it alike)."""
        current = None if self._file is None else str(self._file)
        return {
            "taken": [str(p) for p in self.files.taken if str(p) != current],
            "file": current,
            "batches": self._consumed if current is not None else 0,
        }

    def resume(self, offset: Any) -> None:
        """Skips the files read and the batches of the current one handed over before."""
        self.files.skip([Path(p) for p in offset["taken"]])
        if offset["file"] is not None:
            path = Path(offset["file"])
            self.files.skip([path])
            self._file, self._batches = path, self.fmt.batches(path, self.schema)
            for _ in range(int(offset["batches"])):
                if next(self._batches, None) is None:
                    raise SourceError(f"{self.name}: {path} is shorter than when it was read")
            self._consumed = int(offset["batches"])

    @property
    def ended(self) -> bool:
        """Whether every file has been read (never, when watching)."""
        return self._batches is None and self.files.exhausted

    def size(self) -> int | None:
        """Bytes of the files found so far (unknown while watching)."""
        return None if self.files.watch else self.files.size()

    def progress(self) -> int:
        """Bytes of the files read to their end."""
        return self.files.progress()


def assign_times(batch: SourceBatch, time_column: str) -> None:
    """Takes each row's time from ``time_column`` (see :func:`millis`); rows without a valid
    one (null, negative) become errors of the batch."""
    assert batch.rows is not None
    column = batch.table[time_column]
    times = millis(column)
    bad = pc.or_kleene(pc.is_null(times), pc.less(times, 0)).fill_null(True)
    if pc.any(bad).as_py():
        mask = bad.to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(mask):
            value = column[int(i)].as_py()
            batch.errors.append(
                RowError(
                    batch.origin,
                    int(batch.rows[i]),
                    time_column,
                    f"the time column holds {value!r}, not a time (a non-negative int, "
                    "a timestamp or a date)",
                    f"{time_column}={value!r}",
                )
            )
        keep = pa.array(~mask)
        batch.table = batch.table.filter(keep)
        batch.rows = batch.rows[~mask]
        times = times.filter(keep)
    batch.times = np.asarray(times.to_numpy(zero_copy_only=False), dtype=np.int64)


def millis(column: pa.ChunkedArray) -> pa.Array:
    """A time column as int64: integers as they are, timestamps and dates in milliseconds
    since the epoch."""
    values = column.combine_chunks()
    t = values.type
    if pa.types.is_integer(t):
        return values.cast(pa.int64())
    if pa.types.is_timestamp(t):
        return values.cast(pa.timestamp("ms", tz=t.tz)).cast(pa.int64())
    if pa.types.is_date32(t):
        return pc.multiply(values.cast(pa.int64()), 86_400_000)
    raise SchemaTypeError(f"time_column must be an integer, timestamp or date column, not {t}")


def read_files(
    flow: Dataflow,
    fmt: Format,
    path: str | os.PathLike[str],
    schema: Any = None,
    watch: bool = False,
    time_column: str | None = None,
    name: str | None = None,
) -> Collection:
    """A new input of ``flow`` fed by the ``fmt`` files at ``path`` while ``flow.run()`` runs
    (the ``read`` of each file connector)."""
    if not isinstance(flow, Dataflow):
        raise PlanError(f"{fmt.name}.read: expected a Dataflow, got {flow!r}")
    files = FileSet(path, watch)

    def infer() -> pa.Schema | None:
        first = files.first()
        return None if first is None else fmt.infer(first)

    target = resolve_schema(schema, infer, f"{fmt.name}.read({str(path)!r})")
    if time_column is not None:
        if time_column not in target.names:
            raise PlanError(
                f"{fmt.name}.read: time_column {time_column!r} is not a column of "
                f"{target.names}"
            )
        t = target.field(time_column).type
        if not (pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date32(t)):
            raise SchemaTypeError(
                f"{fmt.name}.read: time_column {time_column!r} is {t}; it must be an integer, "
                "timestamp or date column"
            )
    session, collection = flow.new_input(target, name=name or Path(path).name)
    flow.attach_source(session, FileSource(fmt, files, target, time_column))
    return collection
