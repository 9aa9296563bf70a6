"""``reduce`` and the operators built on it (``count``, ``distinct``, ``threshold``).

A reduce reads an arrangement (the input arranged by the ``by`` columns, shared with other
operators that arrange the same collection by the same key) and writes the key columns, then
the aggregate's columns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ddflow.aggregates import Aggregate, PythonReducer, reducer
from ddflow.builder import ArrangedNode, Node, PlanBuilder, resolve_names
from ddflow.errors import PlanError
from ddflow.plan import ReduceOp

__all__ = ["as_aggregate", "reduce_arranged", "reduce_collection"]


def as_aggregate(
    agg: Aggregate | Callable[[Any], Any], columns: Sequence[str] | None, label: str
) -> Aggregate:
    """An :class:`Aggregate` from a built-in aggregate or a Python reducer function."""
    if isinstance(agg, PythonReducer):
        return agg if columns is None else reducer(agg.fn, columns)
    if isinstance(agg, Aggregate):
        if columns is not None:
            raise PlanError(f"{label}: columns= applies only to Python reducers")
        return agg
    if callable(agg):
        return reducer(agg, columns)
    raise PlanError(
        f"{label}: agg must be an aggregate (dd.min, dd.count, ...) or a function, got {agg!r}"
    )


def reduce_arranged(
    builder: PlanBuilder,
    arr: ArrangedNode,
    agg: Aggregate | Callable[[Any], Any],
    columns: Sequence[str] | None,
    label: str,
) -> Node:
    """A ``reduce`` node reading ``arr``: key columns, then the aggregate's columns."""
    aggregate = as_aggregate(agg, columns, label)
    with builder.atomic(label):
        agg_json, out = aggregate.plan(arr.key, arr.vals, label, builder.register)
        clash = [c for c in out if c in arr.key]
        if clash:
            raise PlanError(
                f"{label}: output column {clash[0]!r} of {aggregate.describe()} clashes with a "
                f"key column; rename it with .alias(...)"
            )
        notes = [
            f"by ({', '.join(arr.key)}): {aggregate.describe()}",
            f"agg={json.dumps(agg_json)}",
        ]
        return builder.add(ReduceOp(agg_json), [arr], (*arr.key, *out), label, notes)


def reduce_collection(
    builder: PlanBuilder,
    coll: Node,
    by: str | Sequence[str],
    agg: Aggregate | Callable[[Any], Any],
    columns: Sequence[str] | None,
    label: str,
    *,
    project: bool = False,
) -> Node:
    """Arranges ``coll`` by ``by`` (shared when possible) and reduces it with ``agg``.

    With ``project``, the other columns are dropped first (for aggregates that never look at
    them, such as ``count``): the arrangement then holds one ``(time, diff)`` history per key
    instead of one per distinct record, as differential-dataflow's ``map(key).count()``.
    """
    as_aggregate(agg, columns, label)  # fail before adding nodes
    with builder.atomic(label):
        if project:
            names = resolve_names(by, coll.columns, label)
            if len(names) < len(coll.columns):
                coll = builder.select_columns(coll, names, label)
        arr = builder.arrange(coll, by, label)
        return reduce_arranged(builder, arr, agg, columns, label)
