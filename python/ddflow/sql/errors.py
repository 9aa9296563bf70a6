"""``SqlError``: a SQL query that ddflow cannot translate, with the spot in the query text.

Every refusal of the SQL front end (an unsupported construct, an unknown table or column, an
ambiguous name) raises :class:`SqlError` naming the construct and quoting the query's line
with a ``^`` under the place it starts, when the parser recorded one. It is a
:class:`ddflow.PlanError`, so ``except dd.PlanError`` catches it too.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ddflow.errors import PlanError

if TYPE_CHECKING:
    from sqlglot import exp
    from sqlglot.errors import ParseError

__all__ = ["SqlError", "located", "parse_position", "position", "refuse"]


class SqlError(PlanError):
    """A SQL query that does not translate; ``line`` and ``column`` (1-based) locate the
    construct in the query text when known."""

    line: int | None = None
    column: int | None = None


def position(node: exp.Expr, query: str) -> tuple[int, int] | None:
    """The line and column (1-based) where ``node`` starts in ``query``, or None.

    sqlglot records offsets on identifiers, literals, stars and some calls, not on keywords:
    the earliest located token under ``node`` is moved back over the query tokens before it
    that also lead the node's own SQL text (``LEFT JOIN`` before the joined table's name,
    ``EXISTS (SELECT`` before the select list), so the position is the construct's first
    word. A node with no located token (a ``NULL``, ``CURRENT_DATE``) is found by its SQL
    text's tokens in the query's."""
    starts = [
        int(meta["start"])
        for sub in node.walk()
        if (meta := getattr(sub, "_meta", None)) and "start" in meta
    ]
    tokens = _tokens(query)
    words = _words(_text(node))
    offset = min(starts) if starts else None
    if tokens and words:
        if offset is None:
            offset = _find(tokens, words)
        else:
            offset = _back(tokens, words, offset)
    if offset is None:
        return None
    line = query.count("\n", 0, offset) + 1
    column = offset - (query.rfind("\n", 0, offset) + 1) + 1
    return line, column


def _text(node: exp.Expr) -> str:
    """``node``'s SQL in DuckDB's dialect, or in PostgreSQL's where DuckDB has none
    (``FOR UPDATE``); sqlglot's warning about the first is not the user's business."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        return node.sql(dialect="duckdb") or node.sql(dialect="postgres")
    finally:
        logger.setLevel(level)


def _tokens(text: str) -> list[tuple[str, int]]:
    """``text``'s tokens as (upper-case text, start offset); none if it does not tokenize."""
    # sqlglot is the optional extra ddflow[sql]: ``import ddflow`` must not need it.
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import TokenError

    try:
        return [(tk.text.upper(), tk.start) for tk in Dialect.get_or_raise("duckdb").tokenize(text)]
    except (TokenError, ValueError):
        return []


def _words(text: str) -> list[str]:
    return [word for word, _ in _tokens(text)]


def _back(tokens: list[tuple[str, int]], words: list[str], offset: int) -> int:
    """``offset`` moved back over the query tokens before it that precede the same token
    in ``words`` (the node's SQL text), one by one while they agree."""
    here = next((i for i, (_, start) in enumerate(tokens) if start == offset), None)
    if here is None or tokens[here][0] not in words:
        return offset
    j = words.index(tokens[here][0])
    while j > 0 and here > 0 and tokens[here - 1][0] == words[j - 1]:
        here, j = here - 1, j - 1
    return tokens[here][1]


def _find(tokens: list[tuple[str, int]], words: list[str]) -> int | None:
    """Where the longest run of ``words``' leading tokens appears first in ``tokens``."""
    best, where = 0, None
    for i in range(len(tokens)):
        n = 0
        while n < len(words) and i + n < len(tokens) and tokens[i + n][0] == words[n]:
            n += 1
        if n > best:
            best, where = n, tokens[i][1]
    return where


def parse_position(err: ParseError) -> tuple[int, int] | None:
    """The line and column (1-based) where sqlglot's parse error starts, when it says."""
    for info in err.errors:
        line, col = info.get("line"), info.get("col")
        if isinstance(line, int) and isinstance(col, int):
            return line, max(1, col - len(str(info.get("highlight") or "")) + 1)
    return None


def refuse(message: str, node: exp.Expr | None, query: str) -> SqlError:
    """A ``SqlError``: ``message``, the construct's SQL text, and its line quoted with a
    ``^`` under the spot."""
    text = message
    spot = None if node is None else position(node, query)
    if node is not None:
        fragment = _text(node)
        if len(fragment) > 120:
            fragment = fragment[:117] + "..."
        text += f": {fragment}"
    return located(text, spot, query)


def located(text: str, spot: tuple[int, int] | None, query: str) -> SqlError:
    """A ``SqlError`` of ``text`` at ``spot`` (line, column) of ``query``: the line quoted
    with a ``^`` under the column."""
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
