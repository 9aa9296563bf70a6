"""Subqueries, decorrelated into joins.

In ``WHERE`` (a conjunct, optionally under ``NOT``):

* ``EXISTS (q)`` / ``NOT EXISTS (q)`` become a ``semijoin`` / ``antijoin`` (set semantics,
  each outer row once whatever the number of matches). A correlated ``q`` is planned
  without its correlated conjuncts; the equalities between its columns and the outer
  query's become the join keys. Other correlated conjuncts (TPC-H Q21's ``<>``) are
  evaluated on the equi-join of the distinct outer values they read with ``q``, whose
  matching outer values then semi/anti-join the outer rows: no cross product where an
  equality exists.
* ``x IN (q)`` is ``EXISTS`` with ``x = q's column`` as one more key. ``x NOT IN (q)``
  follows SQL's null rule: no row passes if ``q`` has a null, and a row whose ``x`` is null
  passes only when ``q`` is empty (per correlation key when ``q`` is correlated by
  equalities).
* a comparison with a scalar subquery joins the subquery's value onto the rows (below)
  with an inner join: a row whose value is null fails the comparison anyway.

A scalar subquery elsewhere (``SELECT`` list, ``HAVING``, inside an expression) is joined
with a left join. Uncorrelated, it must be an aggregate without ``GROUP BY`` (so at most one
row) and joins on a constant key. Correlated by equalities only, it becomes a ``group_by``
on its correlation columns, of the subquery's rows whose correlation values some outer row
has (a semijoin first), joined to the outer rows on them; a ``COUNT`` of a key without rows
is 0, as SQL's. Anything else is refused with a ``SqlError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

import ddflow.expr as E
from ddflow.collection import Collection
from ddflow.expr import Expr
from ddflow.outer_joins import JoinHow
from ddflow.sql import aggregates, relations, windows
from ddflow.sql.expressions import conjuncts
from ddflow.sql.scope import Field, Relation, Scope

if TYPE_CHECKING:
    from ddflow.sql.query import Holder, Planner

__all__ = ["apply_conjunct", "compared_subquery", "has_subquery", "scalar"]

_COMPARISONS = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE)


def has_subquery(node: exp.Expression) -> bool:
    """Whether ``node`` holds a subquery."""
    return any(isinstance(n, exp.Subquery | exp.Exists | exp.Select) for n in node.walk())


def _strip(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _query_of(node: exp.Expression) -> exp.Expression:
    node = _strip(node)
    return node.this if isinstance(node, exp.Subquery) else node


def compared_subquery(cond: exp.Expression) -> exp.Expression | None:
    """The scalar subquery that the conjunct ``cond`` compares directly (``x < (SELECT
    ...)``, no ``NOT``): where it is null, the conjunct drops the row, so it may be joined
    with an inner join."""
    node = _strip(cond)
    if not isinstance(node, _COMPARISONS):
        return None
    for side in (node.this, node.expression):
        if isinstance(_strip(side), exp.Subquery):
            return _strip(side)
    return None


def apply_conjunct(
    p: Planner, rel: Relation, cond: exp.Expression, outer: Scope | None
) -> Relation:
    """``rel`` filtered by a ``WHERE`` conjunct that holds a subquery."""
    # Imported here: the planner module imports this one.
    from ddflow.sql.query import Holder

    node, negate = _strip(cond), False
    if isinstance(node, exp.Not):
        node, negate = _strip(node.this), True
    if isinstance(node, exp.Exists):
        return _exists(p, rel, _query_of(node.this), negate, outer, None, node)
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        query = _query_of(node.args["query"])
        if negate:
            return _not_in(p, rel, node.this, query, outer, node)
        return _exists(p, rel, query, False, outer, node.this, node)
    holder = Holder(rel)
    direct = compared_subquery(cond)

    def special(n: exp.Expression) -> Expr | None:
        if isinstance(n, exp.Subquery):
            return scalar(p, holder, n, outer, inner=n is direct)
        if isinstance(n, exp.Exists) or (isinstance(n, exp.In) and n.args.get("query")):
            raise p.refuse(
                "EXISTS and IN (subquery) are supported as WHERE conjuncts (with NOT) only", n
            )
        return None

    e = p.translator(Scope(rel, outer), special).predicate(cond)
    return Relation(holder.rel.coll.filter(e), holder.rel.fields)


# -- correlation ---------------------------------------------------------------------------


class _Split:
    """A simple subquery's ``FROM`` relations and its conjuncts: local ones, those holding
    a subquery, equalities with the outer query (local side, outer side), and the other
    correlated ones."""

    def __init__(self) -> None:
        self.pool: list[Relation] = []
        self.local: list[exp.Expression] = []
        self.nested: list[exp.Expression] = []
        self.pairs: list[tuple[exp.Expression, exp.Expression]] = []
        self.residual: list[exp.Expression] = []


def _side(p: Planner, node: exp.Expression, pool: list[Relation], outer: Scope) -> set[str]:
    """Where the columns of ``node`` live: ``"local"`` and / or ``"outer"``."""
    where: set[str] = set()
    for column in node.find_all(exp.Column):
        if isinstance(column.this, exp.Star):
            continue
        q = column.table or None
        if any(r.matching(column.name, q) for r in pool):
            where.add("local")
            continue
        fields, lookup = outer.find(column.name, q)
        if fields or lookup is not None:
            where.add("outer")
            continue
        raise p.refuse("unknown column", column)
    return where


def _split(p: Planner, sel: exp.Expression, outer: Scope) -> _Split | None:
    """The parts of a correlated subquery, or None if it reads nothing of ``outer``."""
    if not isinstance(sel, exp.Select):
        return None
    split = _Split()
    from_ = sel.args.get("from_") or sel.args.get("from")
    if from_ is None:
        return None
    items = [from_.this]
    conds: list[exp.Expression] = []
    for join in sel.args.get("joins") or []:
        if (
            join.args.get("side")
            or join.args.get("using")
            or join.args.get("kind")
            not in (
                None,
                "",
                "INNER",
                "CROSS",
            )
        ):
            return None
        items.append(join.this)
        conds += conjuncts(join.args.get("on"))
    split.pool = [p.source(item, dry=True) for item in items]
    where = sel.args.get("where")
    conds += conjuncts(where.this if where is not None else None)
    for cond in conds:
        if has_subquery(cond):
            split.nested.append(cond)
            continue
        where_ = _side(p, cond, split.pool, outer)
        if "outer" not in where_:
            split.local.append(cond)
            continue
        sides = relations.equality_sides(cond)
        if sides is not None:
            a, b = sides
            sa, sb = _side(p, a, split.pool, outer), _side(p, b, split.pool, outer)
            if sa == {"local"} and sb == {"outer"}:
                split.pairs.append((a, b))
                continue
            if sa == {"outer"} and sb == {"local"}:
                split.pairs.append((b, a))
                continue
        split.residual.append(cond)
    if not split.pairs and not split.residual:
        return None
    split.pool = [p.source(item) for item in items]
    return split


def correlation(p: Planner, sel: exp.Expression, outer: Scope) -> list[exp.Expression] | None:
    """The conjuncts of ``sel`` that read ``outer``'s columns, or None if there are none
    (adds no operators)."""
    if not isinstance(sel, exp.Select):
        return None
    from_ = sel.args.get("from_") or sel.args.get("from")
    if from_ is None:
        return None
    items = [from_.this] + [j.this for j in sel.args.get("joins") or []]
    pool = [p.source(item, dry=True) for item in items]
    conds = [c for j in sel.args.get("joins") or [] for c in conjuncts(j.args.get("on"))]
    where = sel.args.get("where")
    conds += conjuncts(where.this if where is not None else None)
    found = [c for c in conds if not has_subquery(c) and "outer" in _side(p, c, pool, outer)]
    return found or None


_NOT_PER_ROW = ("group", "having", "distinct", "limit", "offset", "qualify")
"""Clauses over a correlated subquery's rows as a whole: its decorrelated plan (per
correlation key) cannot keep their meaning."""


def _is_simple(sel: exp.Select) -> bool:
    """No grouping, aggregates, DISTINCT, set operations, limits or window functions."""
    if any(sel.args.get(k) for k in _NOT_PER_ROW) or windows.has_window(sel):
        return False
    items = [e.this if isinstance(e, exp.Alias) else e for e in sel.expressions]
    return not aggregates.find_aggregates(items)


def _local(p: Planner, split: _Split) -> Relation:
    """The subquery's relation from its local conjuncts."""
    saved, p.outer = p.outer, None
    try:
        rel = relations.collapse(p, split.pool, split.local)
        for cond in split.nested:
            rel = apply_conjunct(p, rel, cond, None)
        return rel
    finally:
        p.outer = saved


def _const(coll: Collection, name: str) -> Collection:
    return coll.with_columns(**{name: E.lit(0)})


# -- EXISTS and IN -----------------------------------------------------------------------------


def _exists(
    p: Planner,
    rel: Relation,
    query: exp.Expression,
    negate: bool,
    outer: Scope | None,
    value: exp.Expression | None,
    node: exp.Expression,
) -> Relation:
    """``[NOT] EXISTS (query)``, or ``value IN (query)`` when ``value`` is given."""
    here = Scope(rel, outer)
    split = _split(p, query, here)
    if split is None:
        return _uncorrelated_exists(p, rel, query, negate, value, node)
    assert isinstance(query, exp.Select)
    if not _is_simple(query):
        raise p.refuse(
            "a correlated subquery with GROUP BY, aggregates, DISTINCT, LIMIT / OFFSET or a "
            "window function is not supported in EXISTS / IN",
            node,
        )
    inner = _local(p, split)
    pairs = list(split.pairs)
    if value is not None:
        if len(query.expressions) != 1:
            raise p.refuse("an IN subquery must select one column", query)
        item = query.expressions[0]
        pairs.append((item.this if isinstance(item, exp.Alias) else item, value))
    saved, p.outer = p.outer, outer
    try:
        outer_rel, ok = p.key_columns(rel, [o for _, o in pairs])
    finally:
        p.outer = saved
    inner, ik = p.key_columns(inner, [i for i, _ in pairs])
    how = "antijoin" if negate else "semijoin"
    if not split.residual:
        joined = getattr(outer_rel.coll, how)(inner.coll, left_on=ok, right_on=ik)
        return Relation(joined, rel.fields)
    both, reads, _ = _matches(p, outer_rel, outer, split, inner, ok, ik)
    matched = both.select(*reads).distinct()
    # Joined with nulls equal: a null outer value the other conditions accept still matches
    # (``t.x IS NULL OR ...``); semijoin and antijoin never match nulls.
    hits = outer_rel.coll.join(matched, on=reads, nulls_equal=True)
    hits = hits.select(*outer_rel.coll.columns)
    if negate:
        return Relation(outer_rel.coll.concat(hits.negate()), rel.fields)
    return Relation(hits, rel.fields)


def _matches(
    p: Planner,
    outer_rel: Relation,
    outer: Scope | None,
    split: _Split,
    inner: Relation,
    ok: list[str],
    ik: list[str],
) -> tuple[Collection, list[str], list[Field]]:
    """The distinct outer values a correlated subquery reads (its outer equality keys
    ``ok`` and the outer columns of its other correlated conditions), each joined with the
    subquery's rows that match it: equi-joined on the equalities (a cross product only if
    there are none), then filtered by the other conditions. Also the value columns and the
    subquery's fields on the result."""
    reads = list(ok)
    for cond in split.residual:
        for column in cond.find_all(exp.Column):
            if not any(r.matching(column.name, column.table or None) for r in split.pool):
                name = p.column_of(Scope(outer_rel, outer), column)
                if name not in reads:
                    reads.append(name)
    values = outer_rel.coll.select(*reads).distinct()
    if ok:
        both = values.join(inner.coll, left_on=ok, right_on=ik)
        # The inner key columns are dropped by the join: they equal the outer keys.
        to_outer = dict(zip(ik, ok, strict=True))
        fields = [
            Field(f.qualifier, f.name, to_outer.get(f.column, f.column), f.qualified_only)
            for f in inner.fields
        ]
    else:
        key = p.names.fresh("one")
        both = _const(values, key).join(
            _const(inner.coll, key + "_r"), left_on=key, right_on=key + "_r"
        )
        fields = inner.fields
    scope = Scope(Relation(both, fields), Scope(outer_rel, outer))
    for cond in split.residual:
        both = both.filter(p.translator(scope, allow_outer=True).predicate(cond))
    return both, reads, fields


def _uncorrelated_exists(
    p: Planner,
    rel: Relation,
    query: exp.Expression,
    negate: bool,
    value: exp.Expression | None,
    node: exp.Expression,
) -> Relation:
    q = p.plan(query, None)
    how = "antijoin" if negate else "semijoin"
    if value is None:
        key = p.names.fresh("one")
        right = q.coll.select(**{key + "_r": E.lit(0)})
        joined = getattr(_const(rel.coll, key), how)(right, left_on=key, right_on=key + "_r")
        return Relation(joined, rel.fields)
    if len(q.fields) != 1:
        raise p.refuse("an IN subquery must select one column", query)
    outer_rel, (x,) = p.key_columns(rel, [value])
    joined = getattr(outer_rel.coll, how)(q.coll, left_on=x, right_on=q.fields[0].column)
    return Relation(joined, rel.fields)


def _not_in(
    p: Planner,
    rel: Relation,
    value: exp.Expression,
    query: exp.Expression,
    outer: Scope | None,
    node: exp.Expression,
) -> Relation:
    """``value NOT IN (query)`` with SQL's null rule (see the module docs), per correlation
    key when ``query`` is correlated by equalities."""
    split = _split(p, query, Scope(rel, outer))
    if split is None:
        q = p.plan(query, None)
        if len(q.fields) != 1:
            raise p.refuse("a NOT IN subquery must select one column", query)
        key = p.names.fresh("one")
        inner_coll = _const(q.coll, key + "_r")
        inner_keys, v = [key + "_r"], q.fields[0].column
        outer_rel, (x,) = p.key_columns(rel, [value])
        outer_coll, outer_keys = _const(outer_rel.coll, key), [key]
    else:
        assert isinstance(query, exp.Select)
        if split.residual or not _is_simple(query):
            raise p.refuse(
                "a correlated NOT IN subquery must be correlated by equalities only, without "
                "aggregates (or write NOT EXISTS)",
                node,
            )
        if len(query.expressions) != 1:
            raise p.refuse("a NOT IN subquery must select one column", query)
        item = query.expressions[0]
        inner, ik = p.key_columns(
            _local(p, split),
            [i for i, _ in split.pairs] + [item.this if isinstance(item, exp.Alias) else item],
        )
        inner_coll, inner_keys, v = inner.coll, ik[:-1], ik[-1]
        saved, p.outer = p.outer, outer
        try:
            outer_rel, ok = p.key_columns(rel, [o for _, o in split.pairs] + [value])
        finally:
            p.outer = saved
        outer_coll, outer_keys, x = outer_rel.coll, ok[:-1], ok[-1]
    kept = outer_coll.antijoin(inner_coll, left_on=[*outer_keys, x], right_on=[*inner_keys, v])
    # What else drops a row the antijoin kept, in one more antijoin on (keys, m): a row with
    # a value (m = 0) falls where its group of the subquery has a null, a null value (m = 1)
    # where the group has any row. The blockers: m = 1 per subquery row, m = 0 per null.
    m = p.names.fresh("blocked_by")
    kept = kept.with_columns(**{m: E.when(E.col(x).is_null()).then(1).otherwise(0)})
    blockers = inner_coll.select(*inner_keys, **{m: E.lit(1)}).concat(
        inner_coll.filter(E.col(v).is_null()).select(*inner_keys, **{m: E.lit(0)})
    )
    passed = kept.antijoin(blockers, left_on=[*outer_keys, m], right_on=[*inner_keys, m])
    return Relation(passed, rel.fields)


# -- scalar subqueries ---------------------------------------------------------------------------


def scalar(
    p: Planner, holder: Holder, node: exp.Subquery, outer: Scope | None, inner: bool
) -> Expr:
    """The value of a scalar subquery, joined onto ``holder.rel``; ``inner`` when the row
    may be dropped where the value is null (it is compared directly in ``WHERE``)."""
    query = node.this
    here = Scope(holder.rel, outer)
    split = _split(p, query, here)
    if split is None:
        return _uncorrelated_scalar(p, holder, query, inner, node)
    assert isinstance(query, exp.Select)
    if any(query.args.get(k) for k in _NOT_PER_ROW) or windows.has_window(query):
        raise p.refuse(
            "a correlated scalar subquery with GROUP BY, DISTINCT, LIMIT / OFFSET or a window "
            "function",
            node,
        )
    if len(query.expressions) != 1:
        raise p.refuse("a scalar subquery must select one column", node)
    item = query.expressions[0]
    item = item.this if isinstance(item, exp.Alias) else item
    calls = aggregates.find_aggregates([item])
    if not calls:
        raise p.refuse("a correlated scalar subquery must aggregate (one row per row)", node)
    local = _local(p, split)
    local, ik = p.key_columns(local, [i for i, _ in split.pairs])
    saved, p.outer = p.outer, outer
    try:
        rel, ok = p.key_columns(holder.rel, [o for _, o in split.pairs])
    finally:
        p.outer = saved
    counts = any(isinstance(c, exp.Count) for c in calls)
    how: JoinHow = "inner" if inner and not counts else "left"
    if split.residual:
        # Other correlated conditions: aggregate per distinct outer value they read.
        both, reads, fields = _matches(p, rel, outer, split, local, ok, ik)
        scope = Scope(Relation(both, fields))
        parts = {p.names.fresh(c.key): aggregates.aggregate_of(p, scope, c) for c in calls}
        groups = both.group_by(*reads).agg(**parts)
        joined = rel.coll.join(groups, on=reads, how=how, nulls_equal=True)
    else:
        # Only the groups some outer row asks for (TPC-H Q17 averages few parts' lines).
        wanted = _semijoin(p, local.coll, ik, rel.coll, ok)
        scope = Scope(Relation(wanted, local.fields))
        parts = {p.names.fresh(c.key): aggregates.aggregate_of(p, scope, c) for c in calls}
        groups = wanted.group_by(*ik).agg(**parts)
        joined = rel.coll.join(groups, left_on=ok, right_on=ik, how=how)
    holder.rel = Relation(joined, rel.fields)
    columns = dict(zip(parts, calls, strict=True))

    def special(n: exp.Expression) -> Expr | None:
        for name, call in columns.items():
            if n == call:
                e = E.col(name)
                return E.coalesce(e, 0) if isinstance(call, exp.Count) else e
        if isinstance(n, exp.Column):
            raise p.refuse("column must be inside an aggregate here", n)
        return None

    return p.translator(Scope(holder.rel), special).typed(item)


def _semijoin(
    p: Planner, coll: Collection, keys: list[str], other: Collection, other_keys: list[str]
) -> Collection:
    """``coll.semijoin(other, ...)``; where ``coll`` is a table scan that an earlier scan of
    the same columns repeats, that scan's semijoin renamed, so that both share the
    arrangement (the outer query usually arranges its scan by the same key)."""
    earlier = p.earlier_scan(coll)
    if earlier is None:
        return coll.semijoin(other, left_on=keys, right_on=other_keys)
    renamed = dict(zip(coll.columns, earlier.columns, strict=True))
    if not all(k in renamed for k in keys):
        return coll.semijoin(other, left_on=keys, right_on=other_keys)
    wanted = earlier.semijoin(other, left_on=[renamed[k] for k in keys], right_on=other_keys)
    return wanted.select(*(E.col(renamed[c]).alias(c) for c in coll.columns))


def _uncorrelated_scalar(
    p: Planner, holder: Holder, query: exp.Expression, inner: bool, node: exp.Expression
) -> Expr:
    one_row = (
        isinstance(query, exp.Select)
        and not query.args.get("group")
        and aggregates.find_aggregates(
            [e.this if isinstance(e, exp.Alias) else e for e in query.expressions]
        )
    )
    if not one_row:
        raise p.refuse(
            "a scalar subquery must be an aggregate without GROUP BY (at most one row)", node
        )
    q = p.plan(query, None)
    if len(q.fields) != 1:
        raise p.refuse("a scalar subquery must select one column", node)
    key = p.names.fresh("one")
    left = _const(holder.rel.coll, key)
    right = q.coll.select(E.col(q.fields[0].column), **{key + "_r": E.lit(0)})
    how: JoinHow = "inner" if inner else "left"
    joined = left.join(right, left_on=key, right_on=key + "_r", how=how)
    holder.rel = Relation(joined, holder.rel.fields)
    return E.col(q.fields[0].column)
