"""Graph algorithms on edge collections ``(src, dst)``: BFS distances, reachability, degrees,
connected components.

Each is written with column expressions and built-in operators only (join, reduce, distinct,
count, iterate), so the engine runs it without entering Python. Edges are directed; repeated
edges are allowed.
"""

from __future__ import annotations

from collections.abc import Sequence

from ddflow.aggregates import min as agg_min
from ddflow.collection import Collection
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.expr import col, lit

__all__ = ["bfs", "reachability", "degrees", "connected_components"]


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


def connected_components(edges: Collection, max_iterations: int | None = None) -> Collection:
    """Each node with an edge, labelled by the least node id in its (undirected) component:
    columns ``(node, label)``. Label propagation: every node repeatedly takes the least label
    among itself and its neighbours."""
    _require(edges, ("src", "dst"), "connected_components edges")
    forward = edges.select("src", "dst")
    both = forward.concat(forward.select(src=col("dst"), dst=col("src")))
    labels = both.select(node=col("src"), label=col("src"))

    def step(current: Collection) -> Collection:
        return (
            current.join(both, left_on="node", right_on="src")
            .select(node=col("dst"), label=col("label"))
            .concat(labels)
            .reduce(by="node", agg=agg_min("label"))
        )

    return labels.iterate(step, max_iterations=max_iterations)
