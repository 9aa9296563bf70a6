"""Arrangements across dataflows: trace handles and ``import_trace``.

A BFS dataflow attached to a live, already-updated edge trace must produce, from the attach
time on, exactly what a BFS fed the whole history from the start produces (and what a plain
BFS of the graph gives); trace handles hold back compaction until every one is released.
"""

from __future__ import annotations

import gc
import random
from typing import Any

import pytest

from . import histories as h
from . import model as m
from .conftest import captured_at, ddflow, feed, requires_engine

pytestmark = requires_engine


def edge_history(seed: int, nodes: int, initial: int, changes: int) -> list[m.Update]:
    """``initial`` random edges at time 0, then one insertion or deletion per time."""
    return h.edge_history(random.Random(seed), nodes, initial, changes)


def bfs_on(edges: Any, roots: Any) -> Any:
    """BFS distances ``(node, dist)`` with ``edges`` an arrangement keyed by ``src``."""
    dd = ddflow()
    nodes = roots.select("node", dist=dd.lit(0))

    def step(dists: Any) -> Any:
        return (
            dists.join(edges, left_on="node", right_on="src")
            .select(node=dd.col("dst"), dist=dd.col("dist") + 1)
            .concat(nodes)
            .reduce(by="node", agg=dd.min("dist"))
        )

    return nodes.iterate(step)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("seed", "attach_at", "workers", "handle_frontier"),
    [(0, 10, 1, False), (1, 15, 1, True), (2, 8, 2, False), (3, 20, 2, True)],
)
def test_bfs_attached_to_live_trace_equals_bfs_from_scratch(
    seed: int, attach_at: int, workers: int, handle_frontier: bool
) -> None:
    dd = ddflow()
    changes = 30
    edges = edge_history(seed, 15, 20, changes)

    # The live dataflow: edges arranged by src (with a consumer of its own), run to attach_at.
    live = dd.Dataflow(workers=workers)
    edges_in, e = live.new_input(("src", "dst"))
    arr = e.arrange_by_key(on="src")
    degrees = arr.count().capture()
    trace = arr.trace()
    for t in range(attach_at):
        feed(edges_in, [u for u in edges if u[1] == (t,)], columns=("src", "dst"))
        edges_in.advance_to(t + 1)
        live.run_until(t + 1)
    if handle_frontier:
        trace.set_frontier(attach_at)
        feed(edges_in, [u for u in edges if u[1] == (attach_at,)], columns=("src", "dst"))
        edges_in.advance_to(attach_at + 1)
        live.run_until(attach_at)

    # Attached later: BFS over the imported trace, roots from attach_at on.
    attached = dd.Dataflow(workers=workers)
    roots_in, roots = attached.new_input(("node",))
    got = bfs_on(attached.import_trace(trace), roots).capture()

    # Reference dataflow fed the whole history from the start.
    scratch = dd.Dataflow(workers=1)
    s_edges_in, s_e = scratch.new_input(("src", "dst"))
    s_roots_in, s_roots = scratch.new_input(("node",))
    want = bfs_on(s_e.arrange_by_key(on="src"), s_roots).capture()
    feed(s_edges_in, edges, columns=("src", "dst"), batch=True)
    s_roots_in.update_at((0,), time=attach_at)
    s_edges_in.close()
    s_roots_in.close()
    scratch.run()

    roots_in.update_at((0,), time=attach_at)
    start = attach_at + 1 if handle_frontier else attach_at
    for t in range(start, changes + 1):
        feed(edges_in, [u for u in edges if u[1] == (t,)], columns=("src", "dst"))
        edges_in.advance_to(t + 1)
        roots_in.advance_to(t + 1)
        (attached if t % 2 else live).run_until(t + 1)

    for t in range(attach_at, changes + 1):
        graph = m.accumulate(edges, (t,))
        plain = {(n, d): 1 for n, d in m.plain_bfs(graph, [0]).items()}
        assert captured_at(got, (t,), ("node", "dist")) == plain, f"time {t}"
        assert captured_at(want, (t,), ("node", "dist")) == plain, f"time {t}"
    # The live dataflow's own consumer is unaffected.
    for t in range(changes + 1):
        counts: dict[int, int] = {}
        for (src, _), c in m.accumulate(edges, (t,)).items():
            counts[src] = counts.get(src, 0) + c
        expect = {(s, c): 1 for s, c in counts.items() if c}
        assert captured_at(degrees, (t,), ("src", "count")) == expect, f"time {t}"


@pytest.mark.timeout(120)
def test_shared_trace_compacts_only_after_every_handle_is_released() -> None:
    """Two dataflows share one trace; it keeps every update while any handle holds it at
    time 0 (one closed, one dropped, one still held by the attached dataflow), and compacts
    once the last is released."""
    dd = ddflow()
    live = dd.Dataflow()
    edges_in, e = live.new_input(("src", "dst"))
    arr = e.arrange_by_key(on="src")
    _ = arr.count().probe()
    mine = arr.trace()
    dropped = arr.trace()
    theirs = arr.trace()
    other = dd.Dataflow()
    other_counts = other.import_trace(theirs).count().capture()

    def churn(start: int, rounds: int) -> int:
        """Inserts and removes the same few edges, one time each; returns the next time."""
        t = start
        for r in range(rounds):
            edges_in.update_at((r % 5, r % 7), time=t, diff=1)
            edges_in.update_at((r % 5, r % 7), time=t + 1, diff=-1)
            t += 2
            edges_in.advance_to(t)
            (other if r % 2 else live).run_until(t)
        return t

    t = churn(0, 60)
    held = mine.stored_updates()
    assert held >= 120, held  # every update kept: the handles sit at time 0
    mine.close()
    del dropped
    gc.collect()
    t = churn(t, 20)
    assert mine.stored_updates() >= held + 40  # still held by the other dataflow's handle
    theirs.close()
    t = churn(t, 20)
    assert mine.stored_updates() < held // 4, mine.stored_updates()
    # The attached dataflow saw the live trace: every edge count ends at zero.
    assert captured_at(other_counts, (t - 1,), ("src", "count")) == {}
    assert other_counts.updates().num_rows > 0


@pytest.mark.timeout(60)
def test_trace_handle_and_import_errors() -> None:
    dd = ddflow()
    live = dd.Dataflow(workers=1)
    edges_in, e = live.new_input(("src", "dst"))
    arr = e.arrange_by_key(on="src")
    trace = arr.trace()
    trace.set_frontier(3)
    with pytest.raises(dd.PlanError, match="back"):
        trace.set_frontier(2)
    with pytest.raises(dd.PlanError, match="own"):
        live.import_trace(trace)
    with pytest.raises(dd.PlanError, match="workers"):
        dd.Dataflow(workers=2).import_trace(trace)
    other = dd.Dataflow()
    imported = other.import_trace(trace)
    with pytest.raises(dd.PlanError, match="keyed by"):
        other.new_input(("dst", "x"))[1].join(imported, left_on="dst", right_on="dst")
    with pytest.raises(dd.PlanError, match="imported"):
        imported.as_collection()
    closed = arr.trace()
    closed.close()
    with pytest.raises(dd.PlanError, match="closed"):
        dd.Dataflow().import_trace(closed)
    inner = e.iterate(lambda x: x.arrange_by_key(on="src").as_collection())
    assert inner.columns == ("src", "dst")
