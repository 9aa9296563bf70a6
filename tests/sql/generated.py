"""A seeded generator of SQL queries over the harness tables (:data:`tests.sql.harness.SCHEMAS`).

Each query is well typed for DuckDB and for ddflow by construction: integer expressions over
``k``, ``x`` (and ``u.y``) and small literals, float ones over ``f``, string ones over ``s``
(``=``, ``<>``, ``LIKE``, functions), date ones over ``d`` (literals, intervals,
``EXTRACT``), predicates mixing comparisons, ``BETWEEN``, ``IN`` lists, ``IS NULL``,
``CASE`` and ``COALESCE`` under ``AND`` / ``OR`` / ``NOT`` with nulls everywhere. Shapes:
projections with filters, ``DISTINCT``, grouped aggregates with ``HAVING`` (also against a
correlated scalar subquery), global aggregates, the join kinds (with aggregates over outer
joins), derived tables, ``WITH``, ``EXISTS`` / ``IN`` / scalar subqueries, correlated or
not, and set operations. No integer division or remainder by a column (ddflow reports a
remainder by zero as an error where DuckDB gives NULL).
"""

from __future__ import annotations

import random

__all__ = ["generate", "generate_ranked"]


class _Gen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def int_expr(self, depth: int = 0, cols: tuple[str, ...] = ("k", "x")) -> str:
        r = self.rng.random()
        if depth >= 2 or r < 0.35:
            return self.rng.choice(cols)
        if r < 0.45:
            return str(self.rng.randint(-2, 5))
        if r < 0.7:
            op = self.pick("+", "-", "*")
            return f"({self.int_expr(depth + 1, cols)} {op} {self.int_expr(depth + 1, cols)})"
        if r < 0.8:
            return f"coalesce({self.rng.choice(cols)}, {self.rng.randint(0, 3)})"
        if r < 0.9:
            return (
                f"case when {self.pred(depth + 1, cols)} then {self.int_expr(depth + 1, cols)} "
                f"else {self.int_expr(depth + 1, cols)} end"
            )
        return f"abs({self.int_expr(depth + 1, cols)})"

    def pred(self, depth: int = 0, cols: tuple[str, ...] = ("k", "x")) -> str:
        r = self.rng.random()
        if depth < 2 and r < 0.25:
            op = self.pick("and", "or")
            return f"({self.pred(depth + 1, cols)} {op} {self.pred(depth + 1, cols)})"
        if depth < 2 and r < 0.32:
            return f"not ({self.pred(depth + 1, cols)})"
        r = self.rng.random()
        if r < 0.4:
            op = self.pick("=", "<>", "<", "<=", ">", ">=")
            return f"{self.int_expr(depth + 1, cols)} {op} {self.int_expr(depth + 1, cols)}"
        if r < 0.5:
            lo = self.rng.randint(-2, 3)
            neg = self.pick("", "not ")
            return f"{self.rng.choice(cols)} {neg}between {lo} and {lo + self.rng.randint(0, 4)}"
        if r < 0.6:
            items = ", ".join(str(self.rng.randint(-2, 5)) for _ in range(self.rng.randint(1, 3)))
            return f"{self.rng.choice(cols)} {self.pick('', 'not ')}in ({items})"
        if r < 0.7 and "x" in cols:
            return f"s {self.pick('', 'not ')}like '{self.pick('a%', '%b', '_', '%', 'ab')}'"
        if r < 0.8:
            return f"{self.rng.choice(cols)} is {self.pick('', 'not ')}null"
        if r < 0.9 and "x" in cols:
            return f"f {self.pick('<', '>', '=')} {self.pick('0.25', '1.0', '2', '-1.5')}"
        return f"{self.rng.choice(cols)} > {self.rng.randint(-1, 4)}"

    def agg(self, cols: tuple[str, ...] = ("k", "x")) -> str:
        kind = self.pick("sum", "min", "max", "count", "avg", "count_distinct")
        arg = self.int_expr(1, cols)
        if kind == "count_distinct":
            return f"count(distinct {arg})"
        return f"{kind}({arg})"

    # -- query shapes ----------------------------------------------------------------------

    def projection(self) -> str:
        items = ", ".join(f"{self.int_expr()} as c{i}" for i in range(self.rng.randint(1, 3)))
        return f"select {items} from t where {self.pred()}"

    def distinct(self) -> str:
        return f"select distinct {self.int_expr()} as c, s from t where {self.pred()}"

    def grouped(self) -> str:
        key = self.pick("k", "s", "x % 2", "coalesce(x, 0) > 2", "k + 1")
        aggs = ", ".join(f"{self.agg()} as a{i}" for i in range(self.rng.randint(1, 3)))
        having = ""
        if self.rng.random() < 0.4:
            having = f" having {self.agg()} {self.pick('>', '<', '>=')} {self.rng.randint(0, 4)}"
        where = self.pred()
        return (
            f"select {key} as g, {aggs}, count(*) as n from t where {where} group by {key}{having}"
        )

    def global_agg(self) -> str:
        aggs = ", ".join(f"{self.agg()} as a{i}" for i in range(self.rng.randint(1, 3)))
        return f"select {aggs}, count(*) as n from t"

    def join(self) -> str:
        how = self.pick("join", "left join", "right join", "full join", "join")
        key = self.pick("t.k = u.k", "t.x = u.y", "t.k = u.k and t.s = u.s")
        where = "" if how != "join" else f" where {self.pred(cols=('t.k', 't.x', 'u.y'))}"
        return f"select t.k as tk, t.x, u.k as uk, u.y from t {how} u on {key}{where}"

    def join_agg(self) -> str:
        return (
            "select t.k, count(u.y) as n, sum(t.x + u.y) as s from t left join u on t.k = u.k "
            f"where {self.pred(cols=('t.k', 't.x'))} group by t.k"
        )

    def subquery(self) -> str:
        inner = self.pred(cols=("u.k", "u.y"))
        r = self.rng.random()
        if r < 0.2:
            neg = self.pick("", "not ")
            sub = f"select * from u where u.k = t.k and {inner}"
            return f"select k, x from t where {neg}exists ({sub})"
        if r < 0.35:
            return (
                "select k, x from t where exists (select * from u where u.k = t.k "
                f"and u.y {self.pick('<', '>', '<=')} t.x and {inner})"
            )
        if r < 0.45:
            return (
                "select k, x from t where x not in "
                f"(select y from u where u.k = t.k and {inner})"
            )
        if r < 0.55:
            neg = self.pick("", "not ")
            value = self.pick("x", "k", "k + 1")
            return f"select k, x from t where {value} {neg}in (select y from u where {inner})"
        if r < 0.65:
            agg = self.pick("max(y)", "min(y)", "sum(y)", "count(*)", "count(y)")
            op = self.pick("<", ">", "=", ">=")
            return f"select k, x from t where x {op} (select {agg} from u where u.k = t.k)"
        if r < 0.75:
            agg = self.pick("max(y)", "sum(y)", "count(*)")
            corr = self.pick("u.y < t.x", "u.k = t.k and u.y >= t.x", "u.s = t.s and u.y > 1")
            value = f"(select {agg} from u where {corr})"
            if self.rng.random() < 0.5:
                return f"select k, x, {value} as v from t"
            return f"select k, x from t where k {self.pick('<', '>=')} {value}"
        # Unfiltered: a scalar subquery outside WHERE is left-joined, and its padding null
        # takes its dtype from the subquery's data (none ever, if a filter drops every row).
        agg = self.pick("max(y)", "min(y)", "sum(y)", "count(*)")
        return f"select k, x, (select {agg} from u) as m from t where {self.pred()}"

    def setop(self) -> str:
        op = self.pick("union", "union all", "except", "intersect")
        left = f"select k, x from t where {self.pred()}"
        return f"{left} {op} select k, y from u where {self.pred(cols=('k', 'y'))}"

    def text_pred(self) -> str:
        return self.pick(
            # Only = and <> on strings: the engine does not order str values in expressions.
            f"s {self.pick('=', '<>')} '{self.pick('a', 'ab', 'b', 'A')}'",
            f"upper(s) = '{self.pick('A', 'AB', 'BA')}'",
            f"length(s) {self.pick('<', '>')} {self.rng.randint(0, 3)}",
            f"s || 'z' like '{self.pick('%bz', 'a%', 'z')}'",
            f"substring(s, 1, 1) = '{self.pick('a', 'b', 'x')}'",
        )

    def date_pred(self) -> str:
        y, m, d = self.rng.randint(4, 5), self.rng.randint(1, 9), self.rng.randint(0, 9)
        day = f"date '199{y}-0{m}-1{d}'"
        return self.pick(
            f"d {self.pick('<', '>=')} {day}",
            f"d between {day} and {day} + interval '{self.rng.randint(1, 8)}' month",
            f"extract(month from d) {self.pick('=', '<', '>')} {self.rng.randint(1, 12)}",
            f"d + interval {self.rng.randint(1, 40)} day < {day}",
        )

    def mixed(self) -> str:
        preds = [self.pred(), self.text_pred(), self.date_pred()]
        self.rng.shuffle(preds)
        conj = f" {self.pick('and', 'or')} ".join(preds[: self.rng.randint(1, 3)])
        return f"select k, s, d from t where {conj}"

    def derived(self) -> str:
        inner = (
            f"select {self.pick('k', 's')} as g, {self.agg()} as a, count(*) as n "
            f"from t where {self.pred()} group by 1"
        )
        bound = f"{self.pick('>', '>=')} {self.rng.randint(1, 3)}"
        return f"select g, a from ({inner}) as q where n {bound}"

    def cte(self) -> str:
        return (
            f"with w as (select k, {self.agg(('k', 'y'))} as a from u group by k) "
            f"select t.k, t.x, w.a from t {self.pick('join', 'left join')} w on t.k = w.k "
            f"where {self.pred(cols=('t.k', 't.x'))}"
        )

    def outer_agg(self) -> str:
        how = self.pick("left join", "full join", "right join")
        extra = self.pick("", " and u.y > 1", " and u.s like 'a%'") if how == "left join" else ""
        return (
            f"select coalesce(t.k, u.k) as key, count(t.x) as nx, count(u.y) as ny, "
            f"sum(u.y) as sy from t {how} u on t.k = u.k{extra} group by coalesce(t.k, u.k)"
        )

    def having_sub(self) -> str:
        return (
            f"select k, {self.agg()} as a from t group by k having count(*) >= "
            f"(select count(*) from v where v.k = t.k)"
        )

    def query(self) -> str:
        shape = self.rng.choice(
            [
                self.projection,
                self.projection,
                self.distinct,
                self.grouped,
                self.grouped,
                self.global_agg,
                self.join,
                self.join_agg,
                self.subquery,
                self.subquery,
                self.setop,
                self.mixed,
                self.mixed,
                self.derived,
                self.cte,
                self.outer_agg,
                self.having_sub,
            ]
        )
        return shape()


def generate(count: int, seed: int) -> dict[str, str]:
    """``count`` queries by name (``g<seed>_<i>``)."""
    gen = _Gen(seed)
    return {f"g{seed}_{i}": gen.query() for i in range(count)}


class _RankedGen(_Gen):
    """Top-k and ranking-window queries, each with DuckDB's text spelling out ddflow's tie
    rule (rows tied in the ``ORDER BY`` keys ordered by the whole row, each column ascending,
    nulls last), so that both answers are determined."""

    def order_item(self, cols: tuple[str, ...]) -> str:
        direction = self.pick("", " asc", " desc")
        nulls = self.pick("", "", " nulls first", " nulls last")
        return f"{self.rng.choice(cols)}{direction}{nulls}"

    def order(self, cols: tuple[str, ...]) -> str:
        n = self.rng.randint(1, 2)
        return ", ".join(self.order_item(cols) for _ in range(n))

    def bounds(self) -> str:
        limit = f" limit {self.rng.randint(0, 5)}"
        if self.rng.random() < 0.3:
            limit += f" offset {self.rng.randint(1, 4)}"
        return limit

    def top_k(self) -> tuple[str, str]:
        items = ["k", "x", "s", f"{self.int_expr()} as e"]
        self.rng.shuffle(items)
        items = items[: self.rng.randint(1, 4)]
        names = tuple(i.split(" as ")[-1] for i in items)
        distinct = self.pick("", "", "distinct ")
        # Without DISTINCT an ORDER BY key may be a column the list leaves out.
        keys = names if distinct else (*names, "k", "x", "f", "d")
        select = f"select {distinct}{', '.join(items)} from t where {self.pred()}"
        order = self.order(keys)
        ties = ", ".join(f"{i} asc nulls last" for i in range(1, len(items) + 1))
        bounds = self.bounds()
        return f"{select} order by {order}{bounds}", f"{select} order by {order}, {ties}{bounds}"

    def grouped_top_k(self) -> tuple[str, str]:
        key = self.pick("k", "s", "x % 3")
        select = f"select {key} as g, {self.agg()} as a, count(*) as n from t group by {key}"
        order = self.order(("g", "a", "n"))
        bounds = self.bounds()
        ties = "1 asc nulls last, 2 asc nulls last, 3 asc nulls last"
        return f"{select} order by {order}{bounds}", f"{select} order by {order}, {ties}{bounds}"

    def window(self) -> tuple[str, str]:
        fn = self.pick("row_number", "rank", "dense_rank")
        part = self.pick("", "partition by k ", "partition by s ", "partition by k % 2, s ")
        order = self.order(("x", "f", "s", "d", "k"))
        # `select *` reads every column of t: the tie rule's row is (k, x, f, s, d).
        ties = ", k asc nulls last, x asc nulls last, f asc nulls last, s asc nulls last, "
        ties += "d asc nulls last"
        where = f" where {self.pred()}" if self.rng.random() < 0.5 else ""

        def inner(extra: str) -> str:
            over = f"{part}order by {order}{extra if fn == 'row_number' else ''}"
            return f"select *, {fn}() over ({over}) as rn from t{where}"

        op = self.pick("<=", "<", "=", ">", "between 2 and")
        bound = f"rn {op} {self.rng.randint(1, 3)}"
        outer = self.pick("select *", "select k, s, rn", "select x, rn")
        if self.rng.random() < 0.2:  # the rank as a plain value
            return inner(""), inner(ties)
        return (
            f"{outer} from ({inner('')}) as q where {bound}",
            f"{outer} from ({inner(ties)}) as q where {bound}",
        )

    def ranked_query(self) -> tuple[str, str]:
        return self.rng.choice([self.top_k, self.top_k, self.grouped_top_k, self.window])()


def generate_ranked(count: int, seed: int) -> dict[str, tuple[str, str]]:
    """``count`` top-k / ranking queries by name (``r<seed>_<i>``): (ddflow's text,
    DuckDB's with the tie rule spelled out)."""
    gen = _RankedGen(seed)
    return {f"r{seed}_{i}": gen.ranked_query() for i in range(count)}
