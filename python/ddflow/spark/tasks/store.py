"""The reduce state store of the Spark backend: a reduce's accumulated input and output inside
an iterate, kept between supersteps outside Spark, as Arrow IPC files on a directory every
executor can reach (a local directory in local mode; a shared or distributed file system,
``hdfs://``, ``s3://``..., on a cluster).

Layout: ``ROOT/n{node}/b{bucket}/{version}.arrow`` for a reduce's state, and
``ROOT/inv{node}/b{bucket}/part{p}.arrow`` for a loop-invariant arrangement a fused superstep
joins with (written once, part ``p`` by the task of input partition ``p``). A bucket is
``pmod(hash(key), P)``, computed by Spark on the key columns, so every superstep finds a
key's state in the same bucket; the version is the superstep that wrote it.

A task of superstep ``i`` reads the newest version below ``i`` and writes version ``i`` (to
a temporary name, then renamed), so a retried or speculative task reads the same state and
writes the same file: the store adds no nondeterminism to Spark's task retries. Buckets
without new input are not rewritten. The driver prunes versions nobody can read any more
after each superstep, and deletes the whole root when the run ends.

Shared or not: ``create`` (on the driver) writes a ``STORE`` marker file at the root, and a
task's first read of a store checks that it sees it (once per Python worker). A
``state_dir`` that is not one directory for every process (a path on each node's own disk, a
relative path: each executor's working directory) would otherwise read no state where
another node wrote it, and give wrong output without an error; it fails the task instead,
naming the store, the host and the working directory.

Why: with the state in a DataFrame, every superstep shuffled the whole state beside the delta
and moved it JVM -> Arrow -> Python -> JVM, the largest share of a busy superstep; with the
store only the delta crosses Spark (``benches/results/spark_bfs.md``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from ddflow.errors import PlanError

__all__ = ["StateStore", "MARKER"]

MARKER = "STORE"
"""The file ``create`` writes at a store's root; tasks check that they see it."""

_seen: set[str] = set()
"""Roots this process has found its marker in (a Python worker checks a store once)."""


@dataclass(frozen=True)
class StateStore:
    """One run's state store under ``root`` (a local path or a file system URI); pickled to
    the executors with the stages that read and write it."""

    root: str

    @staticmethod
    def create(parent: str) -> StateStore:
        """A fresh, empty store in a new directory under ``parent``."""
        store = StateStore(_join(parent, f"ddflow-state-{uuid.uuid4().hex[:12]}"))
        fs, path = store._fs()
        fs.create_dir(path, recursive=True)
        with fs.open_output_stream(f"{path}/{MARKER}") as out:
            out.write(store.root.encode())
        return store

    def check_shared(self) -> None:
        """Raises ``PlanError`` when this process does not see the marker ``create`` wrote:
        the store's directory is not shared with the driver (see the module doc)."""
        if self.root in _seen:
            return
        fs, path = self._fs()
        if fs.get_file_info(f"{path}/{MARKER}").type != pafs.FileType.File:
            raise PlanError(
                f"run_on_spark: the reduce state store {self.root!r} is not visible from this "
                f"executor (host {socket.gethostname()!r}, working directory {os.getcwd()!r}, "
                f"path {path!r}): state_dir must be one directory the driver and every "
                "executor share (a shared mount, hdfs://..., s3://...), given as an absolute "
                "path or a URI"
            )
        _seen.add(self.root)

    def _fs(self) -> tuple[pafs.FileSystem, str]:
        if "://" in self.root:
            fs, path = pafs.FileSystem.from_uri(self.root)
            return fs, str(path)
        return pafs.LocalFileSystem(), os.path.abspath(self.root)

    def _bucket_dir(self, node: int, bucket: int) -> tuple[pafs.FileSystem, str]:
        fs, path = self._fs()
        return fs, f"{path}/n{node}/b{bucket}"

    def _versions(self, fs: pafs.FileSystem, directory: str) -> list[int]:
        infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        out = []
        for info in infos:
            name = info.base_name
            if info.type == pafs.FileType.File and name.endswith(".arrow"):
                stem = name[: -len(".arrow")]
                if stem.isdigit():
                    out.append(int(stem))
        return sorted(out)

    def load(self, node: int, bucket: int, before: int) -> pa.Table | None:
        """The newest state of ``(node, bucket)`` written by a superstep below ``before``;
        None when there is none."""
        self.check_shared()
        fs, directory = self._bucket_dir(node, bucket)
        versions = [v for v in self._versions(fs, directory) if v < before]
        if not versions:
            return None
        with fs.open_input_file(f"{directory}/{versions[-1]}.arrow") as f:
            return ipc.open_file(f).read_all()

    def save(self, node: int, bucket: int, version: int, table: pa.Table) -> None:
        """Writes ``table`` as the state of ``(node, bucket)`` at ``version`` (atomically:
        a temporary file renamed over the final name)."""
        fs, directory = self._bucket_dir(node, bucket)
        fs.create_dir(directory, recursive=True)
        tmp = f"{directory}/.{version}.{uuid.uuid4().hex[:8]}.tmp"
        with fs.open_output_stream(tmp) as out, ipc.new_file(out, table.schema) as writer:
            writer.write_table(table)
        fs.move(tmp, f"{directory}/{version}.arrow")

    def save_part(self, node: int, bucket: int, part: int, table: pa.Table) -> None:
        """Writes one task's rows of a loop-invariant arrangement ``node`` in ``bucket``
        (written once before the loop; a retried task replaces its own part)."""
        fs, path = self._fs()
        directory = f"{path}/inv{node}/b{bucket}"
        fs.create_dir(directory, recursive=True)
        tmp = f"{directory}/.part{part}.{uuid.uuid4().hex[:8]}.tmp"
        with fs.open_output_stream(tmp) as out, ipc.new_file(out, table.schema) as writer:
            writer.write_table(table)
        fs.move(tmp, f"{directory}/part{part}.arrow")

    def load_parts(self, node: int, bucket: int) -> pa.Table | None:
        """All rows of invariant arrangement ``node`` in ``bucket``; None when it has none."""
        self.check_shared()
        fs, path = self._fs()
        directory = f"{path}/inv{node}/b{bucket}"
        infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
        tables = []
        for info in sorted(infos, key=lambda i: i.base_name):
            if info.type == pafs.FileType.File and info.base_name.endswith(".arrow"):
                with fs.open_input_file(info.path) as f:
                    tables.append(ipc.open_file(f).read_all())
        return pa.concat_tables(tables) if tables else None

    def prune(self, node: int, upto: int) -> None:
        """Deletes the versions of ``node`` that no task can read once superstep ``upto`` is
        complete: all but the newest version at or below ``upto`` of every bucket."""
        fs, path = self._fs()
        base = f"{path}/n{node}"
        for info in fs.get_file_info(pafs.FileSelector(base, allow_not_found=True)):
            if info.type != pafs.FileType.Directory:
                continue
            versions = [v for v in self._versions(fs, info.path) if v <= upto]
            for v in versions[:-1]:
                with contextlib.suppress(FileNotFoundError):
                    fs.delete_file(f"{info.path}/{v}.arrow")

    def drop(self, node: int | None = None) -> None:
        """Deletes the state of ``node`` (or the whole store)."""
        fs, path = self._fs()
        target = path if node is None else f"{path}/n{node}"
        with contextlib.suppress(FileNotFoundError, OSError):
            fs.delete_dir(target)

    def drop_invariant(self, node: int) -> None:
        """Deletes the stored loop-invariant arrangement ``node``."""
        fs, path = self._fs()
        with contextlib.suppress(FileNotFoundError, OSError):
            fs.delete_dir(f"{path}/inv{node}")

    def size_bytes(self, node: int) -> int:
        """The bytes the current files of ``node`` take (for progress reports)."""
        fs, path = self._fs()
        infos = fs.get_file_info(
            pafs.FileSelector(f"{path}/n{node}", recursive=True, allow_not_found=True)
        )
        return sum(i.size or 0 for i in infos if i.type == pafs.FileType.File)


def _join(parent: str, name: str) -> str:
    return f"{parent.rstrip('/')}/{name}"
