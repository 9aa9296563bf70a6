"""A persistent file pipeline the crash tests start, kill and restart as a process.

    python -m tests.persist.pipeline <input dir> <output dir> <state dir> [rows per poll]

Reads the CSV files of ``<input dir>`` (columns ``t``, ``k``, ``v``; ``t`` is each row's
time), keeps per key the row count, the sum of ``v`` and the greatest ``v``, joins each key's
total back to the rows whose ``v`` is over 900, and writes both to Parquet sinks under
``<output dir>`` (``totals``, ``large``). Checkpoints every 300 ms; small polls make many
ticks, so a kill lands anywhere in them.
"""

from __future__ import annotations

import sys

import ddflow as dd
from ddflow.io.filesource import FileSource


def build(source: str, out: str, state: str | None) -> dd.Dataflow:
    """The pipeline's dataflow (persistent when ``state`` is given)."""
    persistence = None if state is None else dd.Persistence(state, interval="300ms")
    flow = dd.Dataflow(persistence=persistence, log=False)
    rows = dd.io.csv.read(
        flow, source, schema={"t": "int64", "k": "int64", "v": "int64"}, time_column="t"
    )
    totals = rows.group_by("k").agg(n=dd.count(), total=dd.sum("v"), top=dd.max("v"))
    large = rows.filter(dd.col("v") > 900).join(totals, on="k")
    dd.io.parquet.write(totals, f"{out}/totals")
    dd.io.parquet.write(large, f"{out}/large")
    return flow


def main() -> None:
    source, out, state = sys.argv[1:4]
    if len(sys.argv) > 4:
        FileSource.rows_per_poll = int(sys.argv[4])
    build(source, out, None if state == "-" else state).run(progress=False)


if __name__ == "__main__":
    main()
