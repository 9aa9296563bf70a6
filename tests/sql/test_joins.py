"""Joins (inner, comma, LEFT / RIGHT / FULL with ON and USING), set operations and WITH,
against DuckDB under random insert / delete batches (:mod:`tests.sql.harness`)."""

from __future__ import annotations

import pytest
from tests.sql.harness import check_queries

JOINS = {
    "inner_on": "select t.k, t.x, u.y from t join u on t.k = u.k",
    "inner_where": "select t.k, x, y from t, u where t.k = u.k and y > x",
    "inner_expr_key": "select t.k, u.y from t join u on t.x + 1 = u.y",
    "inner_two_keys": "select t.k, t.s from t join u on t.k = u.k and t.s = u.s",
    "three_way": "select t.k, u.y, v.w from t, u, v where t.k = u.k and u.y = v.x",
    "three_way_chain": "select t.s, v.w from t join u on t.k = u.k join v on v.k = u.k",
    "cross": "select t.k as a, v.k as b from t, v where t.x > 4 and v.x > 4",
    "non_equi": "select t.k, u.k as uk from t join u on t.k = u.k and t.x < u.y",
    "or_common": (
        "select t.k, u.y from t, u where (t.k = u.k and t.x > 1) or (t.k = u.k and u.y < 2)"
    ),
    "left_on": "select t.k, t.x, u.y from t left join u on t.k = u.k",
    "left_on_filter": "select t.k, t.x, u.y from t left join u on t.k = u.k and u.y > 1",
    "left_on_left_filter": "select t.k, t.x, u.y from t left join u on t.k = u.k and t.x > 1",
    "right_on_right_filter": (
        "select t.x, u.k, u.y from t right join u on t.k = u.k and u.y > 1 and t.s <> 'a'"
    ),
    "left_on_both_filters": (
        "select t.k, t.s, u.y from t left join u on t.k = u.k and t.s like 'a%' and u.y < 4"
    ),
    "left_where": "select t.k, u.y from t left join u on t.k = u.k where u.y is null",
    "right_on": "select t.x, u.k, u.y from t right join u on t.k = u.k",
    "full_on": "select t.k as tk, u.k as uk, t.x, u.y from t full outer join u on t.k = u.k",
    "left_using": "select k, t.x, w from t left join v using (k)",
    "using_star": "select * from u left join v using (k)",
    "using_qualified_star": "select v.*, u.y from u left join v using (k)",
    "inner_using": "select k, t.x, v.w from t join v using (k)",
    "full_using": "select k, x, y from t full join u using (k)",
    "right_using": "select k, y from t right join u using (k)",
    "left_count": "select t.k, count(u.y) as n from t left join u on t.k = u.k group by t.k",
    "derived": "select a.k, a.n from (select k, count(*) as n from t group by k) a where a.n > 1",
    "derived_join": (
        "select a.k, b.total from (select k from t where x > 0) a "
        "join (select k, sum(y) as total from u group by k) b on a.k = b.k"
    ),
    "table_column_alias": "select p, q from t as z(p, q) where q > 0",
}

SETS = {
    "union_all": "select k, s from t union all select k, s from u",
    "union": "select k, s from t union select k, s from u",
    "except": "select k from t except select k from u",
    "intersect": "select k, s from t intersect select k, s from u",
    "union_three": "select k from t union select k from u union all select k from v",
    "except_all": "select k, s from t except all select k, s from u",
    "intersect_all": "select k from t intersect all select k from u",
    "union_names_left": "select x as val from t union select y from u",
}

WITH = {
    "with": "with a as (select k, sum(x) as sx from t group by k) select * from a where sx > 1",
    "with_two": (
        "with a as (select k, x from t where x > 0), b as (select k, count(*) as n from a "
        "group by k) select a.k, a.x, b.n from a join b on a.k = b.k"
    ),
    "with_twice": (
        "with a as (select k, max(x) as m from t group by k) "
        "select a1.k, a2.k as k2 from a a1, a a2 where a1.m = a2.m"
    ),
    "with_columns": "with a(kk, xx) as (select k, x from t) select kk, xx from a",
}


@pytest.mark.parametrize("seed", [0, 3])
def test_joins_match_duckdb(seed: int) -> None:
    check_queries(JOINS, seed=seed)


@pytest.mark.parametrize("seed", [0, 4])
def test_set_operations_match_duckdb(seed: int) -> None:
    check_queries(SETS, seed=seed)


@pytest.mark.parametrize("seed", [0, 5])
def test_with_matches_duckdb(seed: int) -> None:
    check_queries(WITH, seed=seed)
