"""Per-superstep cost of a long loop on the Spark backend: BFS along a path (one iteration
per hop, so ``--length`` + 1 supersteps) with a few changes to the path over time, run with
reliable checkpointing (``checkpoint="reliable"``) or local checkpoints.

``python benches/spark_long_loop.py [--length 30] [--checkpoint reliable|local]
[--master local[2]] [--out FILE]``

Prints, per superstep: seconds, Spark stage seconds, jobs, shuffle bytes; then the mean of
the first and the last ten supersteps (after superstep 0) and their ratio, which stays near
1 when lineage is cut at every superstep. Checks the output against the embedded engine
(exit status 1 if they differ) and appends a Markdown report to ``--out`` (default
``benches/results/spark_long_loop.md``; ``-`` for none).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import ddflow as dd


def _flow() -> tuple[dd.Dataflow, dd.InputSession, dd.InputSession, dd.Collection]:
    flow = dd.Dataflow(log=False)
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
    roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
    return flow, edges_in, roots_in, dd.algorithms.bfs(edges, roots).count(by="dist")


def path_rows(length: int) -> list[tuple[int, int, int, int]]:
    """``0 -> 1 -> ... -> length`` at time 0; a shortcut ``0 -> length - 10`` added at 1
    and removed at 2; the edge ``9 -> 10`` removed at 3 and restored at 4."""
    rows = [(i, i + 1, 0, 1) for i in range(length)]
    short = max(1, length - 10)
    return rows + [(0, short, 1, 1), (0, short, 2, -1), (9, 10, 3, -1), (9, 10, 4, 1)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benches/spark_long_loop.py")
    p.add_argument("--length", type=int, default=30)
    p.add_argument("--checkpoint", default="reliable", choices=["reliable", "local"])
    p.add_argument("--master", default="local[2]")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--out", default="benches/results/spark_long_loop.md")
    args = p.parse_args(argv)
    command = "python benches/spark_long_loop.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    load_before = "/".join(f"{x:.2f}" for x in os.getloadavg())
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ddflow.spark import run_on_spark

    spark = (
        SparkSession.builder.master(args.master)
        .appName("ddflow benches/spark_long_loop")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.sql.adaptive.enabled", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.setCheckpointDir(tempfile.mkdtemp(prefix="spark_long_loop_"))
    rows = path_rows(args.length)
    edges_df = spark.createDataFrame(rows, "src long, dst long, time long, diff long")
    roots_df = spark.createDataFrame([(0, 0, 1)], "node long, time long, diff long")
    flow, ei, ri, counts = _flow()
    start = time.perf_counter()
    result = run_on_spark(
        spark, flow, {ei: edges_df, ri: roots_df}, [counts], checkpoint=args.checkpoint
    )
    got = sorted(tuple(r) for r in result[counts].collect())
    total = time.perf_counter() - start

    eflow, eei, eri, ecounts = _flow()
    cap = ecounts.capture()
    eei.update_batch(
        {"src": [r[0] for r in rows], "dst": [r[1] for r in rows]},
        times=[r[2] for r in rows],
        diffs=[r[3] for r in rows],
    )
    eri.update_at((0,), time=0)
    eei.close()
    eri.close()
    eflow.run()
    want = sorted((r["dist"], r["count"], r["time"], r["diff"]) for r in cap.updates().to_pylist())
    same = got == want

    steps = [s for s in result.supersteps if s.phase.startswith("superstep")]
    secs = [s.seconds for s in steps]
    first, last = statistics.mean(secs[1:11]), statistics.mean(secs[-10:])
    load_after = "/".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        f"## BFS along a path of {args.length} edges, checkpoint={args.checkpoint}, "
        f"{args.master}, {args.partitions} partitions",
        "",
        f"`{command}`, {time.strftime('%Y-%m-%d %H:%M')}; {os.cpu_count()} cores, shared "
        f"with other builds; load average (1/5/15 min) {load_before} before, {load_after} "
        f"after.",
        "",
        f"{len(steps)} supersteps, {total:.1f} s in all; outputs "
        f"{'equal to' if same else 'DIFFERENT from'} the embedded engine's. Mean of "
        f"supersteps 1-10: {first:.2f} s, of the last 10: {last:.2f} s (ratio "
        f"{last / first:.2f}).",
        "",
        "| superstep | s | stages s | jobs | shuffle write B |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {s.iteration} | {s.seconds:.2f} | {s.stage_seconds:.2f} | {s.jobs} | "
        f"{s.shuffle_write:,} |"
        for s in steps
    ]
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    if args.out != "-":
        with open(args.out, "a") as f:
            f.write("\n" + text)
    spark.stop()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
