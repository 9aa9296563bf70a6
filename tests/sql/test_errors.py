"""What the SQL front end refuses: a ``dd.SqlError`` naming the construct, with the query's
line quoted and a ``^`` under it; never a plan with another meaning. Also ``Collection.sql``
and SQL's row of a global aggregate over an empty input."""

from __future__ import annotations

import duckdb
import pytest

import ddflow as dd


@pytest.fixture
def tables() -> dict[str, dd.Collection]:
    flow = dd.Dataflow()
    _, t = flow.new_input({"k": "int64", "x": "int64", "s": "str"})
    _, u = flow.new_input({"k": "int64", "y": "int64"})
    return {"t": t, "u": u}


REFUSED = [
    ("select k from t order by k limit x", "LIMIT must be a non-negative integer literal"),
    ("select k from t offset -1", "OFFSET must be"),
    ("select k from t order by 3 limit 1", "ORDER BY position 3 is not in the SELECT list"),
    ("select distinct k from t order by x limit 2", "must name an output column"),
    ("select k from t union select k from u order by k + 1 limit 2", "must name an output"),
    ("select sum(x) over (partition by k) as c from t", "window function SUM"),
    (
        "select row_number() over (order by k) as a, rank() over (order by x) as b from t",
        "one window",
    ),
    ("select row_number() over w as r from t window w as (order by k)", "WINDOW"),
    ("select k from t qualify k > 1", "QUALIFY needs a window function"),
    ("select k from t order by k limit 10 percent", "not supported"),
    ("select k from t where rank() over (order by x) < 3", "SELECT list only"),
    (
        "with recursive r(a) as (select k from t union select a + 1 from r where a < 5 "
        "limit 3) select a from r",
        "LIMIT on a recursive UNION",
    ),
    (
        "select k, (select y from u where u.k = t.k order by y limit 1) as top from t",
        "correlated scalar subquery with GROUP BY, DISTINCT, LIMIT",
    ),
    (
        "select k from t where x in (select rank() over (order by y) from u where u.k = t.k)",
        "window function is not supported in EXISTS / IN",
    ),
    ("select nope from t", "unknown column"),
    ("select k from nowhere", "unknown table"),
    ("select k from t, u where t.k = u.k", "ambiguous"),
    ("select k, x from t group by k", "GROUP BY"),
    ("select k from t where x > (select y from u)", "at most one row"),
    ("select k from t where x not in (select y from u where u.y < t.k)", "correlated NOT IN"),
    ("select k from t left join u on t.x > u.y", "LEFT JOIN"),
    ("select t.k from t left join u on t.k = u.k and t.x > u.y", "one side alone"),
    ("select t.k from t full join u on t.k = u.k and t.x > 1", "one side alone"),
    ("select abs(null) as c from t", "NULL whose type"),
    ("select distinct on (k) k, x from t", "DISTINCT ON"),
    ("select k from t where exists (select 1 from u) or x > 1", "WHERE conjuncts"),
    ("select k from t where s like x", "LIKE"),
    ("select 1 as one", "without FROM"),
    ("select k from t; select k from u", "one statement"),
    ("insert into t values (1, 2, 'a')", "only queries"),
    ("select k from t where", "does not parse"),
    ("select levenshtein(s, 'a') as d from t", "not supported"),
]


@pytest.mark.parametrize(("query", "message"), REFUSED)
def test_unsupported_sql_is_refused(
    query: str, message: str, tables: dict[str, dd.Collection]
) -> None:
    with pytest.raises(dd.SqlError, match=message):
        dd.sql(query, tables)


def test_error_shows_the_position(tables: dict[str, dd.Collection]) -> None:
    query = "select k,\n       nope + 1 as y\nfrom t"
    with pytest.raises(dd.SqlError) as info:
        dd.sql(query, tables)
    err = info.value
    assert (err.line, err.column) == (2, 8)
    assert "       nope + 1 as y\n           ^" in str(err)
    assert isinstance(err, dd.PlanError)


def test_collection_sql_reads_self() -> None:
    flow = dd.Dataflow()
    rows_in, rows = flow.new_input({"k": "int64", "x": "int64"})
    out = rows.sql("select k, sum(x) as total from self group by k").capture()
    for row in [(1, 2), (1, 3), (2, 5)]:
        rows_in.update_at(row, time=0)
    rows_in.update_at((1, 3), time=1, diff=-1)
    rows_in.advance_to(2)
    flow.run_until(2)
    assert sorted(map(tuple, (r.values() for r in out.at(0).to_pylist()))) == [
        (1, 5, 1),
        (2, 5, 1),
    ]
    assert sorted(r["total"] for r in out.at(1).to_pylist()) == [2, 5]


def test_global_aggregate_over_no_rows_has_sqls_row() -> None:
    """SQL gives one row (COUNT 0, SUM NULL) over an empty input: made from a constant
    collection (``Dataflow.constant``), it is there at time 0, leaves when a row arrives
    and comes back when the last row is deleted, as DuckDB answers at each time."""
    query = "select count(*) as n, sum(x) as s from r"
    flow = dd.Dataflow()
    rows_in, rows = flow.new_input({"x": "int64"})
    out = dd.sql(query, {"r": rows}).capture()
    feed = [[], [((4,), 1)], [((4,), -1)], [((2,), 1), ((None,), 1)]]
    for t, batch in enumerate(feed):
        for row, diff in batch:
            rows_in.update_at(row, time=t, diff=diff)
    rows_in.advance_to(len(feed))
    flow.run_until(len(feed))
    con = duckdb.connect()
    con.execute("create table r (x bigint)")
    for t, batch in enumerate(feed):
        for row, diff in batch:
            if diff > 0:
                con.execute("insert into r values (?)", row)
            else:
                con.execute("delete from r where x = ?", row)
        want = [{"n": n, "s": s, "diff": 1} for n, s in con.execute(query).fetchall()]
        assert out.at(t).to_pylist() == want, f"time {t}"
    assert out.at(0).to_pylist() == [{"n": 0, "s": None, "diff": 1}]


def test_duplicate_output_names_get_suffixes(tables: dict[str, dd.Collection]) -> None:
    out = dd.sql("select t.k, u.k from t join u on t.x = u.y", tables)
    assert out.columns == ("k", "k_1")


def test_dialect_is_passed_to_the_parser(tables: dict[str, dd.Collection]) -> None:
    out = dd.sql("select `k` as kk from t", tables, dialect="mysql")
    assert out.columns == ("kk",)
    with pytest.raises(dd.SqlError):
        dd.sql("select k from t", tables, dialect="no-such-dialect")


def test_a_refused_query_adds_no_operator(tables: dict[str, dd.Collection]) -> None:
    flow = tables["t"].flow
    assert isinstance(flow, dd.Dataflow)
    before = len(flow.plan()["nodes"])
    with pytest.raises(dd.SqlError):
        dd.sql("select t.k from t join u on t.k = u.k where nope > 1", tables)
    assert len(flow.plan()["nodes"]) == before


def test_tables_of_two_dataflows_are_refused(tables: dict[str, dd.Collection]) -> None:
    _, other = dd.Dataflow().new_input({"k": "int64"})
    with pytest.raises(dd.SqlError, match="one dataflow"):
        dd.sql("select k from o", {**tables, "o": other})
