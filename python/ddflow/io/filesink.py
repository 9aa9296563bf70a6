"""A sink writing a collection's updates to files, each holding one range of completed times.

The sink captures the collection (``errors="collect"``: error updates stay in
``flow.errors()``, the data goes on) and, whenever the dataflow completes times that hold
updates, writes them (the record columns, ``time`` and ``diff``, consolidated and sorted by
time) to one new file in the sink's directory named by the range ``[lower, upper)`` of times
it covers::

    part-0000000000000000000-0001764097312001.parquet
    part-0001764097312001-0001764097315230.parquet

In a persistent dataflow (``dd.Dataflow(persistence=...)``) the files are the sink's
committed position: a restarted dataflow replays its inputs, and the sink writes on after
the greatest ``upper`` already in its directory, skipping every update before it, so a run
killed and restarted leaves the same updates as one that never stopped.

Each file's ``lower`` is the previous file's ``upper``, so the files cover every completed
time from 0 without a gap: a reader knows that all updates before the greatest ``upper`` are
there, whatever is still running. A time range without updates gets no file of its own,
except when a run ends (``flow.stop()``, Ctrl-C, every source ended), which writes what
completed since the last file, empty or not. Once the collection is complete for ever (its
inputs closed), the last file's ``upper`` is ``9223372036854775807``.

A file is written to a hidden temporary name in the same directory, flushed to disk and
renamed: a reader never sees a file half-written, and a stop leaves no partial file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError
from ddflow.io.filesource import Format

__all__ = ["FileSink", "END", "file_name", "written_upper"]

END = 2**63 - 1
"""The ``upper`` of a sink's last file once its collection is complete for ever."""


_FILE = re.compile(r"part-(\d{19})-(\d{19})(\..+)")


def file_name(lower: int, upper: int, suffix: str) -> str:
    """The name of the sink file holding the updates at times ``lower <= t < upper``."""
    return f"part-{lower:019d}-{upper:019d}{suffix}"


class FileSink:
    """Writes a collection's completed updates into files named by their time range."""

    def __init__(self, collection: Collection, path: str | os.PathLike[str], fmt: Format) -> None:
        flow = collection.flow
        if not isinstance(flow, Dataflow):
            raise PlanError(f"{fmt.name}.write: expected a Collection, got {collection!r}")
        flow.time_shape.fix(1)
        self.fmt = fmt
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.capture: Capture = collection.capture(errors="collect", keep="state")
        self.capture.subscribe(self._take)
        self.lower: int | None = 0
        """The first time not written yet (None once the collection is complete)."""
        self.flow = flow
        if flow.persistence is not None:
            # A persistent dataflow restarting replays its inputs: the files already here
            # are the output it delivered, so writing goes on after the last one.
            self.lower = written_upper(self.path, fmt.suffix)
            for stale in self.path.glob(".part-*.tmp"):  # a write the crash cut short
                stale.unlink()
        self.files: list[Path] = []
        """The files written, in order."""
        self._pending: list[pa.Table] = []
        self._schema: pa.Schema | None = None
        flow.on_progress(self._progress)

    def _take(self, updates: pa.Table) -> None:
        if self.lower is None:
            return
        floor = max(self.lower, self.flow.resumed_since)
        if floor > 0:  # a restart replays updates delivered before it: skip them
            updates = updates.filter(pc.greater_equal(updates["time"], floor))
        if updates.num_rows:
            self._pending.append(updates)

    def _progress(self, final: bool) -> None:
        """Writes the updates completed since the last file (if any, or on ``final``)."""
        if self.lower is None:
            return
        frontier = self.capture.frontier()
        upper = END if not frontier else int(frontier[0])  # type: ignore[arg-type]
        if upper <= self.lower or not (self._pending or final or upper == END):
            return
        self._write(self.lower, upper)
        self.lower = None if upper == END else upper

    def _write(self, lower: int, upper: int) -> None:
        if self._pending:
            table = pa.concat_tables(self._pending)
            self._schema = table.schema
        else:
            table = self._empty()
        target = self.path / file_name(lower, upper, self.fmt.suffix)
        temp = self.path / f".{target.name}.tmp"
        try:
            self.fmt.write(table, temp)
            with open(temp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(temp, target)
        finally:
            if temp.exists():
                temp.unlink()
        self._pending = []
        self.files.append(target)

    def _empty(self) -> pa.Table:
        """An empty table of the sink's columns (record columns, ``time``, ``diff``)."""
        if self._schema is None:
            state = self.capture.state().schema
            fields = [state.field(i) for i in range(len(state) - 1)]
            self._schema = pa.schema([*fields, pa.field("time", pa.int64()), state.field("diff")])
        return self._schema.empty_table()


def written_upper(path: Path, suffix: str) -> int | None:
    """The ``upper`` of the last file a sink wrote in ``path`` (0 when none; None once the
    collection was complete)."""
    uppers = [
        int(m.group(2))
        for entry in path.iterdir()
        if (m := _FILE.fullmatch(entry.name)) and m.group(3) == suffix
    ]
    upper = max(uppers, default=0)
    return None if upper == END else upper


def write_files(collection: Collection, path: str | os.PathLike[str], fmt: Format) -> FileSink:
    """Writes ``collection``'s updates to ``fmt`` files in the directory ``path`` (the
    ``write`` of each file connector)."""
    return FileSink(collection, path, fmt)
