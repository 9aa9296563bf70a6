"""Arrow columns into ``ddflow.kernels``: the cost of crossing, and the per-partition function
of ``ddflow.examples.spark_kernels`` without Spark.

``python benches/kernels_arrow.py [--rows 10000000] [--feed 200000] [--batch 10000]
[--repeat 5]``

Prints a Markdown table, each figure the least CPU seconds (user+sys of this process,
``time.process_time``) of ``--repeat`` runs, and the peak of the Arrow allocations made during
the call (copies Arrow makes, such as ``combine_chunks``; numpy's own allocations are not
counted):

* ``as_column``: an int64 column of ``--rows`` values as a pyarrow ``Array`` and as a
  ``ChunkedArray`` of one chunk (a ``Table`` column read from Parquet or built whole has one);
* ``consolidate``: ``(key, val, time, diff)`` int64 columns of a ``Table``, ``--rows`` rows
  with few distinct keys; and a tenth as many rows of an int64 key and a string column of
  50 distinct values (``pa.string()``, as Spark's batches hold them);
* ``compare_views``: a change feed of ``--feed`` rows in batches of ``--batch`` (Spark's
  ``spark.sql.execution.arrow.maxRecordsPerBatch`` is 10,000), rows per CPU second.

Run it in two checkouts to compare them (alternately, on a loaded machine).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ddflow import kernels as K  # noqa: E402
from ddflow.examples import spark_kernels as ex  # noqa: E402
from machine import commit, cpu, load  # noqa: E402


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, int]:
    """Least CPU seconds of ``repeat`` calls, and the largest peak of Arrow allocations made
    during one (bytes; a proxy of the default pool counts them)."""
    base = pa.default_memory_pool()
    best, peak = float("inf"), 0
    for _ in range(repeat):
        proxy = pa.proxy_memory_pool(base)
        pa.set_memory_pool(proxy)
        try:
            start = time.process_time()
            out = fn()
            best = min(best, time.process_time() - start)
            peak = max(peak, proxy.max_memory())
            del out
        finally:
            pa.set_memory_pool(base)
    return best, peak


def main() -> int:
    """Runs the measurements and prints the table."""
    p = argparse.ArgumentParser(prog="python benches/kernels_arrow.py")
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--feed", type=int, default=200_000)
    p.add_argument("--batch", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()

    rng = np.random.default_rng(0)
    n = args.rows
    table = pa.table(
        {
            "key": rng.integers(0, 1000, n, dtype=np.int64),
            "val": rng.integers(0, 10, n, dtype=np.int64),
            "time": rng.integers(0, 4, n, dtype=np.int64),
            "diff": rng.choice(np.array([-1, 1], dtype=np.int64), n),
        }
    )
    plain = table["key"].chunk(0)
    m = n // 10
    names = np.array([f"status-{i}" for i in range(50)], dtype=object)
    strings = pa.table(
        {
            "key": table["key"].slice(0, m),
            "status": pa.array(names[rng.integers(0, 50, m)], pa.string()),
        }
    )
    feed = ex.feed(args.feed, 30, seed=0)
    batches = feed.to_batches(max_chunksize=args.batch)
    first, second = (15, 15), (15, 40)

    cases: list[tuple[str, Callable[[], Any], int]] = [
        ("as_column, Array", lambda: K.as_column(plain), n),
        ("as_column, ChunkedArray of one chunk", lambda: K.as_column(table["key"]), n),
        (
            "consolidate, 4 Table columns",
            lambda: K.consolidate([table["key"], table["val"]], table["time"], table["diff"]),
            n,
        ),
        (
            "consolidate, int64 and string Table columns",
            lambda: K.consolidate(
                [strings["key"], strings["status"]], table["time"][:m], table["diff"][:m]
            ),
            m,
        ),
        ("compare_views", lambda: list(ex.compare_views(batches, first, second)), feed.num_rows),
    ]
    print(
        f"commit {commit()}, {cpu()}, {os.cpu_count()} cores, load {load()}, "
        f"pyarrow {pa.__version__}, numpy {np.__version__}"
    )
    print(f"`{' '.join([os.path.basename(sys.executable), *sys.argv])}`\n")
    print("| case | rows | CPU s (least) | rows per CPU s | Arrow allocations, peak |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, fn, rows in cases:
        secs, peak = measure(fn, args.repeat)
        rate = f"{rows / secs:,.0f}" if secs > 1e-3 else "-"
        print(f"| {name} | {rows:,} | {secs:.6f} | {rate} | {peak / 2**20:,.1f} MiB |")
    print(f"\nload after: {load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
