"""A TPC-H Q1-shaped plan on the Spark backend beside the embedded engine, from one run.

``python benches/spark_chained_joins.py [--rows 1000000] [--times 100] [--groups 4]
[--deletes 0.2] [--form chained|agg|both] [--partitions 2] [--master local[2]] [--out FILE]
[--explain] [--products]``

The input is a lineitem-like table (group key ``flag``, ``status`` with ``--groups`` groups;
``qty``, ``price``, ``disc``, ``tax``) with an update history: each row is inserted at a
random time in ``0..times-1`` and a ``--deletes`` share of them is deleted at a later time.
Two forms of Q1's eight aggregates per group:

* ``chained``: eight ``reduce`` nodes, one aggregate each (four sums, three means, a count),
  joined back together on the group key by seven chained joins. Every aggregate of a group
  changes at nearly every time, so each reduce output holds about ``2 * times`` updates per
  group, and a join of two such histories pairs every update of one side with every update of
  the other (their product at the later time);
* ``agg``: the modern form, ``group_by(...).agg(...)``: one reduce, no joins.

For each form: the embedded engine on the whole history at once, then ``run_on_spark`` on
the same input (Parquet), both timed in this process (the Spark session warm); checks that
the output histories are identical and prints both times and their ratio as a Markdown
table, appended to ``--out`` (``-`` for none). Exit status 1 when outputs differ.
``--explain`` prints how each node ran on Spark; ``--products`` adds, per chained join, the
updates a Spark equi-join emits with nothing consolidated and with each join's output
consolidated (counted from the embedded engine's histories). ``DDFLOW_SPARK_KEY_REGIONS=0``
runs the chain operator by operator (consolidated joins) instead of as one key-local region.
Results: ``benches/results/spark_chained_joins_2026-11-25.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benches`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from benches.machine import commit, load

import ddflow as dd
from ddflow import col

KEY = ("flag", "status")
VALUES = ("qty", "price", "disc", "tax")


def history(rows: int, times: int, groups: int, deletes: float, seed: int = 0) -> pa.Table:
    """The lineitem-like update history (see the module doc)."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, groups, rows)
    cols = {
        "flag": g // 2,
        "status": g % 2,
        "qty": rng.integers(1, 51, rows),
        "price": rng.integers(900, 100_000, rows),
        "disc": rng.integers(0, 11, rows),
        "tax": rng.integers(0, 9, rows),
    }
    born = rng.integers(0, times, rows)
    gone = rng.random(rows) < deletes
    gone &= born < times - 1
    died = (
        born[gone] + 1 + (rng.random(int(gone.sum())) * (times - 1 - born[gone])).astype(np.int64)
    )
    out = {k: np.concatenate([v, v[gone]]).astype(np.int64) for k, v in cols.items()}
    out["time"] = np.concatenate([born, died]).astype(np.int64)
    out["diff"] = np.concatenate([np.ones(rows, np.int64), -np.ones(int(gone.sum()), np.int64)])
    return pa.table(out)


def _chain(li: dd.Collection) -> tuple[list[dd.Collection], list[dd.Collection]]:
    """Q1's eight aggregates by separate reduces of ``li``, and the seven chained joins that
    put them back together on the group key (each join's output, in order)."""
    price, disc, tax = col("price"), col("disc"), col("tax")
    measures: dict[str, tuple[Any, Any]] = {
        "sum_qty": (col("qty"), dd.sum),
        "sum_base_price": (price, dd.sum),
        "sum_disc_price": (price * (100 - disc), dd.sum),
        "sum_charge": (price * (100 - disc) * (100 + tax), dd.sum),
        "avg_qty": (col("qty"), dd.mean),
        "avg_price": (price, dd.mean),
        "avg_disc": (disc, dd.mean),
    }
    parts = [
        li.select(*KEY, **{name: e}).reduce(list(KEY), fn(name))
        for name, (e, fn) in measures.items()
    ]
    parts.append(li.select(*KEY).count(by=list(KEY)).rename(count="count_order"))
    joins = [parts[0].join(parts[1], on=list(KEY))]
    for p in parts[2:]:
        joins.append(joins[-1].join(p, on=list(KEY)))
    return parts, joins


def build(form: str) -> tuple[dd.Dataflow, dd.InputSession, dd.Collection]:
    """The Q1-shaped dataflow in ``form`` (``chained`` or ``agg``)."""
    flow = dd.Dataflow(log=False)
    li_in, li = flow.new_input({c: "int64" for c in (*KEY, *VALUES)})
    if form == "agg":
        price, disc, tax = col("price"), col("disc"), col("tax")
        out = li.group_by(*KEY).agg(
            sum_qty=dd.sum("qty"),
            sum_base_price=dd.sum(price),
            sum_disc_price=dd.sum(price * (100 - disc)),
            sum_charge=dd.sum(price * (100 - disc) * (100 + tax)),
            avg_qty=dd.mean("qty"),
            avg_price=dd.mean(price),
            avg_disc=dd.mean(disc),
            count_order=dd.count(),
        )
        return flow, li_in, out
    return flow, li_in, _chain(li)[1][-1]


def join_products(hist: pa.Table) -> list[tuple[int, int, int, int]]:
    """Per chained join: the updates a Spark equi-join emits when nothing is consolidated
    (every join pairs the full products of the joins before it), when each join's output is
    consolidated (it pairs the previous join's consolidated output with the next reduce's),
    and the consolidated output; plus the join's input updates. From the embedded engine's
    histories of every reduce and join, per group: a key's pairs are the product of its
    update counts on the two sides."""
    flow = dd.Dataflow(log=False)
    li_in, li = flow.new_input({c: "int64" for c in (*KEY, *VALUES)})
    parts, joins = _chain(li)
    part_caps = [p.capture() for p in parts]
    join_caps = [j.capture() for j in joins]
    li_in.update_batch(
        {c: hist[c].to_numpy() for c in (*KEY, *VALUES)},
        times=hist["time"].to_numpy(),
        diffs=hist["diff"].to_numpy(),
    )
    li_in.close()
    flow.run()

    def per_group(cap: Any) -> dict[tuple[int, int], int]:
        counts: dict[tuple[int, int], int] = {}
        for r in cap.updates().select(list(KEY)).to_pylist():
            g = (r["flag"], r["status"])
            counts[g] = counts.get(g, 0) + 1
        return counts

    u = [per_group(c) for c in part_caps]
    out = [per_group(c) for c in join_caps]
    rows = []
    raw = dict(u[0])
    prev = u[0]
    for j in range(len(joins)):
        nxt = u[j + 1]
        raw = {g: raw[g] * nxt.get(g, 0) for g in raw}
        consolidated = sum(prev.get(g, 0) * nxt.get(g, 0) for g in nxt)
        inputs = sum(prev.values()) + sum(nxt.values())
        rows.append((inputs, sum(raw.values()), consolidated, sum(out[j].values())))
        prev = out[j]
    return rows


def run_embedded(form: str, hist: pa.Table) -> tuple[list[tuple[Any, ...]], float]:
    """The output history on the embedded engine, and the seconds from the first update to
    the read output."""
    flow, li_in, out = build(form)
    cap = out.capture()
    start = time.perf_counter()
    li_in.update_batch(
        {c: hist[c].to_numpy() for c in (*KEY, *VALUES)},
        times=hist["time"].to_numpy(),
        diffs=hist["diff"].to_numpy(),
    )
    li_in.close()
    flow.run()
    rows = sorted(tuple(r.values()) for r in cap.updates().to_pylist())
    return rows, time.perf_counter() - start


def run_spark(spark: Any, form: str, path: str, partitions: int) -> tuple[list[Any], float, str]:
    """The output history through ``run_on_spark`` (input read from Parquet), the seconds
    from the call to the collected output, and ``explain()``."""
    from ddflow.spark import run_on_spark

    flow, li_in, out = build(form)
    start = time.perf_counter()
    df = spark.read.parquet(path)
    result = run_on_spark(spark, flow, {li_in: df}, [out], partitions=partitions)
    rows = sorted(tuple(r) for r in result[out].collect())
    return rows, time.perf_counter() - start, result.explain()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benches/spark_chained_joins.py")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--times", type=int, default=100)
    p.add_argument("--groups", type=int, default=4)
    p.add_argument("--deletes", type=float, default=0.2)
    p.add_argument("--form", choices=("chained", "agg", "both"), default="both")
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--out", default="-")
    p.add_argument("--explain", action="store_true", help="print how each node ran on Spark")
    p.add_argument(
        "--products",
        action="store_true",
        help="also count the updates each chained join emits with and without consolidation",
    )
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from ddflow.spark import warm_up

    load_before = load()
    hist = history(args.rows, args.times, args.groups, args.deletes)
    spark = (
        SparkSession.builder.master(args.master)
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    warm = warm_up(spark)
    forms = ("chained", "agg") if args.form == "both" else (args.form,)
    lines = [
        f"`python benches/spark_chained_joins.py {' '.join(argv or sys.argv[1:])}`".replace(
            " `", "`"
        ),
        "",
        f"commit {commit()}, {os.cpu_count()} cores ({platform.machine()}), "
        f"{args.master}, {args.partitions} partitions, pyspark {spark.version}; "
        f"{hist.num_rows:,} input updates ({args.rows:,} rows, {args.groups} groups, "
        f"{args.times} times, {args.deletes:.0%} deleted later); warm-up {warm:.1f} s "
        f"(kept out)",
        "",
        "| form | embedded | ddflow on Spark | Spark / embedded | output updates | equal |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    same_all = True
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lineitem.parquet")
        pq.write_table(hist, path)
        for form in forms:
            want, secs_e = run_embedded(form, hist)
            got, secs_s, how = run_spark(spark, form, path, args.partitions)
            same = got == [tuple(r) for r in want]
            same_all &= same
            lines.append(
                f"| {form} | {secs_e:.2f} s | {secs_s:.2f} s | {secs_s / secs_e:.1f}x | "
                f"{len(got):,} | {'yes' if same else 'NO'} |"
            )
            print(lines[-1], flush=True)
            if args.explain:
                print(how, flush=True)
    spark.stop()
    if args.products:
        lines += [
            "",
            "| join | input updates | emitted, nothing consolidated | emitted, each join's "
            "output consolidated | output (consolidated) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for j, (ins, raw, cons, outs) in enumerate(join_products(hist)):
            lines.append(f"| {j + 1} | {ins:,} | {raw:,} | {cons:,} | {outs:,} |")
    lines += ["", f"load average before {load_before}, after {load()}"]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out != "-":
        with open(args.out, "a") as f:
            f.write(report + "\n")
    return 0 if same_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
