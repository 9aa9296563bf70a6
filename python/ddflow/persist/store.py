"""Where a persistent dataflow's files live: a local directory or an object store.

A :class:`Store` is the few operations the journal needs on its files, named by their path
under the checkpoint's root (``manifest-00000003.seg``, ``log/000...042.log``): list, read,
write whole and durably, append a group of log records, delete.

- :class:`LocalStore` (a local directory): a whole file is written under a hidden temporary
  name, flushed (``fsync``), renamed into place and its directory flushed; the log is one
  file per checkpoint, each group of records appended and flushed (``fsync``) together.
- :class:`ObjectStore` (any ``pyarrow.fs.FileSystem`` but the local one, S3-compatible stores
  among them): object stores have neither append nor rename, but a PUT that returned is
  whole and durable. A whole file is one PUT; each group of log records flushed together is
  an object of its own, named by its first record's number (so the names order them).

Credentials and the endpoint of an ``s3://`` URI come from what ``pyarrow.fs`` reads: the
standard AWS environment variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL``), the AWS config files, or the URI's query
(``?endpoint_override=127.0.0.1:9000&scheme=http``); or the program builds the
``pyarrow.fs.FileSystem`` itself and passes it (``dd.Persistence(..., filesystem=fs)``).
:func:`open_store` checks the store is reachable and its bucket exists before anything is
written, raising a :class:`~ddflow.errors.PersistenceError` that names the path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol

from ddflow.errors import PersistenceError

if TYPE_CHECKING:
    import pyarrow.fs as pafs

__all__ = ["LocalStore", "ObjectStore", "Store", "is_uri", "open_store"]

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")


def is_uri(path: str) -> bool:
    """Whether ``path`` is a URI (``s3://bucket/prefix``), not a local path."""
    return _SCHEME.match(path) is not None and not path.startswith("file://")


class Store(Protocol):
    """The operations the journal needs on its files (names relative to the root)."""

    where: str
    """The root, as errors name it."""
    appends: bool
    """Whether a log file grows by appends (a crash may cut its last record short)."""

    def names(self, folder: str = "") -> list[str]:
        """The names of the files directly in ``folder`` (``""``: the root)."""
        ...

    def read(self, name: str) -> bytes:
        """The bytes of file ``name``."""
        ...

    def write(self, name: str, data: bytes) -> None:
        """Writes file ``name`` whole and durably (never seen half-written)."""
        ...

    def append_log(self, first: int, data: bytes) -> None:
        """Logs ``data`` (records ``first``, ...) durably: before this returns, a restart
        reads it."""
        ...

    def end_log(self) -> None:
        """The log file being appended to is done (the next group starts a new one)."""
        ...

    def truncate(self, name: str, size: int) -> None:
        """Cuts file ``name`` to ``size`` bytes durably (a record a crash cut short)."""
        ...

    def delete(self, names: list[str]) -> None:
        """Deletes files (those absent are no error), then makes it durable."""
        ...


class LocalStore:
    """A checkpoint in a local directory (created if missing)."""

    appends = True

    def __init__(self, root: Path):
        self.root = root
        self.where = str(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._log: BinaryIO | None = None

    def names(self, folder: str = "") -> list[str]:
        where = self.root / folder
        if not where.is_dir():  # the log folder appears with the first record
            return []
        return [f.name for f in where.iterdir() if f.is_file()]

    def read(self, name: str) -> bytes:
        try:
            return (self.root / name).read_bytes()
        except OSError as exc:
            raise PersistenceError(f"checkpoint file {self.root / name}: {exc}") from exc

    def write(self, name: str, data: bytes) -> None:
        path = self.root / name
        temp = path.with_name(f".{path.name}.tmp")
        with open(temp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
        sync_dir(path.parent)

    def append_log(self, first: int, data: bytes) -> None:
        if self._log is None:
            log_dir = self.root / "log"
            if not log_dir.is_dir():
                log_dir.mkdir()
                sync_dir(self.root)
            self._log = open(log_dir / f"{first:020d}.log", "ab")  # noqa: SIM115
            sync_dir(log_dir)
        self._log.write(data)
        self._log.flush()
        os.fsync(self._log.fileno())

    def end_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def truncate(self, name: str, size: int) -> None:
        with open(self.root / name, "rb+") as f:
            f.truncate(size)
            os.fsync(f.fileno())

    def delete(self, names: list[str]) -> None:
        for name in names:
            (self.root / name).unlink(missing_ok=True)
        sync_dir(self.root)
        if (self.root / "log").is_dir():
            sync_dir(self.root / "log")

    def __del__(self) -> None:
        # A dataflow fed by hand has no end that would close the log: it goes with it.
        log = getattr(self, "_log", None)
        if log is not None:
            log.close()


class ObjectStore:
    """A checkpoint under a prefix of an object store (``bucket/prefix``)."""

    appends = False

    def __init__(self, fs: pafs.FileSystem, root: str, where: str):
        self.fs = fs
        self.root = root.rstrip("/")
        self.where = where

    def _path(self, name: str) -> str:
        return f"{self.root}/{name}"

    def _error(self, name: str, exc: Exception) -> PersistenceError:
        return PersistenceError(f"checkpoint file {self.where}/{name}: {exc}")

    def names(self, folder: str = "") -> list[str]:
        import pyarrow.fs as pafs

        base = self._path(folder).rstrip("/")
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True))
        except (OSError, ValueError) as exc:
            raise self._error(folder, exc) from exc
        return [i.base_name for i in infos if i.type == pafs.FileType.File]

    def read(self, name: str) -> bytes:
        try:
            with self.fs.open_input_stream(self._path(name)) as f:
                return bytes(f.read())
        except (OSError, ValueError) as exc:
            raise self._error(name, exc) from exc

    def write(self, name: str, data: bytes) -> None:
        try:
            with self.fs.open_output_stream(self._path(name)) as f:
                f.write(data)
        except (OSError, ValueError) as exc:
            raise self._error(name, exc) from exc

    def append_log(self, first: int, data: bytes) -> None:
        self.write(f"log/{first:020d}.log", data)

    def end_log(self) -> None:
        pass

    def truncate(self, name: str, size: int) -> None:
        self.write(name, self.read(name)[:size])

    def delete(self, names: list[str]) -> None:
        for name in names:
            try:
                self.fs.delete_file(self._path(name))
            except FileNotFoundError:
                pass
            except (OSError, ValueError) as exc:
                raise self._error(name, exc) from exc


def sync_dir(path: Path) -> None:
    """Flushes a directory's entries (a rename in it) to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_store(path: str, filesystem: pafs.FileSystem | None) -> Store:
    """The store at ``path`` (a local directory, or a URI such as ``s3://bucket/prefix``;
    with ``filesystem``, a path in it), checked to be reachable, its bucket there."""
    if filesystem is None and not is_uri(path):
        return LocalStore(Path(path.removeprefix("file://")))
    # Imported here, not with ddflow: its object-store bindings hold about 6 MB of every
    # process that never opens a store.
    import pyarrow.fs as pafs

    try:
        if filesystem is None:
            fs, root = pafs.FileSystem.from_uri(path)
        else:
            fs = filesystem
            match = _SCHEME.match(path)
            root = path[match.end() :] if match else path
    except (OSError, ValueError) as exc:
        raise PersistenceError(f"Persistence path {path!r}: {exc}") from exc
    if isinstance(fs, pafs.LocalFileSystem):
        return LocalStore(Path(root))
    root = root.strip("/")
    bucket = root.split("/", 1)[0]
    if not bucket:
        raise PersistenceError(f"Persistence path {path!r} names no bucket")
    try:
        info = fs.get_file_info(bucket)
    except (OSError, ValueError) as exc:
        raise PersistenceError(
            f"Persistence path {path!r}: the store is unreachable: {exc}"
        ) from exc
    if info.type != pafs.FileType.Directory:
        raise PersistenceError(
            f"Persistence path {path!r}: bucket {bucket!r} does not exist (create it first)"
        )
    return ObjectStore(fs, root, path)
