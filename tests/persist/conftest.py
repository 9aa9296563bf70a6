"""Fixtures of the persistence tests: a real S3-compatible server (``s3_server.py``) for the
object-store tests, started once per session when a test asks for it.

Without the ``s3s-fs`` binary those tests skip, but not in CI (``DDFLOW_CI`` set, as
``.ci/run`` does, which installs the binary): there a missing binary fails them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from tests.persist.s3_server import S3Server, find_binary, start


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """An ``s3s-fs`` server in a temporary directory, on a free port."""
    binary = find_binary()
    if binary is None:
        why = (
            "no s3s-fs binary ($DDFLOW_S3S_FS, .ci/tools/s3s-fs/bin/s3s-fs or PATH): "
            "cargo install s3s-fs@0.14.1 --locked --features binary --debug "
            "--root .ci/tools/s3s-fs"
        )
        if os.environ.get("DDFLOW_CI"):
            pytest.fail(f"{why} (DDFLOW_CI is set: .ci/run installs it)")
        pytest.skip(why)
    server = start(binary)
    yield server
    server.stop()
