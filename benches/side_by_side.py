"""ddflow beside differential-dataflow on identical input: the distance-counts BFS and count.

For each requested row this script writes the graph file once (``benches/gen_graph.py``), then
runs the differential-dataflow peer (``benches/peers/dd_bfs``, a Rust program on
differential-dataflow 0.26 / timely 0.32 from crates.io, built here with cargo) and the ddflow
peer (``benches/peers/ddflow_peer.py``, the public API on the installed ``ddflow``) on that
file, each in its own process. The job: BFS from node 0, then the number of nodes per
distance (``bfs(edges, roots).count(by="dist")``); ``M`` edges at time 0, then update ``r``
adds edge ``M + r`` and removes edge ``r`` at time ``r + 1``, in batches of ``B`` updates each
run to completion. Per run: load time, update time, updates/s, the child's peak RSS (its own
``VmHWM``: ``os.wait4``'s ``ru_maxrss`` also counts this forking process's pages) and CPU time
(``os.wait4``). Checks: both peers end with the same distance histogram; on the 1k-node graph
both produce the same whole consolidated output history (sorted sets of
``(dist, count, time, diff)``). ``--micro`` runs the count micro-case on both:
``count`` over 20 keys on 100,000 live records, one batch of T distinct times with 20 updates
each, run to completion (ns per update), and compares the outputs too.

Rows are named ``GRAPH-bBATCH-wWORKERS[-uUPDATES]`` with GRAPH one of ``1k`` (1,000 nodes,
2,000 edges), ``100k`` (100,000 / 1,000,000), ``1m`` (1,000,000 / 10,000,000)::

    python benches/side_by_side.py                                  # the default rows
    python benches/side_by_side.py --rows 1k-b10-w1,1k-b1000-w2 --repeat 3
    python benches/side_by_side.py --rows 1m-b1000-w1-u20000 --micro 1000,4000
    python benches/side_by_side.py --quick                          # 10,000 updates, 1k only
    python benches/side_by_side.py --rows seed --out benches/results/seed_table.md  # full grid

``--repeat K`` runs each row K times (peers alternating) and keeps each peer's fastest run by
update time. The table goes to ``benches/results/side_by_side.md`` (``--out``) with the
machine, date, commit, load averages and the exact command. Exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
sys.path.insert(0, str(BENCHES))

from charts import write_chart  # noqa: E402
from gen_graph import ensure_graph  # noqa: E402

DD_DIR = BENCHES / "peers" / "dd_bfs"
DD_BIN = DD_DIR / "target" / "release" / "dd_bfs"
DDFLOW_PEER = BENCHES / "peers" / "ddflow_peer.py"
GRAPHS = {"1k": (1_000, 2_000), "100k": (100_000, 1_000_000), "1m": (1_000_000, 10_000_000)}
DEFAULT_ROWS = "1k-b1000-w1,1k-b1000-w2,100k-b1000-w1,1m-b1000-w1"
QUICK_ROWS = "1k-b1000-w1,1k-b1000-w2"
SEED_ROWS = ",".join(
    f"{g}-b{b}-w{w}" for g in ("1k", "1m") for b in (10, 100, 1000, 10000, 100000) for w in (1, 2)
)
"""``--rows seed``: the full grid, the 1k and 1m graphs at every batch size on 1 and 2 workers
(run it with ``--updates``)."""
_ROW = re.compile(
    r"^(?P<graph>1k|100k|1m)-b(?P<batch>\d+)-w(?P<workers>\d+)(?:-u(?P<updates>\d+))?$"
)


@dataclass
class Row:
    """One configuration: graph, batch size, workers, number of updates."""

    name: str
    graph: str
    batch: int
    workers: int
    updates: int

    @property
    def nodes(self) -> int:
        return GRAPHS[self.graph][0]

    @property
    def edges(self) -> int:
        return GRAPHS[self.graph][1]


@dataclass
class Run:
    """One child process: its RESULT line, peak RSS (MB), CPU time, wall time, status."""

    result: dict[str, Any] | None
    peak_mb: float
    cpu_s: float
    wall_s: float
    error: str | None = None


@dataclass
class Outcome:
    """Both peers' runs of one row (or micro case) and the checks."""

    label: str
    dd: list[Run] = field(default_factory=list)
    ddflow: list[Run] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    ok: bool = True
    timeouts: int = 0

    @property
    def status(self) -> str:
        """``ok``, ``FAILED`` (a check or a run failed) or ``timed out``."""
        if not self.ok:
            return "FAILED"
        return "timed out" if self.timeouts else "ok"

    def best(self, side: str) -> Run | None:
        runs = [r for r in getattr(self, side) if r.result is not None]
        return min(runs, key=lambda r: r.result["update_s"]) if runs else None  # type: ignore[index]


def parse_row(spec: str, default_updates: int) -> Row:
    """A row from its name, e.g. ``1k-b1000-w2`` or ``1m-b1000-w1-u20000``."""
    m = _ROW.match(spec.strip())
    if not m:
        raise SystemExit(f"side_by_side: bad row {spec!r} (GRAPH-bBATCH-wWORKERS[-uUPDATES])")
    updates = int(m["updates"]) if m["updates"] else default_updates
    return Row(spec.strip(), m["graph"], int(m["batch"]), int(m["workers"]), updates)


def build_dd(log: bool = True) -> None:
    """Builds the DD peer (release) with cargo; its own target directory."""
    cmd = [
        "cargo",
        "build",
        "--release",
        "--quiet",
        "--manifest-path",
        str(DD_DIR / "Cargo.toml"),
        "--target-dir",
        str(DD_DIR / "target"),
    ]
    if log:
        print("building the DD peer:", shlex.join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def run_child(cmd: list[str], timeout: float) -> Run:
    """Runs ``cmd``; returns its RESULT line, peak RSS and CPU time (from ``wait4``)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = -9
                return Run(
                    None,
                    usage.ru_maxrss / 1024,
                    usage.ru_utime + usage.ru_stime,
                    time.perf_counter() - start,
                    f"timed out after {timeout:.0f} s",
                )
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
    peak, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
    lines = [ln for ln in text.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (errors or text).strip().splitlines()[-5:]
        return Run(None, peak, cpu, wall, f"exit {proc.returncode}: " + " | ".join(tail))
    result = json.loads(lines[-1][len("RESULT ") :])
    # The peer's own VmHWM when it reports one: ru_maxrss from wait4 also counts the pages of
    # this (forking) Python process, which the child had before its exec.
    peak = result.get("peak_rss_mb", peak) if result.get("peak_rss_mb", -1) > 0 else peak
    return Run(result, peak, cpu, wall)


def consolidated(path: Path) -> np.ndarray:
    """A history file (int64 rows record, count, time, diff) consolidated and sorted."""
    rows = np.fromfile(path, dtype="<i8").reshape(-1, 4)
    if len(rows) == 0:
        return rows
    keys, inverse = np.unique(rows[:, :3], axis=0, return_inverse=True)
    diffs = np.zeros(len(keys), dtype=np.int64)
    np.add.at(diffs, inverse.reshape(-1), rows[:, 3])
    keep = diffs != 0
    return np.column_stack([keys[keep], diffs[keep]])


def compare_histories(dd_path: Path, df_path: Path, what: str) -> tuple[bool, str]:
    """Whether two history files hold the same consolidated updates; a description."""
    a, b = consolidated(dd_path), consolidated(df_path)
    if a.shape == b.shape and np.array_equal(a, b):
        return True, f"{what}: identical consolidated histories ({len(a):,} updates)"
    sa = {tuple(r) for r in a.tolist()}
    sb = {tuple(r) for r in b.tolist()}
    only_dd = sorted(sa - sb, key=lambda r: (r[2], r[0], r[1]))
    only_df = sorted(sb - sa, key=lambda r: (r[2], r[0], r[1]))
    first = min([r[2] for r in only_dd[:1] + only_df[:1]], default=-1)
    return False, (
        f"{what}: HISTORIES DIFFER: {len(a):,} DD updates, {len(b):,} ddflow updates; "
        f"{len(only_dd):,} only in DD (first {only_dd[:3]}), {len(only_df):,} only in ddflow "
        f"(first {only_df[:3]}); earliest differing time {first}"
    )


def _peers(
    row_args: list[str],
    workers: int,
    history: dict[str, Path] | None,
    extra: list[str] | None = None,
) -> dict[str, list[str]]:
    extra = extra or []
    dd = [str(DD_BIN), *row_args, "-w", str(workers), *extra]
    df = [sys.executable, str(DDFLOW_PEER), *row_args, "-w", str(workers), *extra]
    if history:
        dd += ["--history", str(history["dd"])]
        df += ["--history", str(history["ddflow"])]
    return {"dd": dd, "ddflow": df}


def _run_pair(outcome: Outcome, cmds: dict[str, list[str]], rep: int, timeout: float) -> None:
    order = ("dd", "ddflow") if rep % 2 == 0 else ("ddflow", "dd")
    for side in order:
        run = run_child(cmds[side], timeout)
        getattr(outcome, side).append(run)
        if run.result is None and (run.error or "").startswith("timed out"):
            print(f"  {side:>6} run {rep + 1}: {run.error}", flush=True)
            outcome.timeouts += 1
            outcome.checks.append(f"{outcome.label}: {side} run {rep + 1} {run.error}")
        elif run.result is None:
            print(f"  {side:>6} run {rep + 1}: FAILED {run.error}", flush=True)
            outcome.ok = False
            outcome.checks.append(f"{outcome.label}: {side} run {rep + 1} failed: {run.error}")
        else:
            r = run.result
            per = f", {r['ns_per_update']:,.0f} ns/update" if "ns_per_update" in r else ""
            print(
                f"  {side:>6} run {rep + 1}: load {r['load_s']:.3f} s, updates "
                f"{r['update_s']:.3f} s, {r['updates_per_s']:,.0f} updates/s{per}, "
                f"peak {run.peak_mb:,.0f} MB",
                flush=True,
            )


def _check_finals(outcome: Outcome, what: str) -> None:
    finals = {json.dumps(r.result["final"]) for r in outcome.dd + outcome.ddflow if r.result}
    if len(finals) == 1:
        outcome.checks.append(f"{what}: same final output on every run")
    elif finals:
        outcome.ok = False
        outcome.checks.append(f"{what}: FINAL OUTPUTS DIFFER: {sorted(finals)[:4]}")


def run_row(row: Row, repeat: int, timeout: float, history: bool, tmp: Path) -> Outcome:
    """Runs one row on both peers ``repeat`` times; checks the outputs."""
    path = ensure_graph(row.nodes, row.edges, row.updates, seed=0)
    outcome = Outcome(row.name)
    args = ["bfs", str(path), str(row.edges), str(row.updates), str(row.batch)]
    for rep in range(repeat):
        files = {s: tmp / f"{row.name}-{s}.hist" for s in ("dd", "ddflow")}
        want = history and rep == 0
        _run_pair(outcome, _peers(args, row.workers, files if want else None), rep, timeout)
        if want and all(f.exists() for f in files.values()):
            ok, msg = compare_histories(files["dd"], files["ddflow"], row.name)
            outcome.ok &= ok
            outcome.checks.append(msg)
            print("  " + msg, flush=True)
    _check_finals(outcome, f"{row.name} distance histogram")
    return outcome


def run_micro(times: int, repeat: int, timeout: float, tmp: Path) -> Outcome:
    """The count micro-case at ``times`` distinct times on both peers."""
    outcome = Outcome(f"count-T{times}")
    for rep in range(repeat):
        files = {s: tmp / f"count-{times}-{s}.hist" for s in ("dd", "ddflow")}
        want = rep == 0
        _run_pair(outcome, _peers(["count", str(times)], 1, files if want else None), rep, timeout)
        if want and all(f.exists() for f in files.values()):
            ok, msg = compare_histories(files["dd"], files["ddflow"], outcome.label)
            outcome.ok &= ok
            outcome.checks.append(msg)
            print("  " + msg, flush=True)
    _check_finals(outcome, f"{outcome.label} counts")
    return outcome


def _sh(cmd: str) -> str:
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True, cwd=REPO).stdout
    except OSError:
        return ""


def machine() -> dict[str, str]:
    """Facts about the machine and the code measured."""
    model = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in _sh("lscpu").splitlines()
            if ln.startswith("Model name")
        ),
        platform.processor(),
    )
    dirty = " (uncommitted changes)" if _sh("git status --porcelain --untracked-files=no") else ""
    import ddflow

    return {
        "cpu": f"{model}, {os.cpu_count()} cores",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _sh("git rev-parse --short HEAD").strip() + dirty,
        "engine": _sh("git log -1 --format=%h -- rust python Cargo.toml pyproject.toml").strip(),
        "ddflow": f"{ddflow.__version__} from {Path(ddflow.__file__).parent}",
        "python": platform.python_version(),
        "rustc": _sh("rustc --version").strip(),
    }


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _mb(run: Run | None) -> str:
    return f"{run.peak_mb:,.0f}" if run else "-"


def _cpu(run: Run | None) -> str:
    return f"{run.cpu_s:,.1f}" if run else "-"


def _rates(runs: list[Run]) -> str:
    return ", ".join(f"{r.result['updates_per_s']:,.0f}" for r in runs if r.result) or "-"


def row_table(rows: list[Row], outcomes: list[Outcome]) -> list[str]:
    """Markdown lines: one table row per configuration."""
    lines = [
        "| row | graph (nodes / edges) | batch | workers | updates | load s DD / ddflow "
        "| updates/s DD | updates/s ddflow | ddflow / DD update time | peak RSS MB DD / ddflow "
        "| CPU s DD / ddflow | every run's updates/s DD; ddflow | check |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row, out in zip(rows, outcomes, strict=True):
        a, b = out.best("dd"), out.best("ddflow")
        if a and b:
            ra, rb = a.result, b.result  # type: ignore[assignment]
            load = f"{ra['load_s']:.3f} / {rb['load_s']:.3f}"
            rates = f"{ra['updates_per_s']:,.0f}", f"{rb['updates_per_s']:,.0f}"
            ratio = f"{rb['update_s'] / ra['update_s']:.2f}x"
        else:
            load, rates, ratio = "-", ("-", "-"), "-"
        lines.append(
            f"| {row.name} | {row.nodes:,} / {row.edges:,} | {row.batch:,} | {row.workers} "
            f"| {row.updates:,} | {load} | {rates[0]} | {rates[1]} | {ratio} "
            f"| {_mb(a)} / {_mb(b)} | {_cpu(a)} / {_cpu(b)} "
            f"| {_rates(out.dd)}; {_rates(out.ddflow)} "
            f"| {out.status} |"
        )
    return lines


def micro_table(outcomes: list[Outcome]) -> list[str]:
    """Markdown lines for the count micro-case."""
    lines = [
        "| case | T (times) | updates | ns/update DD | ns/update ddflow | ddflow / DD "
        "| peak RSS MB DD / ddflow | check |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for out in outcomes:
        a, b = out.best("dd"), out.best("ddflow")
        if a and b:
            ra, rb = a.result, b.result  # type: ignore[assignment]
            cells = (
                f"{ra['times']:,}",
                f"{ra['updates']:,}",
                f"{ra['ns_per_update']:,.0f}",
                f"{rb['ns_per_update']:,.0f}",
                f"{rb['update_s'] / ra['update_s']:.1f}x",
            )
        else:
            cells = ("-",) * 5
        lines.append(
            f"| {out.label} | {' | '.join(cells)} | {_mb(a)} / {_mb(b)} " f"| {out.status} |"
        )
    return lines


def write_results(
    path: Path,
    command: str,
    info: dict[str, str],
    loads: tuple[str, str],
    rows: list[Row],
    outcomes: list[Outcome],
    micro: list[Outcome],
    repeat: int,
) -> None:
    """Writes the markdown results file."""
    lines = [
        "# ddflow beside differential-dataflow on identical input",
        "",
        "Written by `benches/side_by_side.py` (see its docstring and `benches/README.md`). "
        "Both systems read the same graph file (`benches/gen_graph.py`, seed 0) and run the "
        "distance-counts job, BFS from node 0 then nodes per distance, each in its own process; "
        "update `r` adds edge `M + r` and removes edge `r` at time `r + 1` (each update at its "
        "own time), batches run to completion. DD: `benches/peers/dd_bfs` on "
        "differential-dataflow 0.26.0 / timely 0.32.0 (crates.io, release, thin LTO like "
        "ddflow). ddflow: `benches/peers/ddflow_peer.py` through the public API "
        '(`Dataflow(log=False, workers=W)`, `bfs(edges, roots).count(by="dist")`, '
        "`update_batch` from numpy columns, output kept with `capture()`).",
        "",
        f"* command: `{command}`",
        f"* machine: {info['cpu']}; python {info['python']}; {info['rustc']}",
        f"* date: {info['date']}; commit {info['commit']} (last change to rust/ or python/: "
        f"{info['engine']}); ddflow {info['ddflow']} (the installed build: reinstall it "
        "from this checkout first, or the engine measured is older than the commit)",
        f"* load averages (1 / 5 / 15 min): {loads[0]} at the start, {loads[1]} at the end "
        "(the machine is shared: timings are noisy)",
        f"* each figure: the fastest of {repeat} run(s) by update time (every run listed); "
        "load = time from the first input to the end of time 0, file reading excluded; "
        "peak RSS = the child's own `VmHWM` at its end (ddflow's includes the Python runtime, "
        "numpy and pyarrow; `wait4`'s `ru_maxrss` would also count the forking harness's "
        "pages); ratio = ddflow update time / DD update time (below 1: ddflow is faster)",
        "* Pathway: not measured in this run.",
        "",
    ]
    if rows:
        lines += ["## BFS distance counts", "", *row_table(rows, outcomes), ""]
    if micro:
        lines += [
            "## count micro-case",
            "",
            "`count` over 20 keys on 100,000 live records `(i % 20, i)`; one batch of T "
            "distinct times, at each time one new record per key (20 updates), run to "
            'completion. DD: `recs.map(|(k, _)| k).count()`; ddflow: `count(by="k")`. '
            "1 worker.",
            "",
            *micro_table(micro),
            "",
        ]
    checks = [c for o in outcomes + micro for c in o.checks]
    lines += ["## Checks", "", *[f"* {c}" for c in checks], ""]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    """Runs the rows and micro cases; writes the results file; 1 if a check failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--rows", default=None, help=f"comma-separated, or seed (default {DEFAULT_ROWS})"
    )
    parser.add_argument("--updates", type=int, default=100_000, help="updates per row")
    parser.add_argument("--repeat", type=int, default=1, help="runs per row; fastest kept")
    parser.add_argument(
        "--quick", action="store_true", help=f"10,000 updates, rows {QUICK_ROWS} unless --rows"
    )
    parser.add_argument(
        "--micro",
        nargs="?",
        const="1000,4000",
        default=None,
        help="count micro-case at these T (default 1000,4000)",
    )
    parser.add_argument("--no-rows", action="store_true", help="only the micro-case")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per child run")
    parser.add_argument("--no-build", action="store_true", help="use the built DD peer as is")
    parser.add_argument("--out", type=Path, default=BENCHES / "results" / "side_by_side.md")
    parser.add_argument("--json", type=Path, default=None, help="also dump the raw runs")
    args = parser.parse_args(argv)
    command = "python benches/side_by_side.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    updates = 10_000 if args.quick and args.updates == 100_000 else args.updates
    specs = args.rows or (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    specs = SEED_ROWS if specs == "seed" else specs
    rows = [] if args.no_rows else [parse_row(s, updates) for s in specs.split(",") if s.strip()]
    micro_ts = [int(t) for t in args.micro.split(",")] if args.micro else []
    if any(t <= 0 for t in micro_ts):
        parser.error(f"--micro: times must be positive, got {args.micro}")

    if not args.no_build:
        build_dd()
    if not DD_BIN.exists():
        raise SystemExit(f"side_by_side: no DD peer at {DD_BIN}; run without --no-build")
    info = machine()
    start_load = loadavg()
    print(f"{info['cpu']}, commit {info['commit']}, load {start_load}", flush=True)
    outcomes, micro = [], []
    with tempfile.TemporaryDirectory(prefix="side_by_side-") as tmpdir:
        tmp = Path(tmpdir)
        for row in rows:
            print(
                f"{row.name}: {row.nodes:,} nodes, {row.edges:,} edges, {row.updates:,} "
                f"updates, batches of {row.batch:,}, {row.workers} worker(s)",
                flush=True,
            )
            outcomes.append(run_row(row, args.repeat, args.timeout, row.graph == "1k", tmp))
            partial = (start_load, loadavg() + " (partial: still running)")
            done = rows[: len(outcomes)]
            write_results(args.out, command, info, partial, done, outcomes, [], args.repeat)
        for t in micro_ts:
            print(f"count micro-case, T = {t:,}", flush=True)
            micro.append(run_micro(t, args.repeat, args.timeout, tmp))
    end_load = loadavg()
    write_results(
        args.out, command, info, (start_load, end_load), rows, outcomes, micro, args.repeat
    )
    if args.json:
        raw = {
            o.label: {
                "dd": [r.__dict__ for r in o.dd],
                "ddflow": [r.__dict__ for r in o.ddflow],
                "checks": o.checks,
                "ok": o.ok,
            }
            for o in outcomes + micro
        }
        meta = {"command": command, "loads": [start_load, end_load], "repeat": args.repeat}
        args.json.write_text(json.dumps({"machine": info, "meta": meta, "runs": raw}, indent=1))
    print("\n".join(row_table(rows, outcomes) if rows else []))
    print("\n".join(micro_table(micro) if micro else []))
    print(f"wrote {args.out}")
    write_chart(args.out, kind="side_by_side")
    failed = [o.label for o in outcomes + micro if not o.ok]
    if failed:
        print("CHECKS FAILED: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
