"""SQL's row of a global aggregate over no rows (``COUNT`` 0, the others null), made from a
one-row constant collection (:mod:`ddflow.sql.unit`), against DuckDB while tables start
empty, fill, empty again by deletes and refill. The engine has no constant collection yet:
here an input of the test's, fed one row at time 0, plays it; without one the row is
missing (``test_errors.py``). A correlated scalar subquery (also in ``HAVING``) is left
out: its ``COUNT`` over no rows is 0 without a unit, but its left join pads with nulls
typed from the data, so it is not read while ``u`` never had a row (the documented
outer-join rule)."""

from __future__ import annotations

import datetime

import pytest
from tests.sql.harness import Row, check_queries

import ddflow as dd
from ddflow.sql.translate import translate

pytestmark = pytest.mark.timeout(60)

SCHEMAS = {
    "t": {"k": "int64", "x": "int64", "f": "float64", "s": "str", "d": "date32"},
    "u": {"k": "int64", "y": "int64"},
}

D = datetime.date(1995, 3, 1)
T_ROWS: list[Row] = [(1, 4, 0.5, "a", D), (2, None, None, None, None), (1, -2, 2.5, "b", D)]
U_ROWS: list[Row] = [(1, 7), (3, None)]


def _feed() -> list[dict[str, list[tuple[Row, int]]]]:
    """t and u: empty, then t fills, t empties and u fills, t refills and u empties, both
    empty; plus a time where only a duplicate comes and goes."""
    ins = [(r, 1) for r in T_ROWS]
    outs = [(r, -1) for r in T_ROWS]
    return [
        {"t": [], "u": []},
        {"t": ins, "u": []},
        {"t": outs, "u": [(r, 1) for r in U_ROWS]},
        {"t": ins + [(T_ROWS[0], 1)], "u": [(r, -1) for r in U_ROWS]},
        {"t": outs + [(T_ROWS[0], -1)], "u": []},
    ]


QUERIES = {
    "count_sum": "select count(*) as n, sum(x) as s from t",
    "all_kinds": "select count(x) as c, count(distinct s) as cd, min(s) as lo, max(d) as hi, "
    "avg(f) as a, sum(f) as sf from t",
    "filtered_empty": "select count(*) as n, max(x) as m from t where x > 100",
    "expression": "select count(*) + 1 as n1, coalesce(sum(x), -1) as s from t",
    "distinct_sum": "select sum(distinct x) as sd, count(*) as n from t",
    "having": "select count(*) as n from t having count(*) = 0",
    "scalar_subquery": "select k, (select count(*) from u) as n, (select max(y) from u) as m "
    "from t",
    "derived": "select n * 2 as n2 from (select count(*) as n from u) as q",
    "grouped_stays_empty": "select k, count(*) as n from t group by k",
    "in_subquery": "select k from t where x in (select max(y) from u)",
}


def test_global_aggregates_over_no_rows_have_sqls_row() -> None:
    check_queries(QUERIES, schemas=SCHEMAS, feed=_feed(), unit=True)


def test_on_two_workers() -> None:
    check_queries(QUERIES, schemas=SCHEMAS, feed=_feed(), unit=True, workers=2)


def test_an_undeclared_dtype_leaves_the_row_out() -> None:
    """A null of a column whose dtype the plan cannot tell yet (an input without declared
    dtypes, never fed) cannot be typed: that query keeps no row rather than fail."""
    flow = dd.Dataflow()
    t_in, t = flow.new_input(("x",))
    unit_in, unit = flow.new_input({"unit": "int64"})
    sums = translate("select count(*) as n, sum(x) as s from t", {"t": t}, "duckdb", unit)
    counts = translate("select count(*) as n from t", {"t": t}, "duckdb", unit)
    caps = [sums.capture(), counts.capture()]
    unit_in.update_at((0,), time=0)
    unit_in.close()
    t_in.advance_to(1)
    flow.run_until(1)
    assert caps[0].at(0).num_rows == 0
    assert caps[1].at(0).to_pylist() == [{"n": 0, "diff": 1}]
