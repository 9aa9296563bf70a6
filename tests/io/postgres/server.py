"""A throwaway PostgreSQL server for the connector tests: ``initdb`` and ``pg_ctl`` in a
temporary directory, listening only on a unix socket there (no TCP), with
``wal_level=logical``.

The binaries are found on ``PATH`` or in Debian's ``/usr/lib/postgresql/<version>/bin``
(``.ci/run`` installs the ``postgresql`` package where neither has them). PostgreSQL refuses
to run as root, so as root the directory is handed to the ``postgres`` user and every server
command runs as that user (``runuser -u postgres --``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Server", "find_bin_dir", "start"]


def find_bin_dir() -> Path | None:
    """The directory of ``initdb`` and ``pg_ctl`` (the newest Debian version), or None."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).parent
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return versions[-1].parent if versions else None


def _free_port() -> int:
    """A port no one listens on (it names the unix socket; the server opens no TCP port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running server: its directory, port and a conninfo string that reaches it."""

    bin_dir: Path
    root: Path
    port: int
    as_user: list[str]

    @property
    def conninfo(self) -> str:
        """libpq connection string: the unix socket in the server's directory."""
        return f"host={self.root} port={self.port} user=postgres dbname=postgres"

    def _run(self, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, *args], capture_output=True, text=True, timeout=60, cwd=self.root
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            raise RuntimeError(
                f"{' '.join(args)} failed ({done.returncode}): {done.stdout}{done.stderr}"
                + (log.read_text(errors="replace") if log.exists() else "")
            )

    def stop(self) -> None:
        """Stops the server (fast shutdown) and removes its directory (nothing to do when
        the directory is gone: the server went with it)."""
        if not (self.root / "data").exists():
            shutil.rmtree(self.root, ignore_errors=True)
            return
        try:
            self._run(
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.root / "data"),
                "-m",
                "fast",
                "-w",
                "stop",
            )
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start(bin_dir: Path, wal_level: str = "logical") -> Server:
    """Initialises a cluster in a new temporary directory and starts it."""
    # In /tmp, not $TMPDIR: the postgres user must reach it, and a unix socket's path is
    # limited to about 100 bytes.
    root = Path(
        tempfile.mkdtemp(prefix="ddflow-pg-", dir="/tmp" if os.path.isdir("/tmp") else None)
    )
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    server = Server(bin_dir, root, _free_port(), as_user)
    data = root / "data"
    try:
        server._run(
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = (
            f"-p {server.port} -k {root} -c listen_addresses='' -c wal_level={wal_level} "
            "-c max_replication_slots=20 -c max_wal_senders=20 -c fsync=off "
            "-c full_page_writes=off"
        )
        server._run(
            str(bin_dir / "pg_ctl"),
            "-D",
            str(data),
            "-o",
            options,
            "-l",
            str(root / "server.log"),
            "-w",
            "start",
        )
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return server
