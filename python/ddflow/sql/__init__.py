"""SQL over collections: ``dd.sql(query, tables)`` and ``Collection.sql(query)``.

The query is parsed by sqlglot (an optional dependency: ``pip install 'ddflow[sql]'``) in
DuckDB's dialect unless ``dialect=`` names another, and translated into an ordinary plan of
``Collection`` operators (``filter``, ``select``, joins, ``group_by(...).agg``,
``distinct``, ``concat``, ``iterate``), which every backend runs as it runs any plan. The
package's modules, one job each:

* :mod:`~ddflow.sql.errors`: ``SqlError`` with the position in the query text;
* :mod:`~ddflow.sql.scope`: relations under translation and name resolution;
* :mod:`~ddflow.sql.literals`: literals, ``CAST`` types, intervals;
* :mod:`~ddflow.sql.expressions`: scalar expressions;
* :mod:`~ddflow.sql.relations`: ``FROM``, joins and the ``WHERE`` conjuncts that join;
* :mod:`~ddflow.sql.aggregates`: ``GROUP BY``, aggregates, ``HAVING``;
* :mod:`~ddflow.sql.subqueries`: ``EXISTS`` / ``IN`` / scalar subqueries, decorrelated;
* :mod:`~ddflow.sql.setops`: ``UNION`` / ``EXCEPT`` / ``INTERSECT``, ``WITH [RECURSIVE]``;
* :mod:`~ddflow.sql.names`: output column names (DuckDB's for unaliased expressions);
* :mod:`~ddflow.sql.query`: the planner that ties them together.

What is supported and refused: ``docs/how-to/sql.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ddflow.errors import PlanError
from ddflow.sql.errors import SqlError

if TYPE_CHECKING:
    from ddflow.collection import Collection

__all__ = ["SqlError", "sql"]


def sql(query: str, tables: Mapping[str, Collection], dialect: str | None = None) -> Collection:
    """The collection of a SQL query over ``tables`` (table name -> collection).

    The result's columns are named by the ``SELECT`` list: an alias, a bare column's name,
    else the expression's SQL text. It is kept up to date like any collection. ``dialect``
    is a sqlglot dialect name (default ``"duckdb"``). An unsupported construct, or an
    unknown table or column, raises :class:`SqlError` naming it and its position.
    """
    try:
        import sqlglot  # an optional dependency, loaded on first use
    except ImportError:
        raise PlanError("dd.sql needs sqlglot: pip install 'ddflow[sql]'") from None
    # Imported here: the translator imports sqlglot at module level.
    from ddflow.sql.translate import translate

    del sqlglot
    return translate(query, tables, dialect or "duckdb")
