"""What persistence costs and what a restart saves, and the crash tests with 20 kills.

    python benches/persistence.py [--nodes 100000] [--edges 1000000] [--files 100]
        [--rows-per-poll 50000] [--kills 20] [--only-crash] [--out benches/results/persistence.md]
        [--runs rebuild,ckpt10,ckpt1,restart,rebuild1] [--no-crash] [--append]

The job: BFS from node 0 over a random graph whose edges arrive from Parquet files (``files``
files, read ``rows-per-poll`` rows per tick of the run loop), distances written to a Parquet
sink. Each run is its own process (wall time, CPU time and peak RSS from the process
itself; the ratios are of CPU time, as the machine is shared):

1. **rebuild**: the job without persistence;
2. **checkpoint every 10 s**, then **every 1 s**: the same job, persistent (every tick logged
   to disk before the engine runs on it, the log compacted at each checkpoint);
3. **limited**: the rebuild under ``--memory-limit`` (512 MB by default, through
   ``DDFLOW_MEMORY_LIMIT``): past 70% of it the engine spills cold trace batches to disk;
4. **restart**: the job again on the checkpoint of (2), with nothing new to read: it rebuilds
   the operators by replaying the compacted inputs, then stops; beside it, a rebuild that
   reads every edge in one tick (what the replay amounts to);
5. **crash tests**, each killed with SIGKILL ``kills`` times at random points and restarted
   each time: the file pipeline of ``tests/persist`` (CSV files to Parquet sinks) and the
   program feeding its inputs by hand (``tests/persist/hand_pipeline.py``), each compared
   with an uninterrupted run; the Postgres pipeline (``tests/persist/pg_crash.py``: a
   source table followed by logical replication into a sink table, a writer committing
   while it is killed), compared with a recompute of the source table (skipped, saying so,
   without PostgreSQL server binaries).

The table goes to ``--out`` with the command, the machine and the load average;
``--only-crash`` runs only the crash tests and replaces only their section of ``--out``.
Each run also reports its peak anonymous resident memory (``RssAnon`` sampled every 20 ms:
the heap, without the page cache of mapped spill files), the peak of ddflow's own heap
(``ddflow.memory.live_bytes()``, sampled alike; printed by the run, not in the table) and
the bytes it spilled.
``--runs`` makes only the job runs named (in the order above; ``restart`` needs ``ckpt10``;
all but ``limited`` by default),
e.g. ``--runs rebuild,ckpt10,restart,rebuild1`` on a graph where checkpointing every second
takes too long; ``--no-crash`` skips the crash tests; ``--append`` adds the table to ``--out``
as a section headed with the graph's size (before the crash tests, replacing a section of the
same heading) instead of replacing the file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benches.machine import commit, cpu, load  # noqa: E402


def _job(edges: str, roots: str, out: str, state: str, interval: str, per_poll: int) -> None:
    """One run of the BFS job (in this process); prints its wall time and peak RSS."""
    import threading

    import ddflow as dd
    from ddflow.io.filesource import FileSource
    from ddflow.memory import live_bytes, spilled_bytes_total

    anon_peak, heap_peak = [0], [0]
    done = threading.Event()

    def sample_anon() -> None:
        while not done.wait(0.02):
            heap_peak[0] = max(heap_peak[0], live_bytes())
            for line in Path("/proc/self/status").read_text().splitlines():
                if line.startswith("RssAnon:"):
                    anon_peak[0] = max(anon_peak[0], int(line.split()[1]))

    sampler = threading.Thread(target=sample_anon, daemon=True)
    sampler.start()
    FileSource.rows_per_poll = per_poll
    start = time.monotonic()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_at_start = usage.ru_utime + usage.ru_stime
    persistence = None if state == "-" else dd.Persistence(state, interval=interval)
    flow = dd.Dataflow(persistence=persistence, log=False)
    schema = {"src": "int64", "dst": "int64"}
    edge_rows = dd.io.parquet.read(flow, edges, schema=schema)
    root_rows = dd.io.parquet.read(flow, roots, schema={"node": "int64"})
    dd.io.parquet.write(dd.algorithms.bfs(edge_rows, root_rows), out)
    flow.run(progress=False)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu_at_start
    done.set()
    sampler.join()
    result = {
        "wall": wall,
        "cpu": cpu,
        "rss_mb": usage.ru_maxrss / 1024,
        "anon_mb": anon_peak[0] / 1024,
        "heap_mb": heap_peak[0] / 1e6,
        "spilled_mb": spilled_bytes_total() / 1e6,
    }
    print(json.dumps(result))


def _hand_job(state: str, steps: int, rows: int) -> None:
    """A program feeding ``steps`` batches of ``rows`` rows by hand (one time each, then
    ``advance_to`` and ``run_until``) into a grouped count and sum, in this process; prints
    its wall and CPU time (after its imports)."""
    import ddflow as dd

    start = time.monotonic()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_at_start = usage.ru_utime + usage.ru_stime
    persistence = None if state == "-" else dd.Persistence(state, interval="10s")
    flow = dd.Dataflow(persistence=persistence, log=False)
    orders_in, orders = flow.new_input({"k": "int64", "v": "int64", "s": "str"}, name="orders")
    orders.group_by("k").agg(n=dd.count(), total=dd.sum("v")).capture(keep="state")
    rng = np.random.default_rng(2)
    words = np.array(["north", "south", "east", "west"], dtype=object)
    for t in range(orders_in.frontier() or 0, steps):
        batch = pa.table(
            {
                "k": rng.integers(0, 1000, rows),
                "v": rng.integers(0, 100, rows),
                "s": pa.array(words[rng.integers(0, 4, rows)], pa.string()),
            }
        )
        orders_in.update_batch(batch, times=t)
        orders_in.advance_to(t + 1)
        flow.run_until(t + 1)
    wall = time.monotonic() - start
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"wall": wall, "cpu": usage.ru_utime + usage.ru_stime - cpu_at_start}))


def _hand_cost(directory: Path, steps: int = 500, rows: int = 2000) -> str:
    """What logging what is fed by hand costs: the hand job without and with persistence,
    as a sentence."""
    runs = {}
    for name, state in (("plain", "-"), ("persistent", str(directory / "hand-cost"))):
        command = [sys.executable, str(Path(__file__).resolve()), "hand-job", state]
        command += [str(steps), str(rows)]
        done = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True)
        runs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    size = sum(f.stat().st_size for f in (directory / "hand-cost").rglob("*") if f.is_file())
    plain, kept = runs["plain"], runs["persistent"]
    return (
        f"Feeding by hand: {steps} batches of {rows:,} rows (`update_batch`, three columns, "
        "one time each, then `advance_to` and `run_until`) into a grouped count and sum take "
        f"{plain['cpu']:.2f} s of CPU ({plain['wall']:.2f} s wall) without persistence and "
        f"{kept['cpu']:.2f} s ({kept['wall']:.2f} s wall) with it, each `advance_to` logging "
        f"its batch and flushing it to disk ({kept['cpu'] / plain['cpu']:.2f}x the CPU time; "
        f"the directory holds {size / 1e6:.1f} MB at the end, checkpoint every 10 s)."
    )


def _write_graph(directory: Path, nodes: int, edges: int, files: int) -> None:
    rng = np.random.default_rng(1)
    (directory / "edges").mkdir(parents=True)
    (directory / "roots").mkdir()
    per_file = edges // files
    for i in range(files):
        src = rng.integers(0, nodes, per_file, dtype=np.int64)
        dst = rng.integers(0, nodes, per_file, dtype=np.int64)
        pq.write_table(pa.table({"src": src, "dst": dst}), directory / "edges" / f"{i:05d}.parquet")
    pq.write_table(pa.table({"node": pa.array([0], pa.int64())}), directory / "roots" / "r.parquet")


def _run(
    directory: Path,
    out: str,
    state: str,
    interval: str,
    per_poll: int,
    memory_limit: str | None = None,
) -> dict[str, float]:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "job",
        str(directory / "edges"),
        str(directory / "roots"),
        str(directory / out),
        state,
        interval,
        str(per_poll),
    ]
    env = dict(os.environ)
    if memory_limit is not None:
        env["DDFLOW_MEMORY_LIMIT"] = memory_limit
    done = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True, env=env)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _distances(path: Path) -> dict[tuple[int, int], int]:
    table = pq.read_table(path)
    total: dict[tuple[int, int], int] = {}
    for node, dist, diff in zip(
        table["node"].to_pylist(), table["dist"].to_pylist(), table["diff"].to_pylist(), strict=True
    ):
        total[(node, dist)] = total.get((node, dist), 0) + diff
    return {k: v for k, v in total.items() if v}


def _hand_crash(directory: Path, kills: int) -> tuple[int, bool, float, int]:
    """The program feeding its inputs by hand, killed ``kills`` times: kills landed, whether
    the sinks equal an uninterrupted run's, the seconds it took, the steps."""
    from tests.persist.crash import run_command, run_command_killed_in_progress, updates
    from tests.persist.hand_pipeline import SINKS

    steps = 400

    def command(out: Path, state: Path | None) -> list[str]:
        where = "-" if state is None else str(state)
        module = "tests.persist.hand_pipeline"
        return [sys.executable, "-m", module, str(out), where, str(steps), "9"]

    run_command(command(directory / "hand-ref", None), timeout=600)
    reference = {sink: updates(directory / "hand-ref", sink) for sink in SINKS}
    rng = random.Random(6)
    landed = 0
    start = time.monotonic()
    persistent = command(directory / "hand-out", directory / "hand-state")
    for _ in range(kills):
        landed += run_command_killed_in_progress(persistent, directory / "hand-out", rng)
    run_command(persistent, timeout=600)
    same = all(updates(directory / "hand-out", s) == reference[s] for s in SINKS)
    return landed, same, time.monotonic() - start, steps


def _pg_crash(directory: Path, kills: int) -> str:
    """The Postgres pipeline killed ``kills`` times while a writer commits: a sentence."""
    from tests.io.postgres.server import find_bin_dir, start
    from tests.persist.pg_crash import crash_run

    bin_dir = find_bin_dir()
    if bin_dir is None:
        return "Postgres crash test: skipped (no PostgreSQL server binaries on this machine)."
    server = start(bin_dir)
    try:
        run = crash_run(server.conninfo, directory / "pg-state", kills, seed=8, catch_up=300)
    finally:
        server.stop()
    return (
        f"Postgres crash test: the pipeline of `tests/persist/pg_pipeline.py` (the table "
        "`accounts_restart` followed by logical replication, accounts and total balance per "
        "owner kept in the table `per_owner_restart`, checkpoint every 200 ms) killed with "
        f"SIGKILL {run.kills} times, each 1 to 4 s after its start while another thread "
        "commits a transaction every 20 ms (inserts, an update, sometimes a delete), one more "
        "transaction between runs, then restarted once more until the sink caught up: "
        f"{run.transactions} transactions, {run.rows} rows in the source table at the end, "
        f"{run.seconds:.1f} s in all ({run.catch_up:.1f} s for the last run to catch up). "
        "The sink table equals a recompute of the source table (`select owner, count(*), "
        f"sum(balance) ... group by owner`), each owner once: {run.equal}. The replication "
        f"slot was kept between runs (no new snapshot after the first): {run.slot_kept}."
    )


def _crash(directory: Path, kills: int) -> tuple[int, bool, float]:
    from tests.persist.crash import (
        SINKS,
        pipeline_command,
        run_command_killed_in_progress,
        run_whole,
        updates,
        write_inputs,
    )

    source = directory / "crash-in"
    write_inputs(source, files=200, rows=200, seed=7)
    run_whole(source, directory / "crash-ref", None, timeout=600)
    reference = {sink: updates(directory / "crash-ref", sink) for sink in SINKS}
    rng = random.Random(5)
    landed = 0
    start = time.monotonic()
    out, state = directory / "crash-out", directory / "crash-state"
    for _ in range(kills):
        landed += run_command_killed_in_progress(pipeline_command(source, out, state), out, rng)
    run_whole(source, out, state, timeout=600)
    same = all(updates(out, s) == reference[s] for s in SINKS)
    return landed, same, time.monotonic() - start


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "job":
        _job(*sys.argv[2:7], int(sys.argv[7]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "hand-job":
        _hand_job(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--rows-per-poll", type=int, default=50_000)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--only-crash", action="store_true", help="run only the crash tests")
    parser.add_argument(
        "--runs",
        type=_runs,
        default=DEFAULT_RUNS,
        help=f"the job runs to make, comma-separated, of {','.join(RUNS)} (default: all but "
        "limited); restart needs ckpt10",
    )
    parser.add_argument("--no-crash", action="store_true", help="skip the crash tests")
    parser.add_argument(
        "--memory-limit",
        default="512MB",
        help="the limit of the 'limited' run (default 512MB)",
    )
    parser.add_argument(
        "--append",
        action="store_true",
        help="add the table as a section of --out (before its crash tests) instead of "
        "replacing the file",
    )
    parser.add_argument("--out", default=str(ROOT / "benches/results/persistence.md"))
    args = parser.parse_args()
    if args.only_crash:
        _only_crash(args.kills, Path(args.out))
        return
    loads, at = [load()], commit()
    crash: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ddflow-persistence-") as tmp:
        directory = Path(tmp)
        _write_graph(directory, args.nodes, args.edges, args.files)
        rows, same, state_bytes = _job_runs(
            directory, args.runs, args.rows_per_poll, args.edges, args.memory_limit
        )
        loads.append(load())
        if not args.no_crash:
            crash = _crash_section(directory, args.kills, f"--kills {args.kills}")
            loads.append(load())
        shutil.rmtree(directory, ignore_errors=True)
    command = (
        f"python benches/persistence.py --nodes {args.nodes} --edges {args.edges} "
        f"--files {args.files} --rows-per-poll {args.rows_per_poll}"
    )
    if args.runs != DEFAULT_RUNS:
        command += f" --runs {','.join(args.runs)}"
    if "limited" in args.runs:
        command += f" --memory-limit {args.memory_limit}"
    command += " --no-crash" if args.no_crash else f" --kills {args.kills}"
    if args.append:
        command += " --append"
    heading = (
        f"## Restart against rebuild: {args.nodes:,} nodes, {args.edges:,} edges"
        if args.append
        else "# Persistence: checkpoint cost, restart, crash test"
    )
    lines = [
        heading,
        "",
        f"Command: `{command}`. Machine: {cpu()}, 2 cores; commit {at}; "
        f"load average (1/5/15 min) {', then '.join(loads)}.",
        "",
        f"BFS from node 0 over {args.nodes:,} nodes and {args.edges:,} random edges read from "
        f"{args.files} Parquet files, {args.rows_per_poll:,} rows per tick, distances to a "
        "Parquet sink; each run its own process.",
        "",
        "CPU time is the process's user + system time after its imports: on a shared machine "
        "the wall time mostly says how busy the other processes were (the load average above), "
        "so the ratios are of CPU time. Wall time includes waiting for `fsync`.",
        "",
        *_table(rows, same, state_bytes),
        "",
        *crash,
    ]
    if args.append:
        _insert_section(Path(args.out), lines)
    else:
        Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


RUNS = ("rebuild", "limited", "ckpt10", "ckpt1", "restart", "rebuild1")
DEFAULT_RUNS = tuple(r for r in RUNS if r != "limited")
_NAMES = {
    "rebuild": "rebuild (no persistence)",
    "limited": "rebuild under the memory limit",
    "ckpt10": "checkpoint every 10 s",
    "ckpt1": "checkpoint every 1 s",
    "restart": "restart from the 10 s checkpoint",
    "rebuild1": "rebuild, every edge in one tick",
}


def _runs(text: str) -> tuple[str, ...]:
    """``--runs``: the names given, in the order the runs are made (restart needs ckpt10)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in RUNS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"--runs: unknown run {', '.join(unknown) or '(none given)'}; "
            f"choose from {','.join(RUNS)}"
        )
    if "restart" in names and "ckpt10" not in names:
        raise argparse.ArgumentTypeError("--runs: restart needs ckpt10 (its checkpoint)")
    return tuple(n for n in RUNS if n in names)


def _job_runs(
    directory: Path, runs: tuple[str, ...], per_poll: int, edges: int, memory_limit: str
) -> tuple[list[tuple[str, dict[str, float]]], bool, int]:
    """The job runs chosen, each its own process: the rows of the table, whether every run's
    distances are the same, the bytes in the 10 s checkpoint directory (0 without it)."""
    settings = {
        "rebuild": ("o0", "-", "10s", per_poll, None),
        "limited": ("o4", "-", "10s", per_poll, memory_limit),
        "ckpt10": ("o1", str(directory / "s1"), "10s", per_poll, None),
        "ckpt1": ("o2", str(directory / "s2"), "1s", per_poll, None),
        "restart": ("o1", str(directory / "s1"), "10s", per_poll, None),
        "rebuild1": ("o3", "-", "10s", edges + 1, None),
    }
    rows = []
    state_bytes = 0
    for name in runs:
        rows.append((name, _run(directory, *settings[name])))
        print(name, json.dumps(rows[-1][1]), load(), file=sys.stderr, flush=True)
        if name == "ckpt10":
            s1 = directory / "s1"
            state_bytes = sum(f.stat().st_size for f in s1.rglob("*") if f.is_file())
    outputs = sorted({settings[name][0] for name in runs})
    distances = [_distances(directory / out) for out in outputs]
    same = all(d == distances[0] for d in distances[1:])
    return rows, same, state_bytes


def _table(rows: list[tuple[str, dict[str, float]]], same: bool, state_bytes: int) -> list[str]:
    """The table of the job runs and what it says, as lines."""
    by_name = dict(rows)
    base = by_name.get("rebuild", rows[0][1])["cpu"]
    base_name = "rebuild" if "rebuild" in by_name else _NAMES[rows[0][0]]
    lines = [
        f"| run | wall (s) | CPU (s) | CPU vs {base_name} | peak RSS (MB) "
        "| peak anon RSS (MB) | spilled (MB) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in rows:
        lines.append(
            f"| {_NAMES[name]} | {r['wall']:.2f} | {r['cpu']:.2f} | {r['cpu'] / base:.2f}x "
            f"| {r['rss_mb']:.0f} | {r.get('anon_mb', 0):.0f} | {r.get('spilled_mb', 0):.0f} |"
        )
    outputs = len({n for n in by_name if n != "restart"})
    words = {1: "The run's", 2: "Both runs'", 3: "All three runs'", 4: "All four runs'"}
    text = f"{words.get(outputs, f'All {outputs} runs')} distances are the same: {same}."
    if "ckpt10" in by_name:
        text += f" The 10 s checkpoint directory holds {state_bytes / 1e6:.1f} MB."
    if "restart" in by_name:
        restart = by_name["restart"]["cpu"]
        text += (
            " A restart replays the compacted inputs through the engine in one batch (it does "
            "not load arrangements yet):"
        )
        parts = []
        if "rebuild" in by_name:
            parts.append(
                f" {restart / by_name['rebuild']['cpu']:.2f}x the rebuild's CPU time, which "
                "reads the same rows tick by tick"
            )
        if "rebuild1" in by_name:
            parts.append(
                f" {restart / by_name['rebuild1']['cpu']:.2f}x that of a rebuild that reads "
                "every edge in one tick"
            )
        text += ", and".join(parts) + "." if parts else " no rebuild ran."
    return [*lines, "", text]


def _insert_section(out: Path, lines: list[str]) -> None:
    """Adds ``lines`` to ``out`` as a section: before its crash tests, or at its end; a section
    with the same heading is replaced."""
    text = out.read_text() if out.exists() else ""
    heading = lines[0]
    if heading in text:
        head, rest = text.split(heading, 1)
        after = rest.find("\n## ")
        text = head.rstrip("\n") + ("\n\n" + rest[after + 1 :] if after >= 0 else "\n")
    section = "\n".join(lines).rstrip("\n") + "\n\n"
    if _CRASH_HEADING in text:
        at = text.index(_CRASH_HEADING)
        text = text[:at] + section + text[at:]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    out.write_text(text)


_CRASH_HEADING = "## Crash tests"


def _crash_section(directory: Path, kills: int, command: str) -> list[str]:
    """The crash tests run in ``directory``, as the lines of their section."""
    before = load()
    landed, same, seconds = _crash(directory, kills)
    hand_landed, hand_same, hand_seconds, steps = _hand_crash(directory, kills)
    pg = _pg_crash(directory, kills)
    cost = _hand_cost(directory)
    return [
        _CRASH_HEADING,
        "",
        f"Command: `python benches/persistence.py {command}`. Machine: {cpu()}, 2 cores "
        f"shared with other work; commit {commit()}; load average (1/5/15 min) {before} "
        f"before, {load()} after.",
        "",
        "Each kill of the file and hand-fed tests waits until the restarted process writes "
        "a new sink file (its start-up and restore are over), then comes 0 to 0.4 s later, so "
        "it lands at a random point of the work (reading, logging, computing, writing a sink "
        "file, checkpointing) however busy the machine is.",
        "",
        "File crash test: the file pipeline of `tests/persist` (200 CSV files of 200 rows, a "
        "grouped aggregate and a join into two Parquet sinks, checkpoint every 300 ms) killed "
        f"with SIGKILL {kills} times ({landed} kills landed before the run ended), restarted "
        f"each time and run to its end: {seconds:.1f} s in all. The sinks' updates equal an "
        f"uninterrupted run's: {same}.",
        "",
        "Hand-fed crash test: the program of `tests/persist/hand_pipeline.py` (two inputs fed "
        f"by hand, `update_batch` and `update_at`, {steps} steps of inserts and retractions "
        "into a grouped aggregate and a join, two Parquet sinks, checkpoint every 200 ms), "
        f"killed with SIGKILL {kills} times ({hand_landed} landed), each restart "
        f"feeding again from `inp.frontier()`: {hand_seconds:.1f} s in all. The sinks' "
        f"updates equal an uninterrupted run's: {hand_same}.",
        "",
        pg,
        "",
        cost,
        "",
    ]


def _only_crash(kills: int, out: Path) -> None:
    """Runs only the crash tests and replaces their section of ``out`` (the rest kept)."""
    with tempfile.TemporaryDirectory(prefix="ddflow-persistence-") as tmp:
        section = _crash_section(Path(tmp), kills, f"--only-crash --kills {kills}")
    text = (
        out.read_text() if out.exists() else "# Persistence: checkpoint cost, restart, crash test\n"
    )
    for marker in (_CRASH_HEADING, "Crash test:"):
        if marker in text:
            text = text[: text.index(marker)]
            break
    out.write_text(text.rstrip("\n") + "\n\n" + "\n".join(section))
    print("\n".join(section))


if __name__ == "__main__":
    main()
