"""``SqlError``: a SQL query that ddflow cannot translate, with the spot in the query text.

Every refusal of the SQL front end (an unsupported construct, an unknown table or column, an
ambiguous name) raises :class:`SqlError` naming the construct and quoting the query's line
with a ``^`` under the place it starts, when the parser recorded one. It is a
:class:`ddflow.PlanError`, so ``except dd.PlanError`` catches it too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddflow.errors import PlanError

if TYPE_CHECKING:
    from sqlglot import exp

__all__ = ["SqlError", "position", "refuse"]


class SqlError(PlanError):
    """A SQL query that does not translate; ``line`` and ``column`` (1-based) locate the
    construct in the query text when known."""

    line: int | None = None
    column: int | None = None


def position(node: exp.Expression, query: str) -> tuple[int, int] | None:
    """The line and column (1-based) where ``node`` starts: the earliest token under it that
    the parser located (sqlglot records offsets on identifiers and literals)."""
    starts = [
        int(meta["start"])
        for sub in node.walk()
        if (meta := getattr(sub, "_meta", None)) and "start" in meta
    ]
    if not starts:
        return None
    offset = min(starts)
    line = query.count("\n", 0, offset) + 1
    column = offset - (query.rfind("\n", 0, offset) + 1) + 1
    return line, column


def refuse(message: str, node: exp.Expression | None, query: str) -> SqlError:
    """A ``SqlError``: ``message``, the construct's SQL text, and its line quoted with a
    ``^`` under the spot."""
    text = message
    spot = None if node is None else position(node, query)
    if node is not None:
        fragment = node.sql(dialect="duckdb")
        if len(fragment) > 120:
            fragment = fragment[:117] + "..."
        text += f": {fragment}"
    if spot is not None:
        line, column = spot
        lines = query.splitlines()
        if 1 <= line <= len(lines):
            quoted = lines[line - 1]
            text += f"\n  at line {line}, column {column}:\n    {quoted}\n    {' ' * (column - 1)}^"
    err = SqlError(text)
    if spot is not None:
        err.line, err.column = spot
    return err
