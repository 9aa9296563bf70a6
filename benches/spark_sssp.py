"""SSSP over a changing weighted random graph on the Spark backend, prioritized
(``advance_iteration`` + ``delay``: updates held until their iteration) and plain, beside
the embedded engine on the same input.

``python benches/spark_sssp.py [--nodes 1000] [--edges 4000] [--updates 100]
[--max-weight 9] [--partitions 2] [--master local[2]]``

Prints, per variant: supersteps run, seconds, and whether the output equals the embedded
engine's (exit status 1 if not). Prioritized SSSP settles short distances first, so it runs
one superstep per distinct distance that changes rather than one per hop count.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

import ddflow as dd


def _flow(prioritized: bool) -> tuple[dd.Dataflow, Any, Any, dd.Collection]:
    flow = dd.Dataflow(log=False)
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64", "w": "int64"})
    roots_in, roots = flow.new_input({"node": "int64"})
    return flow, edges_in, roots_in, dd.algorithms.sssp(edges, roots, prioritized=prioritized)


def _history(args: argparse.Namespace) -> dict[str, np.ndarray]:
    """The graph at time 0, then ``--updates`` single-edge changes at times 1, 2, ...: each
    adds a random edge and removes one of the initial edges."""
    rng = np.random.default_rng(0)
    m, u = args.edges, args.updates
    src = rng.integers(0, args.nodes, m + u)
    dst = rng.integers(0, args.nodes, m + u)
    w = rng.integers(1, args.max_weight + 1, m + u)
    removed = rng.choice(m, u, replace=False)
    times = np.concatenate([np.zeros(m, np.int64), np.arange(1, u + 1), np.arange(1, u + 1)])
    diffs = np.concatenate([np.ones(m + u, np.int64), -np.ones(u, np.int64)])
    return {
        "src": np.concatenate([src, src[removed]]),
        "dst": np.concatenate([dst, dst[removed]]),
        "w": np.concatenate([w, w[removed]]),
        "time": times,
        "diff": diffs,
    }


def _embedded(hist: dict[str, np.ndarray], prioritized: bool) -> tuple[list[Any], float]:
    flow, ei, ri, out = _flow(prioritized)
    cap = out.capture()
    start = time.perf_counter()
    cols = {k: hist[k] for k in ("src", "dst", "w")}
    ei.update_batch(cols, times=hist["time"], diffs=hist["diff"])
    ri.update_batch({"node": np.array([0])}, times=np.array([0]))
    ei.close()
    ri.close()
    flow.run()
    rows = sorted(tuple(r.values()) for r in cap.updates().to_pylist())
    return rows, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benches/spark_sssp.py")
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--edges", type=int, default=4000)
    p.add_argument("--updates", type=int, default=100)
    p.add_argument("--max-weight", type=int, default=9)
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ddflow.spark import run_on_spark, warm_up

    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    warm_up(spark)
    hist = _history(args)
    edges_df = spark.createDataFrame(
        [
            tuple(int(hist[k][i]) for k in ("src", "dst", "w", "time", "diff"))
            for i in range(len(hist["time"]))
        ],
        "src long, dst long, w long, time long, diff long",
    )
    roots_df = spark.createDataFrame([(0, 0, 1)], "node long, time long, diff long")
    print(
        f"sssp: {args.nodes:,} nodes, {args.edges:,} edges (weights 1..{args.max_weight}), "
        f"{args.updates:,} updates, {args.master}"
    )
    same_all = True
    for prioritized in (True, False):
        want, secs_e = _embedded(hist, prioritized)
        flow, ei, ri, out = _flow(prioritized)
        start = time.perf_counter()
        result = run_on_spark(
            spark, flow, {ei: edges_df, ri: roots_df}, [out], partitions=args.partitions
        )
        got = sorted(tuple(r) for r in result[out].collect())
        secs = time.perf_counter() - start
        steps = [s for s in result.supersteps if s.phase.startswith("superstep")]
        same = got == want
        same_all &= same
        name = "prioritized" if prioritized else "plain"
        print(
            f"{name:>11}: {len(steps)} supersteps (last iteration {steps[-1].iteration}), "
            f"Spark {secs:.1f} s, embedded {secs_e:.2f} s, {len(got):,} output updates, "
            f"outputs {'equal' if same else 'DIFFER'}"
        )
    spark.stop()
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
