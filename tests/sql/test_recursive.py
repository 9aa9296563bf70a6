"""WITH RECURSIVE as ``iterate``: transitive closure and reachability over a changing graph
equal DuckDB's answers at every time; UNION ALL recursion is refused."""

from __future__ import annotations

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
