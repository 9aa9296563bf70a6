"""A four-edge BFS example gives exactly its expected distance changes, whether its updates
are preloaded, fed one time at a time, or fed through ``insert`` / ``remove`` / ``close``.

Edges ``(0,3)+1@0, (0,2)+1@5, (2,3)+1@10, (0,3)-1@11`` and root 0 at time 0: the distance
multiset changes by ``(0,+1,@0) (1,+1,@0) (1,+1,@5) (1,-1,@11) (2,+1,@11)``.
"""

from __future__ import annotations

from typing import Any

import pytest

from . import model as m
from .conftest import captured_at, captured_updates, ddflow, feed, requires_engine

pytestmark = requires_engine

SEED_EDGES: list[m.Update] = [
    ((0, 3), (0,), 1),
    ((0, 2), (5,), 1),
    ((2, 3), (10,), 1),
    ((0, 3), (11,), -1),
]
EXPECTED = [
    ((0,), (0,), 1),
    ((1,), (0,), 1),
    ((1,), (5,), 1),
    ((1,), (11,), -1),
    ((2,), (11,), 1),
]


def _build(workers: int = 1) -> tuple[Any, Any, Any, dict[str, Any]]:
    dd = ddflow()
    flow = dd.Dataflow(workers=workers)
    edges_in, edges = flow.new_input(("src", "dst"))
    roots_in, roots = flow.new_input(("node",))
    dists = dd.algorithms.bfs(edges, roots)
    caps = {
        "multiset": dists.select(dist=dd.col("dist")).consolidate().capture(),
        "counts": dists.count(by="dist").capture(),
        "dists": dists.capture(),
    }
    return flow, edges_in, roots_in, caps


def _check(caps: dict[str, Any]) -> None:
    assert captured_updates(caps["multiset"], ("dist",)) == EXPECTED
    table = caps["multiset"].updates()
    assert table.column_names == ["dist", "time", "diff"]
    assert str(table.schema.field("time").type) == "int64"
    counts = {0: {0: 1, 1: 1}, 5: {0: 1, 1: 2}, 10: {0: 1, 1: 2}, 11: {0: 1, 1: 1, 2: 1}}
    for t in range(12):
        expected = counts[max(k for k in counts if k <= t)]
        got = captured_at(caps["counts"], (t,), ("dist", "count"))
        assert got == {(d, c): 1 for d, c in expected.items()}, f"count(by=dist) at {t}"
    assert captured_at(caps["dists"], (11,), ("node", "dist")) == {(0, 0): 1, (2, 1): 1, (3, 2): 1}
    assert captured_at(caps["dists"], (10,), ("node", "dist")) == {(0, 0): 1, (2, 1): 1, (3, 1): 1}


@pytest.mark.parametrize("batch", [False, True])
def test_four_edge_example_preloaded(batch: bool) -> None:
    flow, edges_in, roots_in, caps = _build()
    feed(roots_in, [((0,), (0,), 1)], columns=("node",), batch=batch)
    feed(edges_in, SEED_EDGES, columns=("src", "dst"), batch=batch)
    edges_in.advance_to(12)
    roots_in.advance_to(12)
    flow.run_until(12)
    _check(caps)


def test_four_edge_example_one_time_at_a_time() -> None:
    flow, edges_in, roots_in, caps = _build()
    roots_in.update_at((0,), time=0, diff=1)
    for t in range(12):
        for record, time, diff in SEED_EDGES:
            if time == (t,):
                edges_in.update_at(record, time=t, diff=diff)
        edges_in.advance_to(t + 1)
        roots_in.advance_to(t + 1)
        flow.run_until(t + 1)
        got = captured_updates(caps["multiset"], ("dist",))
        assert got == [u for u in EXPECTED if u[1][0] <= t], f"after run_until({t + 1})"
    _check(caps)


def test_four_edge_example_insert_remove_and_close() -> None:
    flow, edges_in, roots_in, caps = _build()
    roots_in.insert((0,))
    edges_in.insert((0, 3))
    edges_in.advance_to(5)
    edges_in.update((0, 2), 1)
    edges_in.advance_to(10)
    edges_in.insert((2, 3))
    edges_in.advance_to(11)
    edges_in.remove((0, 3))
    edges_in.close()
    roots_in.close()
    flow.run()
    _check(caps)
