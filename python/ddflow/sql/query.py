"""The planner: a parsed query (sqlglot tree) to a :class:`~ddflow.sql.scope.Relation`.

:class:`Planner` holds what one translation shares: the query text (for errors), the tables,
the ``WITH`` names in force, fresh column names and the enclosing query's scope while a
subquery is planned. It plans a ``SELECT`` in SQL's order: ``FROM`` and ``WHERE``
(:mod:`~ddflow.sql.relations`, subquery conjuncts by :mod:`~ddflow.sql.subqueries`),
``GROUP BY`` / aggregates / ``HAVING`` (:mod:`~ddflow.sql.aggregates`), the ``SELECT`` list,
``DISTINCT``; and ``UNION`` / ``EXCEPT`` / ``INTERSECT`` and ``WITH [RECURSIVE]`` around
them (:mod:`~ddflow.sql.setops`). ``ORDER BY`` without ``LIMIT`` is ignored (a collection
has no order); with ``LIMIT`` / ``OFFSET`` it is a maintained top-k
(:mod:`~ddflow.sql.ordering`); ranking window functions are :mod:`~ddflow.sql.windows`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlglot import exp

import ddflow.expr as E
from ddflow.collection import Collection
from ddflow.expr import Expr
from ddflow.outer_joins import JoinHow
from ddflow.sql import aggregates, ordering, relations, setops, subqueries, windows
from ddflow.sql.errors import SqlError, refuse
from ddflow.sql.expressions import ExprTranslator, conjuncts, is_untyped_null
from ddflow.sql.names import output_name
from ddflow.sql.scope import Field, Names, Relation, Scope

__all__ = ["Planner", "Correlated", "Holder"]

_FROM_ARGS = {"this", "alias", "db", "catalog"}
"""The parts of a ``FROM`` table or subquery the translation reads (others are refused)."""

_SELECT_ARGS = {
    "expressions",
    "from",
    "from_",
    "joins",
    "where",
    "group",
    "having",
    "order",
    "distinct",
    "with",
    "with_",
    "kind",
    "limit",
    "offset",
    "qualify",
}


class Correlated(Exception):
    """Raised inside a subquery's planning when it reads a column of an enclosing query."""

    def __init__(self, column: exp.Column) -> None:
        super().__init__(column.sql())
        self.column = column


@dataclass
class Holder:
    """The relation an expression is evaluated on; a scalar subquery in the expression joins
    its value onto it."""

    rel: Relation


Special = Callable[[exp.Expression], Expr | None]


class Planner:
    """Translates one SQL query (see the module docs)."""

    def __init__(
        self,
        query: str,
        tables: Mapping[str, Collection],
        tree: exp.Expression | None = None,
        unit: Collection | None = None,
    ) -> None:
        self.query = query
        self.unit = unit
        """A one-row constant collection: global aggregates over no rows get their row from
        it (:mod:`~ddflow.sql.unit`); None when the engine has none."""
        self.tables = {name.lower(): c for name, c in tables.items()}
        self.used = None if tree is None else _names_read(tree)
        self.final = tree if isinstance(tree, exp.Select) else None
        """The ``SELECT`` whose list is the query's result: its columns get the output names."""
        self.unread: dict[str, list[str]] = {}
        """Per table reference, the columns left out because the query never names them."""
        self.ctes: list[dict[str, Relation]] = []
        self.names = Names()
        self.outer: Scope | None = None
        self.window_bounds: dict[int, windows.Bounds] = {}
        """Per window call (by ``id``), the ranks a filter on it keeps (see ``windows``)."""
        self.scans: dict[int, tuple[str, tuple[str, ...], Collection]] = {}
        """Per table scan (by plan node): the table, the columns it reads, the collection."""

    # -- errors and names -------------------------------------------------------------------

    def refuse(self, message: str, node: exp.Expression | None) -> SqlError:
        """A ``SqlError`` about ``node`` (see :func:`ddflow.sql.errors.refuse`)."""
        return refuse(message, node, self.query)

    def check_outer(self, column: exp.Column, outer: Scope | None) -> None:
        """Raises :class:`Correlated` if ``column`` names an enclosing query's column, else a
        ``SqlError`` for an unknown column."""
        if outer is not None:
            fields, lookup = outer.find(column.name, column.table or None)
            if fields or lookup is not None:
                raise Correlated(column)
        raise self.refuse("unknown column", column)

    def column_of(self, scope: Scope, node: exp.Column, allow_outer: bool = False) -> str:
        """The collection column a column reference names in ``scope``."""
        fields, lookup = scope.find(node.name, node.table or None)
        if len(fields) == 1:
            return fields[0].column
        if len(fields) > 1:
            raise self.refuse("ambiguous column (qualify it with its table)", node)
        if lookup is not None:
            if allow_outer:
                return lookup.field.column
            raise Correlated(node)
        names = {f.name for f in scope.relation.fields if not f.qualified_only}
        for qualifier in scope.relation.qualifiers():
            names |= set(self.unread.get(qualifier, ()))
        raise self.refuse(f"unknown column (columns here: {', '.join(sorted(names))})", node)

    # -- expressions ------------------------------------------------------------------------

    def expr(
        self,
        scope: Scope,
        node: exp.Expression,
        special: Special | None = None,
        allow_outer: bool = False,
    ) -> Expr:
        """``node`` as a ddflow expression over ``scope``'s relation."""
        return self.translator(scope, special, allow_outer).typed(node)

    def translator(
        self, scope: Scope, special: Special | None = None, allow_outer: bool = False
    ) -> ExprTranslator:
        """An expression translator resolving names in ``scope``."""

        def column(node: exp.Column) -> Expr:
            return E.col(self.column_of(scope, node, allow_outer))

        return ExprTranslator(self.query, column, special or (lambda _: None))

    def filter(self, rel: Relation, cond: exp.Expression) -> Relation:
        """``rel`` where ``cond`` (subquery-free) holds."""
        e = self.translator(Scope(rel, self.outer)).predicate(cond)
        return Relation(rel.coll.filter(e), rel.fields)

    def key_columns(
        self, rel: Relation, nodes: list[exp.Expression], allow_outer: bool = False
    ) -> tuple[Relation, list[str]]:
        """The columns holding ``nodes`` on ``rel`` (expressions computed into new ones)."""
        scope = Scope(rel, self.outer)
        names: list[str] = []
        extra: dict[str, Expr] = {}
        for node in nodes:
            inner = node
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Column):
                names.append(self.column_of(scope, inner, allow_outer))
                continue
            # A constant key is a cross product's (named so in plans: see explain()).
            name = self.names.fresh("cross" if isinstance(inner, exp.Literal) else "key")
            extra[name] = self.expr(scope, inner, allow_outer=allow_outer)
            names.append(name)
        if extra:
            rel = Relation(rel.coll.with_columns(**extra), rel.fields)
        return rel, names

    def equi_join(
        self,
        left: Relation,
        right: Relation,
        lefts: list[exp.Expression],
        rights: list[exp.Expression],
        how: JoinHow = "inner",
    ) -> Relation:
        """``left`` joined with ``right`` where each of ``lefts`` equals its ``rights``."""
        left, lk = self.key_columns(left, lefts)
        right, rk = self.key_columns(right, rights)
        return self.join_on_columns(left, right, lk, rk, how)

    def join_on_columns(
        self, left: Relation, right: Relation, lk: list[str], rk: list[str], how: JoinHow
    ) -> Relation:
        """``left`` joined with ``right`` where each column of ``lk`` equals its ``rk``."""
        if len(set(lk)) < len(lk) or len(set(rk)) < len(rk):
            left, lk = _distinct_keys(left, lk, self.names)
            right, rk = _distinct_keys(right, rk, self.names)
        coll = left.coll.join(right.coll, left_on=lk, right_on=rk, how=how)
        fields = left.fields + right.fields
        if how == "inner":
            # The right key columns are dropped; their values are the left keys'.
            to_left = dict(zip(rk, lk, strict=True))
            fields = [
                Field(f.qualifier, f.name, to_left.get(f.column, f.column), f.qualified_only)
                for f in fields
            ]
        return Relation(coll, fields)

    def subquery_filter(self, rel: Relation, cond: exp.Expression) -> Relation:
        """``rel`` filtered by a ``WHERE`` conjunct holding a subquery."""
        return subqueries.apply_conjunct(self, rel, cond, self.outer)

    def correlated(self, query: exp.Expression, outer: Scope) -> bool:
        """Whether ``query`` reads columns of ``outer``."""
        node = query.this if isinstance(query, exp.Subquery) else query
        return subqueries.correlation(self, node, outer) is not None

    # -- sources ----------------------------------------------------------------------------

    def source(self, node: exp.Expression, dry: bool = False) -> Relation:
        """A ``FROM`` item: a table, a ``WITH`` name or a subquery, under its alias. ``dry``
        only names its fields (no operator is added for a table or ``WITH`` name)."""
        alias = node.args.get("alias")
        for key, value in node.args.items():  # TABLESAMPLE, PIVOT, time travel, ...
            if value and key not in _FROM_ARGS:
                part = value[0] if isinstance(value, list) else value
                spot = part if isinstance(part, exp.Expression) else node
                raise self.refuse(f"{key.upper()} on a FROM item is not supported", spot)
        if isinstance(node, exp.Table):
            if node.args.get("db") or node.args.get("catalog"):
                raise self.refuse("qualified table names are not supported", node)
            if not isinstance(node.this, exp.Identifier):
                raise self.refuse("this FROM item is not supported", node)
            name = node.name
            qualifier = (node.alias or name).lower()
            rel = self._named(name, node, dry)
            table = self.tables.get(name.lower())
            if table is not None:
                kept = {f.name for f in rel.fields}
                self.unread[qualifier] = [c for c in table.columns if c not in kept]
        elif isinstance(node, exp.Subquery):
            if alias is None:
                raise self.refuse("a subquery in FROM needs an alias", node)
            rel = self.plan(node.this, None)
            qualifier = node.alias.lower()
        else:
            raise self.refuse(f"{node.key.upper()} in FROM is not supported", node)
        rel = rel.requalified(qualifier)
        renames = alias.args.get("columns") if isinstance(alias, exp.TableAlias) else None
        if renames:
            if len(renames) > len(rel.fields):
                raise self.refuse("more column aliases than columns", alias)
            names = [r.name for r in renames] + [f.name for f in rel.fields[len(renames) :]]
            rel = Relation(
                rel.coll,
                [Field(qualifier, n, f.column) for n, f in zip(names, rel.fields, strict=True)],
            )
        return rel

    def _named(self, name: str, node: exp.Expression, dry: bool) -> Relation:
        """A fresh copy of a ``WITH`` relation or table (fresh columns: a name may be read
        twice in one query, as in a self-join)."""
        low = name.lower()
        for ctes in reversed(self.ctes):
            if low in ctes:
                found = ctes[low]
                if dry:
                    return found
                fresh = [self.names.fresh(f.name) for f in found.fields]
                coll = found.coll.select(
                    *(E.col(f.column).alias(n) for f, n in zip(found.fields, fresh, strict=True))
                )
                fields = [Field(low, f.name, n) for f, n in zip(found.fields, fresh, strict=True)]
                return Relation(coll, fields)
        if low not in self.tables:
            known = ", ".join(sorted(self.tables)) or "none"
            raise self.refuse(f"unknown table (tables: {known})", node)
        table = self.tables[low]
        if dry:
            return Relation(table, [Field(low, c, c) for c in table.columns])
        # Only the columns the query names anywhere: joins and arrangements stay narrow.
        read = [c for c in table.columns if self.used is None or c.lower() in self.used]
        columns = read or list(table.columns[:1])
        fresh = [self.names.fresh(c) for c in columns]
        coll = table.select(*(E.col(c).alias(n) for c, n in zip(columns, fresh, strict=True)))
        self.scans[coll.node] = (low, tuple(columns), coll)
        return Relation(coll, [Field(low, c, n) for c, n in zip(columns, fresh, strict=True)])

    def earlier_scan(self, coll: Collection) -> Collection | None:
        """If ``coll`` is a table scan, the first scan of the same table and columns (under
        other names, column for column), when that is another one: an operator can read it
        instead and share its arrangements (TPC-H Q17's subquery over lineitem)."""
        this = self.scans.get(coll.node)
        if this is None:
            return None
        for node, (table, columns, other) in self.scans.items():
            if (table, columns) == this[:2]:
                return None if node == coll.node else other
        return None

    # -- queries ----------------------------------------------------------------------------

    def plan(self, node: exp.Expression, outer: Scope | None) -> Relation:
        """The relation of a query (``SELECT``, set operation, parenthesised query)."""
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            return setops.plan_with(self, node, with_, outer)
        return self.plan_body(node, outer)

    def plan_body(self, node: exp.Expression, outer: Scope | None) -> Relation:
        """The relation of a query whose ``WITH`` (if any) is in force."""
        if isinstance(node, exp.Subquery):
            return self.plan(node.this, outer)
        if isinstance(node, exp.Select):
            return self.plan_select(node, outer)
        if isinstance(node, exp.Union | exp.Except | exp.Intersect):
            return setops.plan_setop(self, node, outer)
        raise self.refuse(f"{node.key.upper()} is not supported as a query", node)

    def plan_select(self, sel: exp.Select, outer: Scope | None) -> Relation:
        """The relation of one ``SELECT``."""
        for key, value in sel.args.items():
            if value and key not in _SELECT_ARGS:
                what = {"limit": "LIMIT", "offset": "OFFSET", "qualify": "QUALIFY"}.get(
                    key, key.upper()
                )
                node = value[0] if isinstance(value, list) else value
                raise self.refuse(f"{what} is not supported", node)
        distinct = sel.args.get("distinct")
        if distinct is not None and distinct.args.get("on") is not None:
            raise self.refuse("DISTINCT ON is not supported", distinct)
        saved, self.outer = self.outer, outer
        try:
            where = sel.args.get("where")
            conds = conjuncts(where.this if where is not None else None)
            plain = [c for c in conds if not subqueries.has_subquery(c)]
            nested = [c for c in conds if subqueries.has_subquery(c)]
            self._bound_windows(sel, plain)
            rel, rest = relations.plan_from(self, sel, plain, nested)
            for cond in rest:
                rel = subqueries.apply_conjunct(self, rel, cond, outer)
            grouped = aggregates.plan_group(self, sel, rel)
            holder = Holder(rel)
            special = self._special(holder, rel, outer, None)
            if grouped is not None:
                holder.rel, mapping = grouped
                special = self._special(holder, rel, outer, mapping)
                having = sel.args.get("having")
                for cond in conjuncts(having.this if having is not None else None):
                    cond = _aliases_expanded(cond, sel, rel)
                    # A subquery compared directly: its null drops the group (an inner join).
                    direct = subqueries.compared_subquery(cond)
                    special = self._special(holder, rel, outer, mapping, direct)
                    e = self.translator(Scope(holder.rel, outer), special).predicate(cond)
                    holder.rel = Relation(holder.rel.coll.filter(e), holder.rel.fields)
            qualify = sel.args.get("qualify")
            if qualify is not None and not windows.has_window(sel):
                raise self.refuse("QUALIFY needs a window function in the SELECT list", qualify)
            if windows.has_window(sel):
                wanted = conjuncts(qualify.this) if qualify is not None else []
                wanted = [_aliases_expanded(c, sel, holder.rel) for c in wanted]
                window = windows.the_window(sel, self.refuse)
                bounds = windows.rank_bounds(wanted, lambda n: n == window)
                if bounds is not None and not _limited(sel):
                    self._bound_window(window, bounds)
                special = windows.plan_window(self, sel, holder, outer, special)
                for cond in wanted:
                    e = self.translator(Scope(holder.rel, outer), special).predicate(cond)
                    holder.rel = Relation(holder.rel.coll.filter(e), holder.rel.fields)
            limit = ordering.limit_of(sel, self.refuse)
            items = ordering.order_items(sel) if limit is not None else []
            out, keys = self._select_list(sel, holder, outer, special, items, distinct is None)
        finally:
            self.outer = saved
        if distinct is not None:
            out = Relation(out.coll.distinct(), out.fields)
        if limit is not None:
            out = ordering.top_k(out, keys, limit, self.names)
            columns = [f.column for f in out.fields]
            if list(out.coll.columns) != columns:
                out = Relation(out.coll.select(*columns), out.fields)
        return out

    def _bound_windows(self, sel: exp.Select, conds: list[exp.Expression]) -> None:
        """Gives the ranks that ``WHERE`` conjuncts ``conds`` keep to the window of the
        derived table ``sel`` reads (``SELECT * FROM (... ROW_NUMBER() OVER (...) AS rn)
        WHERE rn <= 3``), when it reads just that one."""
        from_ = sel.args.get("from_") or sel.args.get("from")
        if from_ is None or sel.args.get("joins") or not isinstance(from_.this, exp.Subquery):
            return
        inner = from_.this.this
        if not isinstance(inner, exp.Select) or _limited(inner):
            return
        if not windows.has_window(inner) or inner.args.get("distinct") is not None:
            return
        window = windows.the_window(inner, self.refuse)
        names = [
            item.alias
            for item in inner.expressions
            if isinstance(item, exp.Alias) and item.this == window
        ]
        outputs = [output_name(item).lower() for item in inner.expressions]
        for name in names:
            if outputs.count(name.lower()) != 1:
                continue
            qualifier = from_.this.alias.lower() if from_.this.alias else None
            got = windows.rank_bounds(conds, windows.rank_column(name, qualifier))
            if got is not None:
                self._bound_window(window, got)

    def _bound_window(self, window: exp.Window, bounds: windows.Bounds) -> None:
        """Narrows the ranks the ranking of ``window`` keeps to ``bounds`` too."""
        lo, hi = self.window_bounds.get(id(window), (1, None))
        lo = max(lo, bounds[0])
        hi = bounds[1] if hi is None else hi if bounds[1] is None else min(hi, bounds[1])
        self.window_bounds[id(window)] = (lo, hi)

    def _special(
        self,
        holder: Holder,
        before: Relation,
        outer: Scope | None,
        mapping: aggregates.Grouped | None,
        direct: exp.Expression | None = None,
    ) -> Special:
        """The hook for nodes an expression alone cannot translate: scalar subqueries and,
        after grouping, group keys, aggregate calls and columns. ``direct``: the subquery a
        ``HAVING`` conjunct compares directly (a group it gives null for is dropped)."""

        def special(node: exp.Expression) -> Expr | None:
            if isinstance(node, exp.Subquery):
                inner = direct is not None and node is direct
                return subqueries.scalar(self, holder, node, outer, inner=inner)
            if isinstance(node, exp.Exists) or (
                isinstance(node, exp.In) and node.args.get("query") is not None
            ):
                raise self.refuse(
                    "EXISTS and IN (subquery) are supported as WHERE conjuncts (with NOT) only",
                    node,
                )
            if mapping is None:
                return None
            found = mapping.lookup(node)
            if found is not None:
                return found
            if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
                fields, lookup = Scope(before).find(node.name, node.table or None)
                if len(fields) == 1 and fields[0].column in mapping.key_columns:
                    return E.col(fields[0].column)
                if not fields and lookup is None and outer is not None:
                    self.column_of(Scope(holder.rel, outer), node)
                if fields:
                    raise self.refuse("column must appear in GROUP BY or be in an aggregate", node)
            return None

        return special

    def _select_list(
        self,
        sel: exp.Select,
        holder: Holder,
        outer: Scope | None,
        special: Special,
        order: list[exp.Ordered],
        hidden_allowed: bool,
    ) -> tuple[Relation, list[ordering.SortKey]]:
        """The ``SELECT`` items as a new relation (fresh columns, fields named as output),
        and the sort keys of the ``order`` items over its columns (an item naming no output
        is computed into a hidden column, which has no field)."""
        items: list[tuple[str, Expr]] = []
        sources: list[exp.Expression | None] = []
        for item in sel.expressions:
            is_star = isinstance(item, exp.Star) or (
                isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
            )
            if is_star:
                star = item if isinstance(item, exp.Star) else item.this
                if any(star.args.values()):
                    raise self.refuse("* EXCLUDE / REPLACE / RENAME is not supported", item)
                qualifier = item.table.lower() if isinstance(item, exp.Column) else None
                matched = [
                    f
                    for f in holder.rel.fields
                    if (f.qualifier == qualifier if qualifier else not f.qualified_only)
                ]
                if not matched:
                    raise self.refuse("* matches no columns", item)
                items += [(f.name, E.col(f.column)) for f in matched]
                sources += [None] * len(matched)
                continue
            name = output_name(item)
            value = item.this if isinstance(item, exp.Alias) else item
            e = self.translator(Scope(holder.rel, outer), special)(value)
            items.append((name, e))
            sources.append(value)
        taken: dict[str, int] = {}
        fields: list[Field] = []
        exprs: list[Expr] = []
        for name, e in items:
            n = taken.get(name.lower(), 0)
            taken[name.lower()] = n + 1
            out_name = name if n == 0 else f"{name}_{n}"
            column = out_name if sel is self.final else self.names.fresh(out_name)
            fields.append(Field(None, out_name, column))
            exprs.append((E.null_column() if is_untyped_null(e) else e).alias(column))
        outputs = [(f.name, src) for f, src in zip(fields, sources, strict=True)]
        keys: list[ordering.SortKey] = []
        for target, item in ordering.resolve_order(order, outputs, self.refuse, hidden_allowed):
            if isinstance(target, int):
                keys.append(ordering.sort_key(fields[target].column, item))
                continue
            column = self.names.fresh("_order")
            e = self.translator(Scope(holder.rel, outer), special)(target)
            exprs.append(e.alias(column))
            keys.append(ordering.sort_key(column, item))
        return Relation(holder.rel.coll.select(*exprs), fields), keys


def _aliases_expanded(cond: exp.Expression, sel: exp.Select, rel: Relation) -> exp.Expression:
    """``cond`` with each bare name of a ``SELECT`` alias that is not a column replaced by
    the aliased expression (DuckDB reads ``HAVING n > 1`` so)."""
    aliases: dict[str, exp.Expression] = {
        item.alias.lower(): item.this for item in sel.expressions if isinstance(item, exp.Alias)
    }
    if not aliases:
        return cond

    def swap(node: exp.Expression) -> exp.Expression:
        if (
            isinstance(node, exp.Column)
            and not node.table
            and node.name.lower() in aliases
            and not rel.matching(node.name, None)
        ):
            return aliases[node.name.lower()].copy()
        return node

    return cond.copy().transform(swap)


def _limited(sel: exp.Select) -> bool:
    """Whether ``sel`` has a ``LIMIT`` or ``OFFSET`` (which a filter on its window's rank
    must not run before)."""
    return sel.args.get("limit") is not None or sel.args.get("offset") is not None


def _names_read(tree: exp.Expression) -> set[str] | None:
    """The column names a query mentions (lower case), or None when it may read columns it
    does not name: a ``*`` in a ``SELECT`` list (other than an ``EXISTS`` body's), or column
    aliases on a table (``t(a, b)``), which rename by position."""
    for star in tree.find_all(exp.Star):
        parent = star.parent
        if isinstance(parent, exp.Column):
            parent = parent.parent
        if isinstance(parent, exp.Select) and not isinstance(parent.parent, exp.Exists):
            return None
    for alias in tree.find_all(exp.TableAlias):
        if alias.args.get("columns") and isinstance(alias.parent, exp.Table):
            return None
    names = {c.name.lower() for c in tree.find_all(exp.Column)}
    names |= {i.name.lower() for j in tree.find_all(exp.Join) for i in j.args.get("using") or []}
    return names


def _distinct_keys(rel: Relation, keys: list[str], names: Names) -> tuple[Relation, list[str]]:
    """Key columns made distinct (a column used twice as a key gets a copy)."""
    seen: set[str] = set()
    out: list[str] = []
    extra: dict[str, Expr] = {}
    for k in keys:
        if k in seen:
            copy = names.fresh(k)
            extra[copy] = E.col(k)
            out.append(copy)
        else:
            seen.add(k)
            out.append(k)
    if extra:
        rel = Relation(rel.coll.with_columns(**extra), rel.fields)
    return rel, out
