"""Output column names of unaliased ``SELECT`` items, as DuckDB names them.

A bare column is named by the column; other expressions by DuckDB's rendering of them:
binary operators and comparisons in parentheses (``(x + 1)``, ``(x > 1)``), function calls
in lower case (``sum(x)``, ``upper(s)``), ``count(*)`` as ``count_star()``,
``count(DISTINCT x)``, ``-(x)``, ``CAST(x AS DOUBLE)``, ``COALESCE(x, 0)``,
``(x IS NULL)``, ``(x BETWEEN 1 AND 2)``, ``(x IN (1, 2))`` and ``LIKE`` as ``~~``. Anything
else is named by its SQL text as sqlglot writes it (DuckDB may differ there: write an alias).
"""

from __future__ import annotations

from sqlglot import exp

__all__ = ["output_name"]

_BINARY: dict[type[exp.Expression], str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.Mod: "%",
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.And: "AND",
    exp.Or: "OR",
    exp.DPipe: "||",
}
_FUNCTIONS: dict[type[exp.Expression], str] = {
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
    exp.Upper: "upper",
    exp.Lower: "lower",
    exp.Length: "length",
    exp.Abs: "abs",
    exp.Floor: "floor",
    exp.Ceil: "ceil",
    exp.Sqrt: "sqrt",
    exp.Ln: "ln",
    exp.Exp: "exp",
}


def output_name(item: exp.Expression) -> str:
    """The name of a ``SELECT`` item's output column."""
    if isinstance(item, exp.Alias):
        return item.alias
    if isinstance(item, exp.Column):
        return item.name
    return _render(item)


def _render(node: exp.Expression) -> str:
    while isinstance(node, exp.Paren):
        node = node.this
    kind = type(node)
    if isinstance(node, exp.Column):
        return node.name
    if isinstance(node, exp.Literal):
        return f"'{node.this}'" if node.is_string else str(node.this)
    if kind in _BINARY:
        return f"({_render(node.this)} {_BINARY[kind]} {_render(node.expression)})"
    if isinstance(node, exp.Neg):
        return f"-({_render(node.this)})"
    if isinstance(node, exp.Count):
        arg = node.this
        if arg is None or isinstance(arg, exp.Star):
            return "count_star()"
        if isinstance(arg, exp.Distinct):
            return f"count(DISTINCT {', '.join(_render(e) for e in arg.expressions)})"
        return f"count({_render(arg)})"
    if kind in _FUNCTIONS and not node.expressions and node.args.get("expression") is None:
        return f"{_FUNCTIONS[kind]}({_render(node.this)})"
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
        return f"CAST({_render(node.this)} AS {node.args['to'].sql(dialect='duckdb')})"
    if isinstance(node, exp.Coalesce):
        parts = [node.this, *node.expressions]
        return f"COALESCE({', '.join(_render(p) for p in parts)})"
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        return f"({_render(node.this)} IS NULL)"
    if isinstance(node, exp.Not) and isinstance(node.this, exp.Is):
        inner = node.this
        if isinstance(inner.expression, exp.Null):
            return f"({_render(inner.this)} IS NOT NULL)"
    if isinstance(node, exp.Between) and not node.args.get("negate"):
        low, high = _render(node.args["low"]), _render(node.args["high"])
        return f"({_render(node.this)} BETWEEN {low} AND {high})"
    if isinstance(node, exp.In) and not node.args.get("query") and not node.args.get("negate"):
        return f"({_render(node.this)} IN ({', '.join(_render(e) for e in node.expressions)}))"
    negated = isinstance(node, exp.Not) and isinstance(node.this, exp.Like)
    like = node.this if negated else node
    if isinstance(like, exp.Like) and not like.args.get("escape"):
        op = "!~~" if negated or like.args.get("negate") else "~~"
        return f"({_render(like.this)} {op} {_render(like.expression)})"
    return node.sql(dialect="duckdb")
