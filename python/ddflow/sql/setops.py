"""``UNION [ALL]``, ``EXCEPT``, ``INTERSECT`` and ``WITH [RECURSIVE]``.

The operands of a set operation line up by position; the result has the left's column
names. ``UNION ALL`` is ``concat`` (counts add), ``UNION`` its ``distinct``. ``EXCEPT`` and
``INTERSECT`` (set semantics, nulls equal as SQL's set operations have them) tag each side's
distinct rows 1 and 2 and sum the tags per row: 1 is only on the left (``EXCEPT``), 3 on
both (``INTERSECT``). ``EXCEPT ALL`` keeps ``max(a - b, 0)`` copies of a row that the sides
hold ``a`` and ``b`` times (a ``threshold`` of the difference), ``INTERSECT ALL``
``min(a, b)``.

``WITH`` names are planned once each, in order, and every reference reads the same
collection. ``WITH RECURSIVE r AS (base UNION step)`` is ``iterate``: starting from ``base``,
each round is ``distinct(base ∪ step(r))`` until nothing changes. ``UNION ALL`` recursion is
refused (its rows could multiply without end); so is a step that reads ``r`` twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from sqlglot import exp

import ddflow.aggregates as A
import ddflow.expr as E
from ddflow.collection import Collection
from ddflow.sql import ordering
from ddflow.sql.scope import Field, Relation, Scope

if TYPE_CHECKING:
    from ddflow.sql.query import Planner

__all__ = ["plan_setop", "plan_with"]


def _aligned(p: Planner, left: Relation, right: Relation, node: exp.Expression) -> Collection:
    """``right``'s collection with ``left``'s columns, by position."""
    if len(left.fields) != len(right.fields):
        raise p.refuse(
            f"the two sides have {len(left.fields)} and {len(right.fields)} columns", node
        )
    return right.coll.select(
        *(E.col(r.column).alias(f.column) for f, r in zip(left.fields, right.fields, strict=True))
    )


def _project(rel: Relation) -> Collection:
    """The relation's collection with exactly its fields' columns."""
    columns = [f.column for f in rel.fields]
    if list(rel.coll.columns) == columns:
        return rel.coll
    return rel.coll.select(*columns)


def plan_setop(p: Planner, node: exp.Expression, outer: Scope | None) -> Relation:
    """A ``UNION`` / ``EXCEPT`` / ``INTERSECT`` of two queries, then its ``ORDER BY`` with
    ``LIMIT`` / ``OFFSET`` (a top-k, :mod:`~ddflow.sql.ordering`)."""
    limit = ordering.limit_of(node, p.refuse)
    rel = _setop(p, node, outer)
    if limit is None:
        return rel
    outputs: list[tuple[str, exp.Expression | None]] = [(f.name, None) for f in rel.fields]
    items = ordering.order_items(node)
    keys = [
        ordering.sort_key(rel.fields[i].column, item)
        for i, item in ordering.resolve_order(items, outputs, p.refuse, False)
        if isinstance(i, int)
    ]
    return ordering.top_k(rel, keys, limit, p.names)


def _setop(p: Planner, node: exp.Expression, outer: Scope | None) -> Relation:
    """The rows of a ``UNION`` / ``EXCEPT`` / ``INTERSECT`` of two queries."""
    for key in ("by_name", "side", "kind", "on"):  # UNION BY NAME, ... (not by position)
        if node.args.get(key):
            what = f"{node.key.upper()} {key.replace('_', ' ').upper()}"
            raise p.refuse(f"{what} is not supported (set operations align by position)", node)
    distinct = node.args.get("distinct") is not False
    left = p.plan(node.this, outer)
    right = p.plan(node.expression, outer)
    fields = [Field(None, f.name, f.column) for f in left.fields]
    lcoll, rcoll = _project(left), _aligned(p, left, right, node)
    if isinstance(node, exp.Union):
        both = lcoll.concat(rcoll)
        return Relation(both.distinct() if distinct else both, fields)
    what = "EXCEPT" if isinstance(node, exp.Except) else "INTERSECT"
    if not distinct:
        # Counts: EXCEPT ALL keeps max(a - b, 0) copies of a row, INTERSECT ALL min(a, b),
        # which is a - max(a - b, 0).
        surplus = lcoll.concat(rcoll.negate()).threshold(_positive_part, vectorized=True)
        if what == "EXCEPT":
            return Relation(surplus, fields)
        return Relation(lcoll.concat(surplus.negate()), fields)
    tag = p.names.fresh("side")
    total = p.names.fresh("sides")
    tagged = (
        lcoll.distinct()
        .with_columns(**{tag: E.lit(1)})
        .concat(rcoll.distinct().with_columns(**{tag: E.lit(2)}))
    )
    sums = tagged.group_by(*lcoll.columns).agg(**{total: A.sum(tag)})
    wanted = 1 if what == "EXCEPT" else 3
    kept = sums.filter(E.col(total) == wanted).select(*lcoll.columns)
    return Relation(kept, fields)


def _positive_part(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``max(c, 0)`` of each count."""
    return np.maximum(counts, 0)


def plan_with(p: Planner, node: exp.Expression, with_: exp.With, outer: Scope | None) -> Relation:
    """A query under ``WITH``: each name planned in order, then the body."""
    scope: dict[str, Relation] = {}
    p.ctes.append(scope)
    try:
        for cte in with_.expressions:
            name = cte.alias.lower()
            body = cte.this
            alias = cte.args.get("alias")
            columns = [c.name for c in alias.args.get("columns") or []] if alias else []
            if with_.args.get("recursive") and _reads(body, name):
                scope[name] = _recursive(p, name, body, columns, cte)
            else:
                scope[name] = _renamed(p, p.plan(body, outer), columns, cte)
        return p.plan_body(node, outer)
    finally:
        p.ctes.pop()


def _renamed(p: Planner, rel: Relation, columns: list[str], node: exp.Expression) -> Relation:
    if not columns:
        return rel
    if len(columns) != len(rel.fields):
        raise p.refuse(f"{len(columns)} column names for {len(rel.fields)} columns", node)
    return Relation(
        rel.coll, [Field(None, n, f.column) for n, f in zip(columns, rel.fields, strict=True)]
    )


def _reads(node: exp.Expression, name: str) -> bool:
    """Whether ``node`` reads the table ``name``."""
    return any(t.name.lower() == name for t in node.find_all(exp.Table))


def _recursive(
    p: Planner, name: str, body: exp.Expression, columns: list[str], node: exp.Expression
) -> Relation:
    """``WITH RECURSIVE name AS (base UNION step)`` as ``iterate``."""
    if not isinstance(body, exp.Union):
        raise p.refuse("a recursive WITH must be base UNION step", node)
    if body.args.get("distinct") is False:
        raise p.refuse(
            "recursion with UNION ALL need not converge (rows can repeat without end); "
            "use UNION",
            body,
        )
    for key in ("limit", "offset"):
        if body.args.get(key) is not None:
            raise p.refuse(f"{key.upper()} on a recursive UNION is not supported", body.args[key])
    base_node, step_node = body.this, body.expression
    if _reads(base_node, name):
        raise p.refuse("the first part of a recursive UNION must not read itself", base_node)
    if sum(1 for t in step_node.find_all(exp.Table) if t.name.lower() == name) > 1:
        raise p.refuse("the recursive part may read the recursive name once", step_node)
    base = _renamed(p, p.plan(base_node, None), columns, node)
    base_coll = _project(base)
    fields = [Field(None, f.name, f.column) for f in base.fields]

    def step(var: Collection) -> Collection:
        p.ctes[-1][name] = Relation(var, fields)
        try:
            rel = p.plan(step_node, None)
        finally:
            del p.ctes[-1][name]
        stepped = _aligned(p, Relation(var, fields), rel, step_node)
        return base_coll.concat(stepped).distinct()

    return Relation(base_coll.iterate(step), fields)
