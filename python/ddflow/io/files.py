"""The files a file source reads: one file, or a directory's files, each exactly once.

A directory's files are read in name order. Hidden files and files whose names start with
``_`` or end with ``.tmp`` are skipped (writers that write a temporary file and rename it,
ddflow's sinks among them, are never read half-written). With ``watch=True`` the directory is
listed again whenever the files found so far are read, and a new file is taken once its size
and modification time have stayed the same between two listings, so a file still being
written is not read early. A file is known by its path: once taken it is never read again,
even if it changes later.
"""

from __future__ import annotations

import os
from pathlib import Path

from ddflow.errors import InvalidValueError

__all__ = ["FileSet"]


def _listed(name: str) -> bool:
    """Whether a directory entry named ``name`` is one of the data files."""
    return not name.startswith((".", "_")) and not name.endswith(".tmp")


class FileSet:
    """The files under ``path`` not read yet, in order; new ones too when watching."""

    def __init__(self, path: str | os.PathLike[str], watch: bool = False) -> None:
        self.path = Path(path)
        self.watch = watch
        if not watch and not self.path.exists():
            raise InvalidValueError(f"{self.path}: no such file or directory")
        if watch and not self.path.is_dir():
            raise InvalidValueError(f"{self.path}: watch=True needs a directory")
        self._taken: set[Path] = set()
        self._pending: list[Path] = []
        self._candidates: dict[Path, tuple[int, int]] = {}
        """Watched files seen once, with (size, mtime) at that listing."""
        self._bytes_total = 0
        self._bytes_done = 0
        if not watch:
            self._pending = self._list()
            self._bytes_total = sum(p.stat().st_size for p in self._pending)

    def _list(self) -> list[Path]:
        """The data files now under the path, in name order."""
        if self.path.is_file():
            return [self.path]
        return sorted(
            entry
            for entry in self.path.iterdir()
            if _listed(entry.name) and entry.is_file() and entry not in self._taken
        )

    def first(self) -> Path | None:
        """The first data file there now (to infer a schema from), without taking it."""
        files = self._pending or self._list()
        return files[0] if files else None

    def next(self) -> Path | None:
        """Takes the next file to read, or None when none is ready."""
        if not self._pending and self.watch:
            self._scan()
        if not self._pending:
            return None
        path = self._pending.pop(0)
        self._taken.add(path)
        return path

    def done(self, path: Path) -> None:
        """Records that ``path`` has been read (for progress)."""
        try:
            self._bytes_done += path.stat().st_size
        except OSError:
            pass

    @property
    def taken(self) -> list[Path]:
        """The files taken so far (read, or being read), in name order."""
        return sorted(self._taken)

    def skip(self, paths: list[Path]) -> None:
        """Takes ``paths`` as already read (a source resuming after them)."""
        for path in paths:
            if path in self._pending:
                self._pending.remove(path)
            self._candidates.pop(path, None)
            self._taken.add(path)
            self.done(path)

    def _scan(self) -> None:
        """Lists the watched directory; files unchanged since the last listing are ready."""
        seen: dict[Path, tuple[int, int]] = {}
        for path in self._list():
            try:
                st = path.stat()
            except OSError:  # removed meanwhile
                continue
            seen[path] = (st.st_size, st.st_mtime_ns)
        ready = [p for p, sig in seen.items() if self._candidates.get(p) == sig]
        for path in ready:
            del seen[path]
            self._bytes_total += path.stat().st_size
        self._candidates = seen
        self._pending.extend(sorted(ready))

    @property
    def exhausted(self) -> bool:
        """Whether every file has been taken (never, when watching)."""
        return not self.watch and not self._pending

    def size(self) -> int:
        """Bytes of the files found so far."""
        return self._bytes_total

    def progress(self) -> int:
        """Bytes of the files read so far."""
        return self._bytes_done
