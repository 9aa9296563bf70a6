"""``ORDER BY ... LIMIT / OFFSET`` (a maintained top-k) and ``ROW_NUMBER`` / ``RANK`` /
``DENSE_RANK`` windows with a filter on the rank, against DuckDB after random insert / delete
batches with nulls, ties and repeated rows; and the tie rule ddflow documents, step by step.

SQL leaves the order of rows tied in the ``ORDER BY`` keys unspecified; ddflow orders them by
the whole row (every column ascending, nulls last). DuckDB's query of each pair spells that
rule out (the extra ``ORDER BY`` items) so that both answers are determined."""

from __future__ import annotations

import pytest
from tests.sql.harness import check_queries

import ddflow as dd

pytestmark = pytest.mark.timeout(120)

TIE_T = "k asc nulls last, x asc nulls last, f asc nulls last, s asc nulls last, d asc nulls last"
"""Every column of ``t`` in order: the tie rule over ``select *`` rows."""


def _tied(query: str, n: int) -> tuple[str, str]:
    """``query`` and DuckDB's text with its ``n`` outputs as tie-breakers (before the
    ``LIMIT`` / ``OFFSET``)."""
    cut = min(i for i in (query.find(" limit"), query.find(" offset")) if i >= 0)
    ties = ", ".join(f"{i} asc nulls last" for i in range(1, n + 1))
    return query, f"{query[:cut]}, {ties}{query[cut:]}"


TOP_K: dict[str, str | tuple[str, str]] = {
    "desc": _tied("select k, x from t order by x desc limit 3", 2),
    "nulls_first_offset": _tied(
        "select k, x, s from t order by s nulls first, x desc nulls first limit 4 offset 2", 3
    ),
    "star": _tied("select * from t order by d desc, f limit 5", 5),
    "select_expression": _tied("select k, x + 1 as y from t order by x + 1 limit 3", 2),
    "hidden_key": _tied("select k from t order by x * 2 desc limit 3", 1),
    "positions": _tied("select k, s from t order by 2, 1 desc limit 3 offset 1", 2),
    "distinct": _tied("select distinct k, s from t order by k desc limit 3", 2),
    "grouped": _tied(
        "select s, count(*) as n, sum(x) as sx from t group by s order by n desc, sx limit 2", 3
    ),
    "grouped_hidden_aggregate": _tied(
        "select s, count(*) as n from t group by s order by sum(x) desc nulls last limit 2", 2
    ),
    "union": _tied("select k from t union select k from u order by k desc limit 2", 1),
    "union_all_offset": _tied(
        "select k, x from t union all select k, y from u order by 2 nulls first limit 3 "
        "offset 2",
        2,
    ),
    "limit_zero": "select k, x from t order by x limit 0",
    "offset_only": ("select k, x from t offset 10", "select k, x from t order by 1, 2 offset 10"),
    "no_order": ("select k, s from t limit 4", "select k, s from t order by 1, 2 limit 4"),
    "with_ties": (
        "select k, x from t order by x desc fetch first 2 rows with ties",
        "select k, x from (select k, x, rank() over (order by x desc) as r from t) q "
        "where r <= 2",
    ),
    "fetch_first": _tied("select k, f from t order by f offset 1 fetch first 3 rows only", 2),
    "join": _tied(
        "select t.k, t.x, u.y from t join u on t.k = u.k order by u.y desc, t.x limit 3", 3
    ),
    "derived": (
        "select k, n from (select k, count(*) as n from t group by k order by n desc, k limit 3) "
        "as q where n > 1"
    ),
}

WINDOWS: dict[str, str | tuple[str, str]] = {
    "row_number_top2": (
        "select * from (select *, row_number() over (partition by k order by x desc) as rn "
        "from t) as q where rn <= 2",
        "select * from (select *, row_number() over (partition by k order by x desc, "
        f"{TIE_T}) as rn from t) as q where rn <= 2",
    ),
    "rank_lt": "select k, s, rk from (select k, s, x, rank() over (partition by s order by x) "
    "as rk from t) as q where rk < 3",
    "dense_rank_between": "select * from (select k, x, dense_rank() over (order by x desc "
    "nulls first) as dr from t) as q where dr between 2 and 3",
    "qualify_row_number": (
        "select k, x, s, row_number() over (partition by k % 2 order by s, x) as rn from t "
        "qualify rn = 1",
        "select k, x, s, row_number() over (partition by k % 2 order by s, x, k asc nulls "
        "last, x asc nulls last, s asc nulls last) as rn from t qualify rn = 1",
    ),
    "rank_as_value": "select k, x, rank() over (partition by k order by x) as r from t",
    "row_number_as_value": (
        "select k, x, s, f, d, row_number() over (order by f desc) as rn from t",
        f"select k, x, s, f, d, row_number() over (order by f desc, {TIE_T}) as rn from t",
    ),
    "grouped_rank": "select s, sum(x) as sx, rank() over (order by sum(x) desc nulls last) "
    "as r from t group by s",
    "filter_and_rank": (
        "select k, x from (select k, x, row_number() over (partition by k order by x nulls "
        "first) as rn from t) as q where rn <= 2 and x > 0",
        "select k, x from (select k, x, row_number() over (partition by k order by x nulls "
        "first, k asc nulls last, x asc nulls last) as rn from t) as q where rn <= 2 and x > 0",
    ),
    "join_row_number": (
        "select * from (select t.k, u.y, row_number() over (partition by t.k order by u.y "
        "desc) as rn from t join u on t.k = u.k) as q where rn = 1",
        "select * from (select t.k, u.y, row_number() over (partition by t.k order by u.y "
        "desc, t.k asc nulls last, u.y asc nulls last) as rn from t join u on t.k = u.k) as q "
        "where rn = 1",
    ),
    "lower_bound": (
        "select * from (select k, x, row_number() over (partition by k order by x) as rn "
        "from t) as q where rn > 1",
        "select * from (select k, x, row_number() over (partition by k order by x, k asc "
        "nulls last, x asc nulls last) as rn from t) as q where rn > 1",
    ),
    "qualify_and_outer": (
        "select * from (select k, x, row_number() over (partition by k order by x desc) as rn "
        "from t qualify rn < 4) as q where rn >= 2",
        "select * from (select k, x, row_number() over (partition by k order by x desc, k asc "
        "nulls last, x asc nulls last) as rn from t qualify rn < 4) as q where rn >= 2",
    ),
    "in_an_expression": "select k, x, rank() over (partition by k order by x) * 10 + 1 as r "
    "from t",
    "limit_by_the_rank": (
        "select k, x, row_number() over (order by x desc) as rn from t order by rn limit 3",
        "select k, x, row_number() over (order by x desc, k asc nulls last, x asc nulls last) "
        "as rn from t order by rn limit 3",
    ),
    "in_with": "with w as (select k, s, dense_rank() over (partition by s order by k desc) as "
    "dr from t) select s, k from w where dr = 1",
    "in_list": "select k, y from u where y in (select x from (select x, rank() over (order by "
    "x desc nulls last) as r from t) as q where r <= 2)",
    "ordered_by_an_aggregate": "select s, rank() over (order by count(*) desc, s) as r from t "
    "group by s",
    "distinct_ranks": "select distinct k, dense_rank() over (order by k) as dr from t",
    "dense_rank_no_order": "select * from (select s, dense_rank() over (partition by s) as "
    "dr from t) as q where dr = 1",
    "top_k_of_ranks": (
        "select k, x, rn from (select k, x, row_number() over (partition by k order by x) as "
        "rn from t) as q order by rn desc, k, x limit 3",
        "select k, x, rn from (select k, x, row_number() over (partition by k order by x, k "
        "asc nulls last, x asc nulls last) as rn from t) as q order by rn desc, k, x, 1 asc "
        "nulls last, 2 asc nulls last, 3 asc nulls last limit 3",
    ),
}


@pytest.mark.parametrize("seed", range(3))
def test_top_k_matches_duckdb(seed: int) -> None:
    check_queries(TOP_K, seed=300 + seed, batches=6)


@pytest.mark.parametrize("seed", range(3))
def test_ranking_windows_match_duckdb(seed: int) -> None:
    check_queries(WINDOWS, seed=400 + seed, batches=6)


def test_top_k_and_windows_on_two_workers() -> None:
    check_queries({**TOP_K, **WINDOWS}, seed=500, batches=4, workers=2)


def _run(query: str, batches: list[list[tuple[tuple[object, ...], int]]]) -> dd.Capture:
    """``query`` over ``t(k, x)`` fed batch ``i`` at time ``i``; its capture."""
    flow = dd.Dataflow()
    t_in, t = flow.new_input({"k": "int64", "x": "int64"}, name="t")
    out = dd.sql(query, {"t": t}).capture()
    for time, batch in enumerate(batches):
        for row, diff in batch:
            t_in.update_at(row, time=time, diff=diff)
    t_in.advance_to(len(batches))
    flow.run_until(len(batches))
    return out


def _at(cap: dd.Capture, time: int) -> list[tuple[object, ...]]:
    """The rows at ``time``, each repeated by its count, in ``repr`` order."""
    rows = [
        tuple(v for c, v in r.items() if c != "diff")
        for r in cap.at(time).to_pylist()
        for _ in range(r["diff"])
    ]
    return sorted(rows, key=repr)


def test_deleting_a_top_row_brings_the_next_one_in() -> None:
    out = _run(
        "select k, x from t order by x desc limit 2",
        [
            [((1, 5), 1), ((2, 9), 1), ((3, 7), 1), ((4, 1), 1)],
            [((2, 9), -1)],
            [((5, 8), 1)],
            [((3, 7), -1), ((5, 8), -1), ((1, 5), -1)],
        ],
    )
    assert _at(out, 0) == [(2, 9), (3, 7)]
    assert _at(out, 1) == [(1, 5), (3, 7)]
    assert _at(out, 2) == [(3, 7), (5, 8)]
    assert _at(out, 3) == [(4, 1)]
    # Each step changes the result by the rows entering and leaving it, nothing more.
    changes = [(u["time"], u["k"], u["diff"]) for u in out.updates().to_pylist()]
    assert sorted(c for c in changes if c[0] == 1) == [(1, 1, 1), (1, 2, -1)]


def test_ties_keep_the_rows_least_by_the_whole_row() -> None:
    """The documented rule: rows tied in the ``ORDER BY`` keys are ordered by every column,
    ascending, nulls last; copies of a row count as rows."""
    out = _run(
        "select k, x from t order by x limit 3",
        [[((3, 1), 1), ((2, 1), 1), ((None, 1), 1), ((1, 2), 1)], [((2, 1), 1)]],
    )
    assert _at(out, 0) == sorted([(2, 1), (3, 1), (None, 1)], key=repr)
    assert _at(out, 1) == sorted([(2, 1), (2, 1), (3, 1)], key=repr)
    rn = _run(
        "select k, x, row_number() over (partition by x order by x) as rn from t",
        [[((3, 1), 1), ((2, 1), 2), ((None, 1), 1)]],
    )
    assert _at(rn, 0) == sorted([(2, 1, 1), (2, 1, 2), (3, 1, 3), (None, 1, 4)], key=repr)


def test_a_filter_on_the_rank_bounds_the_ranking() -> None:
    """``WHERE rn <= 3`` in the enclosing query (or ``QUALIFY``) is given to the ranking
    itself: it keeps three rows per partition, not every row with its number."""
    flow = dd.Dataflow()
    _, t = flow.new_input({"k": "int64", "x": "int64"}, name="t")
    dd.sql(
        "select * from (select k, x, row_number() over (partition by k order by x) as rn "
        "from t) as q where rn <= 3 and rn > 1",
        {"t": t},
    )
    dd.sql("select k, x, rank() over (order by x) as r from t qualify r = 2", {"t": t})
    dd.sql("select k, x, rank() over (order by x) as r from t", {"t": t})
    dd.sql(
        "select * from (select k, x, row_number() over (order by x) as rn from t qualify "
        "rn < 5) as q where rn >= 3",
        {"t": t},
    )
    aggs = [n["agg"] for n in flow.plan()["nodes"] if n["op"] == "reduce"]
    bounds = [(a["min_rank"], a.get("max_rank")) for a in aggs]
    assert bounds == [(2, 3), (2, 2), (1, None), (3, 4)]
