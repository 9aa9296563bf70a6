"""SELECT / WHERE / GROUP BY / HAVING / DISTINCT, aliases and expressions, against DuckDB
under random insert / delete batches (:mod:`tests.sql.harness`)."""

from __future__ import annotations

import pytest
from tests.sql.harness import check_queries

QUERIES = {
    "star": "select * from t",
    "columns": "select k, s as name, x from t",
    "qualified": "select t.k, t.x as xx from t where t.x is not null",
    "alias_table": "select a.k, a.s from t as a where a.k > 1",
    "where_and_or": "select k, x from t where (x > 1 and k < 4) or s = 'a'",
    "where_not": "select k, x from t where not (x > 2)",
    "null_logic": "select k, (x > 1) or (f > 1.0) as o, (x > 1) and (f > 1.0) as a from t",
    "is_null": "select k, x is null as xn, s is not null as sn from t",
    "arith": "select k, x + k as a, x - 1 as b, x * 2 as c, -x as n, x % 3 as m from t",
    "int_div": "select k, x / 4 as q from t where x is not null",
    "float_arith": "select k, f * 2 + x as r from t",
    "compare": "select k, x = k as e, x <> k as ne, x <= k as le, x >= k as ge from t",
    "between": "select k, x from t where x between 0 and 3",
    "not_between": "select k, x from t where x not between 0 and 3",
    "in_list": "select k, x from t where x in (1, 2, 5)",
    "not_in_list": "select k, s from t where s not in ('a', 'b')",
    "like": "select k, s from t where s like 'a%'",
    "not_like": "select k, s from t where s not like '%b'",
    "like_underscore": "select k, s from t where s like '_b'",
    "case": "select k, case when x > 2 then 'hi' when x < 0 then 'lo' else 'mid' end as c from t",
    "case_simple": "select k, case k when 1 then 10 when 2 then 20 else 0 end as c from t",
    "case_no_else": "select k, case when x > 0 then 1 end as c from t",
    "case_no_else_column": "select k, case when x > 0 then f end as c from t",
    "sum_case_no_else": "select k, sum(case when s = 'a' then x end) as c from t group by k",
    "nullif_columns": "select k, nullif(x, k) as c from t",
    "coalesce": "select k, coalesce(x, k, 0) as c, coalesce(s, 'none') as cs from t",
    "cast": "select k, cast(x as double) as xf, cast(k as varchar) as ks, f::int as fi from t",
    "nullif": "select k, nullif(x, 2) as n from t",
    "strings": "select k, upper(s) as u, lower(s) as l, length(s) as n, s || '!' as e from t",
    "distinct_from": ("select k, x is distinct from k as d, x is not distinct from k as nd from t"),
    "text_tests": (
        "select k, starts_with(s, 'a') as sw, ends_with(s, 'b') as ew, contains(s, 'b') as c, "
        "left(s, 1) as l, right(s, 2) as r, right(s, 0) as r0 from t"
    ),
    "concat_function": "select k, concat(s, '-', x, '-', k) as c from t",
    "date_trunc": (
        "select k, date_trunc('month', d) as m, date_trunc('year', d) as y, "
        "date_trunc('quarter', d) as q from t"
    ),
    "substring": "select k, substring(s, 1, 2) as p, substring(s from 2) as q from t",
    "extract": "select k, extract(year from d) as y, extract(month from d) as m from t",
    "date_literal": "select k, d from t where d >= date '1994-06-01' and d < date '1995-01-01'",
    "date_interval": "select k, d from t where d < date '1994-01-01' + interval '6' month",
    "date_interval_day": "select k, d from t where d > date '1995-12-31' - interval '90' day",
    "date_col_interval": "select k, d + interval 1 month as m from t",
    "distinct": "select distinct s from t",
    "distinct_many": "select distinct k, s from t",
    "group": "select k, count(*) as n, sum(x) as sx, min(s) as lo, max(x) as hi from t group by k",
    "group_expr": "select x % 2 as parity, count(*) as n from t group by x % 2",
    "group_alias": "select x % 2 as parity, count(*) as n from t group by parity",
    "group_ordinal": "select s, count(x) as n from t group by 1",
    "group_no_agg": "select k from t group by k",
    "count_col": "select k, count(x) as nx, count(s) as ns from t group by k",
    "count_distinct": "select k, count(distinct s) as ds from t group by k",
    "sum_distinct": (
        "select k, sum(distinct x) as sd, avg(distinct x) as ad, count(*) as n from t group by k"
    ),
    "sum_distinct_only": "select s, sum(distinct x % 3) as sd from t group by s",
    "sum_distinct_global": "select sum(distinct x) as sd, count(*) as n from t",
    "avg": "select k, avg(x) as ax, avg(f) as af from t group by k",
    "sum_expr": "select s, sum(x * k + 1) as e from t group by s",
    "agg_of_case": "select k, sum(case when x > 1 then 1 else 0 end) as big from t group by k",
    "agg_arith": "select k, sum(x) + count(*) as z, max(x) - min(x) as spread from t group by k",
    "having": "select k, count(*) as n from t group by k having count(*) > 1",
    "having_other_agg": "select k from t group by k having sum(x) > 2",
    "having_alias": "select k, count(*) as n from t group by k having n > 1",
    "null_compare": "select k, x <> null as c from t where k = null or x > 2",
    "null_arith_case": "select k, case when x > 1 then null else 2 end as c from t",
    "global": "select count(*) as n, sum(x) as sx, max(s) as ms, count(distinct k) as dk from t",
    "global_filtered": "select count(*) as n, sum(f) as sf from t where k is not null",
    "key_expr_reuse": "select k + 1 as k1, count(*) as n from t group by k + 1",
    "order_ignored": "select k, x from t order by x desc",
    "unaliased_names": (
        "select x + 1, x > 1, -x, upper(s), cast(x as double), coalesce(x, 0), x is null, "
        "x is not null, x between 1 and 2, x in (1, 2), s like 'a%', s not like 'a%', 1, 'a', "
        "t.x, x * (k + 1), x % 2, x / 2, (x = k) or (k < 2) from t"
    ),
    "unaliased_aggregates": (
        "select k, count(*), sum(x), avg(x) + 1, count(distinct x), count(s), min(s) "
        "from t group by k"
    ),
    "self_table_twice": "select a.k, b.x from t a, t b where a.k = b.k and a.x < b.x",
}


@pytest.mark.parametrize("seed", [0, 1])
def test_select_queries_match_duckdb(seed: int) -> None:
    check_queries(QUERIES, seed=seed)
