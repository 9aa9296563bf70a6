"""A plan built by ``dd.sql`` runs on Spark (``run_on_spark``) with exactly the embedded
engine's output history: the SQL front end adds nothing either backend has to know about.
Eight queries in one dataflow (Spark is slow here): a join with a grouped aggregate and
``HAVING``, a correlated ``NOT EXISTS`` with a scalar subquery, ``EXCEPT ALL`` (a
``threshold``), a top-k, a ``ROW_NUMBER`` filter (the ``rank`` aggregate), ``NOT IN`` with
its null rule (uncorrelated and correlated; a null joins ``u`` at time 2) and a global
aggregate that has SQL's row over no rows until time 1."""

from __future__ import annotations

import pytest
from tests.spark.conftest import check_equal, spark  # noqa: F401 (the session fixture)

import ddflow as dd

pytestmark = [
    pytest.mark.timeout(300),
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]

QUERIES = [
    "select t.k, count(*) as n, sum(t.x * u.y) as s, count(distinct t.s) as ds "
    "from t join u on t.k = u.k where t.x > 0 group by t.k having count(*) > 1",
    "select k, x from t where not exists (select * from u where u.k = t.k and u.y > t.x) "
    "and x < (select max(y) from u)",
    "select k from t except all select k from u",
    "select k, x from t order by x desc nulls first limit 2",
    "select * from (select k, s, row_number() over (partition by k order by x) as rn from t) "
    "as q where rn = 1",
    "select k, x from t where x not in (select y from u)",
    "select k, x from t where x not in (select y from u where u.k = t.k)",
    "select count(*) as n, sum(x) as s from t where x = 4",
]

DATA = {
    "t": (
        ("k", "x", "s"),
        [
            (1, 2, "a", 0, 1),
            (1, 3, "b", 0, 1),
            (2, 5, None, 0, 1),
            (3, 1, "a", 0, 1),
            (1, 4, "a", 1, 1),
            (1, 3, "b", 2, -1),
            (2, None, "c", 2, 1),
        ],
    ),
    "u": (
        ("k", "y"),
        [(1, 2, 0, 1), (2, 9, 0, 1), (3, 1, 1, 1), (1, 7, 2, 1), (2, 9, 2, -1), (3, None, 2, 1)],
    ),
}


def _build(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    t_in, t = flow.new_input({"k": "int64", "x": "int64", "s": "str"}, name="t")
    u_in, u = flow.new_input({"k": "int64", "y": "int64"}, name="u")
    outputs = [dd.sql(q, {"t": t, "u": u}) for q in QUERIES]
    return {"t": t_in, "u": u_in}, outputs


def test_sql_plans_run_on_spark_as_embedded(spark) -> None:  # noqa: F811
    rows = check_equal(spark, _build, DATA)
    assert {r[0] for r in rows} == set(range(len(QUERIES)))  # every query has output
