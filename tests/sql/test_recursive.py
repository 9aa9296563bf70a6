"""WITH RECURSIVE as ``iterate``: transitive closure and reachability over a changing graph
equal DuckDB's answers at every time, BFS distances (a bounded recursion and ``MIN``) equal
``dd.algorithms.bfs``'s, and UNION ALL recursion is refused."""

from __future__ import annotations

import random

import pytest
from tests.sql.harness import check_queries

import ddflow as dd

GRAPH = {"e": {"src": "int64", "dst": "int64"}, "r": {"node": "int64"}}

QUERIES = {
    "closure": (
        "with recursive tc(a, b) as (select src, dst from e "
        "union select tc.a, e.dst from tc join e on tc.b = e.src) select a, b from tc"
    ),
    "reach": (
        "with recursive reach(n) as (select node from r "
        "union select e.dst from reach, e where reach.n = e.src) select n from reach"
    ),
    "reach_filtered_step": (
        "with recursive reach(n) as (select node from r "
        "union select e.dst from reach, e where reach.n = e.src "
        "and e.dst not in (select node from r where node > 3) "
        "and exists (select * from e e2 where e2.src = e.dst)) select n from reach"
    ),
    "reach_joined_twice": (
        "with recursive reach(n) as (select node from r "
        "union select e.dst from reach join e on reach.n = e.src) "
        "select a.n, count(*) as c from reach a join e on a.n = e.src "
        "join reach b on e.dst = b.n group by a.n"
    ),
    "reach_count": (
        "with recursive reach(n) as (select node from r "
        "union select dst from e join reach on e.src = reach.n) "
        "select count(*) as c from reach"
    ),
}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recursive_queries_match_duckdb(seed: int) -> None:
    check_queries(QUERIES, seed=seed, schemas=GRAPH, rows=10)


def test_union_all_recursion_is_refused() -> None:
    flow = dd.Dataflow()
    _, e = flow.new_input({"src": "int64", "dst": "int64"})
    query = (
        "with recursive tc(a, b) as (select src, dst from e "
        "union all select tc.a, e.dst from tc join e on tc.b = e.src) select * from tc"
    )
    with pytest.raises(dd.SqlError, match="UNION ALL need not converge"):
        dd.sql(query, {"e": e})


BFS = """
with recursive hops(node, dist) as (
    select node, 0 from roots
    union
    select edges.dst, hops.dist + 1 from hops join edges on hops.node = edges.src
    where hops.dist < 12
)
select node, min(dist) as dist from hops group by node
"""
"""BFS distances in SQL: every (node, hop count) pair up to a bound (at least the node
count, so every shortest path is in), the least per node."""


@pytest.mark.parametrize("seed", [0, 1])
def test_bfs_in_sql_equals_the_bfs_algorithm_at_every_time(seed: int) -> None:
    rng = random.Random(seed)
    flow = dd.Dataflow()
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64"})
    roots_in, roots = flow.new_input({"node": "int64"})
    by_sql = dd.sql(BFS, {"edges": edges, "roots": roots}).capture()
    by_algorithm = dd.algorithms.bfs(edges, roots).capture()
    live: list[tuple[int, int]] = []
    roots_in.update_at((0,), time=0)
    for time in range(6):
        for _ in range(rng.randint(2, 6)):
            edge = (rng.randint(0, 9), rng.randint(0, 9))
            live.append(edge)
            edges_in.update_at(edge, time=time)
        for _ in range(rng.randint(0, 3)):
            if live:
                edges_in.update_at(live.pop(rng.randrange(len(live))), time=time, diff=-1)
        if time == 3:
            roots_in.update_at((5,), time=time)
        edges_in.advance_to(time + 1)
        roots_in.advance_to(time + 1)
        flow.run_until(time + 1)

        def rows(capture: dd.Capture) -> list[tuple[int, int, int]]:
            table = capture.at(time)  # noqa: B023 (read at once)
            return sorted(
                zip(*(table[c].to_pylist() for c in ("node", "dist", "diff")), strict=False)
            )

        assert rows(by_sql) == rows(by_algorithm), f"time {time}"
        assert rows(by_sql)
