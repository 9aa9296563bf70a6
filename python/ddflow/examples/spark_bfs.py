"""BFS distance counts over a changing random graph, on local Spark with ``run_on_spark``.

``python -m ddflow.examples.spark_bfs --nodes N --edges M --updates U --out DIR
[--partitions P] [--master local[2]] [--seed S] [--embedded]``

Writes the generated history as Parquet (``DIR/edges``, ``DIR/roots``): a random graph of M
edges at time 0, then U high-resolution updates, update ``i`` at time ``i + 1`` adding
``edges[M + i]`` and removing ``edges[i]`` (the same graphs as ``ddflow.examples.bfs``).
Runs ``bfs(edges, roots).count(by="dist")`` on Spark, writes the output history to
``DIR/counts``, and prints one line per superstep (time, updates fed back, shuffle bytes)
and a summary. ``--embedded`` also runs the embedded engine on the same input, checks that
the outputs are equal and prints both times.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import ddflow as dd
from ddflow.examples.bfs import random_graph

__all__ = ["main", "history", "bfs_flow", "run_embedded"]


def history(nodes: int, edges: int, updates: int, seed: int) -> pa.Table:
    """The edge history: ``src, dst, time, diff``."""
    src, dst = random_graph(nodes, edges + updates, seed)
    n0 = edges
    i = np.arange(updates, dtype=np.int64)
    t = i + 1
    parts = {
        "src": np.concatenate([src[:n0], src[n0 : n0 + updates], src[:updates]]),
        "dst": np.concatenate([dst[:n0], dst[n0 : n0 + updates], dst[:updates]]),
        "time": np.concatenate([np.zeros(n0, dtype=np.int64), t, t]),
        "diff": np.concatenate(
            [np.ones(n0 + updates, dtype=np.int64), -np.ones(updates, dtype=np.int64)]
        ),
    }
    return pa.table(parts)


def bfs_flow() -> tuple[dd.Dataflow, dd.InputSession, dd.InputSession, dd.Collection]:
    """The dataflow: ``bfs(edges, roots).count(by="dist")``; its inputs and output."""
    flow = dd.Dataflow(log=False)
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
    roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
    counts = dd.algorithms.bfs(edges, roots).count(by="dist")
    return flow, edges_in, roots_in, counts


def run_embedded(edges: pa.Table) -> tuple[pa.Table, float]:
    """The embedded engine on the whole history at once: output updates and seconds."""
    flow, edges_in, roots_in, counts = bfs_flow()
    cap = counts.capture()
    start = time.perf_counter()
    edges_in.update_batch(
        {"src": edges["src"].to_numpy(), "dst": edges["dst"].to_numpy()},
        times=edges["time"].to_numpy(),
        diffs=edges["diff"].to_numpy(),
    )
    roots_in.update_at((0,), time=0)
    edges_in.close()
    roots_in.close()
    flow.run()
    out = cap.updates()
    return out, time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; returns the exit code."""
    p = argparse.ArgumentParser(prog="python -m ddflow.examples.spark_bfs")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--edges", type=int, default=2000)
    p.add_argument("--updates", type=int, default=1000)
    p.add_argument("--out", required=True)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--embedded", action="store_true")
    args = p.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ddflow.spark import run_on_spark

    os.makedirs(args.out, exist_ok=True)
    edges = history(args.nodes, args.edges, args.updates, args.seed)
    pq.write_table(edges, os.path.join(args.out, "edges.parquet"))
    roots = pa.table({"node": [0], "time": [0], "diff": [1]})
    pq.write_table(roots, os.path.join(args.out, "roots.parquet"))

    spark = (
        SparkSession.builder.master(args.master)
        .appName("ddflow spark_bfs")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    edges_df = spark.read.parquet(os.path.join(args.out, "edges.parquet"))
    roots_df = spark.read.parquet(os.path.join(args.out, "roots.parquet"))

    flow, edges_in, roots_in, counts = bfs_flow()
    print(
        f"spark_bfs: {args.nodes} nodes, {args.edges} edges, {args.updates} updates "
        f"(each at its own time) on {args.master}, {args.partitions} partitions",
        flush=True,
    )
    start = time.perf_counter()
    result = run_on_spark(
        spark, flow, {edges_in: edges_df, roots_in: roots_df}, [counts], progress=True
    )
    out_dir = os.path.join(args.out, "counts")
    result[counts].write.mode("overwrite").parquet(out_dir)
    total = time.perf_counter() - start
    steps = [s for s in result.supersteps if s.phase.startswith("superstep")]
    n_out = spark.read.parquet(out_dir).count()
    secs = [s.seconds for s in steps]
    print(
        f"summary: {len(steps)} supersteps, total {total:.1f} s (supersteps "
        f"{sum(secs):.1f} s: first {secs[0]:.1f} s, later mean "
        f"{(sum(secs[1:]) / max(1, len(secs) - 1)):.2f} s, max {max(secs[1:] or [0]):.2f} s; "
        f"output written {total - sum(secs):.1f} s), {n_out} output updates -> {out_dir}",
        flush=True,
    )
    if args.embedded:
        want, secs_e = run_embedded(edges)
        got = spark.read.parquet(out_dir).toPandas()
        got_rows = sorted(map(tuple, got[["dist", "count", "time", "diff"]].to_numpy().tolist()))
        want_rows = sorted((r["dist"], r["count"], r["time"], r["diff"]) for r in want.to_pylist())
        same = got_rows == want_rows
        print(
            f"embedded engine: {secs_e:.1f} s; spark / embedded = {total / secs_e:.1f}x; "
            f"outputs {'equal' if same else 'DIFFER'}",
            flush=True,
        )
        if not same:
            return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
