"""``FROM`` clauses: table references, joins, and the ``WHERE`` conjuncts that join them.

A ``FROM`` list and its inner joins form a *pool* of relations with a list of conjuncts (the
``ON`` conditions and the ``WHERE`` clause's): :func:`collapse` filters each relation by the
conjuncts that read only it, joins each filtered relation that equalities link to one other
only into that one (selective dimensions first, as a hand-written plan would), then joins
the pool greedily, each step an equi-join on every equality between the relations joined so
far and the next one (``a.x = b.y``, either side an expression of one relation), so no plan
holds a cross product where an equi-join exists;
a relation with no equality to the others is joined on a constant key (a cross product).
Conjuncts that read several relations otherwise are filters once all of them are joined. A
conjunct that is an ``OR`` first has the conjuncts common to all its branches pulled out
(TPC-H Q19's join condition). An outer join collapses the pool on its left first;
``LEFT`` / ``RIGHT`` / ``FULL`` take equalities in ``ON`` or ``USING``; in a ``LEFT`` /
``RIGHT`` join's ``ON``, a conjunct on the inner side alone filters that side first, and one
on the preserved side alone lets only its passing rows join (the others are padded);
anything else is refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from sqlglot import exp

import ddflow.expr as E
from ddflow.outer_joins import JoinHow
from ddflow.sql.expressions import conjuncts
from ddflow.sql.scope import Field, Relation, Scope

if TYPE_CHECKING:
    from ddflow.sql.query import Planner

__all__ = ["plan_from", "collapse", "components_of", "equality_sides", "factor_or"]

_HOWS: dict[str, JoinHow] = {"INNER": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "outer"}


def plan_from(
    p: Planner,
    sel: exp.Select,
    where: list[exp.Expression],
    early: list[exp.Expression] | None = None,
) -> tuple[Relation, list[exp.Expression]]:
    """The relation of ``sel``'s ``FROM`` clause and joins, filtered by the plain
    (subquery-free) ``WHERE`` conjuncts ``where``, and by those of the ``early`` subquery
    conjuncts that read one relation of the final pool only (applied to it before any join);
    also the ``early`` conjuncts left for the caller."""
    from_ = sel.args.get("from_") or sel.args.get("from")
    if from_ is None:
        raise p.refuse("a SELECT without FROM is not supported", sel)
    pool = [p.source(from_.this)]
    conds: list[exp.Expression] = []
    for join in sel.args.get("joins") or []:
        side = (join.args.get("side") or "").upper()
        kind = (join.args.get("kind") or "").upper()
        if kind in ("SEMI", "ANTI", "ASOF", "POSITIONAL") or join.args.get("method"):
            raise p.refuse(f"{kind or 'this'} join is not supported", join)
        right = p.source(join.this)
        using = join.args.get("using")
        on = join.args.get("on")
        if side:
            left = collapse(p, pool, conds)
            pool, conds = [outer_join(p, left, right, side, on, using, join)], []
            continue
        if using:
            left = collapse(p, pool, conds)
            pool, conds = [_using_join(p, left, right, "INNER", using, join)], []
            continue
        pool.append(right)
        conds += conjuncts(on)
    rest: list[exp.Expression] = []
    for cond in early or []:
        i = _one_relation(p, cond, pool)
        if i is None:
            rest.append(cond)
        else:
            pool[i] = p.subquery_filter(pool[i], cond)
    return collapse(p, pool, conds + where), rest


def _one_relation(p: Planner, cond: exp.Expression, pool: list[Relation]) -> int | None:
    """The pool relation a ``[NOT] IN (uncorrelated subquery)`` conjunct tests a value of,
    if that value reads that relation only."""
    node = cond
    while isinstance(node, exp.Paren | exp.Not):
        node = node.this
    if not isinstance(node, exp.In) or node.args.get("query") is None:
        return None
    comps = components_of(p, node.this, pool, p.outer)
    if len(comps) != 1:
        return None
    everything = Relation(pool[0].coll, [f for r in pool for f in r.fields])
    if p.correlated(node.args["query"], Scope(everything, p.outer)):
        return None
    (i,) = comps
    return i


def factor_or(node: exp.Expression) -> list[exp.Expression]:
    """``node``, or the conjuncts common to all branches of an ``OR`` followed by the ``OR``
    of what remains of each branch."""
    inner = node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if not isinstance(inner, exp.Or):
        return [node]
    branches: list[exp.Expression] = []

    def flatten(n: exp.Expression) -> None:
        while isinstance(n, exp.Paren):
            n = n.this
        if isinstance(n, exp.Or):
            flatten(n.this)
            flatten(n.expression)
        else:
            branches.append(n)

    flatten(inner)
    parts = [conjuncts(b) for b in branches]
    common = [c for c in parts[0] if all(any(c == d for d in other) for other in parts[1:])]
    if not common:
        return [node]
    rest = [[c for c in part if not any(c == d for d in common)] for part in parts]
    if any(not r for r in rest):
        return common  # one branch is only the common part: the OR always holds then
    ors = [cast(exp.Expression, exp.and_(*r)) if len(r) > 1 else r[0] for r in rest]
    return [*common, cast(exp.Expression, exp.or_(*ors))]


def components_of(
    p: Planner, node: exp.Expression, pool: list[Relation], outer: Scope | None = None
) -> set[int]:
    """The pool relations whose fields ``node`` reads (not counting nested subqueries)."""
    found: set[int] = set()
    for column in _columns(node):
        hits = [i for i, r in enumerate(pool) if r.matching(column.name, _qualifier(column))]
        if len(hits) > 1:
            raise p.refuse(f"column {column.sql()} is ambiguous", column)
        if not hits:
            p.check_outer(column, outer)
            continue
        found.add(hits[0])
    return found


def _columns(node: exp.Expression) -> list[exp.Column]:
    out: list[exp.Column] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            out.append(n)
            continue
        if isinstance(n, exp.Subquery | exp.Select | exp.Exists):
            continue
        stack.extend(v for v in n.iter_expressions())
    return out


def _qualifier(column: exp.Column) -> str | None:
    return column.table or None


def equality_sides(node: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """The two sides of an ``=`` conjunct (parentheses removed), else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.EQ):
        return node.this, node.expression
    return None


def collapse(p: Planner, pool: list[Relation], conds: list[exp.Expression]) -> Relation:
    """One relation: ``pool`` filtered and joined by ``conds`` (see the module docs)."""
    pool = list(pool)
    pending: list[tuple[exp.Expression, set[int]]] = []
    filtered: set[int] = set()
    for cond in [f for c in conds for f in factor_or(c)]:
        comps = components_of(p, cond, pool, p.outer)
        if len(comps) == 1:
            (i,) = comps
            pool[i] = p.filter(pool[i], cond)
            filtered.add(i)
        elif not comps:
            pool[0] = p.filter(pool[0], cond)
        else:
            pending.append((cond, comps))
            for i, implied in _implied_filters(p, cond, pool):
                pool[i] = p.filter(pool[i], implied)
                filtered.add(i)
    merged, pending = _absorb_filtered_leaves(p, pool, pending, filtered)
    first = min(set(range(len(pool))) - merged)
    joined = merged | {first}
    current = pool[first]
    while len(joined) < len(pool):
        step = _next_join(p, pool, joined, pending)
        if step is None:
            nxt = min(set(range(len(pool))) - joined)
            current = _cross(p, current, pool[nxt])
            joined.add(nxt)
        else:
            nxt, lefts, rights, used = step
            current = p.equi_join(current, pool[nxt], lefts, rights)
            joined.add(nxt)
            pending = [(c, s) for c, s in pending if not any(c is u for u in used)]
        ready = [(c, s) for c, s in pending if s <= joined]
        pending = [(c, s) for c, s in pending if not s <= joined]
        for cond, _ in ready:
            current = p.filter(current, cond)
    return current


def _absorb_filtered_leaves(
    p: Planner,
    pool: list[Relation],
    pending: list[tuple[exp.Expression, set[int]]],
    filtered: set[int],
) -> tuple[set[int], list[tuple[exp.Expression, set[int]]]]:
    """Joins each filtered relation that equalities link to one other relation only into
    that one first (repeatedly: the result counts as filtered), so selective dimensions
    shrink their neighbours before the main join order (TPC-H Q7's nations into suppliers and
    customers). Returns the relations merged away (their fields now live in their
    neighbour) and the conjuncts still pending."""
    merged: set[int] = set()
    while len(merged) < len(pool) - 1:
        step = None
        for i in sorted(filtered - merged):
            neighbours = {
                k
                for cond, comps in pending
                if i in comps and equality_sides(cond) is not None
                for k in comps
            } - {i}
            if len(neighbours) != 1:
                continue
            (j,) = neighbours
            found = _next_join(p, pool, {j}, [(c, s) for c, s in pending if s == {i, j}])
            if found is not None and found[0] == i:
                step = (i, j, found)
                break
        if step is None:
            break
        i, j, (_, lefts, rights, used) = step
        pool[j] = p.equi_join(pool[j], pool[i], lefts, rights)
        pool[i] = Relation(pool[i].coll, [])
        merged.add(i)
        filtered.add(j)
        rest: list[tuple[exp.Expression, set[int]]] = []
        for cond, comps in pending:
            if any(cond is u for u in used):
                continue
            comps = {j if k == i else k for k in comps}
            if comps == {j}:
                pool[j] = p.filter(pool[j], cond)
            else:
                rest.append((cond, comps))
        pending = rest
    return merged, pending


def _branches(node: exp.Expression) -> list[exp.Expression]:
    """The operands of a chain of ``OR`` (parentheses removed); one for anything else."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Or):
        return _branches(node.this) + _branches(node.expression)
    return [node]


def _implied_filters(
    p: Planner, cond: exp.Expression, pool: list[Relation]
) -> list[tuple[int, exp.Expression]]:
    """Filters on single relations implied by an ``OR`` over several: when every branch has
    conjuncts on relation ``i`` alone, ``i``'s rows must pass one branch's (TPC-H Q7's
    nations, Q19's parts and lines). The ``OR`` itself still applies after the join."""
    branches = _branches(cond)
    if len(branches) < 2:
        return []
    per_branch = [[(c, components_of(p, c, pool, p.outer)) for c in conjuncts(b)] for b in branches]
    out: list[tuple[int, exp.Expression]] = []
    for i in range(len(pool)):
        parts = [[c for c, comps in branch if comps == {i}] for branch in per_branch]
        if all(parts):
            ands = [cast(exp.Expression, exp.and_(*ps)) if len(ps) > 1 else ps[0] for ps in parts]
            out.append((i, cast(exp.Expression, exp.or_(*ands))))
    return out


def _next_join(
    p: Planner,
    pool: list[Relation],
    joined: set[int],
    pending: list[tuple[exp.Expression, set[int]]],
) -> tuple[int, list[exp.Expression], list[exp.Expression], list[exp.Expression]] | None:
    """The next relation to join, with the key expressions on each side and the
    conjuncts that became keys; None when no equality links another relation."""
    for j in range(len(pool)):
        if j in joined:
            continue
        lefts: list[exp.Expression] = []
        rights: list[exp.Expression] = []
        used: list[exp.Expression] = []
        for cond, comps in pending:
            sides = equality_sides(cond)
            if sides is None or j not in comps or not comps <= joined | {j}:
                continue
            a, b = sides
            ca = components_of(p, a, pool, p.outer)
            cb = components_of(p, b, pool, p.outer)
            if cb == {j} and ca and ca <= joined:
                lefts.append(a)
                rights.append(b)
                used.append(cond)
            elif ca == {j} and cb and cb <= joined:
                lefts.append(b)
                rights.append(a)
                used.append(cond)
        if lefts:
            return j, lefts, rights, used
    return None


def _cross(p: Planner, left: Relation, right: Relation) -> Relation:
    """The cross product, as a join on a constant key."""
    return p.equi_join(left, right, [exp.Literal.number(0)], [exp.Literal.number(0)])


def outer_join(
    p: Planner,
    left: Relation,
    right: Relation,
    side: str,
    on: exp.Expression | None,
    using: list[exp.Expression] | None,
    node: exp.Expression,
) -> Relation:
    """``left`` ``LEFT`` / ``RIGHT`` / ``FULL`` join ``right``."""
    if using:
        return _using_join(p, left, right, side, using, node)
    if on is None:
        raise p.refuse(f"{side} JOIN needs ON or USING", node)
    pool = [left, right]
    lefts: list[exp.Expression] = []
    rights: list[exp.Expression] = []
    inner_side = {"LEFT": 1, "RIGHT": 0}.get(side)
    preserved: list[exp.Expression] = []
    for cond in conjuncts(on):
        comps = components_of(p, cond, pool)
        sides = equality_sides(cond)
        if sides is not None and comps == {0, 1}:
            a, b = sides
            ca, cb = components_of(p, a, pool), components_of(p, b, pool)
            if ca == {0} and cb == {1}:
                lefts.append(a)
                rights.append(b)
                continue
            if ca == {1} and cb == {0}:
                lefts.append(b)
                rights.append(a)
                continue
        if inner_side is not None and comps <= {inner_side}:
            pool[inner_side] = p.filter(pool[inner_side], cond)
            continue
        if inner_side is not None and comps == {1 - inner_side}:
            preserved.append(cond)
            continue
        raise p.refuse(
            f"in {side} JOIN ... ON, only equalities between the two sides and conditions on "
            "one side alone are supported",
            cond,
        )
    if not lefts:
        raise p.refuse(f"{side} JOIN without an equality between the two sides", node)
    how = _HOWS[side]
    if not preserved:
        return p.equi_join(pool[0], pool[1], lefts, rights, how=how)
    return _gated_outer_join(p, pool, lefts, rights, 1 - (inner_side or 0), preserved, how)


def _gated_outer_join(
    p: Planner,
    pool: list[Relation],
    lefts: list[exp.Expression],
    rights: list[exp.Expression],
    kept: int,
    conds: list[exp.Expression],
    how: JoinHow,
) -> Relation:
    """A left (right) join whose ``ON`` also tests the preserved side (``kept``): its rows
    that pass ``conds`` are joined, the others padded with nulls (they match nothing)."""
    left, lk = p.key_columns(pool[0], lefts)
    right, rk = p.key_columns(pool[1], rights)
    sides = [left, right]
    scope = Scope(sides[kept], p.outer)
    test = p.translator(scope).predicate(conds[0])
    for cond in conds[1:]:
        test = test & p.translator(scope).predicate(cond)
    passing = Relation(sides[kept].coll.filter(test), sides[kept].fields)
    failing = sides[kept].coll.filter(~E.coalesce(test, E.lit(False)))
    sides[kept] = passing
    joined = p.join_on_columns(sides[0], sides[1], lk, rk, how)
    have = set(failing.columns)
    padded = failing.select(
        *((E.col(c) if c in have else E.null_column()).alias(c) for c in joined.coll.columns)
    )
    return Relation(joined.coll.concat(padded), joined.fields)


def _using_join(
    p: Planner,
    left: Relation,
    right: Relation,
    side: str,
    using: list[exp.Expression],
    node: exp.Expression,
) -> Relation:
    """A join ``USING (k, ...)``: one visible ``k`` (the left's for inner and left joins, the
    right's for right joins, the non-null one for full joins); ``t.k`` still names a side's."""
    lefts: list[exp.Expression] = []
    rights: list[exp.Expression] = []
    pairs: list[tuple[Field, Field]] = []
    for ident in using:
        name = ident.name
        lfs, rfs = left.matching(name, None), right.matching(name, None)
        if len(lfs) != 1 or len(rfs) != 1:
            raise p.refuse(f"USING column {name} must name one column on each side", node)
        pairs.append((lfs[0], rfs[0]))
        lefts.append(exp.column(name, lfs[0].qualifier))
        rights.append(exp.column(name, rfs[0].qualifier))
    how = _HOWS[side]
    joined = p.equi_join(left, right, lefts, rights, how=how)
    coll = joined.coll
    firsts: list[Field] = []
    hidden: set[str] = set()
    for lf, rf in pairs:
        if side == "FULL":
            merged = p.names.fresh(lf.name)
            coll = coll.with_columns(**{merged: E.coalesce(E.col(lf.column), E.col(rf.column))})
            firsts.append(Field(None, lf.name, merged))
        else:
            keep = rf if side == "RIGHT" else lf
            firsts.append(Field(None, keep.name, keep.column))
        hidden |= {lf.column, rf.column}
    fields = [
        Field(f.qualifier, f.name, f.column, qualified_only=True) if f.column in hidden else f
        for f in joined.fields
    ]
    return Relation(coll, firsts + fields)
