"""``reduce`` and the operators built on it (``count``, ``distinct``, ``threshold``).

A reduce reads an arrangement (the input arranged by the ``by`` columns, shared with other
operators that arrange the same collection by the same key) and writes the key columns, then
the aggregate's columns.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ddflow.aggregates import Aggregate, PythonReducer, reducer
from ddflow.arrangement import Arrangement
from ddflow.errors import PlanError
from ddflow.plan import ReduceOp, user_location
from ddflow.wiring import arrange, resolve_names

if TYPE_CHECKING:
    from ddflow.collection import Collection

__all__ = ["as_aggregate", "reduce_arrangement", "reduce_collection"]


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


def reduce_arrangement(
    arr: Arrangement,
    agg: Aggregate | Callable[[Any], Any],
    columns: Sequence[str] | None,
    opname: str,
    label: str | None = None,
) -> Collection:
    """A ``reduce`` node reading ``arr``: key columns, then the aggregate's columns."""
    from ddflow.collection import Collection

    label = label or f"{opname}@{user_location()}"
    aggregate = as_aggregate(agg, columns, label)
    flow = arr.flow
    flow._plan.check_building(label)
    mark = len(flow._dispatcher)
    agg_json, out = aggregate.plan(arr.key, arr.vals, label, flow._dispatcher.register)
    clash = [c for c in out if c in arr.key]
    if clash:
        flow._dispatcher.truncate(mark)
        raise PlanError(
            f"{label}: output column {clash[0]!r} of {aggregate.describe()} clashes with a key "
            f"column; rename it with .alias(...)"
        )
    cols = (*arr.key, *out)
    node = flow._plan.add(
        ReduceOp(agg_json),
        arr.scope,
        [arr.node],
        cols,
        label,
        notes=[f"by ({', '.join(arr.key)}): {aggregate.describe()}", f"agg={json.dumps(agg_json)}"],
    )
    return Collection(flow, node, cols, arr.scope)


def reduce_collection(
    coll: Collection,
    by: str | Sequence[str],
    agg: Aggregate | Callable[[Any], Any],
    columns: Sequence[str] | None,
    opname: str,
    *,
    project: bool = False,
) -> Collection:
    """Arranges ``coll`` by ``by`` (shared when possible) and reduces it with ``agg``.

    With ``project``, the other columns are dropped first (for aggregates that never look at
    them, such as ``count``): the arrangement then holds one ``(time, diff)`` history per key
    instead of one per distinct record, as differential-dataflow's ``map(key).count()``.
    """
    label = f"{opname}@{user_location()}"
    as_aggregate(agg, columns, label)  # fail before adding nodes
    mark = coll.flow._plan.mark()
    try:
        if project:
            names = resolve_names(by, coll.columns, label)
            if len(names) < len(coll.columns):
                coll = coll._select_columns(names, label)
        arr = arrange(coll, by, label)
        return reduce_arrangement(arr, agg, columns, opname, label)
    except BaseException:
        coll.flow._plan.rollback(mark)
        raise
