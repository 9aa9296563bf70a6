"""Delta Lake connector throughput: a snapshot read into a group-by written by key, then
appended versions followed with ``watch=True``; and the cost of ``flow.metrics()``.

    python benches/deltalake_io.py [ROWS] [VERSIONS] [ROWS_PER_VERSION]

Prints one line per phase (rows, seconds, rows/s). The tables live in a temporary directory.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

import ddflow as dd


def _rows(n: int, start: int, rng: np.random.Generator) -> pa.Table:
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table(
        {
            "id": ids,
            "group": pa.array([f"g{g}" for g in rng.integers(0, 1000, n)]),
            "qty": rng.integers(0, 100, n, dtype=np.int64),
        }
    )


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    versions = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    per_version = int(sys.argv[3]) if len(sys.argv) > 3 else 10_000
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = str(Path(tmp) / "src"), str(Path(tmp) / "out")
        write_deltalake(src, _rows(rows, 0, rng))

        flow = dd.Dataflow(log=False)
        facts = dd.io.deltalake.read(flow, src)
        per_group = facts.group_by("group").agg(qty=dd.sum("qty"), n=dd.count())
        dd.io.deltalake.write(per_group, out, primary_key=["group"])
        start = time.perf_counter()
        flow.run(progress=False)
        seconds = time.perf_counter() - start
        print(f"snapshot: {rows:,} rows in {seconds:.2f} s, {rows / seconds:,.0f} rows/s")

        flow = dd.Dataflow(log=True)
        facts = dd.io.deltalake.read(flow, src, watch=True)
        per_group = facts.group_by("group").agg(qty=dd.sum("qty"), n=dd.count())
        sink = dd.io.deltalake.write(per_group, str(Path(tmp) / "out2"), primary_key=["group"])
        total = rows + versions * per_version
        done = threading.Event()
        capture = dd.subscribe(per_group, lambda updates: None)

        def feed() -> None:
            for v in range(versions):
                write_deltalake(src, _rows(per_version, rows + v * per_version, rng), mode="append")
            target = DeltaTable(src).version()
            source = [s for s in flow._loop.sources if hasattr(s, "retractions")][0]
            while getattr(source, "version", None) != target:
                time.sleep(0.01)
            done.set()
            flow.stop()

        start = time.perf_counter()
        threading.Thread(target=feed).start()
        flow.run(progress=False)
        seconds = time.perf_counter() - start
        assert done.is_set()
        n = sum(capture.state()["n"].to_pylist())
        assert n == total, (n, total)
        print(
            f"watch: snapshot + {versions} appended versions of {per_version:,} rows "
            f"({total:,} rows, {sink.commits} MERGE commits) in {seconds:.2f} s"
        )
        invocations = len(flow.log())
        start = time.perf_counter()
        flow.metrics()
        print(
            f"flow.metrics(): {time.perf_counter() - start:.4f} s over {invocations:,} "
            "logged operator invocations"
        )


if __name__ == "__main__":
    main()
