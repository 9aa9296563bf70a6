"""The entry point of the translation: parse, check the tables, plan, name the outputs."""

from __future__ import annotations

import re
from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

import ddflow.expr as E
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.plan import user_location
from ddflow.sql.errors import SqlError, located, parse_position, refuse
from ddflow.sql.query import Correlated, Planner
from ddflow.sql.unit import unit_of

__all__ = ["translate"]


def translate(
    query: str, tables: Mapping[str, Collection], dialect: str, unit: Collection | None = None
) -> Collection:
    """The collection of ``query`` over ``tables`` (see :func:`ddflow.sql.sql`). ``unit``
    is the one-row constant collection for global aggregates over no rows (by default the
    dataflow's, :func:`ddflow.sql.unit.unit_of`)."""
    if not isinstance(query, str):
        raise SqlError(f"the query must be a str, got {type(query).__name__}")
    if not isinstance(tables, Mapping):
        raise SqlError(f"tables must map names to collections, got {type(tables).__name__}")
    for name, coll in tables.items():
        if not isinstance(name, str) or not isinstance(coll, Collection):
            raise SqlError(f"tables must map names (str) to Collections, got {name!r}: {coll!r}")
    try:
        statements = sqlglot.parse(query, read=dialect)
    except ParseError as err:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(err))  # sqlglot underlines with ANSI codes
        text = f"the query does not parse ({dialect}): {text.splitlines()[0]}"
        raise located(text, parse_position(err), query) from None
    except ValueError as err:  # an unknown dialect
        raise SqlError(str(err)) from None
    if len(statements) != 1 or statements[0] is None:
        extra = next((s for s in statements[1:] if s is not None), None)
        raise refuse(f"expected one statement, got {len(statements)}", extra, query)
    tree = statements[0]
    assert tree is not None
    if not isinstance(tree, exp.Select | exp.Union | exp.Except | exp.Intersect | exp.Subquery):
        raise refuse(f"only queries are supported, not {tree.key.upper()}", tree, query)
    flows = {id(c.flow): c.flow for c in tables.values()}
    if len(flows) > 1:
        raise SqlError("the tables of one query must belong to one dataflow")
    if not flows:
        return _plan(Planner(query, tables, tree, unit), tree)
    # A query that is refused leaves no operator behind in the dataflow.
    (flow,) = flows.values()
    with flow.builder.atomic(f"sql@{user_location()}"):
        if unit is None and isinstance(flow, Dataflow):
            unit = unit_of(flow)
        return _plan(Planner(query, tables, tree, unit), tree)


def _plan(planner: Planner, tree: exp.Expression) -> Collection:
    try:
        rel = planner.plan(tree, None)
    except Correlated as err:
        raise planner.refuse("unknown column", err.column) from None
    names = [f.name for f in rel.fields]
    if list(rel.coll.columns) == names and [f.column for f in rel.fields] == names:
        return rel.coll
    return rel.coll.select(*(E.col(f.column).alias(f.name) for f in rel.fields))
