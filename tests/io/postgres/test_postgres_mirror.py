"""The Postgres mirror example (``python -m ddflow.examples.postgres_mirror``) against the
session's server: every round's transaction reaches the view and the sink table, which
ends equal to the aggregate by SQL; without a reachable server, a message and exit status 2.
"""

from __future__ import annotations

import pytest
from tests.io.postgres.helpers import sql

from ddflow.examples import postgres_mirror


@pytest.mark.timeout(60)
def test_mirror_follows_the_writer(conninfo: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--conninfo", conninfo, "--rounds", "2", "--rows", "20", "--table", "mirror_items"]
    assert postgres_mirror.main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "snapshot: 20 items; view:"
    assert [line.split(":")[0] for line in out if line.startswith("round ")] == [
        "round 1",
        "round 2",
    ]
    assert any("garden emptied" in line for line in out)
    assert "  - garden" in {line[:10] for line in out}  # the emptied category left the view
    assert "  + toys  " in {line[:10] for line in out}  # and the new one entered
    assert out[-1] == (
        "mirror_items_per_category (5 rows) equals the aggregate by SQL on mirror_items: True"
    )
    rows = sql(conninfo, "select category, items from mirror_items_per_category order by 1")
    want = sql(conninfo, "select category, count(*) from mirror_items group by 1 order by 1")
    assert rows == want and [c for c, _ in rows] == ["books", "games", "music", "tools", "toys"]
    # The source's replication slot went with the dataflow.
    slots = sql(conninfo, "select slot_name from pg_replication_slots")
    assert ("ddflow_public_mirror_items",) not in slots


def test_unreachable_server(capsys: pytest.CaptureFixture[str]) -> None:
    """No server on the socket: a message naming the connection string, no traceback."""
    conninfo = "host=/nonexistent-ddflow-socket-dir port=5 connect_timeout=2"
    assert postgres_mirror.main(["--conninfo", conninfo]) == 2
    err = capsys.readouterr().err
    assert err.startswith("postgres_mirror: the server of --conninfo 'host=/nonexistent")


@pytest.mark.parametrize("args", [["--rounds", "0"], ["--rows", "5"], ["--table", "a; drop"]])
def test_bad_arguments_exit(args: list[str]) -> None:
    with pytest.raises(SystemExit):
        postgres_mirror.main(args)
