"""Weighted shortest paths on a changing graph: distances from node 0 while edges are added,
removed and reweighted.

``python -m ddflow.examples.sssp [--nodes N] [--edges E] [--rounds R] [--changes C]
[--max-weight W] [--seed S] [--workers K]``

``E`` random directed edges among ``N`` nodes, each with a weight from 1 to ``W``, are
loaded at time 0; each later round ``t`` makes ``C`` changes at time ``t``: about a third
remove an edge, a third add one and a third change an edge's weight (the old edge retracted,
the new one inserted). ``dd.algorithms.sssp`` keeps the least total weight of a path from
node 0 to every node it reaches. After every round the example prints the nodes whose
distance changed, old and new (``-`` for unreachable), and checks the distances against
Dijkstra's algorithm run from scratch on the round's graph (every round for graphs of at
most 50,000 edges, else at the end only).
"""

from __future__ import annotations

import argparse
import heapq
import random
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa

import ddflow as dd

__all__ = ["EDGES", "build", "dijkstra", "main", "mismatches"]

EDGES = pa.schema([("src", pa.int64()), ("dst", pa.int64()), ("w", pa.int64())])
"""A weighted edge; an edge's weight changes by retracting it and inserting the new one."""

SOURCE = 0
"""The node distances are measured from."""

CHECK_EVERY_ROUND_UP_TO = 50_000
"""Graphs of at most this many edges are checked against Dijkstra after every round."""

SHOWN = 5
"""Changed distances printed per round before ``...``."""


def build(flow: dd.Dataflow) -> tuple[dd.InputSession, dd.InputSession, dd.Capture]:
    """The edges input (``src, dst, w``), the roots input (``node``) and a capture of the
    distances (``node, dist``)."""
    edges_in, edges = flow.new_input(EDGES)
    roots_in, roots = flow.new_input({"node": "int64"})
    return edges_in, roots_in, dd.algorithms.sssp(edges, roots, weight="w").capture()


def dijkstra(edges: Iterable[tuple[int, int, int]], source: int) -> dict[int, int]:
    """``{node: least path weight from source}`` for every node reached over ``edges``
    (``(src, dst, w)``, ``w >= 0``)."""
    adjacency: dict[int, list[tuple[int, int]]] = {}
    for src, dst, w in edges:
        adjacency.setdefault(src, []).append((dst, w))
    dist: dict[int, int] = {}
    heap = [(0, source)]
    while heap:
        d, node = heapq.heappop(heap)
        if node in dist:
            continue
        dist[node] = d
        for nxt, w in adjacency.get(node, ()):
            if nxt not in dist:
                heapq.heappush(heap, (d + w, nxt))
    return dist


def mismatches(got: Mapping[int, int], expected: Mapping[int, int]) -> list[str]:
    """The nodes whose distance differs, as ``node N: got G, expected E`` lines (``-`` for
    unreachable), by node."""
    return [
        f"node {n}: got {_text(got.get(n))}, expected {_text(expected.get(n))}"
        for n in sorted(got.keys() | expected.keys())
        if got.get(n) != expected.get(n)
    ]


def _text(dist: int | None) -> str:
    return "-" if dist is None else str(dist)


class _Changes:
    """The distance updates of each newly completed round (a capture subscriber), applied
    to the distances seen so far."""

    def __init__(self) -> None:
        self.dist: dict[int, int] = {}
        self.fresh: list[pa.Table] = []

    def __call__(self, table: pa.Table) -> None:
        self.fresh.append(table)

    def apply(self) -> list[tuple[int, int | None, int | None]]:
        """Applies the fresh updates, each time's retractions before its insertions;
        returns ``(node, old, new)`` for each node whose distance changed."""
        old: dict[int, int | None] = {}
        for table in self.fresh:
            rows = zip(
                table["time"].to_pylist(),
                table["node"].to_pylist(),
                table["dist"].to_pylist(),
                table["diff"].to_pylist(),
                strict=True,
            )
            for _, node, dist, diff in sorted(rows, key=lambda r: (r[0], r[3])):
                old.setdefault(node, self.dist.get(node))
                if diff < 0:
                    del self.dist[node]
                else:
                    self.dist[node] = dist
        self.fresh = []
        return [(n, old[n], self.dist.get(n)) for n in sorted(old) if old[n] != self.dist.get(n)]


def _add(
    rng: random.Random, graph: dict[tuple[int, int], int], count: int, nodes: int, max_weight: int
) -> list[tuple[int, int, int]]:
    """Adds ``count`` new random edges to ``graph``; returns them as ``(src, dst, w)``."""
    added = []
    for _ in range(count):
        while True:
            src, dst = rng.randrange(nodes), rng.randrange(nodes)
            if src != dst and (src, dst) not in graph:
                break
        graph[src, dst] = rng.randint(1, max_weight)
        added.append((src, dst, graph[src, dst]))
    return added


def _change(
    rng: random.Random, graph: dict[tuple[int, int], int], args: argparse.Namespace
) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]], int]:
    """One round's changes to ``graph``: a third of ``--changes`` add an edge, a third remove
    one and a third give one another weight. Returns the edges to insert and to retract (a
    reweighted edge in both) and the number reweighted."""
    touched = rng.sample(list(graph), min(len(graph), args.changes * 2 // 3))
    added = _add(rng, graph, args.changes - len(touched), args.nodes, args.max_weight)
    removed = [(src, dst, graph.pop((src, dst))) for src, dst in touched]
    reweighted = removed[len(removed) // 2 :]
    for src, dst, old in reweighted:
        weight = rng.randint(1, args.max_weight - 1)
        graph[src, dst] = weight + (weight >= old)
        added.append((src, dst, graph[src, dst]))
    return added, removed, len(reweighted)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.sssp", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--edges", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--changes", type=int, default=30, help="edge changes per round")
    parser.add_argument(
        "--max-weight", type=int, default=10, help="weights are 1 .. W (at least 2)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=1, help="worker threads (default 1)")
    args = parser.parse_args(argv)
    if min(args.nodes, args.rounds, args.workers) < 1 or min(args.edges, args.changes) < 0:
        parser.error("--nodes, --rounds and --workers must be at least 1, --edges 0")
    if args.max_weight < 2:
        parser.error("--max-weight must be at least 2 (a reweighted edge needs another weight)")
    if args.edges + args.rounds * args.changes > args.nodes * (args.nodes - 1) // 2:
        parser.error("--edges + --rounds * --changes must be at most half the node pairs")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; prints each round's distance changes and checks them."""
    args = _parse(argv)
    rng = random.Random(args.seed)
    graph: dict[tuple[int, int], int] = {}
    flow = dd.Dataflow(workers=args.workers)
    edges_in, roots_in, dists = build(flow)
    changes = _Changes()
    dists.subscribe(changes)
    roots_in.update_at((SOURCE,), time=0)
    every_round = args.edges <= CHECK_EVERY_ROUND_UP_TO
    wrong: list[str] = []
    for t in range(args.rounds):
        if t == 0:
            added = _add(rng, graph, args.edges, args.nodes, args.max_weight)
            removed: list[tuple[int, int, int]] = []
            summary = f"+{len(added)} edges"
        else:
            added, removed, reweighted = _change(rng, graph, args)
            summary = f"+{len(added) - reweighted} -{len(removed) - reweighted} edges, "
            summary += f"{reweighted} reweighted"
        for batch, diff in ((added, 1), (removed, -1)):
            if batch:
                table = pa.Table.from_pylist(
                    [{"src": s, "dst": d, "w": w} for s, d, w in batch], EDGES
                )
                edges_in.update_batch(table, times=t, diffs=diff)
        for session in (edges_in, roots_in):
            session.advance_to(t + 1)
        flow.run_until(t + 1)
        changed = changes.apply()
        print(f"round {t}: {summary}; {len(changed)} nodes whose distance changed")
        for node, old, new in changed[:SHOWN]:
            print(f"  node {node:>5}: {_text(old):>3} -> {_text(new)}")
        if len(changed) > SHOWN:
            print("  ...")
        if every_round or t == args.rounds - 1:
            expected = dijkstra(((s, d, w) for (s, d), w in graph.items()), SOURCE)
            wrong = mismatches(changes.dist, expected)
            if wrong:
                print(f"round {t} differs from Dijkstra: " + "; ".join(wrong[:SHOWN]))
                break
    reached = changes.dist
    far = max(reached.values(), default=0)
    print(f"{len(reached)} of {args.nodes} nodes reached from node {SOURCE}, the farthest at {far}")
    checked = "every round" if every_round else "the last round"
    ok = not wrong
    print(f"distances after {args.rounds} rounds match Dijkstra ({checked}): {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
