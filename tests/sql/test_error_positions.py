"""Every construct the SQL front end does not translate raises ``dd.SqlError`` with a
position (``line``, ``column``) inside the construct's text, quoted with a ``^`` under it;
none builds a plan (which could give a wrong answer). :data:`UNSUPPORTED` pairs each query
with the text of the construct the error must point into; the refusals of
``test_errors.REFUSED`` (unknown names, parse errors, ...) must carry a position too."""

from __future__ import annotations

import pytest
from tests.sql.harness import SCHEMAS
from tests.sql.test_errors import REFUSED

import ddflow as dd

UNSUPPORTED: list[tuple[str, str]] = [
    ("select k, count(*) as n from t group by grouping sets ((k), ())", "grouping sets"),
    ("select k, count(*) as n from t group by rollup (k)", "rollup (k)"),
    ("select k, count(*) as n from t group by cube (k)", "cube (k)"),
    ("select count(distinct k, x) as c from t", "count(distinct k, x)"),
    ("select sum(x) over (partition by k) as c from t", "sum(x) over (partition by k)"),
    ("select lag(x) over (order by k) as p from t", "lag(x) over (order by k)"),
    ("select k,\n  first_value(x) over (partition by k order by x) as f\nfrom t", "first_value"),
    ("select k from t where (x > 1) is true", "(x > 1) is true"),
    ("select extract(epoch from d) as e from t", "extract(epoch from d)"),
    ("select trim(leading 'a' from s) as c from t", "trim(leading 'a' from s)"),
    ("select date_trunc('week', d) as w from t", "date_trunc('week', d)"),
    ("select k from t where s like 'a%' escape '!'", "s like 'a%' escape '!'"),
    ("select k from t where s like s", "s like s"),
    ("select k\nfrom t\nwhere x between 1 and 2 and s similar to 'a'", "s similar to 'a'"),
    ("select cast(x as blob) as b from t", "cast(x as blob)"),
    ("select cast(s as timestamp) as ts from t", "cast(s as timestamp)"),
    ("select levenshtein(s, 'a') as d from t", "levenshtein(s, 'a')"),
    ("select median(x) as m from t", "median(x)"),
    ("select string_agg(s, ',') as l from t", "string_agg(s, ',')"),
    ("select list(x) as l from t", "list(x)"),
    ("select arg_max(k, x) as m from t", "arg_max(k, x)"),
    ("select percentile_cont(0.5) within group (order by x) as m from t", "percentile_cont"),
    ("select regexp_matches(s, 'a') as m from t", "regexp_matches(s, 'a')"),
    ("select struct_pack(a := k) as s from t", "struct_pack(a := k)"),
    ("select k from t where d > current_date", "current_date"),
    ("select d - interval '1 2' day_hour as e from t", "interval '1 2' day_hour"),
    ("select substring(s, 0, 2) as c from t", "substring(s, 0, 2)"),
    ("select left(s, -1) as c from t", "left(s, -1)"),
    ("select k from t natural join u", "natural join u"),
    ("select t.k from t left join u on t.x > u.y", "t.x > u.y"),
    ("select t.k from t\nfull join u on t.k = u.k and t.x > 1", "t.x > 1"),
    ("select distinct on (k) k, x from t", "distinct on (k)"),
    ("select k from t qualify k > 1", "qualify k > 1"),
    ("select k from t order by k limit 10 percent", "limit 10 percent"),
    ("select k from t union all select k from u order by x limit 3", "x limit 3"),
    ("select k from (select k from t)", "(select k from t)"),
    ("select k from db.t", "db.t"),
    ("select * from unnest([1, 2])", "unnest([1, 2])"),
    ("select k, x from t tablesample (10 percent)", "tablesample (10 percent)"),
    ("select k, x from t pivot (sum(x) for k in (1, 2))", "pivot (sum(x) for k in (1, 2))"),
    ("select k from t, lateral (select y from u where u.k = t.k) as q", "lateral (select y"),
    (
        "with recursive r(a) as (\n  select k from t\n  union all select a + 1 from r where a < 5"
        ")\nselect a from r",
        "select k from t\n  union all select a + 1 from r where a < 5",
    ),
    (
        "select k, (select y from u where u.k = t.k order by y limit 1) as top from t",
        "(select y from u where u.k = t.k order by y limit 1)",
    ),
    ("select k from t where x > (select y from u where u.k = t.k)", "(select y from u"),
    ("select row_number() over w as r from t window w as (order by k)", "w as (order by k)"),
    ("select k from t where exists (select 1 from u) or x > 1", "exists (select 1 from u)"),
    ("select k from t where x = any(select y from u)", "any(select y from u)"),
    ("select k from t where x > all(select y from u)", "all(select y from u)"),
    ("select k from t where x in (select k, y from u)", "select k, y from u"),
    ("select k from t where x in (select max(y) over () from u)", "max(y) over ()"),
    ("select k from t where x not in (select y from u where u.y < t.k)", "x not in (select"),
    ("select k, x from t group by k", "x from"),
    ("select * exclude (x) from t", "* exclude (x)"),
    ("select t.* replace (x + 1 as x) from t", "t.* replace (x + 1 as x)"),
    (
        "select k, x from t union by name select x, k from u",
        "select k, x from t union by name select x, k from u",
    ),
    ("select k from t for update", "for update"),
    ("select count(*) filter (where x > 1) as c from t", "count(*) filter (where x > 1)"),
    ("select min(x order by k) as m from t", "x order by k"),
    ("select k from t semi join u on t.k = u.k", "semi join u"),
    ("select 1 as one", "select 1 as one"),
    ("select k from t; select k from u", "select k from u"),
    ("insert into t values (1, 2, 1.0, 'a', date '1994-01-01')", "insert into t"),
    ("select k\nfrom t\nwhere", "where"),
]


@pytest.fixture(scope="module")
def tables() -> dict[str, dd.Collection]:
    flow = dd.Dataflow()
    return {name: flow.new_input(dict(schema), name=name)[1] for name, schema in SCHEMAS.items()}


def _offset(query: str, line: int, column: int) -> int:
    lines = query.split("\n")
    return sum(len(text) + 1 for text in lines[: line - 1]) + column - 1


def test_the_list_is_long_and_varied() -> None:
    assert len(UNSUPPORTED) >= 50
    assert len({q for q, _ in UNSUPPORTED}) == len(UNSUPPORTED)


@pytest.mark.parametrize(("query", "construct"), UNSUPPORTED)
def test_unsupported_construct_is_refused_at_its_position(
    query: str, construct: str, tables: dict[str, dd.Collection]
) -> None:
    flow = tables["t"].flow
    before = len(flow.plan()["nodes"])
    with pytest.raises(dd.SqlError) as info:
        dd.sql(query, tables)
    err = info.value
    assert len(flow.plan()["nodes"]) == before  # no plan (no answer at all)
    assert err.line is not None and err.column is not None, str(err)
    start = query.index(construct)
    spot = _offset(query, err.line, err.column)
    assert (
        start <= spot < start + len(construct)
    ), f"points at {query[spot : spot + 20]!r}, not into {construct!r}:\n{err}"
    quoted = query.split("\n")[err.line - 1]
    assert f"line {err.line}, column {err.column}:\n    {quoted}\n" in str(err)
    assert str(err).endswith("\n    " + " " * (err.column - 1) + "^")


@pytest.mark.parametrize(("query", "message"), REFUSED)
def test_every_refusal_has_a_position(
    query: str, message: str, tables: dict[str, dd.Collection]
) -> None:
    with pytest.raises(dd.SqlError, match=message) as info:
        dd.sql(query, tables)
    assert info.value.line is not None, str(info.value)


def test_first_word_of_the_construct() -> None:
    """The position is the construct's first word, not its first name or literal: sqlglot
    locates only those, and the keywords before them are taken back in."""
    flow = dd.Dataflow()
    _, t = flow.new_input({"k": "int64", "x": "int64"})
    cases = {
        "select k from t where exists (select 1 from t) or x > 1": "exists",
        "select k from t order by k limit 10 percent": "limit",
        "select distinct on (k) k from t": "distinct",
        "select k from t natural join t as q": "natural",
        "select k from t offset -1": "-1",
    }
    for query, word in cases.items():
        with pytest.raises(dd.SqlError) as info:
            dd.sql(query, {"t": t})
        assert info.value.column == query.index(word) + 1, query
