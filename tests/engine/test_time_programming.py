"""Programming with time: ``advance_iteration``, ``delay``, SSSP and prioritized
label propagation.

References are brute force: Dijkstra and union-find on the graph accumulated at each time
(``model.accumulate``), and the definition of ``advance_iteration`` (an update's iteration
coordinate becomes ``max(current, value)``) checked against what ``inspect`` sees.
"""

from __future__ import annotations

import heapq
import random
from collections import defaultdict
from typing import Any

import pytest

from . import histories as h
from . import model as m
from .conftest import captured_at, captured_updates, ddflow, feed, log_entries, requires_engine

pytestmark = requires_engine

# ---------------------------------------------------------------------------------------------
# References


def dijkstra(edges: m.Counts, roots: m.Counts) -> dict[int, int]:
    """Least path weight from any root: ``{node: dist}`` for reached nodes (edges
    ``(src, dst, w)`` with positive count)."""
    adjacency: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (src, dst, w), c in edges.items():
        if c > 0:
            adjacency[src].append((dst, w))
    dist: dict[int, int] = {}
    heap = [(0, r[0]) for r, c in roots.items() if c > 0]
    heapq.heapify(heap)
    while heap:
        d, node = heapq.heappop(heap)
        if node in dist:
            continue
        dist[node] = d
        for nxt, w in adjacency[node]:
            if nxt not in dist:
                heapq.heappush(heap, (d + w, nxt))
    return dist


def union_find_labels(edges: m.Counts) -> dict[int, int]:
    """``{node: least node id of its undirected component}`` for nodes with an edge."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for (src, dst), c in edges.items():
        if c > 0:
            a, b = find(src), find(dst)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {n: find(n) for n in list(parent)}


# ---------------------------------------------------------------------------------------------
# Random histories


def weighted_changes(
    seed: int, nodes: int, initial: int, changes: int, max_w: int
) -> tuple[list[m.Update], list[m.Update]]:
    """``initial`` weighted edges at time 0, then one random insertion or deletion at each
    time ``1..changes``; root 0 from time 0, root ``nodes - 1`` for an interval."""
    rng = random.Random(seed)
    edges = h.edge_history(rng, nodes, initial, changes, max_weight=max_w)
    return edges, h.interval_roots(rng, nodes, changes)


def edge_changes(seed: int, nodes: int, initial: int, changes: int) -> list[m.Update]:
    """Undirected-style random edges ``(src, dst)`` with one change per time."""
    return h.edge_history(random.Random(seed), nodes, initial, changes, delete_p=0.5)


def drive(
    flow: Any, inputs: list[tuple[Any, list[m.Update], tuple[str, ...]]], last: int, stepwise: bool
) -> None:
    """Feeds every input one time at a time (running to each time), or all at once."""
    if stepwise:
        for t in range(last + 1):
            for inp, ups, cols in inputs:
                feed(inp, [u for u in ups if u[1] == (t,)], columns=cols, batch=t % 2 == 0)
                inp.advance_to(t + 1)
            flow.run_until(t + 1)
    else:
        for inp, ups, cols in inputs:
            feed(inp, ups, columns=cols, batch=True)
            inp.close()
        flow.run()


def run_sssp(
    edges: list[m.Update],
    roots: list[m.Update],
    last: int,
    *,
    prioritized: bool,
    stepwise: bool,
    workers: int = 1,
) -> tuple[Any, Any]:
    dd = ddflow()
    flow = dd.Dataflow(workers=workers)
    edges_in, e = flow.new_input(("src", "dst", "w"))
    roots_in, r = flow.new_input(("node",))
    cap = dd.algorithms.sssp(e, r, weight="w", prioritized=prioritized).capture()
    drive(
        flow, [(edges_in, edges, ("src", "dst", "w")), (roots_in, roots, ("node",))], last, stepwise
    )
    return flow, cap


# ---------------------------------------------------------------------------------------------
# SSSP


@pytest.mark.timeout(120)
@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize(
    ("seed", "nodes", "initial", "changes", "max_w", "stepwise", "workers"),
    [
        (0, 12, 20, 25, 10, True, 1),
        (1, 12, 20, 25, 10, False, 1),
        (2, 20, 40, 30, 100, True, 1),
        (3, 20, 40, 30, 3, False, 2),
        (4, 8, 10, 30, 1000, True, 2),
    ],
)
def test_sssp_equals_dijkstra_at_every_time(
    seed: int,
    nodes: int,
    initial: int,
    changes: int,
    max_w: int,
    stepwise: bool,
    workers: int,
    prioritized: bool,
) -> None:
    edges, roots = weighted_changes(seed, nodes, initial, changes, max_w)
    flow, cap = run_sssp(
        edges, roots, changes, prioritized=prioritized, stepwise=stepwise, workers=workers
    )
    for t in range(changes + 1):
        expected = dijkstra(m.accumulate(edges, (t,)), m.accumulate(roots, (t,)))
        got = captured_at(cap, (t,), ("node", "dist"))
        assert got == {(n, d): 1 for n, d in expected.items()}, f"time {t}"
    in_python = [e["label"] for e in log_entries(flow) if e["python"]]
    assert not in_python, f"sssp entered Python: {in_python[:5]}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("prioritized", [False, True])
def test_sssp_batching_invariance(prioritized: bool) -> None:
    """One time per step or the whole history at once: the same consolidated updates."""
    edges, roots = weighted_changes(7, 15, 30, 30, 50)
    _, step_cap = run_sssp(edges, roots, 30, prioritized=prioritized, stepwise=True)
    _, once_cap = run_sssp(edges, roots, 30, prioritized=prioritized, stepwise=False)
    stepped = m.consolidate(captured_updates(step_cap, ("node", "dist")))
    at_once = m.consolidate(captured_updates(once_cap, ("node", "dist")))
    assert sorted(stepped) == sorted(at_once)
    assert stepped, "no output"


@pytest.mark.timeout(120)
def test_prioritized_sssp_uses_fewer_reduce_updates_with_spread_weights() -> None:
    """With weights 1 or 1000 the prioritized form explores short paths first, so its
    ``reduce`` emits fewer changes than the plain form, with the same result."""
    rng = random.Random(11)
    nodes = 60
    distinct = {
        (rng.randrange(nodes), rng.randrange(nodes), rng.choice((1, 1000))) for _ in range(300)
    }
    edges: list[m.Update] = [(e, (0,), 1) for e in sorted(distinct)]
    roots: list[m.Update] = [((0,), (0,), 1)]
    work = {}
    for prioritized in (False, True):
        flow, cap = run_sssp(edges, roots, 0, prioritized=prioritized, stepwise=True)
        expected = dijkstra(m.accumulate(edges, (0,)), m.accumulate(roots, (0,)))
        assert captured_at(cap, (0,), ("node", "dist")) == {(n, d): 1 for n, d in expected.items()}
        work[prioritized] = sum(e["updates_out"] for e in log_entries(flow) if e["op"] == "reduce")
    assert work[True] < work[False], work


# ---------------------------------------------------------------------------------------------
# Label propagation


@pytest.mark.timeout(120)
@pytest.mark.parametrize("prioritized", [False, True])
@pytest.mark.parametrize(
    ("seed", "nodes", "initial", "changes", "stepwise"),
    [(0, 15, 12, 30, True), (1, 15, 12, 30, False), (2, 40, 30, 25, True)],
)
def test_label_propagation_equals_union_find_at_every_time(
    seed: int, nodes: int, initial: int, changes: int, stepwise: bool, prioritized: bool
) -> None:
    dd = ddflow()
    edges = edge_changes(seed, nodes, initial, changes)
    flow = dd.Dataflow(workers=1)
    edges_in, e = flow.new_input(("src", "dst"))
    cap = dd.algorithms.connected_components(e, prioritized=prioritized).capture()
    drive(flow, [(edges_in, edges, ("src", "dst"))], changes, stepwise)
    for t in range(changes + 1):
        expected = union_find_labels(m.accumulate(edges, (t,)))
        got = captured_at(cap, (t,), ("node", "label"))
        assert got == {(n, lab): 1 for n, lab in expected.items()}, f"time {t}"


# ---------------------------------------------------------------------------------------------
# advance_iteration and delay


@pytest.mark.timeout(60)
@pytest.mark.parametrize("with_delay", [False, True])
def test_advance_iteration_sets_max_of_current_and_value(with_delay: bool) -> None:
    """Inside an iterate, every update ``inspect`` sees after ``advance_iteration`` has
    iteration ``max(iteration before, value)``; a body that takes its source in every round
    still reaches the per-key maximum."""
    dd = ddflow()
    flow = dd.Dataflow(workers=1)
    inp, coll = flow.new_input(("k", "v"))
    before: list[tuple[tuple[Any, ...], Any, int]] = []
    after: list[tuple[tuple[Any, ...], Any, int]] = []

    def body(x: Any) -> Any:
        seen = x.concat(coll).inspect(lambda r, t, d: before.append((r, t, d)))
        moved = seen.advance_iteration(dd.col("v"))
        if with_delay:
            moved = moved.delay()
        moved = moved.inspect(lambda r, t, d: after.append((r, t, d)))
        return moved.reduce(by="k", agg=dd.max("v"))

    out = coll.iterate(body).capture()
    rng = random.Random(3)
    history = [((rng.randrange(4), rng.randrange(6)), (t,), 1) for t in range(4) for _ in range(3)]
    feed(inp, history, columns=("k", "v"), batch=True)
    inp.close()
    flow.run()

    def key(u: tuple[tuple[Any, ...], Any, int]) -> tuple[Any, ...]:
        return (tuple(u[0]), tuple(u[1]), u[2])

    expected = sorted(key((r, (t[0], max(t[1], r[1])), d)) for r, t, d in before)
    assert sorted(key(u) for u in after) == expected
    assert expected, "nothing flowed"
    for t in range(4):
        acc = m.accumulate(history, (t,))
        best: dict[int, int] = {}
        for (k, v), c in acc.items():
            if c > 0:
                best[k] = max(best.get(k, v), v)
        assert captured_at(out, (t,), ("k", "v")) == {(k, v): 1 for k, v in best.items()}


@pytest.mark.timeout(60)
def test_delay_preserves_the_collection_at_every_time() -> None:
    dd = ddflow()
    rng = random.Random(5)
    history = [
        ((rng.randrange(5),), (rng.randrange(6), rng.randrange(6)), rng.choice((1, -1, 2)))
        for _ in range(60)
    ]
    flow = dd.Dataflow(workers=1)
    inp, coll = flow.new_input(("x",))
    cap = coll.delay().capture()
    feed(inp, history, columns=("x",), batch=True)
    inp.close()
    flow.run()
    for t in m.grid(2, 5):
        want = {r: c for r, c in m.accumulate(history, t).items() if c != 0}
        assert captured_at(cap, t, ("x",)) == want, f"time {t}"


@pytest.mark.timeout(60)
def test_advance_iteration_errors_name_operator_and_value() -> None:
    dd = ddflow()
    flow = dd.Dataflow(workers=1)
    inp, coll = flow.new_input(("k", "v"))
    with pytest.raises(dd.PlanError, match="advance_iteration@.*iterate body"):
        coll.advance_iteration(dd.col("v"))
    with pytest.raises(dd.errors.ColumnNotFoundError, match="advance_iteration@"):
        coll.iterate(lambda x: x.advance_iteration(dd.col("nope")))
    cap = coll.iterate(lambda x: x.advance_iteration(dd.col("v") - 10)).capture()
    inp.update_at((1, 3), time=0)
    inp.advance_to(1)
    with pytest.raises(
        dd.DdflowError, match=r"advance_iteration@.*col\(\"v\"\) - 10.* = -7 is negative"
    ):
        flow.run_until(1)  # errors as data: the run goes on,
        cap.at(0)  # and reading the output raises DataError

    flow = dd.Dataflow(workers=1)
    inp, coll = flow.new_input(("k", "v"))
    cap = coll.iterate(lambda x: x.advance_iteration("v"), max_iterations=5).capture()
    inp.update_at((1, 7), time=0)
    inp.advance_to(1)
    with pytest.raises(dd.DdflowError, match=r"advance_iteration@.* = 7 .*max_iterations=5"):
        flow.run_until(1)  # errors as data: the run goes on,
        cap.at(0)  # and reading the output raises DataError

    flow = dd.Dataflow(workers=1)
    inp, coll = flow.new_input(("k", "v"))
    cap = coll.iterate(lambda x: x.advance_iteration(dd.col("v") * 0.5)).capture()
    inp.update_at((1, 7), time=0)
    inp.advance_to(1)
    with pytest.raises(dd.DdflowError, match=r"advance_iteration@.*int64.*float64"):
        flow.run_until(1)  # errors as data: the run goes on,
        cap.at(0)  # and reading the output raises DataError
