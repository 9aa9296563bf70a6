"""The main job: BFS distances on a random graph under a sliding window of edge updates.

``python -m ddflow.examples.bfs NODES EDGES BATCH ROUNDS [--workers W]
[--resolution high|low] [--inspect] [--inspect-times] [--seed S]``

A random G(n, m) graph (numpy's seeded generator) with node 0 as the root is loaded at time 0;
then ROUNDS updates follow in batches of BATCH, update ``i`` adding ``edges[m + i]`` and
removing ``edges[i]`` (one update = one addition and one removal). ``high`` resolution gives
every update its own time, ``low`` one time per batch; each batch runs to completion. Prints
a progress bar on stderr for long runs, the per-round changes of the distance counts with
``--inspect`` (every single change at its own time with ``--inspect-times``), and a summary
line: load time, update time, updates/s and peak memory.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Sequence
from typing import TextIO

import numpy as np
import numpy.typing as npt
import pyarrow as pa

import ddflow as dd

__all__ = ["main", "random_graph", "Progress"]


def random_graph(
    nodes: int, edges: int, seed: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """``edges`` random directed edges on ``nodes`` nodes (repeats allowed): src, dst."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, nodes, size=edges, dtype=np.int64)
    dst = rng.integers(0, nodes, size=edges, dtype=np.int64)
    return src, dst


class Progress:
    """A one-line progress bar on a terminal, redrawn at most a few times a second."""

    def __init__(self, total: int, stream: TextIO, enabled: bool, width: int = 30) -> None:
        """A bar for ``total`` units of work, shown only when ``enabled``."""
        self.total = total
        self.stream = stream
        self.enabled = enabled
        self.width = width
        self.start = time.perf_counter()
        self._last = 0.0
        self._shown = False

    def update(self, done: int) -> None:
        """Redraws the bar after ``done`` units (after the first second, then every 0.25 s)."""
        now = time.perf_counter()
        if not self.enabled or now - self._last < 0.25 or now - self.start < 1.0:
            return
        self._last = now
        self._shown = True
        frac = done / self.total if self.total else 1.0
        filled = int(frac * self.width)
        rate = done / (now - self.start)
        bar = "#" * filled + "-" * (self.width - filled)
        self.stream.write(
            f"\r[{bar}] {frac:6.1%} {done:,}/{self.total:,} updates, {rate:,.0f} updates/s"
        )
        self.stream.flush()

    def close(self) -> None:
        """Ends the bar's line if it was shown."""
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()


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
        help="print each round's changes of the distance counts (net over the round)",
    )
    parser.add_argument(
        "--inspect-times",
        action="store_true",
        help="print every change of the distance counts at its own time",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    args = parser.parse_args(argv)
    for name in ("nodes", "edges", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"{name.upper()} must be positive")
    if args.rounds < 0 or args.workers < 1:
        parser.error("ROUNDS must be >= 0 and --workers >= 1")
    return args


class RoundPrinter:
    """Prints one line per completed round: the net change of each distance's count over the
    round, and at how many distinct times the counts changed."""

    def __init__(self) -> None:
        """A printer starting at round 0 (the load)."""
        self.round = 0

    def __call__(self, table: pa.Table) -> None:
        """Called with the consolidated changes of a newly completed interval."""
        times = table["time"].to_numpy()
        dists = table["dist"].to_numpy()
        diffs = table["diff"].to_numpy()
        net: dict[int, int] = {}
        for d, c in zip(dists.tolist(), diffs.tolist(), strict=True):
            net[d] = net.get(d, 0) + c
        parts = [f"dist {d} {c:+d}" for d, c in sorted(net.items()) if c != 0]
        span = f"times {int(times.min())}..{int(times.max())}" if len(times) else "no changes"
        distinct = len(np.unique(times))
        print(
            f"round {self.round:>5}  {span:<22} changes at {distinct:>5} times  net: "
            + (", ".join(parts) if parts else "none")
        )
        self.round += 1


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
    if args.inspect or args.inspect_times:
        changes = dists.select("dist").consolidate().capture()
        changes.subscribe(_print_changes if args.inspect_times else RoundPrinter())

    start = time.perf_counter()
    edges_in.update_batch({"src": src[:m], "dst": dst[:m]}, times=0)
    roots_in.update_at((0,), time=0)
    edges_in.advance_to(1)
    roots_in.advance_to(1)
    flow.run_until(1)
    load = time.perf_counter() - start

    progress = Progress(rounds, sys.stderr, sys.stderr.isatty() and not args.no_progress)
    start = time.perf_counter()
    upto = 1
    for b, lo in enumerate(range(0, rounds, batch)):
        hi = min(lo + batch, rounds)
        idx = np.arange(lo, hi, dtype=np.int64)
        times = 1 + idx if args.resolution == "high" else np.full(hi - lo, 1 + b, np.int64)
        edges_in.update_batch(
            {
                "src": np.concatenate([src[m + idx], src[idx]]),
                "dst": np.concatenate([dst[m + idx], dst[idx]]),
            },
            times=np.concatenate([times, times]),
            diffs=np.repeat(np.array([1, -1], dtype=np.int64), hi - lo),
        )
        upto = int(times[-1]) + 1
        edges_in.advance_to(upto)
        roots_in.advance_to(upto)
        flow.run_until(upto)
        progress.update(hi)
    progress.close()
    elapsed = time.perf_counter() - start
    if not probe.done(upto - 1):
        raise dd.DdflowError(f"the distances are not complete at time {upto - 1}")

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rate = rounds / elapsed if elapsed > 0 else float("inf")
    print(
        f"bfs: {n:,} nodes, {m:,} edges, {rounds:,} updates in batches of {batch:,} "
        f"({args.resolution} resolution), {args.workers} worker(s): load {load:.3f} s, "
        f"updates {elapsed:.3f} s, {rate:,.0f} updates/s, peak memory {peak_mb:,.0f} MB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
