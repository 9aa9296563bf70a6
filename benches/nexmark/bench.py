"""Nexmark q0-q8 on ddflow: events/s per query on 1 and 2 workers, p50/p99 latency per
batch, peak RSS; writes a markdown table with DBSP's figures beside it as context.

``python -m benches.nexmark.bench --events 1000000`` (or ``python benches/nexmark/bench.py``)
first writes the events with ``rust/nexmark-gen`` (the ``nexmark`` crate; built with
``cargo build --release -p nexmark-gen`` unless ``--generator python`` picks the numpy port)
as Arrow IPC files in ``benches/.data/nexmark-GENERATOR-EVENTS/`` (kept for later runs),
then runs each query and worker count in its own child process (so peak RSS is the query's
own):

* the child memory-maps the Arrow files, keeps the columns the query reads, cuts them into
  batches of ``--batch`` events (default 10,000, i.e. 100 s of event time at 10 ms per
  event) and builds one dataflow: the query through ``dd.sql`` and a probe on its result
  (``Dataflow(log=False)``);
* batch ``i`` is fed at logical time ``i`` (``update_batch`` of Arrow slices, one call per
  table) and run to completion (``run_until(i + 1)``): a batch's latency is the wall time
  from the start of feeding it to the probe passing it, from "arrival" to "output";
* events/s is all events of the stream (persons, auctions and bids, as Nexmark counts them,
  whichever tables the query reads) over the sum of the batches' latencies;
* peak RSS is the child's ``VmHWM``, including the Python runtime and the pages of the
  memory-mapped events it has read; ``base`` is its RSS after loading the events, before
  the dataflow is built. The anonymous RSS (``RssAnon``, sampled every 10 batches and at
  the end) leaves the mapped files out: the engine's state, the string interner, Python.

``--check`` then runs the query again, untimed, with its result captured
(``keep="state"``), and compares that with DuckDB's answer over all the events.
``--profile`` turns the operator log on and prints the operators that took the most time.
The table goes to ``benches/results/nexmark.md`` (``--out``) with the machine, load
average, commit and command.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benches.nexmark`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benches import machine
from benches.nexmark import feed, generate
from benches.nexmark.queries import QUERIES, TABLES_READ

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benches" / "results"
DATA = ROOT / "benches" / ".data"

DBSP = {
    "q0": "~1.1-1.8M (alone, fed batches: 2.7-3.2M)",
    "q1": "~1.1-1.8M",
    "q2": "~1.1-1.8M (alone, fed batches: 2.7-3.2M)",
    "q3": "~1.1-1.8M (alone, fed batches: 2.7-3.2M)",
    "q4": "~1.1M",
    "q5": "~1.1-1.8M",
    "q6": "~1.1M",
    "q7": "~1.3M",
    "q8": "~1.1-1.8M",
}
"""DBSP's figures from the issue (10M events, 1 worker, generator in the same process)."""


def _status(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes (``VmHWM``, ``VmRSS``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def _columns(query: str) -> dict[str, list[str]]:
    """The columns of each table the query reads (all of the schema's: ``dd.sql`` prunes
    unread columns itself, but the input must have the schema's columns)."""
    return {t: list(generate.SCHEMAS[t]) for t in TABLES_READ[query]}


def ensure_events(events: int, generator: str) -> Path:
    """The directory holding the events, written first if missing."""
    out = DATA / f"nexmark-{generator}-{events}"
    if all((out / f"{t}.arrow").exists() for t in generate.SCHEMAS):
        return out
    start = time.perf_counter()
    if generator == "rust":
        cargo = shutil.which("cargo")
        if cargo is None:
            raise SystemExit("nexmark: no cargo; use --generator python")
        subprocess.run(
            [cargo, "build", "--release", "-q", "-p", "nexmark-gen"], cwd=ROOT, check=True
        )
        target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
        subprocess.run([str(target / "release" / "nexmark-gen"), str(events), str(out)], check=True)
    else:
        tables = generate.generate(events)
        generate.write(tables, out)
    print(f"events written in {time.perf_counter() - start:.1f} s -> {out}", file=sys.stderr)
    return out


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    """One query on one worker count, in this process."""
    import duckdb
    from benches.nexmark import oracle

    import ddflow as dd

    tables = generate.load(Path(args.data), _columns(args.query))
    for table in tables.values():  # touch the mapped pages: reading them is not the query's
        for column in table.columns:
            column.nbytes  # noqa: B018
    parts = feed.batches(tables, args.events, args.batch)
    base, base_anon = _status("VmRSS"), _status("RssAnon")
    flow = dd.Dataflow(workers=args.workers, log=args.profile)
    sessions, results = feed.build(flow, [args.query])
    result = results[args.query]
    probe = result.probe()
    latencies: list[float] = []
    anon = _status("RssAnon")
    cpu0 = time.process_time()
    for i, part in enumerate(parts):
        start = time.perf_counter()
        feed.feed(sessions, part, i)
        flow.run_until(i + 1)
        latencies.append(time.perf_counter() - start)
        assert probe.done(i)
        if i % 10 == 9:
            anon = max(anon, _status("RssAnon"))
    cpu = time.process_time() - cpu0
    anon = max(anon, _status("RssAnon"))
    total = sum(latencies)
    out: dict[str, Any] = {
        "query": args.query,
        "workers": args.workers,
        "events": args.events,
        "batches": len(parts),
        "seconds": total,
        "cpu": cpu,
        "events_per_s": args.events / total,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * sorted(latencies)[max(0, int(len(latencies) * 0.99 + 0.5) - 1)],
        "max_ms": 1000 * max(latencies),
        "peak_rss": _status("VmHWM"),
        "base_rss": base,
        "peak_anon": anon,
        "base_anon": base_anon,
    }
    if args.profile:
        ops = sorted(flow.metrics().operators, key=lambda m: -(m.seconds or 0.0))[:8]
        out["profile"] = [
            (m.node, m.op, m.label.split("@")[0][:60], round(m.seconds or 0.0, 3), m.records_out)
            for m in ops
        ]
    if args.check:  # a second, untimed run that keeps the result
        del flow, sessions, results, result, probe
        flow = dd.Dataflow(workers=args.workers, log=False)
        sessions, results = feed.build(flow, [args.query])
        capture = results[args.query].capture(keep="state")
        for i, part in enumerate(parts):
            feed.feed(sessions, part, i)
        flow.run_until(len(parts))
        con = duckdb.connect()
        oracle.load_tables(con, tables)
        got = oracle.ddflow_answer(capture.state())
        want = oracle.duckdb_answer(con, QUERIES[args.query])
        out["check"] = oracle.compare(args.query, "at the end", got, want) or "equal"
    return out


def _mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


def write_table(runs: list[dict[str, Any]], args: argparse.Namespace, load: str) -> Path:
    """The markdown results file."""
    lines = [
        f"# Nexmark on ddflow: {', '.join(dict.fromkeys(r['query'] for r in runs))}",
        "",
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, commit {machine.commit()}, "
        f"{machine.cpu()} ({os.cpu_count()} cores, shared with other work), "
        f"Python {platform.python_version()}; load average before / after: {load} / "
        f"{machine.load()}.",
        "",
        "```bash",
        "python -m benches.nexmark.bench " + " ".join(sys.argv[1:]),
        "```",
        "",
        f"{args.events:,} events ({args.generator} generator, 10 ms of event time each) in "
        f"batches of {args.batch:,} events at increasing logical times, each run to "
        "completion; events/s counts every event of the stream over the wall time of the "
        "batches, events per CPU-s over the process's CPU time in them (all threads: on a "
        "loaded machine the wall time includes waiting for a core). Latency: from feeding a "
        "batch to its output (the probe passing it). Peak RSS: the child's VmHWM, with the "
        "pages of the memory-mapped events it read (base: after loading the events, before "
        "the dataflow); anon RSS leaves the mapped files out.",
        "",
        "| query | workers | events/s | events per CPU-s | p50 / p99 / max latency per batch "
        "| CPU s | peak RSS (base) | anon RSS, peak (base) | check | DBSP, events/s (context) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['query']} | {r['workers']} | failed: {r['error']} | | | | | | | |")
            continue
        lines.append(
            f"| {r['query']} | {r['workers']} | {r['events_per_s']:,.0f} | "
            f"{r['events'] / r['cpu']:,.0f} | "
            f"{r['p50_ms']:.1f} / {r['p99_ms']:.1f} / {r['max_ms']:.1f} ms | {r['cpu']:.1f} | "
            f"{_mb(r['peak_rss'])} ({_mb(r['base_rss'])}) | "
            f"{_mb(r['peak_anon'])} ({_mb(r['base_anon'])}) | {r.get('check', '-')} | "
            f"{DBSP.get(r['query'], '') if r['workers'] == 1 else ''} |"
        )
    lines += [
        "",
        "DBSP (Feldera), from the issue, as context and not as a ratio: on this kind of "
        "machine with Feldera's own flags (10M events, 1 worker, generator in the same "
        "process) q0-q8 ran at 1.1-1.8M events/s (q4 and q6 ~1.1M, q7 1.3M), peak RSS 90 MB "
        "to 1 GB; fed pre-generated batches, DBSP alone ran q0, q2 and q3 at 2.7-3.2M "
        "events/s.",
    ]
    profiles = [r for r in runs if "profile" in r]
    if profiles:
        lines += ["", "## Where the time goes (operator log, `--profile`)", ""]
        for r in profiles:
            lines.append(
                f"* {r['query']}, {r['workers']} worker(s): "
                + "; ".join(
                    f"#{n} {op} {label} {s} s, {out} out" for n, op, label, s, out in r["profile"]
                )
            )
    out = Path(args.out)
    out.write_text("\n".join(lines) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=10_000, help="events per batch")
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--generator", choices=["rust", "python"], default="rust")
    parser.add_argument("--check", action="store_true", help="compare with DuckDB at the end")
    parser.add_argument("--profile", action="store_true", help="operator log: top operators")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per child")
    parser.add_argument("--out", default=str(RESULTS / "nexmark.md"))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--query", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.workers = int(args.workers)
        print("RESULT " + json.dumps(run_child(args)), flush=True)
        return
    load = machine.load()
    data = ensure_events(args.events, args.generator)
    runs: list[dict[str, Any]] = []
    for query in args.queries.split(","):
        for workers in [int(w) for w in args.workers.split(",")]:
            cmd = [
                sys.executable,
                "-m",
                "benches.nexmark.bench",
                "--child",
                "--query",
                query,
                "--workers",
                str(workers),
                "--events",
                str(args.events),
                "--batch",
                str(args.batch),
                "--data",
                str(data),
                "--generator",
                args.generator,
            ]
            cmd += ["--check"] if args.check else []
            cmd += ["--profile"] if args.profile else []
            try:
                proc = subprocess.run(
                    cmd, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout
                )
            except subprocess.TimeoutExpired:
                runs.append({"query": query, "workers": workers, "error": "timeout"})
                continue
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode != 0 or not lines:
                error = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                runs.append({"query": query, "workers": workers, "error": error})
            else:
                runs.append(json.loads(lines[-1][len("RESULT ") :]))
            r = runs[-1]
            print(
                f"{query} w{workers}: "
                + (
                    r.get("error")
                    or f"{r['events_per_s']:,.0f} events/s, p50 {r['p50_ms']:.1f} ms, "
                    f"p99 {r['p99_ms']:.1f} ms, peak {_mb(r['peak_rss'])}, "
                    f"check {r.get('check', '-')}"
                ),
                flush=True,
            )
    print(f"-> {write_table(runs, args, load)}")


if __name__ == "__main__":
    main()
