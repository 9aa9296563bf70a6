"""The main job against its target table: updates/s, load time and peak memory.

Runs ``python -m ddflow.examples.bfs NODES EDGES BATCH ROUNDS --workers W`` (high
resolution: every update at its own time) once per row, each in its own process, so that peak
memory (the child's ``ru_maxrss`` from ``wait4``) and CPU time are per run. Each row is
compared with differential-dataflow 0.26 reference numbers (``Row.dd_*``, same workload:
G(n, m), node 0 as root, 100,000 sliding-window updates each at its own time, each batch run
to completion).

Rows (``--rows`` selects by name, comma-separated; default all, in this order)::

    1k-b1000-w1  1k-b1000-w2  1k-b100-w1  1k-b10-w1  100k-b1000-w1  1m-b1000-w1  1m-b1000-w2

Usage::

    python benches/bfs_table.py                           # every row, 100,000 updates each
    python benches/bfs_table.py --quick                   # 10,000 updates for batches < 1,000
    python benches/bfs_table.py --rows 1k-b1000-w1,1k-b1000-w2 --timeout 300
    python benches/bfs_table.py --json out.json           # also dump the raw rows
    python benches/bfs_table.py --repeat 3                # best of 3 runs per row
    python benches/bfs_table.py --out benches/results/bfs_table.md   # + its chart (.png)

A row that runs longer than ``--timeout`` seconds (default 600) is killed and reported as not
finished. With ``--repeat K`` each row runs K times; the table shows the fastest run (by
updates/s; its load time, memory and CPU time) and lists every run's updates/s.
``ratio`` is ddflow / DD for updates/s (above 1: ddflow is faster) and DD / ddflow for load
time and memory (above 1: ddflow is faster / smaller). ``cpu`` is the child's user +
system CPU time over the whole run (load included); on a shared machine compare it with the
wall times. ``baseline`` is the peak memory of a process that only imports ddflow, numpy and
pyarrow: the main job's peak includes it, the DD reference does not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

__all__ = ["Row", "Result", "ROWS", "run_row", "baseline_mb", "main"]


@dataclass(frozen=True)
class Row:
    """One configuration of the main job and its differential-dataflow reference."""

    name: str
    nodes: int
    edges: int
    batch: int
    rounds: int
    workers: int
    dd_rate: float
    dd_load: float | None = None
    dd_peak_mb: float | None = None


ROWS: tuple[Row, ...] = (
    Row("1k-b1000-w1", 1_000, 2_000, 1_000, 100_000, 1, 37_000),
    Row("1k-b1000-w2", 1_000, 2_000, 1_000, 100_000, 2, 54_000),
    Row("1k-b100-w1", 1_000, 2_000, 100, 100_000, 1, 18_700),
    Row("1k-b10-w1", 1_000, 2_000, 10, 100_000, 1, 7_600),
    Row("100k-b1000-w1", 100_000, 1_000_000, 1_000, 100_000, 1, 27_800, 0.63, 89),
    Row("1m-b1000-w1", 1_000_000, 10_000_000, 1_000, 100_000, 1, 17_000, 7.1, 550),
    Row("1m-b1000-w2", 1_000_000, 10_000_000, 1_000, 100_000, 2, 29_500, 4.0),
)
"""The target table, one row per (graph, batch, workers), with the differential-dataflow
0.26 reference numbers: updates/s, and load seconds and peak MB where known."""

_SUMMARY = re.compile(
    r"load (?P<load>[\d.]+) s, updates (?P<upd>[\d.]+) s, (?P<rate>[\d,]+) updates/s, "
    r"peak memory (?P<peak>[\d,]+) MB"
)


@dataclass
class Result:
    """The outcome of one row."""

    row: Row
    rounds: int
    command: list[str]
    finished: bool
    wall_s: float
    cpu_s: float
    peak_mb: float
    load_s: float | None = None
    update_s: float | None = None
    rate: float | None = None
    error: str | None = None
    all_rates: list[float] = field(default_factory=list)


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int | None, float, float]:
    """Waits for ``proc`` (killing it after ``timeout`` s): (exit status or None, cpu s, peak MB).

    Uses ``wait4`` so the resource usage is this child's alone.
    """
    deadline = time.monotonic() + timeout
    killed = False
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            cpu = usage.ru_utime + usage.ru_stime
            return (None if killed else proc.returncode), cpu, usage.ru_maxrss / 1024
        if not killed and time.monotonic() > deadline:
            proc.kill()
            killed = True
        time.sleep(0.02)


def run_row(row: Row, rounds: int, timeout: float, python: str = sys.executable) -> Result:
    """Runs the main job for ``row`` with ``rounds`` updates in a child process."""
    cmd = [
        python,
        "-m",
        "ddflow.examples.bfs",
        str(row.nodes),
        str(row.edges),
        str(row.batch),
        str(rounds),
        "--workers",
        str(row.workers),
        "--no-progress",
    ]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        code, cpu, peak = _wait(proc, timeout)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    res = Result(row, rounds, cmd, False, wall, cpu, peak)
    if code is None:
        res.error = f"not finished within {timeout:.0f} s"
        return res
    m = _SUMMARY.search(stdout)
    if code != 0 or m is None:
        tail = (stderr or stdout).strip().splitlines()[-3:]
        res.error = f"exit {code}: " + " | ".join(tail)
        return res
    res.finished = True
    res.load_s = float(m["load"])
    res.update_s = float(m["upd"])
    res.rate = rounds / res.update_s if res.update_s > 0 else float("inf")
    return res


def baseline_mb(python: str = sys.executable) -> float:
    """Peak memory (MB) of a process that imports ddflow, numpy and pyarrow and exits."""
    proc = subprocess.Popen([python, "-c", "import ddflow, numpy, pyarrow"])
    _, _, peak = _wait(proc, 120)
    return peak


def _fmt(x: float | None, spec: str, unit: str = "") -> str:
    return "-" if x is None else f"{x:{spec}}{unit}"


def table(results: list[Result]) -> str:
    """The results as a markdown table."""
    head = (
        "| row | graph | batch | W | updates | ddflow updates/s | DD updates/s | ratio "
        "| load s (DD) | peak MB (DD) | cpu s / wall s | all runs, updates/s |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
    )
    lines = []
    for r in results:
        row = r.row
        graph = f"{row.nodes:,} / {row.edges:,}"
        if not r.finished:
            lines.append(
                f"| {row.name} | {graph} | {row.batch:,} | {row.workers} | {r.rounds:,} "
                f"| **not finished** ({r.error}) | {row.dd_rate:,.0f} | - | - "
                f"| {r.peak_mb:,.0f} | {r.cpu_s:.1f} / {r.wall_s:.1f} | - |"
            )
            continue
        assert r.rate is not None and r.load_s is not None
        ratio = r.rate / row.dd_rate
        runs = ", ".join(f"{x:,.0f}" for x in r.all_rates)
        load = f"{r.load_s:.3f}"
        if row.dd_load is not None:
            load += f" ({row.dd_load}; x{row.dd_load / r.load_s:.2f})"
        peak = f"{r.peak_mb:,.0f}"
        if row.dd_peak_mb is not None:
            peak += f" ({row.dd_peak_mb:.0f}; x{row.dd_peak_mb / r.peak_mb:.2f})"
        lines.append(
            f"| {row.name} | {graph} | {row.batch:,} | {row.workers} | {r.rounds:,} "
            f"| {r.rate:,.0f} | {row.dd_rate:,.0f} | {ratio:.2f} | {load} | {peak} "
            f"| {r.cpu_s:.1f} / {r.wall_s:.1f} | {runs} |"
        )
    return head + "\n".join(lines)


def _write_table(out: Path, results: list[Result], base: float) -> None:
    """Writes the table (with the commands and the baseline) to ``out`` and its chart beside
    it (``benches/charts.py``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benches.charts import write_chart

    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    commands = "\n".join("    " + " ".join(["python", *r.command[1:]]) for r in results)
    out.write_text(
        f"# The main job beside differential-dataflow (`benches/bfs_table.py`)\n\n"
        f"* command: `python benches/bfs_table.py {shlex.join(sys.argv[1:])}`\n"
        f"* date: {when}; baseline (import ddflow, numpy, pyarrow): {base:,.0f} MB peak\n\n"
        f"{table(results)}\n\nEach row's command:\n\n{commands}\n"
    )
    write_chart(out, kind="bfs_table")


def main(argv: list[str] | None = None) -> int:
    """Runs the selected rows and prints the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", default="all", help="comma-separated row names (default all)")
    parser.add_argument(
        "--quick", action="store_true", help="10,000 updates for batches smaller than 1,000"
    )
    parser.add_argument("--rounds", type=int, default=None, help="override updates per row")
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per row (default 600)"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per row; the table shows the fastest"
    )
    parser.add_argument("--python", default=sys.executable, help="interpreter for the job")
    parser.add_argument("--json", default=None, help="also write the raw results here")
    parser.add_argument(
        "--out", default=None, help="also write the table here (.md) and its chart beside it"
    )
    args = parser.parse_args(argv)

    by_name = {r.name: r for r in ROWS}
    names = list(by_name) if args.rows == "all" else args.rows.split(",")
    unknown = [n for n in names if n not in by_name]
    if unknown:
        parser.error(f"unknown rows {unknown}; known: {', '.join(by_name)}")

    base = baseline_mb(args.python)
    results: list[Result] = []
    for name in names:
        row = by_name[name]
        rounds = row.rounds
        if args.quick and row.batch < 1_000:
            rounds = 10_000
        if args.rounds is not None:
            rounds = args.rounds
        runs = [run_row(row, rounds, args.timeout, args.python) for _ in range(args.repeat)]
        done = [r for r in runs if r.finished and r.rate is not None]
        res = max(done, key=lambda r: r.rate or 0.0) if done else runs[0]
        res = replace(res, all_rates=[r.rate for r in done if r.rate is not None])
        results.append(res)
        status = f"{res.rate:,.0f} updates/s" if res.finished else res.error
        print(
            f"# {name}: {status}, wall {res.wall_s:.1f} s, peak {res.peak_mb:,.0f} MB",
            file=sys.stderr,
            flush=True,
        )
    print(table(results))
    print(f"\nbaseline (import ddflow, numpy, pyarrow): {base:,.0f} MB peak")
    print("commands:")
    for r in results:
        print("    " + " ".join(["python"] + r.command[1:]))
    if args.out:
        _write_table(Path(args.out), results, base)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"baseline_mb": base, "results": [asdict(r) for r in results]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
