"""Memory of the side-by-side BFS job stage by stage: resident set and ddflow's Rust heap.

Runs what ``benches/peers/ddflow_peer.py bfs FILE M UPDATES BATCH`` runs (same functions,
same order) and, around each stage, reads this process's ``VmRSS`` and ``VmHWM`` from
``/proc/self/status`` (``VmHWM`` is reset before each stage by writing ``5`` to
``/proc/self/clear_refs``, so each stage's peak is its own), ddflow's live Rust heap
(``ddflow.memory.live_bytes``, the counting allocator) and the bytes the engine's traces hold
(``Engine.heap_bytes``), then prints a Markdown table, and per arrangement node the updates
its trace holds::

    python benches/memory_stages.py FILE M UPDATES BATCH [-w WORKERS]
    python benches/memory_stages.py benches/.data/graph-n1000000-m10000000-u100000-s0.u32 \\
        10000000 100000 1000

``FILE`` is a ``benches/gen_graph.py`` file (``python benches/gen_graph.py 1000000 10000000
100000`` writes the 1M/10M one).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))

import ddflow_peer as peer  # noqa: E402

import ddflow as dd  # noqa: E402

MB = 1024 * 1024


def _status() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    rss = hwm = -1.0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) / 1024
    return rss, hwm


def _reset_peak() -> None:
    """Starts a new ``VmHWM`` from the current resident set."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


class Stages:
    """The table's rows: one per stage run through :meth:`run`."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, float, float, float]] = []
        self.engine: Any = None

    def run(self, name: str, fn: Callable[[], object]) -> object:
        """Runs ``fn`` as stage ``name``; records its peak and what is left after it."""
        _reset_peak()
        start = time.process_time()
        out = fn()
        cpu = time.process_time() - start
        rss, hwm = _status()
        heap = dd.memory.live_bytes() / MB
        traces = self._traces()
        self.rows.append((name, hwm, rss, heap, traces, cpu))
        return out

    def _traces(self) -> float:
        if self.engine is None:
            return 0.0
        return int(self.engine.heap_bytes()) / MB

    def table(self) -> str:
        """The Markdown table of the stages."""
        lines = [
            "| stage | peak RSS MB (VmHWM during it) | RSS MB after | Rust heap MB after "
            "| traces MB after | CPU s |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for name, hwm, rss, heap, traces, cpu in self.rows:
            lines.append(
                f"| {name} | {hwm:,.0f} | {rss:,.0f} | {heap:,.0f} | {traces:,.0f} | {cpu:.2f} |"
            )
        return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: runs the job's stages and prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("m", type=int)
    parser.add_argument("updates", type=int)
    parser.add_argument("batch", type=int)
    parser.add_argument("-w", "--workers", type=int, default=1)
    args = parser.parse_args(argv)
    m, updates, batch = args.m, args.updates, args.batch
    n = updates

    st = Stages()
    rss, hwm = _status()
    heap = dd.memory.live_bytes() / MB
    st.rows.append(("imports (python, numpy, pyarrow, ddflow)", hwm, rss, heap, 0.0, 0.0))
    pairs = st.run("read the graph file (u32 pairs)", lambda: peer._read_edges(args.file, m + n))
    assert isinstance(pairs, np.ndarray)
    flow, edges_in, roots_in, counts = peer._bfs_flow(args.workers)
    cap = counts.capture()
    cols: dict[str, Any] = {}
    st.run("int64 columns for the load", lambda: cols.update(_load_columns(pairs, m)))
    st.run("update_batch of M edges at time 0", lambda: edges_in.update_batch(cols, times=0))
    cols.clear()
    st.run("int64 columns dropped", lambda: None)
    roots_in.update_at((0,), time=0)
    roots_in.close()
    edges_in.advance_to(1)
    st.engine = flow.engine()
    engine = st.engine
    for i in range(1000):
        did = st.run(f"run_until(1), pass {i}", engine.step)
        if not did:
            break
    st.run(
        f"{updates:,} updates in batches of {batch:,}",
        lambda: peer._run_updates(flow, edges_in, pairs, m, 0, updates, batch),
    )
    st.run("capture read (updates())", lambda: cap.updates())
    print(f"ddflow {dd.__version__} from {Path(dd.__file__).parent}")
    print()
    print(st.table())
    print()
    print(f"arrangements (trace updates, all workers): {_trace_lens(flow)}")
    return 0


def _load_columns(pairs: Any, m: int) -> dict[str, Any]:
    """The load's int64 columns, as the peer builds them."""
    return {"src": pairs[:m, 0].astype(np.int64), "dst": pairs[:m, 1].astype(np.int64)}


def _trace_lens(flow: dd.Dataflow) -> str:
    eng = flow.engine()
    out = []
    for node in range(len(flow.builder.plan.nodes)):
        try:
            n = int(eng.trace_len(node))
        except dd.DdflowError:  # not an arrangement
            continue
        op = flow.builder.plan.nodes[node]["op"]
        out.append(f"node {node} ({op}): {n:,}")
    return ", ".join(out)


if __name__ == "__main__":
    sys.exit(main())
