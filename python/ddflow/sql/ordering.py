"""``ORDER BY ... LIMIT n OFFSET m`` (and ``FETCH FIRST n ROWS ONLY | WITH TIES``) as a
maintained top-k over a query's rows (:mod:`~ddflow.sql.ranking`).

A collection has no order, so ``ORDER BY`` alone is ignored; with ``LIMIT`` or ``OFFSET``
the result holds the rows numbered ``m + 1 .. m + n`` in that order. Rows tied in the
``ORDER BY`` keys are ordered by the whole row (every column ascending, nulls last); SQL
leaves their order unspecified. ``WITH TIES`` keeps every row tied with the ``n``-th (a
``RANK() <= n``). Nulls go where DuckDB puts them (``NULLS LAST`` unless written otherwise,
as sqlglot reads the query's dialect).

An ``ORDER BY`` item is, in turn: a position in the ``SELECT`` list (``ORDER BY 2``), an
output name (an alias or a column of the list), an expression of the list, else (for a
query without ``DISTINCT``, not a set operation) an expression over the ``FROM`` rows,
computed as a hidden column and dropped after the top-k.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from ddflow.sql.errors import SqlError
from ddflow.sql.ranking import RankAggregate, RankFunction, SortKey, ranked
from ddflow.sql.scope import Names, Relation

__all__ = ["Limit", "SortKey", "limit_of", "order_items", "resolve_order", "sort_key", "top_k"]


@dataclass(frozen=True)
class Limit:
    """The rows a ``LIMIT`` / ``OFFSET`` / ``FETCH`` keeps: ranked ``first..last``."""

    first: int
    last: int | None
    function: RankFunction = "row_number"


Refuse = Callable[[str, exp.Expression | None], SqlError]


def _count(node: exp.Expression | None, what: str, refuse: Refuse) -> int:
    """A non-negative integer literal of ``LIMIT`` / ``OFFSET`` / ``FETCH``."""
    inner = node
    while isinstance(inner, exp.Paren):
        inner = inner.this
    if isinstance(inner, exp.Literal) and not inner.is_string:
        try:
            value = int(inner.this)
        except ValueError:
            value = -1
        if value >= 0:
            return value
    raise refuse(f"{what} must be a non-negative integer literal", node)


def limit_of(node: exp.Expression, refuse: Refuse) -> Limit | None:
    """The ``LIMIT`` / ``OFFSET`` / ``FETCH`` of a query, or None when it has none."""
    limit = node.args.get("limit")
    offset = node.args.get("offset")
    if limit is None and offset is None:
        return None
    skip = 0 if offset is None else _count(offset.expression, "OFFSET", refuse)
    if limit is None:
        return Limit(skip + 1, None)
    if isinstance(limit, exp.Fetch):
        options = limit.args.get("limit_options")
        if options is not None and options.args.get("percent"):
            raise refuse("FETCH ... PERCENT is not supported", limit)
        ties = options is not None and bool(options.args.get("with_ties"))
        count = limit.args.get("count")
        n = 1 if count is None else _count(count, "FETCH FIRST", refuse)
        if ties and skip:
            raise refuse("FETCH ... WITH TIES with OFFSET is not supported", limit)
        return Limit(skip + 1, skip + n, "rank" if ties else "row_number")
    if limit.args.get("percent") or limit.args.get("limit_options"):
        raise refuse("this LIMIT form is not supported", limit)
    n = _count(limit.expression, "LIMIT", refuse)
    return Limit(skip + 1, skip + n)


def order_items(node: exp.Expression) -> list[exp.Ordered]:
    """The ``ORDER BY`` items of a query (none when it has no ``ORDER BY``)."""
    order = node.args.get("order")
    if order is None:
        return []
    return [o for o in order.expressions if isinstance(o, exp.Ordered)]


def resolve_order(
    items: list[exp.Ordered],
    outputs: list[tuple[str, exp.Expression | None]],
    refuse: Refuse,
    hidden_allowed: bool,
) -> list[tuple[int | exp.Expression, exp.Ordered]]:
    """Each ``ORDER BY`` item as the index of the output it names (``outputs``: each
    output's name and ``SELECT`` expression), or the expression to compute when none does
    (refused unless ``hidden_allowed``)."""
    out: list[tuple[int | exp.Expression, exp.Ordered]] = []
    for item in items:
        this = item.this
        while isinstance(this, exp.Paren):
            this = this.this
        if isinstance(this, exp.Literal) and not this.is_string:
            try:
                pos = int(this.this)
            except ValueError:
                pos = 0
            if not 1 <= pos <= len(outputs):
                raise refuse(
                    f"ORDER BY position {this.this} is not in the SELECT list "
                    f"(1..{len(outputs)})",
                    item,
                )
            out.append((pos - 1, item))
            continue
        found: int | None = None
        plain = isinstance(this, exp.Column) and isinstance(this.this, exp.Identifier)
        if plain and not this.table:
            named = [i for i, (n, _) in enumerate(outputs) if n.lower() == this.name.lower()]
            if len(named) > 1:
                raise refuse("ambiguous ORDER BY name (several outputs have it)", item)
            found = named[0] if named else None
        if found is None:
            same = [i for i, (_, e) in enumerate(outputs) if e is not None and e == this]
            found = same[0] if same else None
        if found is not None:
            out.append((found, item))
        elif hidden_allowed:
            out.append((this, item))
        else:
            raise refuse(
                "ORDER BY of a DISTINCT query or a set operation must name an output column",
                item,
            )
    return out


def sort_key(column: str, item: exp.Ordered) -> SortKey:
    """The sort key of an ``ORDER BY`` item over ``column``."""
    return SortKey(column, bool(item.args.get("desc")), bool(item.args.get("nulls_first")))


def top_k(rel: Relation, keys: list[SortKey], limit: Limit, names: Names) -> Relation:
    """The rows of ``rel`` ranked ``limit.first..limit.last`` by ``keys`` (the relation's
    columns kept, hidden ones too)."""
    agg = RankAggregate(tuple(keys), limit.function, limit.first, limit.last)
    return Relation(ranked(rel.coll, [], agg, names.fresh("_all")), rel.fields)
