"""The Spark backend on the BFS distance-counts example, beside the embedded engine and the
naive Spark approach, from one run.

``python benches/spark_bfs.py [--nodes 100000 --edges 1000000 --updates 100000]
[--partitions 4] [--master local[2]] [--naive-versions 2] [--out FILE] [--profile]``

Measures, on the history of ``python -m ddflow.examples.spark_bfs`` (M edges at time 0, then
U single-edge swaps, swap ``i`` at time ``i + 1``):

* ddflow on Spark (``run_on_spark``): total wall time (supersteps and writing the output
  history to Parquet), and per superstep: seconds, summed Spark stage seconds (the rest is
  driver time: planning, Python, scheduling), task seconds, shuffle bytes, updates fed back;
* the embedded engine on the same input (the whole history pushed at once), and whether both
  output histories are equal;
* the naive Spark approach a user would write today: for a sample of graph versions, the live
  edges at that version (``groupBy(src, dst).sum(diff) > 0``) and BFS by repeated DataFrame
  joins (frontier x edges, anti-join with the visited nodes, ``localCheckpoint`` per level),
  then ``count`` per distance; the mean time per version scaled to all U + 1 versions;
* hot keys: ``count(by="dist")`` alone, on Spark, over the whole BFS output history (every
  time of a distance in one partition): its stage time and its largest task.

Prints a Markdown report (machine, load averages before and after, the command) and writes it
to ``--out`` (default ``benches/results/spark_bfs.md``; ``-`` for none). ``--profile`` adds
every Spark stage of every phase (name, seconds, tasks, task seconds, shuffle bytes).
Exit status 1 when the Spark and embedded outputs differ.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benches`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow as pa
import pyarrow.parquet as pq
from benches.machine import commit, cpu, load

import ddflow as dd
from ddflow.examples.spark_bfs import bfs_flow, history, run_embedded


def _stage_rows(spark: Any, stage_ids: tuple[int, ...]) -> list[dict[str, Any]]:
    """Spark's status-store data of the given stages."""
    sc = spark.sparkContext
    store = sc._jsc.sc().statusStore()
    jvm = sc._jvm
    empty = jvm.java.util.Collections.emptyList()
    quantiles = sc._gateway.new_array(jvm.double, 0)
    rows = []
    for s in stage_ids:
        try:
            d = store.stageAttempt(s, 0, False, empty, False, quantiles)._1()
        except Exception:
            continue
        first, done = d.firstTaskLaunchedTime(), d.completionTime()
        secs = (
            (done.get().getTime() - first.get().getTime()) / 1000
            if first.isDefined() and done.isDefined()
            else 0.0
        )
        rows.append(
            {
                "id": s,
                "name": str(d.name()),
                "seconds": secs,
                "tasks": int(d.numTasks()),
                "task_seconds": int(d.executorRunTime()) / 1000,
                "shuffle_read": int(d.shuffleReadBytes()),
                "shuffle_write": int(d.shuffleWriteBytes()),
            }
        )
    return rows


def _task_max(spark: Any, stage: int) -> tuple[float, int]:
    """The longest task of a stage (seconds) and its input rows (records read + shuffled)."""
    sc = spark.sparkContext
    store = sc._jsc.sc().statusStore()
    tasks = store.taskList(stage, 0, 10_000)
    best = (0.0, 0)
    it = tasks.iterator()
    while it.hasNext():
        t = it.next()
        m = t.taskMetrics()
        if not m.isDefined():
            continue
        m = m.get()
        secs = int(m.executorRunTime()) / 1000
        rows = int(m.shuffleReadMetrics().recordsRead()) + int(m.inputMetrics().recordsRead())
        if secs > best[0]:
            best = (secs, rows)
    return best


def naive_version(spark: Any, edges_df: Any, t: int) -> tuple[float, int]:
    """BFS distance counts of the graph at version ``t`` by DataFrame joins: seconds and the
    number of distances."""
    from pyspark.sql import functions as F

    start = time.perf_counter()
    live = (
        edges_df.where(F.col("time") <= t)
        .groupBy("src", "dst")
        .agg(F.sum("diff").alias("n"))
        .where(F.col("n") > 0)
        .select("src", "dst")
        .localCheckpoint(eager=True)
    )
    visited = spark.createDataFrame([(0, 0)], "node long, dist long").localCheckpoint(eager=True)
    frontier = visited
    d = 0
    while True:
        d += 1
        nxt = (
            frontier.join(live, frontier["node"] == live["src"])
            .select(F.col("dst").alias("node"))
            .distinct()
            .join(visited, "node", "left_anti")
            .select("node", F.lit(d).cast("long").alias("dist"))
            .localCheckpoint(eager=True)
        )
        if nxt.count() == 0:
            break
        visited = visited.unionByName(nxt).localCheckpoint(eager=True)
        frontier = nxt
    counts = visited.groupBy("dist").count().collect()
    return time.perf_counter() - start, len(counts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benches/spark_bfs.py")
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--edges", type=int, default=1_000_000)
    p.add_argument("--updates", type=int, default=100_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--naive-versions", type=int, default=2)
    p.add_argument("--out", default="benches/results/spark_bfs.md")
    p.add_argument("--profile", action="store_true")
    p.add_argument(
        "--errors",
        choices=["raise", "collect"],
        default="raise",
        help="run_on_spark's errors mode (collect: errors as data; their count is printed)",
    )
    args = p.parse_args(argv)
    command = "python benches/spark_bfs.py " + " ".join(argv if argv is not None else sys.argv[1:])
    load_before = load()

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ddflow.spark import run_on_spark, warm_up

    tmp = tempfile.mkdtemp(prefix="spark_bfs_")
    edges = history(args.nodes, args.edges, args.updates, args.seed)
    pq.write_table(edges, os.path.join(tmp, "edges.parquet"))
    pq.write_table(pa.table({"node": [0], "time": [0], "diff": [1]}), f"{tmp}/roots.parquet")

    spark = (
        SparkSession.builder.master(args.master)
        .appName("ddflow benches/spark_bfs")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    # The session is up, one trivial Python job has started the workers and one trivial
    # mapInArrow job the JVM's Arrow path (``warm_up``): a Spark user's session is warm too.
    # The warm-up's seconds are reported beside the figures.
    spark.range(4).rdd.map(lambda x: x).count()
    t_warm = warm_up(spark)
    edges_df = spark.read.parquet(f"{tmp}/edges.parquet")
    roots_df = spark.read.parquet(f"{tmp}/roots.parquet")

    # -- ddflow on Spark
    flow, edges_in, roots_in, counts = bfs_flow()
    lines: list[str] = []
    start = time.perf_counter()
    result = run_on_spark(
        spark,
        flow,
        {edges_in: edges_df, roots_in: roots_df},
        [counts],
        partitions=args.partitions,
        progress=lambda s: print(s, flush=True),
        errors=args.errors,
    )
    t_steps = time.perf_counter() - start
    result[counts].write.mode("overwrite").parquet(f"{tmp}/counts")
    if args.errors == "collect":
        print(f"error updates upstream of the counts: {result.errors(counts).count()}")
    total = time.perf_counter() - start
    steps = [s for s in result.supersteps if s.phase.startswith("superstep")]
    got = pq.read_table(f"{tmp}/counts")

    # -- embedded
    want, secs_e = run_embedded(edges)
    key = ["dist", "count", "time", "diff"]
    same = sorted(zip(*[got[k].to_pylist() for k in key], strict=True)) == sorted(
        zip(*[want[k].to_pylist() for k in key], strict=True)
    )

    # -- hot keys: count(by="dist") alone over the whole BFS output history
    flow_d = dd.Dataflow(log=False)
    e_in, e = flow_d.new_input({"src": "int64", "dst": "int64"}, name="edges")
    r_in, r = flow_d.new_input({"node": "int64"}, name="roots")
    dists = dd.algorithms.bfs(e, r)
    res_d = run_on_spark(spark, flow_d, {e_in: edges_df, r_in: roots_df}, [dists])
    res_d[dists].write.mode("overwrite").parquet(f"{tmp}/dists")
    dists_df = spark.read.parquet(f"{tmp}/dists")
    n_dists = dists_df.count()
    flow_c = dd.Dataflow(log=False)
    d_in, d = flow_c.new_input({"node": "int64", "dist": "int64"}, name="dists")
    hot = d.count(by="dist")
    sc = spark.sparkContext
    sc.setJobGroup("hot-keys", "count(by=dist)")
    h_start = time.perf_counter()
    res_c = run_on_spark(spark, flow_c, {d_in: dists_df}, [hot], partitions=args.partitions)
    res_c[hot].write.mode("overwrite").parquet(f"{tmp}/hot")
    h_secs = time.perf_counter() - h_start
    sc.setLocalProperty("spark.jobGroup.id", None)
    h_stages: set[int] = set()
    for j in sc.statusTracker().getJobIdsForGroup("hot-keys"):
        info = sc.statusTracker().getJobInfo(j)
        if info is not None:
            h_stages.update(info.stageIds)
    h_rows = _stage_rows(spark, tuple(sorted(h_stages)))
    reduce_stage = max(h_rows, key=lambda s: s["task_seconds"]) if h_rows else None
    task_max = _task_max(spark, reduce_stage["id"]) if reduce_stage else (0.0, 0)
    n_keys = spark.read.parquet(f"{tmp}/hot").select("dist").distinct().count()

    # -- naive Spark
    sample = [
        max(0, (k + 1) * args.updates // max(1, args.naive_versions))
        for k in range(args.naive_versions)
    ]
    naive = [naive_version(spark, edges_df, t) for t in sample]
    naive_mean = sum(s for s, _ in naive) / len(naive)
    versions = args.updates + 1
    naive_total = naive_mean * versions
    load_after = load()

    secs = [s.seconds for s in steps]
    lines += [
        f"## {args.nodes:,} nodes / {args.edges:,} edges / {args.updates:,} updates, "
        f"{args.master}, {args.partitions} partitions",
        "",
        f"`{command}` at commit {commit()}, {time.strftime('%Y-%m-%d %H:%M')}; "
        f"{os.cpu_count()} cores ({cpu()}), shared with other builds; load average "
        f"(1/5/15 min) {load_before} before, {load_after} after.",
        "",
        "| approach | time | ratio to embedded |",
        "| --- | --- | --- |",
        f"| embedded engine, whole history pushed at once | {secs_e:.2f} s | 1.0 |",
        f"| ddflow on Spark (supersteps {t_steps:.1f} s + output written) | {total:.1f} s | "
        f"{total / secs_e:.1f} |",
        f"| (session warm-up before timing: the first mapInArrow job, `warm_up`) | "
        f"{t_warm:.1f} s | |",
        f"| naive Spark: BFS by DataFrame joins per version, {naive_mean:.1f} s/version "
        f"(mean of versions {sample}) x {versions:,} versions | {naive_total / 86400:.1f} days "
        f"| {naive_total / secs_e:,.0f} |",
        "",
        f"ddflow on Spark vs naive Spark: {naive_total / total:,.0f}x faster. Outputs "
        f"{'equal' if same else 'DIFFER'} ({got.num_rows:,} output updates).",
        "",
        f"Supersteps: {len(steps)}, first {secs[0]:.2f} s, later mean "
        f"{sum(secs[1:]) / max(1, len(secs) - 1):.2f} s, max {max(secs[1:] or [0]):.2f} s.",
        "",
        "| superstep | s | stages s | driver s | task s | jobs | shuffle write B | fed back |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in result.supersteps:
        lines.append(
            f"| {s.phase} | {s.seconds:.2f} | {s.stage_seconds:.2f} | "
            f"{max(0.0, s.seconds - s.stage_seconds):.2f} | {s.task_seconds:.2f} | {s.jobs} | "
            f"{s.shuffle_write:,} | {s.rows_fed_back if s.rows_fed_back is not None else ''} |"
        )
    lines += [
        "",
        f'Hot keys: `count(by="dist")` alone over the whole BFS output history ({n_dists:,} '
        f"updates of (node, dist), {n_keys} distinct distances, so every time of a distance "
        f"in one partition): {h_secs:.2f} s in all; its reduce stage "
        + (
            f"{reduce_stage['seconds']:.2f} s ({reduce_stage['tasks']} tasks, "
            f"{reduce_stage['task_seconds']:.2f} task s), largest task {task_max[0]:.2f} s "
            f"over {task_max[1]:,} rows."
            if reduce_stage
            else "not found."
        ),
    ]
    if args.profile:
        lines += ["", "Stages per phase:", ""]
        lines += ["| phase | stage | name | s | tasks | task s | shuffle read B | write B |"]
        lines += ["| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for s in result.supersteps:
            for st in _stage_rows(spark, s.stage_ids):
                lines.append(
                    f"| {s.phase} | {st['id']} | {st['name'][:40]} | {st['seconds']:.2f} | "
                    f"{st['tasks']} | {st['task_seconds']:.2f} | {st['shuffle_read']:,} | "
                    f"{st['shuffle_write']:,} |"
                )
    text = "\n".join(lines) + "\n"
    print(text, flush=True)
    if args.out != "-":
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "a") as f:
            f.write("\n" + text)
    spark.stop()
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
