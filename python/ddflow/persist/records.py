"""What a persistent dataflow's log holds: ticks of source reads, and input snapshots.

A :class:`Tick` is one tick of the run loop as it was read: every batch its sources returned
(rows, row numbers, times and bad rows, before the input saw them), the tick's processing
time and frontier, the frontier it advanced to, and every source's offset after it. Replaying
the ticks in order through the run loop's own push path rebuilds the inputs exactly, errors
included. A :class:`Snapshot` is a layer of an input's ticks between two checkpoints (or several
layers merged), consolidated: the rows accepted, each with its time (times before the
checkpoint's frontier moved up to the last time before it, as compaction does to a trace)
and its count, plus the bad rows as errors.

Both convert to and from :class:`~ddflow.persist.segment.Segment` (a JSON header and Arrow
tables) for their files.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow.persist.segment import Segment
from ddflow.sources import RowError, SourceBatch

__all__ = ["Snapshot", "Tick", "row_error", "row_error_dict"]


def row_error_dict(e: RowError) -> dict[str, Any]:
    """A bad row as JSON."""
    return asdict(e)


def row_error(d: dict[str, Any]) -> RowError:
    """A bad row from its JSON."""
    return RowError(**d)


@dataclass
class Tick:
    """One tick of the run loop: what its sources read, and where they stood after it."""

    seq: int
    """The tick's number in the log, from 1."""
    now: int
    """The tick's processing time (the time of rows without ``time_column``)."""
    frontier: int
    """The shared frontier when the tick began (rows of timed sources behind it are late)."""
    target: int
    """The shared frontier the tick advanced the inputs to."""
    batches: list[tuple[int, SourceBatch]] = field(default_factory=list)
    """Each batch read, with the index of its source (in attach order)."""
    offsets: list[Any] = field(default_factory=list)
    """Each source's offset after the tick (JSON values; see ``Source.offset``)."""

    def segment(self) -> Segment:
        """The tick as a segment: per batch, its rows and a table of row numbers and times."""
        parts: list[pa.Table] = []
        described = []
        for source, batch in self.batches:
            n = batch.table.num_rows
            rows = batch.rows if batch.rows is not None else np.arange(1, n + 1, dtype=np.int64)
            index = {"row": pa.array(rows, pa.int64())}
            if batch.times is not None:
                index["time"] = pa.array(batch.times, pa.int64())
            parts += [batch.table, pa.table(index)]
            described.append(
                {
                    "source": source,
                    "origin": batch.origin,
                    "timed": batch.times is not None,
                    "errors": [row_error_dict(e) for e in batch.errors],
                }
            )
        header = {
            "kind": "tick",
            "seq": self.seq,
            "now": self.now,
            "frontier": self.frontier,
            "target": self.target,
            "batches": described,
            "offsets": self.offsets,
        }
        return Segment(header, parts)

    @staticmethod
    def of(segment: Segment) -> Tick:
        """The tick a segment holds."""
        h = segment.header
        batches = []
        for i, b in enumerate(h["batches"]):
            table, index = segment.parts[2 * i], segment.parts[2 * i + 1]
            rows = _int64(index["row"])
            times = _int64(index["time"]) if b["timed"] else None
            errors = [row_error(e) for e in b["errors"]]
            batches.append((int(b["source"]), SourceBatch(table, b["origin"], rows, times, errors)))
        return Tick(h["seq"], h["now"], h["frontier"], h["target"], batches, h["offsets"])


@dataclass
class Snapshot:
    """One layer of an input's consolidated updates: the ticks between two checkpoints."""

    source: int
    """The index of the input's source (in attach order)."""
    table: pa.Table
    """The accepted rows, one per distinct (row, time, origin)."""
    origins: list[str]
    """The distinct origins (files) of the rows."""
    origin: npt.NDArray[np.int32]
    """Each row's origin, as an index into ``origins`` (the first file that held it)."""
    rows: npt.NDArray[np.int64]
    """Each row's number in its origin (the first such row)."""
    times: npt.NDArray[np.int64]
    diffs: npt.NDArray[np.int64]
    errors: list[RowError]
    """The bad rows, each with its (compacted) time."""

    def segment(self) -> Segment:
        index = pa.table(
            {
                "origin": pa.array(self.origin, pa.int32()),
                "row": pa.array(self.rows, pa.int64()),
                "time": pa.array(self.times, pa.int64()),
                "diff": pa.array(self.diffs, pa.int64()),
            }
        )
        header = {
            "kind": "snapshot",
            "source": self.source,
            "origins": self.origins,
            "errors": [row_error_dict(e) for e in self.errors],
        }
        return Segment(header, [self.table, index])

    @staticmethod
    def of(segment: Segment) -> Snapshot:
        h = segment.header
        table, index = segment.parts
        return Snapshot(
            int(h["source"]),
            table,
            [str(o) for o in h["origins"]],
            np.asarray(index["origin"].to_numpy(), dtype=np.int32),
            _int64(index["row"]),
            _int64(index["time"]),
            _int64(index["diff"]),
            [row_error(e) for e in h["errors"]],
        )


def _int64(column: pa.ChunkedArray) -> npt.NDArray[np.int64]:
    return np.asarray(column.to_numpy(), dtype=np.int64)
