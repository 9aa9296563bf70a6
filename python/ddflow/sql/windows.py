"""Ranking window functions: ``ROW_NUMBER()``, ``RANK()`` and ``DENSE_RANK()``
``OVER (PARTITION BY ... ORDER BY ...)`` in a ``SELECT`` list (:mod:`~ddflow.sql.ranking`).

The rows of the ``SELECT`` (after ``GROUP BY`` / ``HAVING`` when it groups) are ranked per
partition and the rank is a column of them, which the ``SELECT`` list reads. Rows tied in
the ``ORDER BY`` keys get row numbers in the order of the whole row (every column ascending,
nulls last). One window function per ``SELECT`` (several would need the rows matched up
again); other window functions, frames that matter and named windows are refused.

A filter on the rank in the enclosing query (``SELECT * FROM (... ROW_NUMBER() OVER (...) AS
rn ...) WHERE rn <= 3``, with ``<``, ``<=``, ``=``, ``>``, ``>=``, ``BETWEEN`` against
integers), or in the same query's ``QUALIFY``, is also given to the ranking, which then
keeps only the rows in range: a maintained top-k per partition whose output changes by a
few rows per input change. Without one, every row carries its rank, and inserting a row
renumbers the rows after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

import ddflow.expr as E
from ddflow.expr import Expr
from ddflow.sql.ranking import RankAggregate, RankFunction, SortKey, ranked
from ddflow.sql.scope import Relation, Scope

if TYPE_CHECKING:  # the planner imports this module
    from ddflow.sql.query import Holder, Planner

__all__ = ["Bounds", "has_window", "plan_window", "rank_bounds", "rank_column", "the_window"]

Bounds = tuple[int, int | None]
"""The ranks a filter keeps: ``lo..hi`` (no upper bound when None)."""

_FUNCTIONS: dict[type[exp.Expression], RankFunction] = {
    exp.RowNumber: "row_number",
    exp.Rank: "rank",
    exp.DenseRank: "dense_rank",
}


def _windows(sel: exp.Select) -> list[exp.Window]:
    """The window calls of ``sel``'s list (not of nested subqueries)."""
    found: list[exp.Window] = []
    stack: list[exp.Expression] = list(sel.expressions)
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Window):
            found.append(n)
            continue
        if isinstance(n, exp.Subquery | exp.Select | exp.Exists):
            continue
        stack.extend(n.iter_expressions())
    return found


def has_window(sel: exp.Select) -> bool:
    """Whether ``sel``'s list calls a window function."""
    return bool(_windows(sel))


def the_window(sel: exp.Select, refuse: Callable[[str, exp.Expression], Exception]) -> exp.Window:
    """The one window call of ``sel``'s list (the same call may appear several times)."""
    calls = _windows(sel)
    for w in calls[1:]:
        if w != calls[0]:
            raise refuse(
                "one window function per SELECT is supported (compute another in a " "subquery)",
                w,
            )
    w = calls[0]
    if type(w.this) not in _FUNCTIONS:
        name = w.this.sql() if isinstance(w.this, exp.Expression) else str(w.this)
        raise refuse(
            f"window function {name} is not supported (ROW_NUMBER, RANK and DENSE_RANK are)", w
        )
    if w.this.expressions or w.this.args.get("this") is not None:
        raise refuse("ranking functions take no arguments", w)
    if isinstance(w.args.get("alias"), exp.Identifier) or w.args.get("first") is not None:
        raise refuse("named windows are not supported (write the OVER clause)", w)
    return w


def plan_window(
    p: Planner,
    sel: exp.Select,
    holder: Holder,
    outer: Scope | None,
    special: Callable[[exp.Expression], Expr | None],
) -> Callable[[exp.Expression], Expr | None]:
    """Ranks ``holder``'s rows by the window of ``sel`` (``holder.rel`` gains the rank
    column) and returns ``special`` extended to read the window call as that column."""
    w = the_window(sel, p.refuse)
    rel = holder.rel
    translate = p.translator(Scope(rel, outer), special)
    extra: dict[str, Expr] = {}

    def column(node: exp.Expression) -> str:
        e = translate.typed(node)
        if e.op == "col":
            return e.output_name()
        name = p.names.fresh("_window")
        extra[name] = e
        return name

    partition = [column(n) for n in w.args.get("partition_by") or []]
    order = w.args.get("order")
    keys = [
        SortKey(column(o.this), bool(o.args.get("desc")), bool(o.args.get("nulls_first")))
        for o in (order.expressions if order is not None else [])
    ]
    lo, hi = p.window_bounds.get(id(w), (1, None))
    rank = p.names.fresh("rank")
    coll = rel.coll.with_columns(**extra) if extra else rel.coll
    agg = RankAggregate(tuple(keys), _FUNCTIONS[type(w.this)], lo, hi, rank)
    out = ranked(coll, list(dict.fromkeys(partition)), agg, p.names.fresh("_all"))
    holder.rel = Relation(out, rel.fields)

    def with_window(node: exp.Expression) -> Expr | None:
        if isinstance(node, exp.Window) and node == w:
            return E.col(rank)
        return special(node)

    return with_window


IsRank = Callable[[exp.Expression], bool]
"""Whether an expression reads the rank (its column, or the window call itself)."""


def rank_column(name: str, qualifier: str | None) -> IsRank:
    """Recognises a column ``name`` (optionally qualified by ``qualifier``)."""

    def is_rank(node: exp.Expression) -> bool:
        return (
            isinstance(node, exp.Column)
            and isinstance(node.this, exp.Identifier)
            and node.name.lower() == name.lower()
            and (not node.table or node.table.lower() == (qualifier or ""))
        )

    return is_rank


def rank_bounds(conds: list[exp.Expression], is_rank: IsRank) -> Bounds | None:
    """The ranks that ``conds`` (``AND``-ed) keep of the rank ``is_rank`` recognises, or None
    when none of them bounds it."""
    lo: int = 1
    hi: int | None = None
    found = False
    for cond in conds:
        got = _bound(cond, is_rank)
        if got is None:
            continue
        found = True
        lo = max(lo, got[0])
        if got[1] is not None:
            hi = got[1] if hi is None else min(hi, got[1])
    return (lo, hi) if found else None


def _int(node: exp.Expression) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(node.this)
        except ValueError:
            return None
    if isinstance(node, exp.Neg):
        v = _int(node.this)
        return None if v is None else -v
    return None


def _bound(cond: exp.Expression, is_rank: IsRank) -> Bounds | None:
    """The ranks one comparison keeps, or None when it is not ``rank op integer``."""
    while isinstance(cond, exp.Paren):
        cond = cond.this
    if isinstance(cond, exp.Between) and is_rank(cond.this):
        a, b = _int(cond.args["low"]), _int(cond.args["high"])
        if a is None or b is None:
            return None
        return max(a, 1), max(b, 0)
    ops = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.EQ: "="}
    if not isinstance(cond, exp.Binary) or type(cond) not in ops:
        return None
    op = ops[type(cond)]
    left, right = cond.this, cond.expression
    if is_rank(right):
        left, right = right, left
        op = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}[op]
    if not is_rank(left):
        return None
    v = _int(right)
    if v is None:
        return None
    if op == "=":
        return max(v, 1), max(v, 0)
    if op == "<":
        return 1, max(v - 1, 0)
    if op == "<=":
        return 1, max(v, 0)
    if op == ">":
        return max(v + 1, 1), None
    return max(v, 1), None
