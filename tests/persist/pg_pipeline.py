"""A persistent Postgres pipeline the crash tests start, kill and restart as a process.

    python -m tests.persist.pg_pipeline <conninfo> <state dir>

Follows the table ``accounts_restart`` (``id``, ``owner``, ``balance``) by logical
replication, keeps per owner the number of accounts and their total balance, and keeps the
table ``per_owner_restart`` equal to it (primary key ``owner``). Runs until killed or
interrupted; checkpoints every 200 ms.
"""

from __future__ import annotations

import sys

import ddflow as dd

SOURCE, SINK = "accounts_restart", "per_owner_restart"


def build(conninfo: str, state: str) -> dd.Dataflow:
    """The pipeline's dataflow."""
    flow = dd.Dataflow(persistence=dd.Persistence(state, interval="200ms"), log=False)
    accounts = dd.io.postgres.read(
        flow, conninfo, SOURCE, schema={"id": "int64", "owner": "str", "balance": "int64"}
    )
    per_owner = accounts.group_by("owner").agg(n=dd.count(), total=dd.sum("balance"))
    dd.io.postgres.write(per_owner, conninfo, SINK, primary_key=["owner"])
    return flow


if __name__ == "__main__":
    build(sys.argv[1], sys.argv[2]).run(progress=False)
