"""One seeded generator for the graph files that every system in the side-by-side benches reads.

A graph file holds ``EDGES + UPDATES`` random directed edges on ``NODES`` nodes (repeats
allowed) as u32 little-endian ``(src, dst)`` pairs, nothing else. The first ``EDGES`` are the
graph at time 0; update ``r`` (0-based) adds edge ``EDGES + r`` and removes edge ``r`` at time
``r + 1``. Same arguments, same bytes (numpy's ``default_rng(seed)``).

Usage::

    python benches/gen_graph.py NODES EDGES UPDATES [--seed S] [--out PATH]

Without ``--out`` the file goes to ``benches/.data/`` under a name made of the arguments, and an
existing file of that name is reused.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

__all__ = ["DATA_DIR", "graph_path", "generate", "ensure_graph", "read_graph", "main"]

DATA_DIR = Path(__file__).resolve().parent / ".data"
"""Where generated graph files are kept (ignored by git)."""


def graph_path(nodes: int, edges: int, updates: int, seed: int, data_dir: Path = DATA_DIR) -> Path:
    """The default file name for these arguments."""
    return data_dir / f"graph-n{nodes}-m{edges}-u{updates}-s{seed}.u32"


def generate(nodes: int, edges: int, updates: int, seed: int) -> np.ndarray:
    """The ``(edges + updates, 2)`` uint32 array of (src, dst) pairs."""
    if nodes < 1 or edges < 0 or updates < 0 or nodes > 2**32:
        raise ValueError(f"bad graph size: nodes={nodes} edges={edges} updates={updates}")
    rng = np.random.default_rng(seed)
    return rng.integers(0, nodes, size=(edges + updates, 2), dtype=np.uint32)


def ensure_graph(
    nodes: int, edges: int, updates: int, seed: int = 0, path: Path | None = None
) -> Path:
    """Writes the graph file unless it already exists (written atomically); returns its path."""
    path = path or graph_path(nodes, edges, updates, seed)
    if path.exists() and path.stat().st_size == 8 * (edges + updates):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    pairs = generate(nodes, edges, updates, seed).astype("<u4", copy=False)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    pairs.tofile(tmp)
    tmp.replace(path)
    return path


def read_graph(path: Path | str, count: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The first ``count`` edges (default all) of a graph file as int64 ``src``, ``dst``."""
    flat = np.fromfile(path, dtype="<u4", count=-1 if count is None else 2 * count)
    if count is not None and len(flat) != 2 * count:
        raise ValueError(f"{path} holds {len(flat) // 2} edges, {count} needed")
    pairs = flat.reshape(-1, 2).astype(np.int64)
    return np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])


def main(argv: list[str] | None = None) -> int:
    """Command line: writes (or reuses) a graph file and prints its path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("nodes", type=int)
    parser.add_argument("edges", type=int, help="edges at time 0")
    parser.add_argument("updates", type=int, help="number of sliding-window updates")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    print(ensure_graph(args.nodes, args.edges, args.updates, args.seed, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
