"""``group_by(...).agg(...)``: several aggregates per group in one row, Polars-style.

``c.group_by("k1", "k2").agg(total=dd.sum("x"), n=dd.count(), avg=dd.mean("y"))`` writes the
key columns, then one column per aggregate in the order given. It is one ``reduce`` whose
aggregate is the engine's ``group`` kind (``operators/aggregate_group.rs``): one row per key
computed from the key's accumulated records, with these semantics (counts may be negative):

* a group is present while its count (the signed sum of its records' counts, SQL's
  ``count(*)``) is non-zero, so whether a group is present does not depend on which
  aggregates are asked for;
* ``count()`` is the signed sum of counts (never 0 while the group is present); ``sum`` the
  signed weighted sum (an int64 result outside int64 is an error update); ``mean`` is
  ``sum / count`` as float64; ``min`` / ``max`` look at records with positive count, an error
  update where none is positive. An error update takes the place of the group's whole row
  at that time;
* ``group_by()`` with no keys is a global aggregate: one row while the collection's count is
  non-zero, and no row at all over an empty collection (unlike SQL's ``SELECT count(*)``,
  which gives 0).

An aggregate's argument that is not a value column (an expression, or a key column) is
computed first into a hidden column by a ``select``. The dtypes of the columns are known
only once data arrives, so a ``sum`` or ``mean`` of a non-numeric column raises
``dd.SchemaTypeError`` naming the operator when the dataflow runs, not here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from ddflow.aggregates import Aggregate, ColumnAggregate, CountAggregate, Register
from ddflow.builder import Node, PlanBuilder, resolve_names
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.expr import Expr, check_columns, col, expr_text, lit
from ddflow.plan import GroupAgg, GroupColumnPart, GroupCountPart, SelectOp, user_location
from ddflow.reducing import reduce_collection

__all__ = ["GroupAggregate", "GroupBy", "Part", "group_aggregate"]

H = TypeVar("H")
"""The collection handle type that ``agg`` returns."""

Part = tuple[str, Literal["sum", "count", "mean", "min", "max", "count_distinct"], str | None]
"""One aggregate of a group: ``(output name, kind, value column or None for count)``."""

_HIDDEN = "__agg"
_GLOBAL_KEY = "__group"


@dataclass(frozen=True)
class GroupAggregate(Aggregate):
    """The ``group`` aggregate: named parts over value columns, one output row per key."""

    parts: tuple[Part, ...]

    def plan(
        self,
        key: Sequence[str],
        vals: Sequence[str],
        label: str,
        register: Register,
    ) -> tuple[GroupAgg, tuple[str, ...]]:
        """``{"kind": "group", "aggs": [...]}`` writing one column per part."""
        aggs: list[GroupColumnPart | GroupCountPart] = []
        for name, kind, column in self.parts:
            if column is None:
                aggs.append(GroupCountPart(kind="count", name=name))
                continue
            if column not in vals:
                raise ColumnNotFoundError(
                    f"{label}: {name}: column {column!r} is not a value column {list(vals)}"
                )
            index = list(vals).index(column)
            if kind == "count":
                aggs.append(GroupCountPart(kind="count", name=name, column=index))
                continue
            aggs.append(GroupColumnPart(kind=kind, column=index, name=name))
        return GroupAgg(kind="group", aggs=aggs), tuple(p[0] for p in self.parts)

    def describe(self) -> str:
        """``total=sum(x), n=count``."""
        return ", ".join(
            f"{name}={kind}" if column is None else f"{name}={kind}({column})"
            for name, kind, column in self.parts
        )


class GroupBy(Generic[H]):
    """A collection grouped by key columns; :meth:`agg` computes aggregates per group."""

    __slots__ = ("_builder", "_node", "_keys", "_wrap", "_label")

    def __init__(
        self,
        builder: PlanBuilder,
        node: Node,
        keys: tuple[str, ...],
        wrap: Callable[[Node], H],
        label: str,
    ) -> None:
        """Built by ``Collection.group_by``; ``wrap`` turns the result node into a handle."""
        if keys:
            resolve_names(list(keys), node.columns, label)
        self._builder = builder
        self._node = node
        self._keys = keys
        self._wrap = wrap
        self._label = label

    def __repr__(self) -> str:
        return f"GroupBy(({', '.join(self._keys)}) of #{self._node.node})"

    def agg(self, *aggs: Aggregate, **named: Aggregate) -> H:
        """Per group: the key columns, then each aggregate's column, positional ones first
        (named by their column, ``count``, or ``.alias``), then the named ones.

        Aggregates: ``dd.sum``, ``dd.count()``, ``dd.mean``, ``dd.min``, ``dd.max``, whose
        argument is a column name or an expression (``dd.sum(dd.col("p") * dd.col("q"))``).
        """
        label = f"group_by.agg@{user_location()}"
        return self._wrap(
            group_aggregate(self._builder, self._node, self._keys, aggs, named, label)
        )


def group_aggregate(
    builder: PlanBuilder,
    node: Node,
    keys: tuple[str, ...],
    aggs: tuple[Aggregate, ...],
    named: dict[str, Aggregate],
    label: str,
) -> Node:
    """The nodes of ``group_by(*keys).agg(*aggs, **named)`` on ``node``: an optional
    ``select`` adding hidden argument columns (and a constant key for a global aggregate),
    the ``reduce``, and for a global aggregate a ``select`` dropping that key."""
    items = [(_default_name(a, label), a) for a in aggs] + list(named.items())
    if not items:
        raise PlanError(f"{label}: agg needs at least one aggregate (dd.sum, dd.count(), ...)")
    names = [n for n, _ in items]
    for i, name in enumerate(names):
        if name in keys:
            raise PlanError(
                f"{label}: aggregate name {name!r} clashes with a key column; choose another"
            )
        if name in names[:i]:
            raise PlanError(f"{label}: aggregate name {name!r} is used twice")
    hidden: dict[str, tuple[str, Expr]] = {}  # expression text -> (hidden column, expression)
    parts: list[Part] = []
    for name, agg in items:
        parts.append(_part(name, agg, node.columns, keys, hidden, label))
    group_keys = keys or (_fresh(_GLOBAL_KEY, node.columns),)
    with builder.atomic(label):
        extra = [(c, e) for c, e in hidden.values()]
        if not keys:
            extra.append((group_keys[0], lit(0)))
        # The arrangement holds the keys and the columns the parts read, nothing else: the
        # reduce never looks at the others, and each one arranged costs every batch.
        used = {column for _, _, column in parts}
        read = tuple(c for c in node.columns if c in keys or c in used)
        if extra or len(read) < len(node.columns):
            columns = (*read, *(c for c, _ in extra))
            exprs = [col(c).to_json() for c in read] + [e.to_json() for _, e in extra]
            notes = [f"{c} = {expr_text(e)}" for c, e in extra]
            node = builder.add(SelectOp(exprs), [node], columns, label, notes)
        out = reduce_collection(
            builder, node, list(group_keys), GroupAggregate(tuple(parts)), None, label
        )
        if not keys:
            out = builder.select_columns(out, names, label)
        return out


_KINDS = "dd.sum, dd.count(), dd.mean, dd.min, dd.max or dd.count_distinct"


def _default_name(agg: Aggregate, label: str) -> str:
    """The output name of a positional aggregate: its alias, column or ``count``."""
    if isinstance(agg, CountAggregate):
        return agg.name
    if isinstance(agg, ColumnAggregate):
        if agg.name is not None:
            return agg.name
        if agg.expr is None:
            return agg.column
        return agg.expr.output_name()
    raise PlanError(f"{label}: expected {_KINDS}, got {agg!r}")


def _part(
    name: str,
    agg: Aggregate,
    columns: tuple[str, ...],
    keys: tuple[str, ...],
    hidden: dict[str, tuple[str, Expr]],
    label: str,
) -> Part:
    """The part of aggregate ``agg`` named ``name``; an argument that is not a value column
    gets a hidden column in ``hidden``."""
    if isinstance(agg, CountAggregate) and agg.column is None:
        return (name, "count", None)
    if not isinstance(agg, ColumnAggregate | CountAggregate):
        raise PlanError(f"{label}: {name}: expected {_KINDS}, got {agg!r}")
    if agg.expr is None and agg.column not in columns:
        raise ColumnNotFoundError(
            f"{label}: {name}: column {agg.column!r} not found; available columns are "
            f"{list(columns)}"
        )
    kind: Literal["sum", "count", "mean", "min", "max", "count_distinct"] = (
        "count" if isinstance(agg, CountAggregate) else agg.kind
    )
    if agg.expr is None and agg.column not in keys:
        return (name, kind, agg.column)
    assert agg.column is not None  # count() returned above
    expr = col(agg.column) if agg.expr is None else agg.expr
    check_columns(expr, columns, f"{label}: {name}")
    text = expr_text(expr)
    if text not in hidden:
        taken = (*columns, *(c for c, _ in hidden.values()))
        hidden[text] = (_fresh(f"{_HIDDEN}{len(hidden)}", taken), expr)
    return (name, kind, hidden[text][0])


def _fresh(base: str, taken: tuple[str, ...]) -> str:
    """``base``, with underscores appended until it is not in ``taken``."""
    while base in taken:
        base += "_"
    return base
