"""``GROUP BY``, aggregates and ``HAVING``: one ``group_by(...).agg(...)``.

The aggregate calls of the ``SELECT`` list and ``HAVING`` (``COUNT(*)``, ``COUNT(x)``,
``COUNT(DISTINCT x)``, ``SUM``, ``AVG``, ``MIN``, ``MAX``; an argument may be any expression)
become the parts of one ``group_by(keys).agg(...)``, each identical call once;
``SUM`` / ``AVG(DISTINCT x)`` aggregate the distinct ``(keys, x)`` rows apart and join on
the keys. A ``GROUP BY``
item is a column, an expression (computed first into a column), a ``SELECT`` alias or a
1-based position in the ``SELECT`` list. Afterwards the ``SELECT`` list and ``HAVING`` read
the grouped relation through :class:`Grouped`: a group key expression or an aggregate call is
its column, and any other column reference is refused (it must appear in ``GROUP BY``).

Semantics are ``group_by``'s (:mod:`ddflow.grouping`), which are SQL's for a group that has
rows: ``COUNT(x)`` counts non-null values, ``SUM`` / ``AVG`` / ``MIN`` / ``MAX`` skip nulls
(null when all are), ``AVG`` of integers is float64 and of a decimal an exact decimal of
scale ``s + 4`` (DuckDB gives a DOUBLE). A global aggregate (aggregates without ``GROUP
BY``) has one row while its input has rows; over no rows SQL's row (``COUNT`` 0, the others
null) needs a one-row constant collection (:mod:`~ddflow.sql.unit`), without which there is
no row (see the how-to).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlglot import exp

import ddflow.aggregates as A
import ddflow.expr as E
from ddflow.aggregates import Aggregate
from ddflow.collection import Collection
from ddflow.expr import Expr, col
from ddflow.sql.expressions import AGGREGATES
from ddflow.sql.scope import Field, Relation, Scope
from ddflow.sql.unit import with_empty_row

if TYPE_CHECKING:
    from ddflow.sql.query import Planner

__all__ = ["Grouped", "find_aggregates", "plan_group"]


def find_aggregates(nodes: list[exp.Expression]) -> list[exp.Expression]:
    """The distinct aggregate calls in ``nodes``, outside nested subqueries."""
    found: list[exp.Expression] = []
    stack = list(reversed(nodes))
    while stack:
        n = stack.pop()
        if isinstance(n, AGGREGATES):
            if not any(n == f for f in found):
                found.append(n)
            continue
        if isinstance(n, exp.Subquery | exp.Select | exp.Exists):
            continue
        if isinstance(n, exp.Window):
            # A ranking window's keys may hold aggregates (RANK() OVER (ORDER BY sum(x))).
            stack.extend(reversed(n.args.get("partition_by") or []))
            order = n.args.get("order")
            stack.extend(reversed(order.expressions if order is not None else []))
            continue
        stack.extend(reversed(list(n.iter_expressions())))
    return found


@dataclass
class Grouped:
    """The grouped relation and how its expressions map onto its columns."""

    keys: list[tuple[exp.Expression, str]]
    """Each ``GROUP BY`` expression and its key column."""
    key_columns: set[str]
    """The key columns that hold a plain column of the input (by the input's column)."""
    aggregates: list[tuple[exp.Expression, str]]
    """Each aggregate call and its column."""
    query: str

    def lookup(self, node: exp.Expression) -> Expr | None:
        """The column of a group key expression or aggregate call, else None."""
        for key, column in self.keys:
            if node == key:
                return col(column)
        for call, column in self.aggregates:
            if node == call:
                return col(column)
        return None


def plan_group(p: Planner, sel: exp.Select, rel: Relation) -> tuple[Relation, Grouped] | None:
    """The grouped relation of ``sel`` and its mapping, or None if ``sel`` neither groups
    nor aggregates."""
    group = sel.args.get("group")
    items = [e.this if isinstance(e, exp.Alias) else e for e in sel.expressions]
    having = sel.args.get("having")
    order = sel.args.get("order")
    ordered = (
        [o.this for o in order.expressions]
        if order is not None and (sel.args.get("limit") or sel.args.get("offset"))
        else []
    )
    calls = find_aggregates(items + ([having.this] if having is not None else []) + ordered)
    if group is None and not calls:
        return None
    if group is not None and any(
        group.args.get(k) for k in ("grouping_sets", "cube", "rollup", "totals")
    ):
        raise p.refuse("GROUPING SETS, CUBE and ROLLUP are not supported", group)
    scope = Scope(rel)
    coll = rel.coll
    hidden: dict[str, Expr] = {}
    keys: list[tuple[exp.Expression, str]] = []
    key_columns: set[str] = set()
    for node in group.expressions if group is not None else []:
        target = _group_target(p, sel, node, rel)
        if isinstance(target, exp.Column):
            column = p.column_of(scope, target)
            keys.append((node, column))
            if target is not node:
                keys.append((target, column))
            key_columns.add(column)
            continue
        name = p.names.fresh("key")
        hidden[name] = p.expr(scope, target)
        keys.append((node, name))
        if target is not node:
            keys.append((target, name))
    if hidden:
        coll = coll.with_columns(**hidden)
    parts: dict[str, Aggregate] = {}
    aggregates: list[tuple[exp.Expression, str]] = []
    of_distinct: list[tuple[str, exp.Expression]] = []
    for call in calls:
        name = p.names.fresh(call.key)
        aggregates.append((call, name))
        if isinstance(call, exp.Sum | exp.Avg) and isinstance(call.this, exp.Distinct):
            of_distinct.append((name, call))
            continue
        parts[name] = aggregate_of(p, scope, call)
    key_names = list(dict.fromkeys(c for _, c in keys))
    grouped = (
        coll.group_by(*key_names).agg(**parts)
        if parts
        else coll.group_by(*key_names).agg(**{p.names.fresh("count"): A.count()})
    )
    for name, call in of_distinct:
        grouped = _join_distinct_aggregate(p, scope, coll, key_names, grouped, name, call)
    if group is None and p.unit is not None:
        counts = {n for c, n in aggregates if isinstance(c, exp.Count)}
        counts |= set(grouped.columns) - {n for _, n in aggregates}
        grouped = with_empty_row(grouped, counts, p.unit)
    fields = [Field(f.qualifier, f.name, f.column) for f in rel.fields if f.column in key_columns]
    mapping = Grouped(keys, key_columns, aggregates, p.query)
    return Relation(grouped, fields), mapping


def _join_distinct_aggregate(
    p: Planner,
    scope: Scope,
    coll: Collection,
    keys: list[str],
    grouped: Collection,
    name: str,
    call: exp.Expression,
) -> Collection:
    """``grouped`` with column ``name``: ``SUM`` / ``AVG(DISTINCT x)`` per group, the
    aggregate of the group's distinct values of ``x``, joined on the keys (nulls equal: a
    null key is a group)."""
    arg = call.this
    if len(arg.expressions) != 1:
        raise p.refuse(f"{call.key.upper()}(DISTINCT ...) of several values", call)
    value = p.names.fresh("distinct")
    values = coll.select(*keys, **{value: p.expr(scope, arg.expressions[0])}).distinct()
    agg = A.sum(value) if isinstance(call, exp.Sum) else A.mean(value)
    if keys:
        per_group = values.group_by(*keys).agg(**{name: agg})
        return grouped.join(per_group, on=keys, nulls_equal=True)
    one = p.names.fresh("one")
    per_all = values.group_by().agg(**{name: agg}).with_columns(**{one: E.lit(0)})
    joined = grouped.with_columns(**{one: E.lit(0)}).join(per_all, on=one)
    return joined.select(*(c for c in joined.columns if c != one))


def _group_target(
    p: Planner, sel: exp.Select, node: exp.Expression, rel: Relation
) -> exp.Expression:
    """What a ``GROUP BY`` item groups by: a position or ``SELECT`` alias resolved."""
    items = sel.expressions
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        index = int(node.this)
        if not 1 <= index <= len(items):
            raise p.refuse(f"GROUP BY position {index} is not in the SELECT list", node)
        item: exp.Expression = items[index - 1]
        return item.this if isinstance(item, exp.Alias) else item
    if isinstance(node, exp.Column) and not node.table and not rel.matching(node.name, None):
        for item in items:
            if isinstance(item, exp.Alias) and item.alias.lower() == node.name.lower():
                target: exp.Expression = item.this
                return target
    return node


def aggregate_of(p: Planner, scope: Scope, call: exp.Expression) -> Aggregate:
    """The ddflow aggregate of one SQL aggregate call."""
    arg = call.this
    if isinstance(call, exp.Count):
        if isinstance(arg, exp.Star) or arg is None:
            return A.count()
        if isinstance(arg, exp.Distinct):
            if len(arg.expressions) != 1:
                raise p.refuse("COUNT(DISTINCT ...) of several values is not supported", call)
            return A.count_distinct(p.expr(scope, arg.expressions[0]))
        return A.count(p.expr(scope, arg))
    if isinstance(arg, exp.Distinct):
        if isinstance(call, exp.Min | exp.Max) and len(arg.expressions) == 1:
            arg = arg.expressions[0]
        else:
            raise p.refuse(f"{call.key.upper()}(DISTINCT ...) is not supported here", call)
    if call.args.get("expression") is not None or call.expressions:
        raise p.refuse(f"{call.key.upper()} takes one argument here", call)
    value = p.expr(scope, arg)
    if isinstance(call, exp.Sum):
        return A.sum(value)
    if isinstance(call, exp.Avg):
        return A.mean(value)
    if isinstance(call, exp.Min):
        return A.min(value)
    return A.max(value)
