"""TPC-H on ddflow beside DuckDB: per query, the initial load, the median refresh batch, and
DuckDB's full re-run on the same data; writes a markdown table.

``python -m benches.tpch.bench --sf 0.1 --batches 10`` (or ``python benches/tpch/bench.py``)
runs each query in its own child process (so peak RSS is the query's own): the child reads
the tables in their TPC-H types (``date32``, ``decimal128(15, 2)``) and derives the refresh
pairs (not timed), then

* ddflow: one dataflow with the query, the tables it reads fed at time 0 and run to
  completion (load), then each refresh pair fed at its own time and run (per batch);
* DuckDB: the typed tables copied into DuckDB, the query run from scratch after the load and
  after each refresh pair is applied (DELETE / INSERT, not timed);
* a check that both results agree after every batch.

Peak RSS is the child's ``VmHWM`` read before DuckDB starts; it includes the Python runtime
and the Arrow tables the child holds (``base``: the RSS before the dataflow is built).
The table goes to ``benches/results/tpch_sf{SF}.md`` with machine, date, commit and command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benches.tpch`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import duckdb
import pyarrow as pa
from benches.charts import write_chart
from benches.tpch import generate, oracle, refresh
from benches.tpch.queries import QUERIES
from benches.tpch.workload import Workload

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benches" / "results"


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes (``VmHWM``, ``VmRSS``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def run_child(
    query: str,
    sf: float,
    batches: int,
    seed: int,
    workers: int,
    threads: int,
    orders: int | None = None,
    sql: bool = False,
) -> dict[str, Any]:
    """Measures one query (see the module docstring); returns its readings. ``sql``: the
    query's plan built by ``dd.sql`` from its SQL text."""
    tables = generate.load_tables(sf)
    pairs = refresh.make_refreshes(tables, sf, batches, seed=seed, per_function=orders)
    base = _status("VmRSS")
    start = time.perf_counter()
    schemas = {n: t.schema for n, t in tables.items()}
    workload = Workload([query], sf, schemas, workers, sql=sql)
    workload.load(tables)
    load = time.perf_counter() - start
    per_batch, per_batch_cpu = [], []
    for batch in pairs:
        start, cpu = time.perf_counter(), time.process_time()
        workload.refresh(batch)
        per_batch.append(time.perf_counter() - start)
        per_batch_cpu.append(time.process_time() - cpu)
    peak = _status("VmHWM")
    con = oracle.connect(tables, threads=threads)
    start = time.perf_counter()
    want = oracle.expected(query, con, sf)
    duck_load = time.perf_counter() - start
    duck, duck_cpu = [], []

    # Outside the timings: ddflow's result at each time against DuckDB's, the load's first.
    def result(time: int) -> pa.Table:
        got = workload.result(query, time)
        return oracle.divided(query, got) if sql else got

    difference = oracle.difference(want, result(0))
    for pair in pairs:
        oracle.apply_refresh(con, pair)
        start, cpu = time.perf_counter(), time.process_time()
        want = oracle.expected(query, con, sf)
        duck.append(time.perf_counter() - start)
        duck_cpu.append(time.process_time() - cpu)
        difference = difference or oracle.difference(want, result(pair.index))
    return {
        "query": query,
        "load_s": load,
        "batch_s": per_batch,
        "batch_cpu_s": per_batch_cpu,
        "duckdb_first_s": duck_load,
        "duckdb_s": duck,
        "duckdb_cpu_s": duck_cpu,
        "rows": want.num_rows,
        "agree": difference is None,
        "base_rss": base,
        "peak_rss": peak,
        "tables": list(workload.tables),
    }


def run_paired(
    query: str,
    sf: float,
    batches: int,
    seed: int,
    workers: int,
    threads: int,
    orders: int | None = None,
) -> dict[str, Any]:
    """Measures the hand-written plan and ``dd.sql``'s plan of one query side by side in
    one process: two dataflows over the same tables, each refresh pair fed to both, the
    first of the two alternating from batch to batch, each one's CPU time taken on its own.
    Both then see the same machine at the same moments, so the ratio of their medians is
    not moved by other work the way two children's, minutes apart, are. DuckDB re-runs once
    per batch (their timings go to both)."""
    tables = generate.load_tables(sf)
    pairs = refresh.make_refreshes(tables, sf, batches, seed=seed, per_function=orders)
    base = _status("VmRSS")
    schemas = {n: t.schema for n, t in tables.items()}
    sides = {"hand": False, "sql": True}
    work: dict[str, Workload] = {}
    out: dict[str, dict[str, Any]] = {}
    for side, sql in sides.items():
        start = time.perf_counter()
        work[side] = Workload([query], sf, schemas, workers, sql=sql)
        work[side].load(tables)
        out[side] = {"query": query, "load_s": time.perf_counter() - start, "batch_s": [],
                     "batch_cpu_s": [], "tables": list(work[side].tables)}  # fmt: skip
    order = list(sides)
    for i, pair in enumerate(pairs):
        for side in order if i % 2 == 0 else order[::-1]:
            start, cpu = time.perf_counter(), time.process_time()
            work[side].refresh(pair)
            out[side]["batch_s"].append(time.perf_counter() - start)
            out[side]["batch_cpu_s"].append(time.process_time() - cpu)
    peak = _status("VmHWM")
    con = oracle.connect(tables, threads=threads)
    start = time.perf_counter()
    want = oracle.expected(query, con, sf)
    duck_load = time.perf_counter() - start

    def result(side: str, time: int) -> pa.Table:
        got = work[side].result(query, time)
        return oracle.divided(query, got) if sides[side] else got

    differences = {side: oracle.difference(want, result(side, 0)) for side in sides}
    duck, duck_cpu = [], []
    for pair in pairs:
        oracle.apply_refresh(con, pair)
        start, cpu = time.perf_counter(), time.process_time()
        want = oracle.expected(query, con, sf)
        duck.append(time.perf_counter() - start)
        duck_cpu.append(time.process_time() - cpu)
        for side in sides:
            differences[side] = differences[side] or oracle.difference(
                want, result(side, pair.index)
            )
    for side in sides:
        out[side] |= {
            "duckdb_first_s": duck_load, "duckdb_s": duck, "duckdb_cpu_s": duck_cpu,
            "rows": want.num_rows, "agree": differences[side] is None, "base_rss": base,
            "peak_rss": peak,
        }  # fmt: skip
    return out


def _machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (
        f"{platform.machine()}, {os.cpu_count()} cores ({model}), {mem:.0f} GiB, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


def _commit() -> str:
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head


def _ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:,.1f}" if ms >= 10 else f"{ms:.2g}"


def _medians(r: dict[str, Any]) -> tuple[float, float, float, float]:
    """ddflow's per-batch and DuckDB's re-run medians: wall, then CPU time."""
    return (
        statistics.median(r["batch_s"]),
        statistics.median(r["duckdb_s"]),
        statistics.median(r["batch_cpu_s"]),
        statistics.median(r["duckdb_cpu_s"]),
    )


def _table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| query | tables | ddflow load (s) | ddflow per batch, median (ms): wall / CPU | "
        "DuckDB re-run, median (ms): wall / CPU | ddflow / DuckDB: wall / CPU | "
        "base / peak RSS (MB) | rows | agree |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['query']} | | | | | | | | failed: {r['error']} |")
            continue
        batch, duck, batch_cpu, duck_cpu = _medians(r)
        lines.append(
            f"| {r['query'].upper()} | {', '.join(r['tables'])} | {r['load_s']:.2f} | "
            f"{_ms(batch)} / {_ms(batch_cpu)} | {_ms(duck)} / {_ms(duck_cpu)} | "
            f"{batch / duck:.2g}x / {batch_cpu / max(duck_cpu, 1e-9):.2g}x | "
            f"{r['base_rss'] / 2**20:,.0f} / {r['peak_rss'] / 2**20:,.0f} | {r['rows']:,} | "
            f"{'yes' if r['agree'] else 'NO'} |"
        )
    return lines


def _geomean(ratios: list[float]) -> str:
    return f"{statistics.geometric_mean(ratios):.3g}x" if ratios else "n/a"


def _summary(rows: list[dict[str, Any]]) -> list[str]:
    """The geometric means of the per-batch ratios (wall, CPU), over all queries measured
    and over those that read a table the refreshes change; which queries read none."""
    done = [r for r in rows if "error" not in r]
    wall = {r["query"]: _medians(r)[0] / _medians(r)[1] for r in done}
    cpu = {r["query"]: _medians(r)[2] / max(_medians(r)[3], 1e-9) for r in done}
    touched = [r["query"] for r in done if set(r["tables"]) & set(refresh.CHANGED)]
    untouched = [r["query"].upper() for r in done if r["query"] not in touched]
    return [
        f"Geometric mean of ddflow per batch / DuckDB re-run over the {len(done)} queries "
        f"measured: **{_geomean(list(wall.values()))} wall, {_geomean(list(cpu.values()))} "
        f"CPU**; over the {len(touched)} that read orders or lineitem (the refreshed tables): "
        f"**{_geomean([wall[q] for q in touched])} wall, {_geomean([cpu[q] for q in touched])}"
        f" CPU**. {', '.join(untouched) or 'No query'} read neither (a batch changes nothing "
        "there).",
    ]


def _measure(query: str, args: argparse.Namespace, sql: bool) -> dict[str, Any]:
    """One query measured in its own child process (its readings, or an ``error``; with
    ``sql``, the hand-written and SQL plans' readings under ``hand`` and ``sql``)."""
    child = [
        sys.executable, "-m", "benches.tpch.bench", "--child", query, "--sf", str(args.sf),
        "--batches", str(args.batches), "--seed", str(args.seed), "--workers",
        str(args.workers), "--duckdb-threads", str(args.duckdb_threads),
    ]  # fmt: skip
    if args.refresh_orders is not None:
        child += ["--refresh-orders", str(args.refresh_orders)]
    if sql:
        child.append("--child-paired")
    try:
        done = subprocess.run(child, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"query": query, "error": f"timeout after {args.timeout:.0f} s"}
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    if done.returncode or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"query": query, "error": f"exit {done.returncode}: {tail[:200]}"}
    result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    return result


def _sql_ratios(hand: list[dict[str, Any]], sql: list[dict[str, Any]]) -> dict[str, float]:
    """Per query measured both ways: SQL plan's median batch CPU over the hand-written's."""
    by_query = {r["query"]: r for r in hand if "error" not in r}
    out = {}
    for r in sql:
        h = by_query.get(r["query"])
        if h is not None and "error" not in r:
            out[r["query"]] = _medians(r)[2] / max(_medians(h)[2], 1e-9)
    return out


def _sql_table(hand: list[dict[str, Any]], sql: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| query | hand-written per batch, median CPU (ms) | SQL per batch, median CPU (ms) "
        "| SQL / hand-written | SQL load (s) | agree |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    ratios = _sql_ratios(hand, sql)
    by_query = {r["query"]: r for r in hand}
    for r in sql:
        h = by_query.get(r["query"], {})
        if "error" in r or "error" in h:
            lines.append(f"| {r['query']} | | | | | failed: {r.get('error') or h.get('error')} |")
            continue
        lines.append(
            f"| {r['query'].upper()} | {_ms(_medians(h)[2])} | {_ms(_medians(r)[2])} | "
            f"{ratios[r['query']]:.2f}x | {r['load_s']:.2f} | "
            f"{'yes' if r['agree'] and h['agree'] else 'NO'} |"
        )
    return lines


def _sql_summary(hand: list[dict[str, Any]], sql: list[dict[str, Any]]) -> list[str]:
    ratios = _sql_ratios(hand, sql)
    touched = {r["query"] for r in sql if set(r.get("tables", ())) & set(refresh.CHANGED)}
    moved = [v for q, v in ratios.items() if q in touched]
    worst = max(((v, q) for q, v in ratios.items() if q in touched), default=None)
    return [
        f"SQL plan / hand-written plan per refresh batch (CPU): geometric mean "
        f"**{_geomean(moved)}** over the {len(moved)} queries a refresh reaches"
        + (f", largest {worst[0]:.2f}x ({worst[1].upper()})." if worst else ".")
    ]


def main() -> None:
    """Runs the benchmark (or, with ``--child``, one query in this process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sf", type=float, default=0.1, help="scale factor (default 0.1)")
    parser.add_argument("--batches", type=int, default=10, help="refresh pairs (default 10)")
    parser.add_argument("--queries", default=",".join(QUERIES), help="q1,q3,... (default all)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the refresh pairs")
    parser.add_argument("--workers", type=int, default=1, help="ddflow workers (default 1)")
    parser.add_argument("--duckdb-threads", type=int, default=1, help="DuckDB threads")
    parser.add_argument(
        "--refresh-orders",
        type=int,
        default=None,
        help="orders each refresh function touches (default SF * 1500, the specification's)",
    )
    parser.add_argument("--timeout", type=float, default=1200, help="seconds per query")
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw readings")
    parser.add_argument(
        "--sql",
        action="store_true",
        help="run every query twice, hand-written plan and dd.sql's plan of its SQL text, and "
        "compare their refresh batches (default output tpch_sf{SF}_sql.md)",
    )
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-sql", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--child-paired", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child and args.child_paired:
        paired = run_paired(
            args.child,
            args.sf,
            args.batches,
            args.seed,
            args.workers,
            args.duckdb_threads,
            args.refresh_orders,
        )
        print("RESULT " + json.dumps(paired))
        return
    if args.child:
        result = run_child(
            args.child,
            args.sf,
            args.batches,
            args.seed,
            args.workers,
            args.duckdb_threads,
            args.refresh_orders,
            args.child_sql,
        )
        print("RESULT " + json.dumps(result))
        return
    command = "python -m benches.tpch.bench " + " ".join(sys.argv[1:])
    generate.ensure_data(args.sf)
    rows: list[dict[str, Any]] = []
    started = datetime.datetime.now()
    load_avg = os.getloadavg()
    sql_rows: list[dict[str, Any]] = []
    for query in args.queries.split(","):
        if args.sql:
            both = _measure(query, args, True)
            rows.append(both.get("hand", both))
            sql_rows.append(both.get("sql", both))
        else:
            rows.append(_measure(query, args, False))
        print("\n".join(_table(rows)[-1:]), flush=True)
        if args.sql:
            print("\n".join(_sql_table(rows, sql_rows)[-1:]), flush=True)
    sf = generate.sf_text(args.sf)
    text = [
        f"# TPC-H at SF {sf}: ddflow refresh batches beside DuckDB re-runs",
        "",
        f"* command: `{command}`",
        f"* machine: {_machine()}",
        f"* date: {started:%Y-%m-%d %H:%M}; load average at start "
        f"{load_avg[0]:.2f} / {load_avg[1]:.2f} / {load_avg[2]:.2f}",
        f"* commit: {_commit()}; DuckDB {duckdb.__version__} on {args.duckdb_threads} "
        f"thread(s), ddflow on {args.workers} worker(s)",
        f"* {args.batches} refresh pairs, each RF1 + RF2 of "
        f"{args.refresh_orders or refresh.orders_per_refresh(args.sf):,} orders with their "
        "lineitems, at its own time",
        "",
        "ddflow load: the tables the query reads fed at time 0 and run to completion. Per "
        "batch: one refresh pair fed and run to completion. DuckDB re-run: the query from "
        "scratch on the updated tables. Ratio: ddflow per batch over DuckDB re-run (below 1: "
        "the incremental update is faster than recomputing). Wall is elapsed time, CPU the "
        "process's CPU time over the same span (less disturbed by other work on the shared "
        "machine). RSS: the child process before "
        "the dataflow is built (Python, Arrow tables) and its peak before DuckDB starts. "
        "Agree: both results equal after the load and after every batch.",
        "",
        *_table(rows),
        "",
        *_summary(rows),
        "",
    ]
    if args.sql:
        text += [
            "## The same queries as SQL (`dd.sql`) beside the hand-written plans",
            "",
            "Each query's SQL text (`benches/tpch/sql.py`, DuckDB's dialect) built by "
            "`dd.sql`, measured in the same child as the hand-written plan above: two "
            "dataflows over the same tables, every refresh pair fed to both, which one goes "
            "first alternating from batch to batch, each one's CPU time taken on its own (the "
            "two see the same machine at the same moments). Ratio: the SQL plan's median "
            "per-batch CPU over the hand-written plan's, over the same "
            f"{args.batches} batches. The RSS above is that child's, holding both dataflows.",
            "",
            *_sql_table(rows, sql_rows),
            "",
            *_sql_summary(rows, sql_rows),
            "",
        ]
    out = args.out or RESULTS / (f"tpch_sf{sf}_sql.md" if args.sql else f"tpch_sf{sf}.md")
    out.write_text("\n".join(text))
    write_chart(out)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
