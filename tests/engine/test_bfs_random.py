"""``dd.algorithms.bfs`` under random edge changes equals a plain BFS at every time.

Random graphs receive random edge insertions and deletions, each at its own time; the
accumulated ``(node, dist)`` collection at every time must equal a textbook BFS of the graph
at that time (``model.plain_bfs``), and ``flow.log()`` must show that the BFS dataflow never
entered Python while running.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from . import histories as h
from . import model as m
from .conftest import captured_at, ddflow, feed, log_entries, requires_engine

pytestmark = requires_engine


def edge_changes(
    seed: int, nodes: int, initial: int, changes: int
) -> tuple[list[m.Update], list[m.Update]]:
    """Edges (a set at every time) and roots: ``initial`` edges at time 0, then one random
    insertion or deletion at each time ``1..changes``; root 0 at time 0, and root
    ``nodes - 1`` added at a random time and removed later."""
    rng = random.Random(seed)
    edges = h.edge_history(rng, nodes, initial, changes)
    return edges, h.interval_roots(rng, nodes, changes)


def expected_dists(edges: list[m.Update], roots: list[m.Update], t: int) -> m.Counts:
    """``{(node, dist): 1}`` of a plain BFS on the graph and roots at time ``t``."""
    graph = m.accumulate(edges, (t,))
    sources = [r[0] for r in m.accumulate(roots, (t,))]
    return {(n, d): 1 for n, d in m.plain_bfs(graph, sources).items()}


def _run(
    edges: list[m.Update], roots: list[m.Update], changes: int, *, stepwise: bool, batch: bool
) -> tuple[Any, Any]:
    dd = ddflow()
    flow = dd.Dataflow(workers=1)
    edges_in, e = flow.new_input(("src", "dst"))
    roots_in, r = flow.new_input(("node",))
    cap = dd.algorithms.bfs(e, r).capture()
    if stepwise:
        for t in range(changes + 1):
            feed(edges_in, [u for u in edges if u[1] == (t,)], columns=("src", "dst"), batch=batch)
            feed(roots_in, [u for u in roots if u[1] == (t,)], columns=("node",), batch=batch)
            edges_in.advance_to(t + 1)
            roots_in.advance_to(t + 1)
            flow.run_until(t + 1)
    else:
        feed(edges_in, edges, columns=("src", "dst"), batch=batch)
        feed(roots_in, roots, columns=("node",), batch=batch)
        edges_in.close()
        roots_in.close()
        flow.run()
    return flow, cap


@pytest.mark.parametrize(
    ("seed", "nodes", "initial", "changes", "stepwise"),
    [
        (0, 12, 14, 25, True),
        (1, 12, 14, 25, False),
        (2, 20, 30, 40, True),
        (3, 20, 30, 40, False),
        (4, 8, 6, 30, False),
        (5, 30, 30, 30, True),
    ],
)
def test_bfs_equals_plain_bfs_at_every_time(
    seed: int, nodes: int, initial: int, changes: int, stepwise: bool
) -> None:
    edges, roots = edge_changes(seed, nodes, initial, changes)
    flow, cap = _run(edges, roots, changes, stepwise=stepwise, batch=seed % 2 == 1)
    assert [c for c in cap.updates().column_names if c not in ("time", "diff")] == [
        "node",
        "dist",
    ]
    for t in range(changes + 1):
        assert captured_at(cap, (t,), ("node", "dist")) == expected_dists(
            edges, roots, t
        ), f"time {t}"
    entries = log_entries(flow)
    assert entries, "flow.log() is empty"
    in_python = [(e["op"], e["label"]) for e in entries if e["python"]]
    assert not in_python, f"the BFS dataflow entered Python: {in_python[:5]}"
