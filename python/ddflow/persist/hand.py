"""Inputs fed by hand in a persistent dataflow: their updates as Arrow, logged and replayed.

An input fed by hand (``update_at``, ``update_batch``) has no source to read again after a
crash, so a persistent dataflow logs what the program fed: every batch the input hands to the
engine (the single records of ``update_at`` go as the one batch they are flushed in), in the
engine's own form, converted column by column to Arrow (:func:`arrow_columns`) and back
(:func:`engine_columns`) without a Python step per row. A :class:`HandRecord` is one entry of
the log: the batches fed since the previous one and every hand-fed input's frontier.

The journal logs an update once its input's frontier passes it (a record holds the
frontiers it logs and every update fed before them; updates at later times wait in memory).
On restart the logged updates are pushed again (:func:`replay_hand`) and each input is
advanced to its logged frontier, from which the program feeds again (``inp.frontier()``).
That keeps both halves exact: an update before the frontier is in the log, and one at or
after it is not, so the program feeds it once more, and only once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow.dtypes import BinaryColumn, Utf8Column, WordColumn, column_dtype, nullable_column
from ddflow.errors import PersistenceError
from ddflow.logical_types import NULL_WORDS, is_logical, offset_buffers
from ddflow.persist.records import Snapshot
from ddflow.persist.segment import Segment

if TYPE_CHECKING:
    from ddflow.input import InputSession
    from ddflow.persist.journal import Restored

__all__ = [
    "HandBatch",
    "HandRecord",
    "arrow_columns",
    "engine_columns",
    "replay_hand",
    "snapshot_of",
]

Frontier = int | None
"""A hand-fed input's frontier in the log (None: the input was closed)."""


@dataclass
class HandBatch:
    """One batch fed by hand: its columns (Arrow, see :func:`arrow_columns`), the dtype of
    each, and each update's time and diff."""

    input: int
    """The hand-fed input's index (in the order the dataflow created its inputs)."""
    table: pa.Table
    dtypes: list[str]
    times: npt.NDArray[np.int64]
    diffs: npt.NDArray[np.int64]

    def where(self, keep: npt.NDArray[np.bool_]) -> HandBatch:
        """The batch's updates where ``keep`` holds."""
        table = self.table.filter(pa.array(keep))
        return HandBatch(self.input, table, self.dtypes, self.times[keep], self.diffs[keep])


@dataclass
class HandRecord:
    """An entry of the log: batches fed by hand, and every hand-fed input's frontier."""

    seq: int
    frontiers: list[Frontier]
    batches: list[HandBatch] = field(default_factory=list)

    def segment(self) -> Segment:
        """The record as a segment: per batch its columns, then its times and diffs."""
        parts: list[pa.Table] = []
        described = []
        for b in self.batches:
            parts += [b.table, pa.table({"time": b.times, "diff": b.diffs})]
            described.append({"input": b.input, "dtypes": b.dtypes})
        header = {
            "kind": "hand",
            "seq": self.seq,
            "frontiers": self.frontiers,
            "batches": described,
        }
        return Segment(header, parts)

    @staticmethod
    def of(segment: Segment) -> HandRecord:
        """The record a segment holds."""
        h = segment.header
        batches = []
        for i, b in enumerate(h["batches"]):
            table, index = segment.parts[2 * i], segment.parts[2 * i + 1]
            batches.append(
                HandBatch(
                    int(b["input"]),
                    table,
                    [str(d) for d in b["dtypes"]],
                    _int64(index["time"]),
                    _int64(index["diff"]),
                )
            )
        return HandRecord(int(h["seq"]), list(h["frontiers"]), batches)


def snapshot_of(layer: int, batch: HandBatch) -> Snapshot:
    """A hand batch as a snapshot layer (index ``layer``) for compaction: one origin, the
    rows numbered in order."""
    n = batch.table.num_rows
    zeros = np.zeros(n, dtype=np.int32)
    rows = np.arange(1, n + 1, dtype=np.int64)
    return Snapshot(layer, batch.table, ["fed by hand"], zeros, rows, batch.times, batch.diffs, [])


def replay_hand(sessions: Sequence[InputSession], sources: int, restored: Restored) -> None:
    """Pushes into each input fed by hand (``sessions``, in order) its snapshot layers
    (numbered after the ``sources`` sources') and then its logged batches, all but the
    updates at or after its restored frontier (the program feeds those again)."""
    for j, session in enumerate(sessions):
        frontier = restored.frontiers[j]
        dtypes = restored.dtypes[j]
        parts: list[tuple[pa.Table, list[str] | None, npt.NDArray[np.int64], Any]] = []
        own = [s for s in restored.snapshots if s.source == sources + j]
        parts += [(s.table, dtypes, s.times, s.diffs) for s in own]
        for record in restored.hand:
            parts += [(b.table, b.dtypes, b.times, b.diffs) for b in record.batches if b.input == j]
        what = f"input {session.name!r} (restored)"
        for table, kinds, times, diffs in parts:
            if frontier is not None:
                keep = times < frontier
                if not keep.all():
                    table = table.filter(pa.array(keep))
                    times, diffs = times[keep], diffs[keep]
            if table.num_rows == 0:
                continue
            if kinds is None:
                raise PersistenceError(f"{what}: the checkpoint holds rows of unknown dtypes")
            session.push_logged(engine_columns(table, kinds, what), times, diffs)


# -- engine columns <-> Arrow ---------------------------------------------------------------


def arrow_columns(names: list[str], columns: list[Any]) -> tuple[pa.Table, list[str]]:
    """The engine columns of a batch (numpy arrays, :class:`WordColumn`,
    :class:`Utf8Column`, :class:`BinaryColumn`, as an input hands them to the engine) as an
    Arrow table and each column's dtype. Each dtype has one Arrow type (nulls as Arrow
    nulls; a logical dtype as its engine words, ``uint64``), so batches of an input concatenate
    and compact together."""
    arrays = []
    dtypes = []
    for column in columns:
        dtype = column_dtype(column)
        arrays.append(_arrow(column, dtype))
        dtypes.append(dtype)
    return pa.Table.from_arrays(arrays, names=names), dtypes


def _arrow(column: Any, dtype: str) -> pa.Array:
    if isinstance(column, WordColumn):
        words = column._ddflow_words[1]
        if dtype in ("str", "binary"):
            # Only a column no operator reads comes as words here: nulls (read_columns).
            if not bool((words == np.uint64(NULL_WORDS["str"])).all()):
                raise PersistenceError(f"a {dtype} column given as engine words cannot be logged")
            return pa.nulls(len(words), pa.large_string() if dtype == "str" else pa.large_binary())
        if is_logical(dtype):
            return pa.array(words.copy(), pa.uint64())
        nulls = words == np.uint64(NULL_WORDS[dtype])
        if dtype == "int64":
            values: npt.NDArray[Any] = words.view(np.int64)
        elif dtype == "float64":
            values = words.view(np.float64)
        else:
            values = words != 0
        return pa.array(values.copy(), mask=nulls)
    if isinstance(column, Utf8Column | BinaryColumn):
        offsets, data, nulls = column._buffers
        kind = pa.large_string() if isinstance(column, Utf8Column) else pa.large_binary()
        n = len(column)
        validity = None if nulls is None else pa.array(~nulls).buffers()[1]
        null_count = 0 if nulls is None else int(nulls.sum())
        buffers = [validity, pa.py_buffer(offsets), pa.py_buffer(data)]
        array = pa.Array.from_buffers(kind, n, buffers, null_count)
        return array
    if column.dtype.kind == "O":
        return pa.array(column, pa.large_string())
    return pa.array(column.copy())  # a copy: the caller may reuse its array


def engine_columns(table: pa.Table, dtypes: list[str], what: str) -> list[Any]:
    """The engine columns of a logged table (the inverse of :func:`arrow_columns`)."""
    if len(dtypes) != table.num_columns:
        raise PersistenceError(
            f"{what}: the log holds {table.num_columns} columns of dtypes {dtypes}"
        )
    out: list[Any] = []
    for name, dtype in zip(table.column_names, dtypes, strict=True):
        array = table.column(name).combine_chunks()
        where = f"{what}, column {name!r}"
        if dtype in ("str", "binary"):
            large = pa.large_string() if dtype == "str" else pa.large_binary()
            kind = Utf8Column if dtype == "str" else BinaryColumn
            out.append(kind(*offset_buffers(array, large)))
        elif is_logical(dtype):
            words = array.to_numpy(zero_copy_only=False)
            out.append(WordColumn(dtype, np.ascontiguousarray(words, dtype=np.uint64)))
        elif array.null_count:
            nulls = np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
            fill = pa.scalar(False if dtype == "bool" else 0, array.type)
            dense = array.fill_null(fill).to_numpy(zero_copy_only=False)
            out.append(nullable_column(dense, nulls, dtype, where))
        else:
            out.append(np.ascontiguousarray(array.to_numpy(zero_copy_only=False)))
    return out


def _int64(column: pa.ChunkedArray) -> npt.NDArray[np.int64]:
    return np.asarray(column.to_numpy(), dtype=np.int64)
