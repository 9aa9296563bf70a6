"""A throwaway S3-compatible server for the object-store persistence tests: ``s3s-fs`` (the
crate's binary: an S3 server keeping objects as files) in a temporary directory, on a free
local port, with a made-up key pair.

The binary is found at ``$DDFLOW_S3S_FS`` (``.ci/run`` sets it to the build it keeps in
``~/.cache/ddflow-ci``), at ``.ci/tools/s3s-fs/bin/s3s-fs`` (a developer's install, as the
skip message says), or on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

__all__ = ["S3Server", "find_binary", "start"]

ROOT = Path(__file__).resolve().parents[2]
ACCESS_KEY = "ddflow-test"
SECRET_KEY = "ddflow-test-secret"


def find_binary() -> Path | None:
    """The ``s3s-fs`` executable, or None."""
    candidates = [os.environ.get("DDFLOW_S3S_FS"), str(ROOT / ".ci/tools/s3s-fs/bin/s3s-fs")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    on_path = shutil.which("s3s-fs")
    return Path(on_path) if on_path else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class S3Server:
    """A running server: its data directory, its port, and its process."""

    root: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def filesystem(self) -> pafs.S3FileSystem:
        """A client of the server (one attempt per request: a test fails fast)."""
        return pafs.S3FileSystem(
            endpoint_override=f"http://{self.endpoint}",
            scheme="http",
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region="us-east-1",
            allow_bucket_creation=True,
            connect_timeout=5,
            request_timeout=30,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=1),
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)
        self.root.parent.joinpath(f"{self.root.name}.log").unlink(missing_ok=True)


def start(binary: Path) -> S3Server:
    """Starts ``binary`` on a free port in a new temporary directory; waits until it listens."""
    root = Path(tempfile.mkdtemp(prefix="ddflow-s3s-"))
    port = _free_port()
    command = [str(binary), "--host", "127.0.0.1", "--port", str(port)]
    command += ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, str(root)]
    log = root.parent / f"{root.name}.log"
    with open(log, "wb") as out:  # the server's output (its own copy of the file stays open)
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(
                    f"s3s-fs did not start on port {port} (exit {process.poll()}); its output: "
                    f"{log.read_text(errors='replace')[-2000:]}"
                ) from None
            time.sleep(0.05)
    return S3Server(root, port, process)
