"""SQL scalar expressions as ddflow expressions (:class:`ddflow.expr.Expr`).

:class:`ExprTranslator` walks a sqlglot expression tree bottom-up. Names go to the
``column`` callback (scope lookup, :mod:`ddflow.sql.scope`); every node is first offered to
the ``special`` callback, which the planner uses for what an expression alone cannot build:
subqueries (they add joins to the relation) and, after a ``GROUP BY``, the group keys and
aggregates (columns of the grouped relation).

Semantics are the engine's, which follow SQL: three-valued ``AND`` / ``OR`` / ``NOT``,
comparisons with a null are null, ``/`` on integers divides as floats (DuckDB), ``%`` is the
remainder with the dividend's sign (``rem``), ``LIKE`` matches the whole string. A bare
``NULL`` gets its dtype from a literal beside it (``CASE ... THEN 'a' ELSE NULL``,
``COALESCE(x, NULL, 0)``), else it is an int64 null, which the engine widens beside any
numeric dtype (``CASE WHEN c THEN x END`` of a number); a whole ``SELECT`` column of
``NULL`` is typed by the plan. ``date + INTERVAL``
moves a date or timestamp by calendar units (``.dt.offset_by``) and keeps its dtype.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from sqlglot import exp

import ddflow.expr as E
from ddflow.expr import Expr
from ddflow.sql.errors import refuse
from ddflow.sql.literals import dtype_of, interval_of, number_value, temporal_value

__all__ = ["ExprTranslator", "is_untyped_null", "conjuncts", "AGGREGATES"]

AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max)
"""The SQL aggregate functions the translator knows."""

_COMPARE: dict[type[exp.Expression], Callable[[Expr, Expr], Expr]] = {
    exp.EQ: lambda a, b: a == b,
    exp.NEQ: lambda a, b: a != b,
    exp.LT: lambda a, b: a < b,
    exp.LTE: lambda a, b: a <= b,
    exp.GT: lambda a, b: a > b,
    exp.GTE: lambda a, b: a >= b,
}
_ARITH: dict[type[exp.Expression], Callable[[Expr, Expr], Expr]] = {
    exp.Add: lambda a, b: a + b,
    exp.Sub: lambda a, b: a - b,
    exp.Mul: lambda a, b: a * b,
    exp.Div: lambda a, b: a / b,
    exp.Mod: lambda a, b: a.rem(b),
}
_UNARY: dict[type[exp.Expression], Callable[[Expr], Expr]] = {
    exp.Upper: lambda a: a.str.to_uppercase(),
    exp.Lower: lambda a: a.str.to_lowercase(),
    exp.Length: lambda a: a.str.len_chars(),
    exp.Abs: lambda a: a.abs(),
    exp.Floor: lambda a: a.floor(),
    exp.Ceil: lambda a: a.ceil(),
    exp.Sqrt: lambda a: a.sqrt(),
    exp.Ln: lambda a: a.log(),
    exp.Exp: lambda a: a.exp(),
    exp.Year: lambda a: a.dt.year(),
    exp.Month: lambda a: a.dt.month(),
    exp.Day: lambda a: a.dt.day(),
}
_EXTRACT: dict[str, Callable[[Expr], Expr]] = {
    "year": lambda a: a.dt.year(),
    "month": lambda a: a.dt.month(),
    "day": lambda a: a.dt.day(),
    "hour": lambda a: a.dt.hour(),
    "minute": lambda a: a.dt.minute(),
    "second": lambda a: a.dt.second(),
    "isodow": lambda a: a.dt.weekday(),
    "dow": lambda a: a.dt.weekday().rem(7),
}


def conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    """The operands of a chain of ``AND`` (parentheses removed)."""
    while isinstance(node, exp.Paren):
        node = node.this
    if node is None:
        return []
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    return [node]


def is_untyped_null(e: Expr) -> bool:
    """Whether ``e`` is a bare SQL ``NULL`` without a dtype yet."""
    j = e.to_json()
    return j.get("op") == "lit" and j.get("value") is None and "dtype" not in j


def _literal_dtype(e: Expr) -> str | None:
    j = e.to_json()
    if j.get("op") == "lit" and j.get("value") is not None:
        dtype = j.get("dtype")
        return dtype if isinstance(dtype, str) else None
    return None


class ExprTranslator:
    """Translates SQL expressions of one query text (see the module docs)."""

    def __init__(
        self,
        query: str,
        column: Callable[[exp.Column], Expr],
        special: Callable[[exp.Expression], Expr | None],
    ) -> None:
        self.query = query
        self.column = column
        self.special = special

    def __call__(self, node: exp.Expression) -> Expr:
        """The ddflow expression of ``node``."""
        found = self.special(node)
        if found is not None:
            return found
        return self._translate(node)

    def typed(self, node: exp.Expression) -> Expr:
        """``node``'s expression, refusing a bare ``NULL`` (no dtype to give it)."""
        e = self(node)
        if is_untyped_null(e):
            raise refuse(
                "a NULL whose type cannot be told here (write CAST(NULL AS type))", node, self.query
            )
        return e

    def _refuse(self, what: str, node: exp.Expression) -> Exception:
        return refuse(what, node, self.query)

    def _translate(self, node: exp.Expression) -> Expr:
        if isinstance(node, exp.Paren):
            return self(node.this)
        if isinstance(node, exp.Alias):
            return self(node.this)
        if isinstance(node, exp.Column):
            if isinstance(node.this, exp.Star):
                raise self._refuse("* is only allowed as a whole SELECT item", node)
            return self.column(node)
        if isinstance(node, exp.Literal):
            return self._literal(node)
        if isinstance(node, exp.Boolean):
            return E.lit(bool(node.this))
        if isinstance(node, exp.Null):
            return E.null_column()
        kind = type(node)
        if kind in _COMPARE:
            x, y = self(node.this), self(node.expression)
            if is_untyped_null(x) or is_untyped_null(y):
                return E.lit(None, "bool")  # a comparison with NULL is NULL
            return _COMPARE[kind](x, y)
        if kind in _ARITH:
            return self._arith(node)
        if isinstance(node, exp.Neg):
            return -self.typed(node.this)
        if isinstance(node, exp.And):
            return self.predicate(node.this) & self.predicate(node.expression)
        if isinstance(node, exp.Or):
            return self.predicate(node.this) | self.predicate(node.expression)
        if isinstance(node, exp.Not):
            return ~self.predicate(node.this)
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                raise self._refuse("IS other than IS [NOT] NULL is not supported", node)
            return self(node.this).is_null()
        if isinstance(node, exp.Between):
            x = self.typed(node.this)
            lo, hi = self._pair(node.args["low"], node.args["high"])
            inside = (x >= lo) & (x <= hi)
            return ~inside if node.args.get("negate") else inside
        if isinstance(node, exp.In):
            found = self._in(node)
            return ~found if node.args.get("negate") else found
        if isinstance(node, exp.Like | exp.ILike):
            return self._like(node)
        if isinstance(node, exp.Case):
            return self._case(node)
        if isinstance(node, exp.Cast | exp.TryCast):
            return self._cast(node)
        if isinstance(node, exp.Coalesce):
            parts = [self(node.this), *(self(a) for a in node.expressions)]
            return E.coalesce(*self._typed_nulls(parts, node))
        if isinstance(node, exp.Nullif):
            a, b = self.typed(node.this), self.typed(node.expression)
            null = self._null_like([a, b], node)
            return E.when(a == b).then(null).otherwise(a)
        if isinstance(node, exp.Extract):
            unit = node.this.name.lower()
            if unit not in _EXTRACT:
                raise self._refuse(f"EXTRACT of {unit.upper()} is not supported", node)
            return _EXTRACT[unit](self.typed(node.expression))
        if kind in _UNARY:
            return _UNARY[kind](self.typed(node.this))
        if isinstance(node, exp.Trim):
            if node.args.get("expression") is not None or node.args.get("position"):
                raise self._refuse("TRIM with characters or a side is not supported", node)
            return self.typed(node.this).str.strip_chars()
        if isinstance(node, exp.Round):
            places = node.args.get("decimals")
            n = 0 if places is None else self._int_literal(places, node)
            return self.typed(node.this).round(n)
        if isinstance(node, exp.Pow):
            return self.typed(node.this).pow(self.typed(node.expression))
        if isinstance(node, exp.Substring):
            return self._substring(node)
        if isinstance(node, exp.NullSafeEQ | exp.NullSafeNEQ):
            a, b = self._pair(node.this, node.expression)
            same = (
                E.when(a.is_null() & b.is_null())
                .then(E.lit(True))
                .when(a.is_null() | b.is_null())
                .then(E.lit(False))
                .otherwise(a == b)
            )
            return ~same if isinstance(node, exp.NullSafeNEQ) else same
        if isinstance(node, exp.StartsWith | exp.EndsWith | exp.Contains):
            return self._text_test(node)
        if isinstance(node, exp.Left | exp.Right):
            n = self._int_literal(node.expression, node)
            if n < 0:
                raise self._refuse("LEFT / RIGHT of a negative length is not supported", node)
            x = self.typed(node.this)
            if isinstance(node, exp.Left) or n == 0:
                return x.str.slice(0, n)
            return x.str.slice(-n)
        if isinstance(node, exp.Concat):
            parts = [self.typed(e) for e in node.expressions]
            # DuckDB's concat() skips nulls (unlike ||) and writes other types as text.
            return E.concat_str([E.coalesce(_as_text(e), "") for e in parts])
        if isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
            unit = node.args.get("unit")
            every = _TRUNC.get(unit.name.lower()) if isinstance(unit, exp.Var) else None
            if every is None:
                raise self._refuse("DATE_TRUNC to this unit is not supported", node)
            return self.typed(node.this).dt.truncate(every)
        if isinstance(node, exp.DPipe):
            return E.concat_str([self.typed(node.this), self.typed(node.expression)])
        if isinstance(node, exp.Window):
            raise self._refuse(
                "a window function (OVER) goes in the SELECT list only (filter on it in an "
                "enclosing query or in QUALIFY)",
                node,
            )
        if isinstance(node, AGGREGATES):
            raise self._refuse("an aggregate is not allowed here", node)
        if isinstance(node, exp.Interval):
            raise self._refuse("an INTERVAL only goes beside + or - of a date", node)
        if isinstance(node, exp.Subquery | exp.Exists | exp.Select):
            raise self._refuse("a subquery is not supported here", node)
        if isinstance(node, exp.Anonymous | exp.Func):
            raise self._refuse(f"the function {node.sql_name()} is not supported", node)
        raise self._refuse(f"{type(node).__name__} is not supported", node)

    # -- pieces ------------------------------------------------------------------------------

    def _literal(self, node: exp.Literal) -> Expr:
        if node.is_string:
            return E.lit(str(node.this))
        value = number_value(str(node.this))
        return E.lit(value)

    def _int_literal(self, node: exp.Expression, parent: exp.Expression) -> int:
        negative = False
        if isinstance(node, exp.Neg):
            negative, node = True, node.this
        if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
            return -int(node.this) if negative else int(node.this)
        raise self._refuse("expected an integer literal here", parent)

    def predicate(self, node: exp.Expression) -> Expr:
        e = self(node)
        return E.lit(None, "bool") if is_untyped_null(e) else e

    def _pair(self, a: exp.Expression, b: exp.Expression) -> tuple[Expr, Expr]:
        """Two operands, a bare ``NULL`` typed as the other one."""
        x, y = self._typed_nulls([self(a), self(b)], a)
        return x, y

    def _typed_nulls(self, parts: list[Expr], node: exp.Expression) -> list[Expr]:
        """``parts`` with each bare ``NULL`` typed as a literal among them."""
        if not any(is_untyped_null(p) for p in parts):
            return parts
        null = self._null_like(parts, node)
        return [null if is_untyped_null(p) else p for p in parts]

    def _null_like(self, parts: list[Expr], node: exp.Expression) -> Expr:
        """A null typed as a literal among ``parts``; else an int64 null, which the engine
        widens beside any numeric dtype (beside a str, date or bool it is a type error
        naming the expression when the dataflow runs: write ``CAST(NULL AS type)``)."""
        for p in parts:
            dtype = _literal_dtype(p)
            if dtype is not None:
                return E.lit(None, dtype)
        return E.lit(None, "int64")

    def _arith(self, node: exp.Expression) -> Expr:
        left, right = node.this, node.expression
        if isinstance(node, exp.Add | exp.Sub) and isinstance(right, exp.Interval):
            return self._shift(node, left, right, 1 if isinstance(node, exp.Add) else -1)
        if isinstance(node, exp.Add) and isinstance(left, exp.Interval):
            return self._shift(node, right, left, 1)
        a, b = self._pair(left, right)
        return _ARITH[type(node)](a, b)

    def _shift(
        self, node: exp.Expression, value: exp.Expression, interval: exp.Interval, sign: int
    ) -> Expr:
        parts = interval_of(interval)
        if parts is None:
            raise self._refuse("this INTERVAL is not supported (a count and one unit)", interval)
        count, unit = parts
        base = self.typed(value)
        folded = _fold_date(base, sign * count, unit)
        if folded is not None:
            return folded
        # DuckDB: a date plus an interval is a timestamp.
        return base.dt.offset_by(f"{sign * count}{unit}").cast("timestamp[us]")

    def _in(self, node: exp.In) -> Expr:
        if node.args.get("query") is not None:
            raise self._refuse("an IN subquery is only supported in WHERE / HAVING", node)
        x = self.typed(node.this)
        items = [self(e) for e in node.expressions]
        has_null = any(is_untyped_null(i) for i in items)
        items = [i for i in items if not is_untyped_null(i)]
        if not items:
            return E.lit(None, "bool")
        if all(_literal_dtype(i) is not None for i in items):
            found = x.is_in(items)
        else:
            found = x == items[0]
            for i in items[1:]:
                found = found | (x == i)
        if has_null:
            return E.when(found).then(E.lit(True)).otherwise(E.lit(None, "bool"))
        return found

    def _like(self, node: exp.Like | exp.ILike) -> Expr:
        pattern = node.expression
        if node.args.get("escape") is not None or not (
            isinstance(pattern, exp.Literal) and pattern.is_string
        ):
            raise self._refuse("LIKE takes a string literal pattern (no ESCAPE)", node)
        x = self.typed(node.this)
        text = str(pattern.this)
        if isinstance(node, exp.ILike):
            found = x.str.to_lowercase().str.like(text.lower())
        else:
            found = x.str.like(text)
        return ~found if node.args.get("negate") else found

    def _text_test(self, node: exp.Expression) -> Expr:
        """``starts_with`` / ``ends_with`` / ``contains`` of a string literal."""
        text = node.expression
        if not (isinstance(text, exp.Literal) and text.is_string):
            raise self._refuse("this text test takes a string literal", node)
        x = self.typed(node.this)
        if isinstance(node, exp.StartsWith):
            return x.str.starts_with(str(text.this))
        if isinstance(node, exp.EndsWith):
            return x.str.ends_with(str(text.this))
        return x.str.contains(str(text.this), literal=True)

    def _case(self, node: exp.Case) -> Expr:
        subject = node.this
        conds: list[Expr] = []
        values: list[Expr] = []
        for branch in node.args.get("ifs") or []:
            cond = branch.this
            if subject is not None:
                a, b = self._pair(subject, cond)
                conds.append(a == b)
            else:
                conds.append(self.predicate(cond))
            values.append(self(branch.args["true"]))
        default = node.args.get("default")
        values.append(E.null_column() if default is None else self(default))
        values = self._typed_nulls(values, node)
        chain = E.when(conds[0]).then(values[0])
        for c, v in zip(conds[1:], values[1:-1], strict=True):
            chain = chain.when(c).then(v)
        return chain.otherwise(values[-1])

    def _cast(self, node: exp.Cast) -> Expr:
        to = node.args["to"]
        dtype = dtype_of(to)
        if dtype is None:
            raise self._refuse(f"CAST to {to.sql(dialect='duckdb')} is not supported", node)
        inner = node.this
        if isinstance(inner, exp.Null):
            return E.lit(None, dtype)
        if (
            isinstance(inner, exp.Literal)
            and inner.is_string
            and (dtype == "date32" or dtype.startswith("timestamp"))
        ):
            moment = temporal_value(dtype, str(inner.this))
            if moment is None:
                raise self._refuse(f"not a valid {to.sql(dialect='duckdb')} literal", node)
            return E.lit(moment, dtype)
        value = self.typed(inner)
        if dtype == "int64" and not (isinstance(inner, exp.Literal) and inner.is_string):
            value = _round_half_even(value)  # DuckDB rounds a fraction, ties to even
        return value.cast(dtype, strict=not isinstance(node, exp.TryCast))

    def _substring(self, node: exp.Substring) -> Expr:
        x = self.typed(node.this)
        start = node.args.get("start")
        length = node.args.get("length")
        first = 1 if start is None else self._int_literal(start, node)
        if first < 1:
            raise self._refuse("SUBSTRING from a position below 1 is not supported", node)
        count = None if length is None else self._int_literal(length, node)
        if count is not None and count < 0:
            raise self._refuse("SUBSTRING with a negative length is not supported", node)
        return x.str.slice(first - 1, count)


def _fold_date(base: Expr, count: int, unit: str) -> Expr | None:
    """``date literal + interval`` computed now: a timestamp literal (DuckDB's type)."""
    j: dict[str, Any] = base.to_json()
    if j.get("op") != "lit" or j.get("dtype") != "date32" or unit not in ("d", "w", "mo", "y"):
        return None
    day = datetime.date(1970, 1, 1) + datetime.timedelta(days=int(j["value"]))
    if unit in ("d", "w"):
        return _midnight(day + datetime.timedelta(days=count * (7 if unit == "w" else 1)))
    months = count * (12 if unit == "y" else 1)
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    month += 1
    last = (datetime.date(year + month // 12, month % 12 + 1, 1) - datetime.timedelta(days=1)).day
    return _midnight(datetime.date(year, month, min(day.day, last)))


_TRUNC = {
    "year": "1y",
    "quarter": "1q",
    "month": "1mo",
    "day": "1d",
    "hour": "1h",
    "minute": "1m",
    "second": "1s",
}
"""``DATE_TRUNC`` units as ``.dt.truncate`` periods (weeks differ: DuckDB's start on Monday)."""


def _as_text(e: Expr) -> Expr:
    """``e`` as a str (a str literal as it is)."""
    return e if _literal_dtype(e) == "str" else e.cast("str")


def _round_half_even(x: Expr) -> Expr:
    """``x`` rounded to a whole number, ties to the even one (the identity on integers)."""
    low = x.floor()
    tie = (x - low) == 0.5
    even = E.when(low.rem(2) == 0).then(low).otherwise(x.ceil())
    return E.when(tie).then(even).otherwise(x.round(0))


def _midnight(day: datetime.date) -> Expr:
    """The timestamp literal of ``day`` at midnight."""
    return E.lit(datetime.datetime(day.year, day.month, day.day), "timestamp[us]")
