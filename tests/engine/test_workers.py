"""``workers=1, 2, 4`` produce identical outputs.

The sharded engine must give the same consolidated ``updates()`` table (same rows, same order,
same column types) as one worker, for the BFS workload and for operators whose state is keyed
(joins, reduces, iterate), which are the ones sharding can get wrong.
"""

from __future__ import annotations

from typing import Any

import pytest

from . import model as m
from .conftest import (
    assert_matches_model,
    captured_at,
    ddflow,
    random_graph,
    requires_engine,
    sliding_window,
)
from .test_bfs_random import edge_changes, expected_dists
from .test_operators_vs_model import CASES, MAX_TIME, run_case

pytestmark = requires_engine

WORKERS = (1, 2, 4)
KEYED = (
    "join_on",
    "semijoin",
    "antijoin",
    "reduce_min",
    "reduce_python",
    "count_by",
    "distinct",
    "threshold",
    "chain_count_join_filter",
    "iterate_label_propagation",
)


def _bfs_tables(workers: int, updates: list[m.Update], rounds: int) -> dict[str, Any]:
    dd = ddflow()
    flow = dd.Dataflow(workers=workers)
    edges_in, edges = flow.new_input(("src", "dst"))
    roots_in, roots = flow.new_input(("node",))
    dists = dd.algorithms.bfs(edges, roots)
    caps = {
        "dists": dists.capture(),
        "multiset": dists.select(dist=dd.col("dist")).consolidate().capture(),
        "counts": dists.count(by="dist").capture(),
    }
    roots_in.update_at((0,), time=0, diff=1)
    for record, t, diff in updates:
        edges_in.update_at(record, time=t[0], diff=diff)
    edges_in.advance_to(rounds + 1)
    roots_in.advance_to(rounds + 1)
    flow.run_until(rounds + 1)
    return {name: cap.updates() for name, cap in caps.items()} | {"_cap": caps["dists"]}


def test_bfs_sliding_window_same_for_all_workers() -> None:
    rounds = 10
    updates = sliding_window(random_graph(3, 100, 100 + rounds), 100, rounds)
    results = {w: _bfs_tables(w, updates, rounds) for w in WORKERS}
    for w in WORKERS[1:]:
        for name in ("dists", "multiset", "counts"):
            assert results[w][name].equals(results[1][name]), f"workers={w}: {name} differs"
    for t in range(rounds + 1):
        graph = m.accumulate(updates, (t,))
        expected = {(n, d): 1 for n, d in m.plain_bfs(graph, [0]).items()}
        assert captured_at(results[4]["_cap"], (t,), ("node", "dist")) == expected


@pytest.mark.parametrize("workers", [2, 4])
def test_bfs_random_changes_with_workers(workers: int) -> None:
    edges, roots = edge_changes(11, 16, 20, 30)
    dd = ddflow()
    flow = dd.Dataflow(workers=workers)
    edges_in, e = flow.new_input(("src", "dst"))
    roots_in, r = flow.new_input(("node",))
    cap = dd.algorithms.bfs(e, r).capture()
    for t in range(31):
        for rec, time, diff in edges:
            if time == (t,):
                edges_in.update_at(rec, time=t, diff=diff)
        for rec, time, diff in roots:
            if time == (t,):
                roots_in.update_at(rec, time=t, diff=diff)
        edges_in.advance_to(t + 1)
        roots_in.advance_to(t + 1)
        if t % 3 == 0:
            flow.run_until(t + 1)
    flow.run_until(31)
    for t in range(31):
        assert captured_at(cap, (t,), ("node", "dist")) == expected_dists(edges, roots, t)


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("name", KEYED)
def test_keyed_operators_same_for_all_workers(name: str, dims: int) -> None:
    case = next(c for c in CASES if c.name == name)
    tables = {}
    for w in WORKERS:
        cap, res = run_case(case, dims, seed=1, workers=w)
        assert_matches_model(cap, res, upto=MAX_TIME[dims], ordered_columns=case.ordered)
        tables[w] = cap.updates()
    for w in WORKERS[1:]:
        assert tables[w].equals(tables[1]), f"workers={w} differs from workers=1"
