"""SQL's row of a global aggregate over no rows (``SELECT count(*), sum(x) FROM t`` over an
empty ``t`` is ``(0, NULL)``), made from a one-row constant collection, the *unit*.

Every collection operator makes its output from its input's rows, so the row of an empty
input needs a collection whose one row is there from the start: the unit, a
``Dataflow.constant`` (:func:`unit_of`). Given the unit, :func:`with_empty_row` adds the row
while the aggregate has none, with each ``COUNT`` 0 and every other aggregate null. The row
leaves when the first input row arrives and comes back when the last is deleted, as any update does:
the unit's row with the empty answer's values, plus the aggregate's row with the same
values negated (a global aggregate has at most one row, of multiplicity one). The
nulls are typed by the plan from the tables' declared dtypes (``new_input({name: dtype})``);
where a dtype is not declared the row is left out, since its null could not be typed before
data arrives.
"""

from __future__ import annotations

from collections.abc import Collection as Names

import ddflow.expr as E
from ddflow import _core
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.plan_dtypes import PlanDtypes

__all__ = ["static_dtypes", "unit_of", "with_empty_row"]


def unit_of(flow: Dataflow) -> Collection | None:
    """A one-row constant collection of ``flow`` (one column ``unit``, the row ``(0,)``);
    None with a native module built before the engine had constants (no row, as then)."""
    if "constant" not in _core.PLAN_OPERATORS:
        return None
    return flow.constant([(0,)], {"unit": "int64"})


def static_dtypes(coll: Collection) -> list[str | None]:
    """The dtypes of ``coll``'s columns that the plan gives from the inputs' declared dtypes
    (None where it does not)."""
    flow = coll.flow
    if not isinstance(flow, Dataflow):
        return [None] * len(coll.columns)
    sessions = getattr(flow, "_inputs", [])
    declared = {s.node: list(s.dtypes.values()) for s in sessions}
    nodes = flow.plan()["nodes"]

    def known(n: int) -> list[str | None]:
        return declared.get(n, [None] * len(nodes[n]["columns"]))

    return PlanDtypes(nodes, known).of(coll.node)


def with_empty_row(grouped: Collection, counts: Names[str], unit: Collection) -> Collection:
    """``grouped`` (a global aggregate: one row while its input has rows) with SQL's row over
    no rows while it has none: 0 in the ``counts`` columns, a null of the column's dtype in
    the others; ``grouped`` itself when a dtype is unknown. ``unit`` has one row."""
    dtypes = static_dtypes(grouped)
    values: list[E.Expr] = []
    for c, dtype in zip(grouped.columns, dtypes, strict=True):
        if c in counts:
            values.append(E.lit(0).alias(c))
        elif dtype is None:
            return grouped
        else:
            values.append(E.lit(None, dtype).alias(c))
    # ``grouped`` has one row (multiplicity 1) or none, ``unit`` one: the unit's row minus
    # the aggregate's, both as the empty answer, is that answer exactly while there is no
    # aggregate row. No reduce or join: a refresh that changes the aggregate costs two
    # projections of its one row.
    empty = grouped.select(*values).negate()
    return grouped.concat(unit.select(*values), empty)
