"""Incremental Spark runs on the BFS distance counts: one first run over the history up to
some time, then several runs that each continue from the stored state with only the new
updates (``run_on_spark(..., state=path)``).

``python benches/spark_incremental.py [--nodes 100000 --edges 1000000 --first 100000
--runs 10 --per-run 1000] [--partitions 4] [--master local[2]] [--out FILE]``

The history is the example's (``python -m ddflow.examples.spark_bfs``): M edges at time 0,
then single-edge swaps, swap ``i`` at time ``i + 1``. The first run takes time 0 and the
first ``--first`` swaps; each later run the next ``--per-run`` swaps. Every run's output
(materialized to Parquet inside the timing) is compared with the embedded engine's output
over the whole history restricted to that run's times, so the concatenation of the runs'
outputs is checked against one run over everything.

Prints a Markdown report (machine, load averages, the command) and appends it to ``--out``
(default ``benches/results/spark_incremental.md``; ``-`` for none). Exit status 1 when an
output differs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``benches`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from benches.charts import write_chart
from benches.machine import commit, cpu, load

from ddflow.examples.spark_bfs import bfs_flow, history, run_embedded


def _rows(table: pa.Table) -> list[tuple[int, int, int, int]]:
    cols = ["dist", "count", "time", "diff"]
    return sorted(zip(*[table[c].to_pylist() for c in cols], strict=True))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benches/spark_incremental.py")
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--edges", type=int, default=1_000_000)
    p.add_argument("--first", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--per-run", type=int, default=1_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="benches/results/spark_incremental.md")
    p.add_argument("--progress", action="store_true", help="print each superstep's line")
    p.add_argument(
        "--recompute",
        action="store_true",
        help="also time one plain run_on_spark (no state) over the whole history: what a "
        "continuation saves against recomputing everything",
    )
    args = p.parse_args(argv)
    command = "python benches/spark_incremental.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    load_before = load()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ddflow.spark import run_on_spark, warm_up

    tmp = tempfile.mkdtemp(prefix="spark_incremental_")
    total_updates = args.first + args.runs * args.per_run
    edges = history(args.nodes, args.edges, total_updates, args.seed)
    # Run k's times: [bounds[k], bounds[k + 1]).
    bounds = [0, args.first + 1] + [
        args.first + 1 + (k + 1) * args.per_run for k in range(args.runs)
    ]
    for k in range(len(bounds) - 1):
        t = edges["time"]
        mask = pc.and_(pc.greater_equal(t, bounds[k]), pc.less(t, bounds[k + 1]))
        pq.write_table(edges.filter(mask), f"{tmp}/edges{k}.parquet")
    pq.write_table(pa.table({"node": [0], "time": [0], "diff": [1]}), f"{tmp}/roots0.parquet")
    pq.write_table(
        pa.table({"node": pa.array([], pa.int64()), "time": pa.array([], pa.int64()),
                  "diff": pa.array([], pa.int64())}),
        f"{tmp}/roots_none.parquet",
    )  # fmt: skip

    spark = (
        SparkSession.builder.master(args.master)
        .appName("ddflow benches/spark_incremental")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    t_warm = warm_up(spark)

    want, secs_embedded = run_embedded(edges)
    state = f"{tmp}/state"
    rows: list[tuple[int, int, float, int, bool]] = []
    failed = False
    for k in range(len(bounds) - 1):
        flow, edges_in, roots_in, counts = bfs_flow()
        edges_df = spark.read.parquet(f"{tmp}/edges{k}.parquet")
        roots_df = spark.read.parquet(
            f"{tmp}/roots0.parquet" if k == 0 else f"{tmp}/roots_none.parquet"
        )
        n_in = edges_df.count()
        start = time.perf_counter()
        result = run_on_spark(
            spark,
            flow,
            {edges_in: edges_df, roots_in: roots_df},
            [counts],
            partitions=args.partitions,
            state=state,
            progress=args.progress,
        )
        result[counts].write.mode("overwrite").parquet(f"{tmp}/out{k}")
        secs = time.perf_counter() - start
        got = pq.read_table(f"{tmp}/out{k}")
        t = want["time"]
        mask = pc.and_(pc.greater_equal(t, bounds[k]), pc.less(t, bounds[k + 1]))
        same = _rows(got) == _rows(want.filter(mask))
        failed |= not same
        rows.append((k, n_in, secs, got.num_rows, same))
        print(f"run {k}: {n_in:,} updates, {secs:.2f} s, {got.num_rows} output updates, "
              f"{'equal' if same else 'DIFFERENT'}", flush=True)  # fmt: skip
    recompute = None
    if args.recompute:
        flow, edges_in, roots_in, counts = bfs_flow()
        every = spark.read.parquet(*[f"{tmp}/edges{k}.parquet" for k in range(len(bounds) - 1)])
        start = time.perf_counter()
        result = run_on_spark(
            spark,
            flow,
            {edges_in: every, roots_in: spark.read.parquet(f"{tmp}/roots0.parquet")},
            [counts],
            partitions=args.partitions,
        )
        result[counts].write.mode("overwrite").parquet(f"{tmp}/whole")
        recompute = time.perf_counter() - start
        same = _rows(pq.read_table(f"{tmp}/whole")) == _rows(want)
        failed |= not same
        print(f"whole history without state: {recompute:.2f} s, "
              f"{'equal' if same else 'DIFFERENT'}", flush=True)  # fmt: skip
    spark.stop()
    shutil.rmtree(tmp, ignore_errors=True)

    first = rows[0][2]
    later = [r[2] for r in rows[1:]]
    lines = [
        f"## {args.nodes:,} nodes / {args.edges:,} edges: first run {args.first:,} updates, "
        f"then {args.runs} runs of {args.per_run:,}, {args.master}, {args.partitions} partitions",
        "",
        f"`{command}` at commit {commit()}, {time.strftime('%Y-%m-%d %H:%M')}; "
        f"{os.cpu_count()} cores ({cpu()}); load average (1/5/15 min) {load_before} before, "
        f"{load()} after. Session warm-up {t_warm:.2f} s (not counted). Embedded engine over "
        f"the whole history at once: {secs_embedded:.2f} s.",
        "",
        "| run | input updates | seconds | share of the first run | output updates "
        "| equals embedded |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for k, n_in, secs, n_out, same in rows:
        lines.append(
            f"| {k} | {n_in:,} | {secs:.2f} | {secs / first:.1%} | {n_out:,} | "
            f"{'yes' if same else 'NO'} |"
        )
    if later:
        lines += [
            "",
            f"Continuations: mean {sum(later) / len(later):.2f} s, max {max(later):.2f} s, "
            f"max {max(later) / first:.1%} of the first run.",
        ]
    if recompute is not None:
        lines += [
            "",
            f"One run of the whole history without `state=` (the fused loop): "
            f"{recompute:.2f} s; the largest continuation is "
            f"{max(later, default=0) / recompute:.1f}x that.",
        ]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out != "-":
        with open(args.out, "a") as f:
            f.write("\n" + report)
        write_chart(args.out, kind="spark_incremental")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
