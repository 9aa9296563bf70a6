"""The main job: BFS distances on a random graph under a sliding window of edge updates.

``python -m ddflow.examples.bfs NODES EDGES BATCH ROUNDS [--workers W]
[--resolution high|low] [--inspect | --inspect-all | --inspect-times] [--plot PATH]
[--progress auto|bar|lines|off] [--seed S]``

A random G(n, m) graph (numpy's seeded generator) with node 0 as the root is loaded at time 0;
then ROUNDS updates follow in batches of BATCH, update ``i`` adding ``edges[m + i]`` and
removing ``edges[i]`` (one update = one addition and one removal). ``high`` resolution gives
every update its own time, ``low`` one time per batch; each batch runs to completion.

While it runs: a progress bar on stderr (tqdm, ``ddflow[progress]``, on a terminal; else a
line at every tenth of the work), and with ``--inspect`` each round's net change of the
distance counts for the first and last rounds (``--inspect-all``: every round;
``--inspect-times``: every single change at its own time). At the end: a short table (load
and update rounds: time, updates/s, round latency) and a summary line (load time, update
time, updates/s, peak memory). ``--plot PATH`` writes a PNG of updates/s and latency per
round (matplotlib, ``ddflow[plot]``). The round machinery is in
:mod:`ddflow.examples.bfs_output` and :mod:`ddflow.examples.bfs_plot`.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pyarrow as pa

import ddflow as dd
from ddflow.examples.bfs_output import (
    Progress,
    RoundPrinter,
    RoundTimes,
    summary_table,
    tqdm_class,
)

__all__ = ["main", "random_graph", "Progress"]


def random_graph(
    nodes: int, edges: int, seed: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``edges`` random directed edges on ``nodes`` nodes (repeats allowed): src, dst."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, nodes, size=edges, dtype=np.int64)
    dst = rng.integers(0, nodes, size=edges, dtype=np.int64)
    return src, dst


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.bfs",
        description="BFS from node 0 on a random graph under sliding-window edge updates.",
    )
    parser.add_argument("nodes", type=int, help="number of nodes")
    parser.add_argument("edges", type=int, help="number of edges in the window")
    parser.add_argument("batch", type=int, help="updates per batch (each run to completion)")
    parser.add_argument("rounds", type=int, help="number of updates")
    parser.add_argument("--workers", type=int, default=1, help="worker threads (default 1)")
    parser.add_argument(
        "--resolution",
        choices=("high", "low"),
        default="high",
        help="high: each update at its own time; low: one time per batch",
    )
    parser.add_argument(
        "--inspect",
        action="store_true",
        help="print the net change of the distance counts of the first and last rounds",
    )
    parser.add_argument(
        "--inspect-all",
        action="store_true",
        help="as --inspect, for every round",
    )
    parser.add_argument(
        "--inspect-times",
        action="store_true",
        help="print every change of the distance counts at its own time",
    )
    parser.add_argument(
        "--plot",
        metavar="PATH",
        help="write a PNG of updates/s and latency per round (needs ddflow[plot])",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--progress",
        choices=("auto", "bar", "lines", "off"),
        default="auto",
        help="auto (default): a tqdm bar on a terminal when tqdm is installed, else a line "
        "at every tenth of the work; bar needs ddflow[progress]",
    )
    parser.add_argument("--no-progress", action="store_true", help="the same as --progress off")
    args = parser.parse_args(argv)
    for name in ("nodes", "edges", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"{name.upper()} must be positive")
    if args.rounds < 0 or args.workers < 1:
        parser.error("ROUNDS must be >= 0 and --workers >= 1")
    if args.no_progress:
        args.progress = "off"
    if args.progress == "bar" and tqdm_class() is None:
        parser.error("--progress bar needs tqdm: pip install 'ddflow[progress]'")
    if args.plot is not None:
        from ddflow.examples.bfs_plot import require_matplotlib

        try:
            require_matplotlib()
        except ImportError as e:
            parser.error(str(e))
    return args


def _print_changes(table: pa.Table) -> None:
    """Prints distance-count changes: one ``time dist change`` line per update."""
    for t, d, c in zip(
        table["time"].to_pylist(),
        table["dist"].to_pylist(),
        table["diff"].to_pylist(),
        strict=True,
    ):
        print(f"time {t:>8}  dist {d:>4}  {c:+d}")


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the job; returns the exit code."""
    args = _parse(argv)
    n, m, batch, rounds = args.nodes, args.edges, args.batch, args.rounds
    src, dst = random_graph(n, m + rounds, args.seed)

    flow = dd.Dataflow(workers=args.workers, log=False)
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
    roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
    dists = dd.algorithms.bfs(edges, roots)
    probe = dists.probe()
    printer: RoundPrinter | None = None
    if args.inspect or args.inspect_all or args.inspect_times:
        changes = dists.select("dist").consolidate().capture()
        if args.inspect_times:
            changes.subscribe(_print_changes)
        else:
            printer = RoundPrinter(1 + -(-rounds // batch), every=args.inspect_all)
            changes.subscribe(printer)

    times = RoundTimes()
    start = time.perf_counter()
    edges_in.update_batch({"src": src[:m], "dst": dst[:m]}, times=0)
    roots_in.update_at((0,), time=0)
    edges_in.advance_to(1)
    roots_in.advance_to(1)
    flow.run_until(1)
    times.load_s = time.perf_counter() - start
    if printer is not None:
        printer.end_round()

    progress = Progress(rounds, sys.stderr, args.progress)
    upto = 1
    for b, lo in enumerate(range(0, rounds, batch)):
        round_start = time.perf_counter()
        hi = min(lo + batch, rounds)
        idx = np.arange(lo, hi, dtype=np.int64)
        stamps = 1 + idx if args.resolution == "high" else np.full(hi - lo, 1 + b, np.int64)
        edges_in.update_batch(
            {
                "src": np.concatenate([src[m + idx], src[idx]]),
                "dst": np.concatenate([dst[m + idx], dst[idx]]),
            },
            times=np.concatenate([stamps, stamps]),
            diffs=np.repeat(np.array([1, -1], dtype=np.int64), hi - lo),
        )
        upto = int(stamps[-1]) + 1
        edges_in.advance_to(upto)
        roots_in.advance_to(upto)
        flow.run_until(upto)
        times.add(hi - lo, time.perf_counter() - round_start)
        if printer is not None:
            printer.end_round()
        progress.update(hi)
    progress.close()
    elapsed = times.total_s
    if not probe.done(upto - 1):
        raise dd.DdflowError(f"the distances are not complete at time {upto - 1}")

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rate = rounds / elapsed if elapsed > 0 else float("inf")
    what = (
        f"{n:,} nodes, {m:,} edges, {rounds:,} updates in batches of {batch:,} "
        f"({args.resolution} resolution), {args.workers} worker(s)"
    )
    if args.plot is not None:
        from ddflow.examples.bfs_plot import plot_rounds

        title = (
            f"python -m ddflow.examples.bfs: {what}\nload {times.load_s:.3f} s; "
            f"{rounds:,} updates in {elapsed:.2f} s: {rate:,.0f} updates/s"
        )
        print(f"plot: {plot_rounds(times, args.plot, title)}")
    print(summary_table(times, m))
    print(
        f"bfs: {what}: load {times.load_s:.3f} s, "
        f"updates {elapsed:.3f} s, {rate:,.0f} updates/s, peak memory {peak_mb:,.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
