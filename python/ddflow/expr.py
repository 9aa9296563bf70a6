"""Column expressions, modelled on Polars: ``col("dist") + 1``, ``when(c).then(a).otherwise(b)``.

An :class:`Expr` is a small tree built with Python operators. It is not evaluated in Python:
``to_json()`` gives its JSON form (documented in ``rust/ddflow-core/src/expr/mod.rs``), which
the Rust engine binds to a schema (resolving columns, checking dtypes) and evaluates on whole
columns. ``ddflow._core.eval_expr(json.dumps(e.to_json()), {"x": array, ...})`` evaluates one
directly on numpy arrays.

Semantics (checked in Rust):

* ``+ - * // %`` on int64 / float64 (mixed operands give float64); ``/`` is true division
  (always float64). ``//`` and ``%`` floor like Python and numpy.
* int64 arithmetic never wraps: overflow raises :class:`ddflow.errors.OverflowError`, and
  integer ``// 0`` or ``% 0`` raises :class:`ddflow.errors.DivisionByZeroError`. float64
  follows IEEE like numpy (``1.0 // 0.0`` is ``inf``, ``1.0 % 0.0`` is ``nan``).
* ``== != < <= > >=`` on numbers and bools; str supports ``==`` and ``!=``.
* ``& | ~`` on bools (both sides always evaluated; use ``when`` to guard a failing branch:
  ``when(col("b") != 0).then(col("a") // col("b")).otherwise(0)`` is safe).
* ``cast`` among ``"int64"``, ``"float64"``, ``"bool"``.

Python scalars (``int``, ``float``, ``bool``, ``str``, numpy scalars) mix freely with
expressions and become literals; unlike Polars, a ``str`` is always a literal, never a column
name (use ``col(name)``).
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import numbers
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TypeAlias, cast

import numpy as np

from ddflow import _core
from ddflow.dtypes import dtype_name
from ddflow.errors import (
    ColumnNotFoundError,
    DdflowError,
    OverflowError,
    PlanError,
    SchemaTypeError,
)
from ddflow.expr_functions import ExprFunctions, function_json, function_repr
from ddflow.logical_types import is_logical, physical, scalar_kind, word_of

__all__ = [
    "DTYPES",
    "Expr",
    "IntoExpr",
    "Then",
    "When",
    "col",
    "lit",
    "null_column",
    "max_of",
    "min_of",
    "when",
    "as_expr",
    "concat_str",
    "coalesce",
    "check_columns",
    "expr_text",
]

DTYPES: tuple[str, ...] = ("int64", "float64", "bool", "str")
"""The column dtypes."""

_DTYPE_ALIASES: dict[str, str] = {
    "int64": "int64",
    "int": "int64",
    "i64": "int64",
    "float64": "float64",
    "float": "float64",
    "f64": "float64",
    "bool": "bool",
    "str": "str",
    "string": "str",
    "utf8": "str",
}

_printing = threading.local()
"""``on`` while an expression's repr is written (its size was checked once, at the top)."""

_INFIX: dict[str, str] = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
    "and": "&",
    "or": "|",
}

_NOW_ONLY_IN_FILTER = (
    "now() is usable only in Collection.filter, compared (<, <=, >, >=) with an expression "
    "free of now() (a temporal filter: see ddflow.temporal)"
)

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1

Scalar: TypeAlias = (
    int | float | bool | str | bytes | datetime.date | datetime.timedelta | decimal.Decimal
)
IntoExpr: TypeAlias = "Expr | int | float | bool | str"


def _dtype_name(dtype: object) -> str:
    """Normalises a dtype given as a name (``"int64"``, ``"float"``, ...) or a Python type."""
    if isinstance(dtype, type) and dtype in (bool, int, float, str):
        return {bool: "bool", int: "int64", float: "float64", str: "str"}[dtype]
    if isinstance(dtype, str) and dtype in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[dtype]
    name = getattr(dtype, "name", None)  # numpy dtypes and scalar types
    if name is None and isinstance(dtype, type):
        name = getattr(dtype, "__name__", None)
    if isinstance(name, str) and name in _DTYPE_ALIASES:
        return _DTYPE_ALIASES[name]
    if isinstance(dtype, str) or type(dtype).__module__.startswith("pyarrow"):
        return dtype_name(dtype)  # the logical dtypes: "date32", "decimal128(12, 2)", ...
    raise SchemaTypeError(f"unsupported dtype {dtype!r} (expected one of {', '.join(DTYPES)})")


def _quote(s: str) -> str:
    """A string quoted like the Rust side (JSON, non-ASCII kept)."""
    return json.dumps(s, ensure_ascii=False)


def _scalar_dtype(value: object) -> str:
    """The dtype of a Python or numpy scalar, or raises ``SchemaTypeError``."""
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, numbers.Integral):
        return "int64"
    if isinstance(value, numbers.Real):
        return "float64"
    if isinstance(value, str):
        return "str"
    kind = scalar_kind(value)
    if kind is not None:
        return kind
    raise SchemaTypeError(
        f"cannot use {value!r} (type {type(value).__name__}) in an expression: expected an "
        f"Expr, int, float, bool or str"
    )


def _serde_reads_exactly(text: str) -> bool:
    """Whether Rust's ``serde_json`` (default float parser) reads ``text`` back exactly.

    ``text`` is ``repr`` of a finite, non-negative float. The parser is exact when the decimal
    significand fits in 53 bits and the decimal exponent is within ±22.
    """
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    significand = int(whole + frac)
    exponent = int(exp or "0") - len(frac)
    return significand <= 2**53 and -22 <= exponent <= 22


def _float_json(value: float) -> float | str:
    """A float64 literal's JSON ``value``: a number, or a string when a number would not
    reach Rust exactly (non-finite values, more than ~15 significant digits)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value if _serde_reads_exactly(repr(abs(value))) else repr(value)


class Expr(ExprFunctions):
    """A column expression. Build with :func:`col`, :func:`lit`, :func:`when`, operators and
    methods; never evaluated in Python (``bool(expr)`` raises ``TypeError``)."""

    __slots__ = ("_op", "_args", "_attrs")
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators
    __hash__ = None  # type: ignore[assignment]  # == builds an expression

    def __init__(self, op: str, args: tuple[Expr, ...] = (), **attrs: Any) -> None:
        """Low-level constructor; prefer :func:`col`, :func:`lit` and the operators."""
        self._op = op
        self._args = args
        self._attrs = attrs

    # -- structure ---------------------------------------------------------------------------

    @property
    def op(self) -> str:
        """The JSON ``op`` of the root node (``"col"``, ``"lit"``, ``"add"``, ...)."""
        return self._op

    def _walk(self) -> Iterator[Expr]:
        """Nodes in pre-order, left to right."""
        stack = [self]
        while stack:
            e = stack.pop()
            yield e
            stack.extend(reversed(e._args))

    def columns(self) -> list[str]:
        """Names of the referenced columns, in order of first appearance."""
        out: list[str] = []
        for e in self._walk():
            if e._op == "col" and e._attrs["name"] not in out:
                out.append(e._attrs["name"])
        return out

    def output_name(self) -> str:
        """The output column name, like Polars: the outermost alias, else the leftmost
        column name, else ``"literal"``."""
        for e in self._walk():
            if e._op in ("alias", "col"):
                name: str = e._attrs["name"]
                return name
        return "literal"

    def to_json(self) -> dict[str, Any]:
        """The JSON form (a fresh dict) understood by the Rust engine."""
        op, a = self._op, self._args
        if op == "col":
            return {"op": "col", "name": self._attrs["name"]}
        if op == "lit":
            value, dtype = self._attrs["value"], self._attrs["dtype"]
            if value is None:  # a null; without a dtype, the plan decides it (null_column)
                return {"op": "lit", "value": None, **({"dtype": dtype} if dtype else {})}
            if dtype == "float64":
                value = _float_json(value)
            return {"op": "lit", "value": value, "dtype": dtype}
        if op in _INFIX or op in ("min_of", "max_of"):
            # A left-nested chain of one operator (a + b + c) flattens into one args list,
            # which keeps the JSON shallow (Rust's JSON parser limits nesting).
            operands = [a[1]]
            left = a[0]
            while left._op == op:
                operands.append(left._args[1])
                left = left._args[0]
            operands.append(left)
            return {"op": op, "args": [e.to_json() for e in reversed(operands)]}
        if op in ("neg", "not", "is_null", "is_not_null"):
            return {"op": op, "arg": a[0].to_json()}
        if op == "coalesce":
            return {"op": "coalesce", "args": [e.to_json() for e in a]}
        if op == "cast":
            out = {"op": "cast", "dtype": self._attrs["dtype"], "arg": a[0].to_json()}
            if self._attrs.get("strict") is False:
                out["strict"] = False
            return out
        if op == "alias":
            return {"op": "alias", "name": self._attrs["name"], "arg": a[0].to_json()}
        if op == "now":
            raise PlanError(_NOW_ONLY_IN_FILTER)
        if op == "when":
            return {
                "op": "when",
                "cond": a[0].to_json(),
                "then": a[1].to_json(),
                "otherwise": a[2].to_json(),
            }
        return function_json(self)  # the expression library (ddflow.expr_functions)

    def __repr__(self) -> str:
        """Python-like source, identical to the Rust ``Display`` used in error messages; an
        expression too deep or too large to write out (:func:`check_depth`) says so."""
        if getattr(_printing, "on", False):
            return self._text()
        try:
            check_depth(self, "repr")
        except PlanError as exc:
            return f"<{str(exc).removeprefix('repr: ')}>"
        _printing.on = True
        try:
            return self._text()
        finally:
            _printing.on = False

    def _text(self) -> str:
        """The text of ``__repr__`` (operands printed by their own ``__repr__``)."""
        op, a = self._op, self._args
        if op in _INFIX:
            return f"({a[0]!r} {_INFIX[op]} {a[1]!r})"
        if op in ("min_of", "max_of"):
            return f"{op}({a[0]!r}, {a[1]!r})"
        if op == "col":
            return f"col({_quote(self._attrs['name'])})"
        if op == "lit":
            return self._lit_text()
        if op == "not":
            return f"(~{a[0]!r})"
        if op in ("is_null", "is_not_null"):
            return f"{a[0]._receiver()}.{op}()"
        if op == "coalesce":
            return f"coalesce({', '.join(repr(e) for e in a)})"
        if op == "neg":
            return f"(-{a[0]!r})"
        if op == "cast":
            lax = ", strict=False" if self._attrs.get("strict") is False else ""
            return f"{a[0]._receiver()}.cast({_quote(self._attrs['dtype'])}{lax})"
        if op == "alias":
            return f"{a[0]._receiver()}.alias({_quote(self._attrs['name'])})"
        if op == "when":
            return f"when({a[0]!r}).then({a[1]!r}).otherwise({a[2]!r})"
        if op == "now":
            return "now()"
        return function_repr(self)  # the expression library (ddflow.expr_functions)

    __str__ = __repr__

    def _lit_text(self) -> str:
        value, dtype = self._attrs["value"], self._attrs["dtype"]
        if dtype == "binary" and value is not None:
            return repr(bytes.fromhex(value))
        if is_logical(dtype) and value is not None:
            return f"{dtype}({_quote(_core.render_word(dtype, value))})"
        if value is None:
            return "lit(None)" if dtype is None else f"lit(None, {_quote(dtype)})"
        if dtype == "str":
            return _quote(value)
        if dtype == "float64":
            return repr(float(value))
        return repr(value)

    def _receiver(self) -> str:
        """The text of ``self`` as the receiver of a method call."""
        if self._op == "lit" and self._attrs["value"] is not None:
            return f"lit({self._lit_text()})"
        return repr(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth value of an expression is ambiguous ({self!r}): use & | ~ instead of "
            f"and / or / not, when(...).then(...).otherwise(...) instead of if/else, and no "
            f"chained comparisons (a < x < b); use x.is_in([...]) for `x in [...]`"
        )

    def __iter__(self) -> Iterator[Any]:
        raise TypeError(f"an expression is not iterable: {self!r}")

    # -- methods -----------------------------------------------------------------------------

    def alias(self, name: str) -> Expr:
        """Names the output column."""
        if not isinstance(name, str):
            raise SchemaTypeError(f"alias name must be a str, got {name!r}")
        return Expr("alias", (self,), name=name)

    def cast(self, dtype: object, strict: bool = True) -> Expr:
        """Converts to ``dtype`` (a name such as ``"int64"``, ``"decimal128(12, 2)"``,
        ``"date32"``, ``"str"``, a pyarrow type, or ``int`` / ``float`` / ``bool`` / ``str``).
        float -> int truncates toward zero; numbers -> bool is ``!= 0``; a str is parsed (the
        engine's ``expr/convert.rs`` lists the text forms). A value that does not convert (NaN
        to int, out of range, a str that does not parse) is an error update, or null with
        ``strict=False``."""
        if not isinstance(strict, bool):
            raise SchemaTypeError(f"cast: strict must be a bool, got {strict!r}")
        if strict:
            return Expr("cast", (self,), dtype=_dtype_name(dtype))
        return Expr("cast", (self,), dtype=_dtype_name(dtype), strict=False)

    # -- nulls -------------------------------------------------------------------------------

    def is_null(self) -> Expr:
        """True where the value is null (SQL ``IS NULL``; never null itself)."""
        return Expr("is_null", (self,))

    def is_not_null(self) -> Expr:
        """True where the value is not null (SQL ``IS NOT NULL``)."""
        return Expr("is_not_null", (self,))

    def fill_null(self, value: IntoExpr) -> Expr:
        """The value, or ``value`` where it is null: ``coalesce(self, value)``."""
        return coalesce(self, value)

    # -- operators ---------------------------------------------------------------------------

    def _bin(self, op: str, other: object, reflected: bool = False) -> Expr:
        o = _into_expr(other)
        return Expr(op, (o, self) if reflected else (self, o))

    def __add__(self, other: IntoExpr) -> Expr:
        return self._bin("add", other)

    def __radd__(self, other: IntoExpr) -> Expr:
        return self._bin("add", other, True)

    def __sub__(self, other: IntoExpr) -> Expr:
        return self._bin("sub", other)

    def __rsub__(self, other: IntoExpr) -> Expr:
        return self._bin("sub", other, True)

    def __mul__(self, other: IntoExpr) -> Expr:
        return self._bin("mul", other)

    def __rmul__(self, other: IntoExpr) -> Expr:
        return self._bin("mul", other, True)

    def __truediv__(self, other: IntoExpr) -> Expr:
        return self._bin("truediv", other)

    def __rtruediv__(self, other: IntoExpr) -> Expr:
        return self._bin("truediv", other, True)

    def __floordiv__(self, other: IntoExpr) -> Expr:
        return self._bin("floordiv", other)

    def __rfloordiv__(self, other: IntoExpr) -> Expr:
        return self._bin("floordiv", other, True)

    def __mod__(self, other: IntoExpr) -> Expr:
        return self._bin("mod", other)

    def __rmod__(self, other: IntoExpr) -> Expr:
        return self._bin("mod", other, True)

    def __eq__(self, other: IntoExpr) -> Expr:  # type: ignore[override]
        return self._bin("eq", other)

    def __ne__(self, other: IntoExpr) -> Expr:  # type: ignore[override]
        return self._bin("ne", other)

    def __lt__(self, other: IntoExpr) -> Expr:
        return self._bin("lt", other)

    def __le__(self, other: IntoExpr) -> Expr:
        return self._bin("le", other)

    def __gt__(self, other: IntoExpr) -> Expr:
        return self._bin("gt", other)

    def __ge__(self, other: IntoExpr) -> Expr:
        return self._bin("ge", other)

    def __and__(self, other: IntoExpr) -> Expr:
        return self._bin("and", other)

    def __rand__(self, other: IntoExpr) -> Expr:
        return self._bin("and", other, True)

    def __or__(self, other: IntoExpr) -> Expr:
        return self._bin("or", other)

    def __ror__(self, other: IntoExpr) -> Expr:
        return self._bin("or", other, True)

    def __invert__(self) -> Expr:
        return Expr("not", (self,))

    def __neg__(self) -> Expr:
        return Expr("neg", (self,))


def _into_expr(value: object) -> Expr:
    """An expression, or a literal for a Python / numpy scalar."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, When | Then):
        raise SchemaTypeError(
            f"{value!r} is incomplete: finish it with .then(...) and .otherwise(...)"
        )
    # lit checks the value (a Python or numpy scalar; SchemaTypeError otherwise).
    return lit(cast(Scalar, value))


def col(name: str) -> Expr:
    """The column ``name``."""
    if not isinstance(name, str):
        raise SchemaTypeError(f"column name must be a str, got {name!r}")
    return Expr("col", name=name)


def lit(value: Scalar | None, dtype: object = None) -> Expr:
    """A literal broadcast to every row. The dtype follows the value (``bool``, ``int`` ->
    int64, ``float`` -> float64, ``str``) unless given; an int may be given as float64.
    ``lit(None, dtype)`` is a SQL null of ``dtype`` (``CAST(NULL AS ...)``)."""
    if isinstance(value, Expr):
        return value
    if value is None:
        if dtype is None:
            raise SchemaTypeError('a null literal needs a dtype: lit(None, "int64")')
        return Expr("lit", value=None, dtype=_dtype_name(dtype))
    natural = _scalar_dtype(value)
    want = natural if dtype is None else _dtype_name(dtype)
    v: Scalar
    if want == "binary":
        if not isinstance(value, bytes | bytearray | memoryview):
            raise SchemaTypeError(f"cannot make a binary literal from {value!r}")
        # Bytes travel as their hex digits (the plan's JSON form of a binary literal).
        return Expr("lit", value=bytes(value).hex(), dtype="binary")
    if is_logical(want):
        # Dates, timestamps, durations, decimals, narrow ints: the engine word of the value.
        if physical(want) == "float64":
            return Expr("lit", value=float(cast(float, value)), dtype="float64")
        return Expr("lit", value=word_of(value, want, f"literal {value!r}"), dtype=want)
    value = cast(int | float | bool | str, value)
    if want == "int64" and natural == "int64":
        v = iv = int(value)
        if not _I64_MIN <= iv <= _I64_MAX:
            raise OverflowError(f"integer literal {iv} does not fit in int64")
    elif want == "float64" and natural in ("int64", "float64"):
        v = float(value)
    elif want == natural == "bool":
        v = bool(value)
    elif want == natural == "str":
        v = str(value)
    else:
        raise SchemaTypeError(f"cannot make a {want} literal from {value!r} ({natural})")
    return Expr("lit", value=v, dtype=want)


def null_column() -> Expr:
    """A null without a dtype, for a whole ``select`` output column only: the engine gives it
    the dtype of the columns the plan puts it beside (the padding of an outer join, concat-ed
    with the matched rows; see :mod:`ddflow.joins`)."""
    return Expr("lit", value=None, dtype=None)


def _fold(op: str, a: IntoExpr, b: IntoExpr, more: tuple[IntoExpr, ...]) -> Expr:
    out = Expr(op, (_into_expr(a), _into_expr(b)))
    for c in more:
        out = Expr(op, (out, _into_expr(c)))
    return out


def concat_str(exprs: Iterable[IntoExpr], separator: str = "") -> Expr:
    """The strings of ``exprs`` (str expressions; a ``str`` is a literal) joined by
    ``separator``, row by row: ``concat_str([col("first"), col("last")], separator=" ")``."""
    parts = tuple(_into_expr(e) for e in exprs)
    if not parts:
        raise PlanError("concat_str needs at least one expression")
    return parts[0]._concat(parts, separator)


def coalesce(a: IntoExpr, *more: IntoExpr) -> Expr:
    """Per row the first operand that is not null (SQL ``COALESCE``); null where all are.
    Operands share a dtype (int64 and float64 mix as float64)."""
    return Expr("coalesce", tuple(_into_expr(e) for e in (a, *more)))


def min_of(a: IntoExpr, b: IntoExpr, *more: IntoExpr) -> Expr:
    """Row-wise minimum of numeric (or bool) expressions, like Polars' ``min_horizontal``;
    NaN propagates (like ``numpy.minimum``)."""
    return _fold("min_of", a, b, more)


def max_of(a: IntoExpr, b: IntoExpr, *more: IntoExpr) -> Expr:
    """Row-wise maximum of numeric (or bool) expressions, like Polars' ``max_horizontal``;
    NaN propagates (like ``numpy.maximum``)."""
    return _fold("max_of", a, b, more)


class When:
    """``when(cond)``: call :meth:`then` next."""

    __slots__ = ("_branches", "_cond")

    def __init__(self, branches: tuple[tuple[Expr, Expr], ...], cond: Expr) -> None:
        self._branches = branches
        self._cond = cond

    def then(self, value: IntoExpr) -> Then:
        """The value for rows where the condition holds."""
        return Then((*self._branches, (self._cond, _into_expr(value))))

    def __repr__(self) -> str:
        return f"<when({self._cond!r}) without .then(...)>"

    def __bool__(self) -> bool:
        raise TypeError(f"{self!r} has no truth value")


class Then:
    """``when(cond).then(value)``: call :meth:`otherwise` (or chain :meth:`when`)."""

    __slots__ = ("_branches",)

    def __init__(self, branches: tuple[tuple[Expr, Expr], ...]) -> None:
        self._branches = branches

    def when(self, cond: IntoExpr) -> When:
        """Another condition, tried when the previous ones do not hold."""
        return When(self._branches, _into_expr(cond))

    def otherwise(self, value: IntoExpr) -> Expr:
        """The value for rows where no condition holds; completes the expression."""
        out = _into_expr(value)
        for cond, then in reversed(self._branches):
            out = Expr("when", (cond, then, out))
        return out

    def __repr__(self) -> str:
        c, v = self._branches[-1]
        return f"<when({c!r}).then({v!r}) without .otherwise(...)>"

    def __bool__(self) -> bool:
        raise TypeError(f"{self!r} has no truth value")


def when(cond: IntoExpr) -> When:
    """Starts ``when(cond).then(a).otherwise(b)``: ``a`` where ``cond`` holds, else ``b``.

    Each branch is evaluated only for the rows that select it, so a guarded division
    cannot fail. Branches must share a dtype (int64 with float64 gives float64). Chain
    ``.when(c2).then(b)`` before ``.otherwise`` for more cases.
    """
    return When((), _into_expr(cond))


# -- expressions as operator arguments ---------------------------------------------------------


MAX_DEPTH = 256
"""The deepest expression the engine takes (``MAX_DEPTH`` of ``rust/ddflow-core/src/expr``)."""

MAX_NODES = 100_000
"""The most nodes an expression may have once shared subexpressions are written out (its
JSON, text and evaluation grow with that count, so ``e = e + e`` repeated would hang)."""


def check_depth(expr: Expr, label: str) -> None:
    """Raises ``PlanError`` naming the operator if ``expr`` nests deeper than
    :data:`MAX_DEPTH` or writes out to more than :data:`MAX_NODES` nodes. Linear in the
    distinct nodes and without recursion, so it runs before anything recurses on ``expr``."""
    measured: dict[int, tuple[int, int]] = {}  # id -> (depth, nodes written out)
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if id(e) in measured:
            continue
        if not ready:
            stack.append((e, True))
            stack.extend((a, False) for a in e._args if id(a) not in measured)
            continue
        parts = [measured[id(a)] for a in e._args]
        depth = 1 + max((d for d, _ in parts), default=0)
        nodes = 1 + sum(n for _, n in parts)
        if depth > MAX_DEPTH:
            raise PlanError(
                f"{label}: an expression nests deeper than {MAX_DEPTH} levels; build it in "
                "steps (with_columns) or flatten it"
            )
        if nodes > MAX_NODES:
            raise PlanError(
                f"{label}: an expression has more than {MAX_NODES:,} nodes once its shared "
                "subexpressions are written out; compute shared parts once (with_columns)"
            )
        measured[id(e)] = (depth, nodes)


def expr_text(expr: Expr) -> str:
    """An expression as Python-like text (its repr), or compact JSON."""
    check_depth(expr, "ddflow")
    text = repr(expr)
    if text.startswith("<"):
        text = json.dumps(expr.to_json(), separators=(",", ":"))
    return text


def as_expr(value: object, label: str) -> Expr:
    """An expression from an Expr, a column name (str) or a literal value (a number, bool)."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, str):
        return col(value)
    try:
        return lit(value)  # type: ignore[arg-type]
    except DdflowError:
        raise PlanError(
            f"{label}: expected an expression, a column name or a literal, got {value!r}"
        ) from None


def check_columns(expr: Expr, columns: tuple[str, ...] | list[str], label: str) -> None:
    """Raises ``ColumnNotFoundError`` naming the operator if ``expr`` reads a missing column
    (and ``PlanError`` if it nests too deep: :func:`check_depth`)."""
    check_depth(expr, label)
    if any(e._op == "now" for e in expr._walk()):
        raise PlanError(f"{label}: {_NOW_ONLY_IN_FILTER}; got {expr_text(expr)}")
    for name in expr.columns():
        if name not in columns:
            raise ColumnNotFoundError(
                f"{label}: column {name!r} not found in expression {expr_text(expr)}; "
                f"available columns are {list(columns)}"
            )
