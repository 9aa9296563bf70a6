"""Graph algorithms on edge collections ``(src, dst)``: BFS distances, weighted shortest
paths, reachability, degrees, connected components.

Each is written with column expressions and built-in operators only (join, reduce, distinct,
count, iterate, advance_iteration, delay), so the engine runs it without entering Python.
Edges are directed; repeated edges are allowed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ddflow.aggregates import min as agg_min
from ddflow.collection import Collection, enter_collection
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.expr import Expr, col, lit

__all__ = ["bfs", "sssp", "reachability", "degrees", "connected_components"]

LABEL_PRIORITY_SPREAD = 256
"""Iterations between label size classes in prioritized label propagation (as in
differential-dataflow's ``propagate_at``): labels of bit length ``b`` start at iteration
``256 * b``."""


def _require(coll: Collection, columns: Sequence[str], what: str) -> None:
    """Checks that ``coll`` has the columns an algorithm reads."""
    if not isinstance(coll, Collection):
        raise PlanError(f"{what}: expected a Collection, got {coll!r}")
    missing = [c for c in columns if c not in coll.columns]
    if missing:
        raise ColumnNotFoundError(
            f"{what}: needs columns {list(columns)}, the collection has {list(coll.columns)}"
        )


def bfs(edges: Collection, roots: Collection, max_iterations: int | None = None) -> Collection:
    """Hop distance from the nearest root to every reachable node: columns ``(node, dist)``.

    ``edges`` has columns ``src``, ``dst``; ``roots`` has ``node`` (distance 0).
    """
    _require(edges, ("src", "dst"), "bfs edges")
    _require(roots, ("node",), "bfs roots")
    nodes = roots.select("node", dist=lit(0))

    def step(dists: Collection) -> Collection:
        return (
            dists.join(edges, left_on="node", right_on="src")
            .select(node=col("dst"), dist=col("dist") + 1)
            .concat(nodes)
            .reduce(by="node", agg=agg_min("dist"))
        )

    return nodes.iterate(step, max_iterations=max_iterations)


def sssp(
    edges: Collection,
    roots: Collection,
    weight: str = "w",
    prioritized: bool = True,
) -> Collection:
    """Least total weight of a path from any root to every reachable node: columns
    ``(node, dist)``.

    ``edges`` has columns ``src``, ``dst`` and ``weight`` (int64, non-negative); ``roots``
    has ``node`` (distance 0). Each iteration relaxes every edge from the current distances
    and keeps the least proposal per node. ``prioritized`` moves each proposal to iteration
    ``dist`` (``advance_iteration``) and bundles held proposals by iteration (``delay``), so
    that, as in Dijkstra's algorithm, short distances settle before long ones are explored;
    the result is the same either way. A negative distance raises ``DdflowError`` from the
    ``advance_iteration`` operator when ``prioritized``; without it, a negative cycle never
    converges.
    """
    _require(edges, ("src", "dst", weight), "sssp edges")
    _require(roots, ("node",), "sssp roots")
    nodes = roots.select("node", dist=lit(0))
    weighted = edges.select("src", "dst", w=col(weight))

    def step(dists: Collection) -> Collection:
        proposals = (
            dists.join(weighted, left_on="node", right_on="src")
            .select(node=col("dst"), dist=col("dist") + col("w"))
            .concat(nodes)
        )
        if prioritized:
            proposals = proposals.advance_iteration(col("dist")).delay()
        return proposals.reduce(by="node", agg=agg_min("dist"))

    return nodes.iterate(step)


def reachability(
    edges: Collection, roots: Collection, max_iterations: int | None = None
) -> Collection:
    """Every node reachable from a root (roots included): column ``(node,)``."""
    _require(edges, ("src", "dst"), "reachability edges")
    _require(roots, ("node",), "reachability roots")
    nodes = roots.select("node")

    def step(reached: Collection) -> Collection:
        return (
            reached.join(edges, left_on="node", right_on="src")
            .select(node=col("dst"))
            .concat(nodes)
            .distinct()
        )

    return nodes.iterate(step, max_iterations=max_iterations)


def degrees(edges: Collection, direction: str = "out") -> Collection:
    """Number of edges per node (``"out"``: by ``src``, ``"in"``: by ``dst``), counting
    repeats: columns ``(node, degree)``; nodes without edges are absent."""
    _require(edges, ("src", "dst"), "degrees edges")
    if direction not in ("out", "in"):
        raise PlanError(f"degrees: direction must be 'out' or 'in', got {direction!r}")
    end = "src" if direction == "out" else "dst"
    return edges.count(by=end).select(node=col(end), degree=col("count"))


def _bit_length(x: Expr) -> Expr:
    """``x.bit_length()`` for int64 ``x >= 0`` (0 for negative ``x``), as a balanced sum of
    comparisons."""
    terms = [(x >= lit(1 << k)).cast("int64") for k in range(63)]
    while len(terms) > 1:
        terms = [a + b for a, b in zip(terms[::2], terms[1::2], strict=False)] + (
            [terms[-1]] if len(terms) % 2 else []
        )
    return terms[0]


def connected_components(
    edges: Collection, max_iterations: int | None = None, prioritized: bool = False
) -> Collection:
    """Each node with an edge, labelled by the least node id in its (undirected) component:
    columns ``(node, label)``. Label propagation: every node repeatedly takes the least label
    among itself and its neighbours.

    ``prioritized`` (int64 node ids) starts small labels first: a node's own label enters
    at iteration ``256 * label.bit_length()`` (``advance_iteration``), so small labels
    spread before large ones that they would overwrite anyway (differential-dataflow's
    ``propagate_at``). The result is the same; ``max_iterations`` must then exceed
    ``256 * 63`` or be None.
    """
    _require(edges, ("src", "dst"), "connected_components edges")
    forward = edges.select("src", "dst")
    both = forward.concat(forward.select(src=col("dst"), dst=col("src")))
    labels = both.select(node=col("src"), label=col("src"))
    if prioritized:
        spread = lit(LABEL_PRIORITY_SPREAD)
        ranked = labels.select("node", "label", prio=_bit_length(col("label")) * spread)

        def prioritized_step(current: Collection) -> Collection:
            inner = enter_collection(ranked, current.scope, "connected_components (seeds)")
            seeds = inner.advance_iteration(col("prio")).delay().select("node", "label")
            return (
                current.join(both, left_on="node", right_on="src")
                .select(node=col("dst"), label=col("label"))
                .concat(seeds)
                .reduce(by="node", agg=agg_min("label"))
            )

        start = labels.filter(lit(False))
        return start.iterate(prioritized_step, max_iterations=max_iterations)

    def step(current: Collection) -> Collection:
        return (
            current.join(both, left_on="node", right_on="src")
            .select(node=col("dst"), label=col("label"))
            .concat(labels)
            .reduce(by="node", agg=agg_min("label"))
        )

    return labels.iterate(step, max_iterations=max_iterations)
