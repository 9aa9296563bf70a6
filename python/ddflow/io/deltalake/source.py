"""The Delta Lake source: a table's current version, then (``watch=True``) every new version.

:class:`DeltaSource` feeds one input with the rows that enter the table and its companion
:class:`Retractions` feeds a second input with the rows that leave it (``read`` returns the
first minus the second). The first poll reads the table's version at that moment, every row
of it: the snapshot is one logical time. Each later poll (at most one every
``poll_seconds``) asks for the table's newest version and hands over the next version that
changes rows, one version per poll, so each version gets its own processing time. A
version's changes come from:

* the **change data feed** where the table has it on (``delta.enableChangeDataFeed``):
  ``load_cdf`` for that version, ``insert`` and ``update_postimage`` rows entering,
  ``delete`` and ``update_preimage`` rows leaving;
* otherwise the **data files** the version added and removed (files are immutable): the
  rows of each removed file leave, the rows of each added file enter. An append reads only
  its new files; a version that rewrites files (``delete``, ``update``, ``merge``,
  ``optimize``) costs the rows of the files it touched, which the engine consolidates (a
  compaction's rows leave and come back: no change downstream);
* on a table with **deletion vectors** (the ``deletionVectors`` reader feature) and no
  change data feed, a version can delete rows without changing which files the table has,
  so each version is a **full-snapshot diff**: every row of the previous version leaves and
  every row of the new one enters (read through delta-rs' query engine, which applies the
  deletion vectors), and the engine consolidates them to the rows that changed. Exact, but
  it costs the whole table per version: turn the change data feed on for such tables.

In a persistent dataflow (``dd.Dataflow(persistence=...)``) the source's offset is the last
version it handed over: a restart goes on with the versions committed since, without a new
snapshot (without ``watch``, up to the newest version at the restart).

A value that does not fit its column is an error update naming the table, the version, the
file (or ``change data feed``), the row and the column; the retraction of such a row is
dropped, as the row never went in. With ``time_column=`` the table must be append-only: a
version that removes rows fails the poll (a retraction has no time of its own).
"""

from __future__ import annotations

import os
import time
import urllib.parse
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
import pyarrow.fs as pafs
from deltalake import DeltaTable, QueryBuilder

from ddflow.io.conform import conform
from ddflow.io.filesource import assign_times
from ddflow.sources import Source, SourceBatch, SourceError

__all__ = ["DeltaSource", "Retractions", "open_table"]

_ENTERING = ("insert", "update_postimage")
_LEAVING = ("delete", "update_preimage")


def open_table(
    uri: str, storage_options: dict[str, str] | None, version: int | None = None
) -> DeltaTable:
    """The Delta table at ``uri`` (its ``version``, or the newest)."""
    return DeltaTable(uri, version=version, storage_options=storage_options)


class Retractions(Source):
    """The rows leaving the table, as its :class:`DeltaSource` read them (polled right after
    it in the same tick, so at the same time)."""

    def __init__(self, source: DeltaSource) -> None:
        self.source = source
        self.name = f"{source.name} (retractions)"
        self.pending: list[SourceBatch] = []

    def poll(self) -> list[SourceBatch]:
        """The retractions read by the last poll of the source (their bad rows dropped: those
        rows never went in)."""
        out, self.pending = self.pending, []
        for batch in out:
            batch.errors = []
        return out

    @property
    def ended(self) -> bool:
        """Once the source has ended and everything read was handed over."""
        return self.source.ended and not self.pending

    def offset(self) -> Any:
        """Nothing of its own: its source's offset says where both resume."""
        return {}

    def resume(self, offset: Any) -> None:
        """Nothing to do (its source resumes both)."""


class DeltaSource(Source):
    """Reads one Delta table: its current version, then each new version (``watch``)."""

    poll_seconds = 0.1
    """Seconds between two looks for a new version."""

    def __init__(
        self,
        uri: str,
        schema: pa.Schema,
        watch: bool = False,
        time_column: str | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> None:
        self.uri = uri
        self.schema = schema
        self.watch = watch
        self.time_column = time_column
        self.timed = time_column is not None
        self.storage_options = storage_options
        self.name = f"deltalake source {uri!r}"
        self.retractions = Retractions(self)
        self.version: int | None = None
        """The last version handed over."""
        self._table: DeltaTable | None = None
        """The table at ``version``."""
        self._files: frozenset[str] | None = None
        """The data files of ``version``."""
        self._latest: DeltaTable | None = None
        self._next = 0.0
        self._rows = 0
        self._catching_up = False
        """Resumed without ``watch``: reading the versions committed since the offset, up
        to the newest one at the restart."""

    # -- the Source interface -----------------------------------------------------------------

    def poll(self) -> list[SourceBatch]:
        """The snapshot at the first poll; then the next version that changes rows."""
        if self._table is None:
            return self._start()
        if not self.watch and not self._catching_up:
            return []
        assert self._latest is not None and self.version is not None
        if self.version >= self._latest.version():
            if not self.watch:
                self._catching_up = False
                return []
            if time.monotonic() < self._next:
                return []
            self._next = time.monotonic() + self.poll_seconds
            self._latest.update_incremental()
        while self.version < self._latest.version():
            entering, leaving = self._changes(self.version + 1)
            if entering or leaving:
                self.retractions.pending += leaving
                return entering
        return []

    @property
    def ended(self) -> bool:
        """After the snapshot (or, resumed, the versions since) when not watching; never
        when watching."""
        return not self.watch and self._table is not None and not self._catching_up

    def offset(self) -> Any:
        """The last version handed over (None before the snapshot) and the rows so far."""
        return {"version": self.version, "rows": self._rows}

    def resume(self, offset: Any) -> None:
        """Goes on from the version handed over last (its snapshot was read before): the
        next polls hand over the versions committed since, one per poll (without ``watch``
        up to the newest at the restart, then the source ends)."""
        if offset["version"] is None:
            return
        version = int(offset["version"])
        self._table = open_table(self.uri, self.storage_options, version)
        self._files = _files(self._table)
        self.version = version
        self._rows = int(offset["rows"])
        self._latest = open_table(self.uri, self.storage_options)
        self._catching_up = not self.watch

    def size(self) -> int | None:
        """Rows of the snapshot (unknown while watching)."""
        if self.watch:
            return None
        if self._table is None:
            return self._count(open_table(self.uri, self.storage_options))
        return self._rows

    def progress(self) -> int:
        """Rows handed over so far."""
        return self._rows

    # -- reading ------------------------------------------------------------------------------

    def _start(self) -> list[SourceBatch]:
        table = open_table(self.uri, self.storage_options)
        version = table.version()
        files = _files(table)
        if _deletion_vectors(table):
            batches = self._read_all(table, version)
        else:
            batches = self._read_files(table, version, sorted(files))
        self._table, self._files, self.version = table, files, version
        self._latest = open_table(self.uri, self.storage_options)
        return batches

    def _changes(self, version: int) -> tuple[list[SourceBatch], list[SourceBatch]]:
        """The rows ``version`` adds and removes; moves the source to it."""
        assert self._table is not None and self._files is not None
        table = open_table(self.uri, self.storage_options, version)
        files = _files(table)
        if _change_data_feed(table):
            entering, leaving = self._read_cdf(table, version)
        elif _deletion_vectors(table) or _deletion_vectors(self._table):
            entering = self._read_all(table, version)
            leaving = self._read_all(self._table, version)
        else:
            entering = self._read_files(table, version, sorted(files - self._files))
            leaving = self._read_files(self._table, version, sorted(self._files - files))
        if self.timed and any(b.table.num_rows or b.errors for b in leaving):
            raise SourceError(
                f"deltalake table {self.uri!r}, version {version}: the version removes rows, "
                f"but with time_column={self.time_column!r} the source reads appends only "
                "(a removed row has no time of its own)"
            )
        self._table, self._files, self.version = table, files, version
        return entering, leaving

    def _read_files(self, table: DeltaTable, version: int, paths: list[str]) -> list[SourceBatch]:
        """The rows of the data files ``paths`` of ``table``, one batch per file."""
        if not paths:
            return []
        dataset = table.to_pyarrow_dataset()
        wanted = set(paths)
        fragments = {
            f.path: f
            for f in dataset.get_fragments()
            if _relative(f.path, table) in wanted or f.path in wanted
        }
        columns = [n for n in self.schema.names if n in dataset.schema.names]
        local = _local_root(table)
        out = []
        for path in sorted(fragments):
            fragment, filesystem = fragments[path], dataset.filesystem
            if local is not None:
                fragment, filesystem = _local_fragment(fragment, local), pafs.LocalFileSystem()
            files = pds.FileSystemDataset([fragment], dataset.schema, dataset.format, filesystem)
            data = _plain(files.to_table(columns=columns))
            origin = (
                f"deltalake table {self.uri!r}, version {version}, file {_relative(path, table)}"
            )
            out.append(self._batch(data, origin))
        return out

    def _read_all(self, table: DeltaTable, version: int) -> list[SourceBatch]:
        """Every row of ``table`` (its deletion vectors applied by delta-rs' query engine)."""
        reader = QueryBuilder().register("t", table).execute("select * from t")
        columns = [n for n in self.schema.names]
        data = _plain(pa.table(reader))
        origin = f"deltalake table {self.uri!r}, version {version}"
        present = [c for c in columns if c in data.column_names]
        return [self._batch(data.select(present), origin)] if data.num_rows else []

    def _read_cdf(
        self, table: DeltaTable, version: int
    ) -> tuple[list[SourceBatch], list[SourceBatch]]:
        """The rows ``version`` adds and removes, from the change data feed."""
        changes = pa.table(table.load_cdf(starting_version=version, ending_version=version))
        kind = changes["_change_type"].cast(pa.string())
        columns = [n for n in self.schema.names if n in changes.column_names]
        data = _plain(changes.select(columns))
        origin = f"deltalake table {self.uri!r}, version {version}, change data feed"
        rows = np.arange(1, changes.num_rows + 1, dtype=np.int64)
        out: list[list[SourceBatch]] = []
        for kinds in (_ENTERING, _LEAVING):
            mask = pc.is_in(kind, pa.array(kinds)).fill_null(False)
            picked = data.filter(mask)
            if picked.num_rows == 0:
                out.append([])
                continue
            keep = np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)
            out.append([self._batch(picked, origin, rows[keep])])
        return out[0], out[1]

    def _batch(
        self, data: pa.Table, origin: str, rows: np.ndarray[Any, Any] | None = None
    ) -> SourceBatch:
        """Rows made to fit the input's schema (the rest as errors), with their times."""
        numbers = np.arange(1, data.num_rows + 1, dtype=np.int64) if rows is None else rows
        fitted, kept, errors = conform(data, self.schema, origin, numbers)
        batch = SourceBatch(fitted, origin, kept, errors=errors)
        if self.time_column is not None:
            assign_times(batch, self.time_column)
        self._rows += data.num_rows
        return batch

    def _count(self, table: DeltaTable) -> int | None:
        actions = pa.table(table.get_add_actions(flatten=True))
        if "num_records" not in actions.column_names or actions["num_records"].null_count:
            return None  # a file without row counts in the log
        return int(pc.sum(actions["num_records"]).as_py() or 0)


def _files(table: DeltaTable) -> frozenset[str]:
    """The paths of the table's data files, relative to its root, as its pyarrow fragments
    name them (the log's paths are URI-encoded once more)."""
    actions = pa.table(table.get_add_actions(flatten=True))
    return frozenset(urllib.parse.unquote(p) for p in actions["path"].to_pylist())


def _deletion_vectors(table: DeltaTable) -> bool:
    """Whether the table may have deletion vectors (its ``deletionVectors`` reader feature):
    its Parquet files may then hold rows the table no longer has."""
    features = table.protocol().reader_features or []
    return "deletionVectors" in features


def _change_data_feed(table: DeltaTable) -> bool:
    """Whether the table's change data feed is on."""
    config = table.metadata().configuration
    return str(config.get("delta.enableChangeDataFeed", "false")).lower() == "true"


def _local_root(table: DeltaTable) -> str | None:
    """The table's directory when it is on the local file system, else ``None``."""
    uri = table.table_uri
    if uri.startswith("file://"):
        return urllib.parse.unquote(uri.removeprefix("file://")).rstrip("/")
    if "://" not in uri:
        return uri.rstrip("/")
    return None


def _local_fragment(fragment: Any, root: str) -> Any:
    """A data file of a local table as a fragment of pyarrow's own local file system.

    delta-rs' dataset reads through a Python file system that calls into its Rust object
    store; scanning with it in a process that also ran a ``MERGE`` (the keyed sink) made the
    interpreter abort at exit (``terminate called without an active exception``, seen with
    deltalake 1.6.6 and pyarrow 18.1). pyarrow reading the file itself does not."""
    relative = fragment.path.removeprefix("file://")
    if not relative.startswith("/"):
        relative = f"{root}/{relative}"
    path = relative if os.path.exists(relative) else urllib.parse.unquote(relative)
    return pds.ParquetFileFormat().make_fragment(
        path, pafs.LocalFileSystem(), partition_expression=fragment.partition_expression
    )


def _relative(path: str, table: DeltaTable) -> str:
    """A fragment's path relative to the table's root (as the log names files)."""
    root = table.table_uri.removeprefix("file://").rstrip("/") + "/"
    return path[len(root) :] if path.startswith(root) else path


def _plain(data: pa.Table) -> pa.Table:
    """``data`` with view types (``string_view``, ``binary_view``) as plain ones, which
    ddflow's schemas use."""
    fields = []
    for f in data.schema:
        if pa.types.is_string_view(f.type):
            fields.append(pa.field(f.name, pa.string()))
        elif pa.types.is_binary_view(f.type):
            fields.append(pa.field(f.name, pa.binary()))
        else:
            fields.append(f)
    target = pa.schema(fields)
    return data if target == data.schema else data.cast(target)
