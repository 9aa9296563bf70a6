"""Fixtures of the Postgres connector tests: one real server for the session (see
``server.py``) and a connection string to it (helpers for the tests: ``helpers.py``).

The tests skip only when no PostgreSQL server binary exists on the machine (``.ci/run``
installs Debian's ``postgresql`` package where it is missing).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.io.postgres.server import Server, find_bin_dir, start


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """A PostgreSQL server with ``wal_level=logical`` in a temporary directory."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip(
            "no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in "
            "/usr/lib/postgresql/*/bin: apt-get install postgresql"
        )
    server = start(bin_dir)
    yield server
    server.stop()


@pytest.fixture
def conninfo(postgres_server: Server) -> str:
    """A libpq connection string to the session's server."""
    return postgres_server.conninfo
