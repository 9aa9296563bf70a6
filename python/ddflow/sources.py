"""Sources: where the inputs of a running dataflow get their data (``flow.run()`` drives them).

A :class:`Source` is attached to one input (``Dataflow.attach_source``) and polled by the run
loop (:mod:`ddflow.runloop`). Each poll returns, without blocking, the Arrow batches read since
the last one as :class:`SourceBatch`: record columns in the input's order, the logical time of
each row where the source assigns times (``time_column=``; otherwise the run loop stamps the
batch with its processing time), and the rows that did not fit as :class:`RowError`. A source
says whether it has ended and, where it knows, its size and how far it has read.

Bad data never raises: a row that does not fit is a ``RowError``, which the run loop turns
into an error update naming the source, the file, the row and the column. A source that
fails (a file it cannot read) raises from ``poll``; the run loop stops cleanly and raises
:class:`SourceError` naming the source.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow.errors import DdflowError

__all__ = [
    "RowError",
    "Source",
    "SourceBatch",
    "SourceError",
    "row_values",
    "split_late",
    "value_text",
]


def value_text(column: pa.Array | pa.ChunkedArray, i: int) -> str:
    """Row ``i`` of ``column`` as text for an error message (text that is not UTF-8 as the
    bytes it holds)."""
    try:
        return repr(column[i].as_py())
    except UnicodeDecodeError:
        return repr(column.cast(pa.binary())[i].as_py())


def row_values(table: pa.Table) -> str:
    """A one-row table's values as ``name=value`` text."""
    return ", ".join(f"{k}={value_text(table[k], 0)}" for k in table.column_names)


class SourceError(DdflowError, RuntimeError):
    """A source failed (a file it could not read, a connection lost); the message names it.

    ``flow.run()`` raises it after a clean stop: every update read before the failure is in
    the dataflow and every sink holds the times it completed.
    """


@dataclass(frozen=True)
class RowError:
    """A row that does not fit the input's schema: where it is and what is wrong with it."""

    origin: str
    """Where the row came from (a file's path)."""
    row: int
    """The row's number in ``origin``, from 1 (a CSV file's header is not a row)."""
    column: str | None
    """The column that does not fit (``None`` when the row as a whole does not)."""
    message: str
    """What is wrong."""
    values: str
    """The offending values as text."""
    count: int = 1
    """How many rows this error stands for (a column missing from a whole file is one error
    for all its rows)."""
    time: int | None = None
    """The row's logical time where it had a valid one (``time_column=``)."""


@dataclass
class SourceBatch:
    """Rows read by a source: the record columns, where they came from, and their times."""

    table: pa.Table
    """The record columns, named and ordered as the input's, of the input's types."""
    origin: str
    """Where the rows came from (a file's path)."""
    rows: npt.NDArray[np.int64] | None = None
    """Each row's number in ``origin`` (from 1), to name it if the input refuses it
    (default: 1, 2, ...)."""
    times: npt.NDArray[np.int64] | None = None
    """Each row's logical time (``time_column=``), or ``None``: the run loop's processing
    time."""
    errors: list[RowError] = field(default_factory=list)
    """Rows of ``origin`` that did not fit (not in ``table``)."""


class Source(ABC):
    """Something that yields rows for one input while ``flow.run()`` polls it."""

    name: str = "source"
    """Names the source in errors and progress (a connector and its path)."""

    durable: bool = False
    """Set by a persistent dataflow: the source keeps what it needs to resume from its
    offset in a later process (a replication slot), instead of releasing it at the end."""

    timed: bool = False
    """Whether the source assigns each row's time (``time_column=``): the dataflow's
    frontier then waits for it, advancing to the greatest time it has sent."""

    @abstractmethod
    def poll(self) -> list[SourceBatch]:
        """The batches read since the last poll, without blocking ([] when none is ready)."""

    @property
    @abstractmethod
    def ended(self) -> bool:
        """Whether the source will send nothing more (a watched directory never ends)."""

    def size(self) -> int | None:
        """The total amount to read (bytes for files), or ``None`` when unknown."""
        return None

    def progress(self) -> int:
        """How much has been read so far, in the unit of :meth:`size`."""
        return 0

    def offset(self) -> Any:
        """Where the source stands: a JSON value from which :meth:`resume` continues after
        everything read so far, or ``None`` when the source cannot resume (a persistent
        dataflow then refuses it)."""
        return None

    def resume(self, offset: Any) -> None:
        """Continues after the rows read up to ``offset`` (a value :meth:`offset` returned
        in an earlier process), before the first poll."""
        raise NotImplementedError(f"{self.name} cannot resume from an offset")

    def acknowledge(self, offset: Any) -> None:  # noqa: B027 (most sources keep nothing)
        """Called once the dataflow has logged durably everything read up to ``offset``
        (a persistent dataflow): what the source kept for a re-read may go."""

    def close(self) -> None:  # noqa: B027 (most sources hold nothing open)
        """Releases what the source holds open (called once the run stops with it)."""


def split_late(
    batch: SourceBatch, frontier: int
) -> tuple[pa.Table, npt.NDArray[np.int64], npt.NDArray[np.int64], list[RowError]]:
    """A timed batch's rows at or after ``frontier`` (table, row numbers, times), and the
    rows behind it as errors (late rows)."""
    assert batch.times is not None
    table = batch.table
    rows = batch.rows
    if rows is None:
        rows = np.arange(1, table.num_rows + 1, dtype=np.int64)
    late = batch.times < frontier
    if not late.any():
        return table, rows, batch.times, []
    errors = [
        RowError(
            batch.origin,
            int(rows[i]),
            None,
            f"time {int(batch.times[i])} is behind the frontier {frontier} (a late row)",
            row_values(table.slice(int(i), 1)),
        )
        for i in np.flatnonzero(late)
    ]
    keep = ~late
    return table.filter(pa.array(keep)), rows[keep], batch.times[keep], errors
