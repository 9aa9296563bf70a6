"""The expression library's methods on :class:`ddflow.expr.Expr`: membership and math.

``Expr`` inherits :class:`ExprFunctions`; the ``.str`` namespace is in :mod:`ddflow.expr_str`.
Every function becomes a JSON node evaluated in Rust (``rust/ddflow-core/src/expr/func.rs``
documents the nodes) and compiled to Spark Column functions where Spark is exact.

Semantics and result dtypes:

* ``is_in([...])``: a list of literals of the operand's kind (int64 and float64 mix; NaN is
  in no list); bool. ``is_between(lo, hi)``: ``lo <= x <= hi`` (both ends included).
* ``abs()``, ``floor()``, ``ceil()``, ``round(n)`` keep the dtype (on int64 all but ``abs``
  are the identity; ``abs`` of the least int64 is an overflow error).
* ``round(n)`` (``n >= 0``) rounds half away from zero like SQL and Spark, on the shortest
  decimal form of the float (what ``repr`` prints): ``round(2.675, 2) == 2.68``.
* ``sqrt()``, ``log()`` (natural), ``exp()``, ``pow(y)`` / ``**`` give float64 (IEEE:
  ``sqrt(-1)`` and ``log(-1)`` are NaN, ``log(0)`` is ``-inf``).
* ``rem(y)``: remainder with the sign of the dividend (SQL ``%``, Spark, Rust); the ``%``
  operator keeps Python's rule (sign of the divisor, consistent with ``//``). int64
  ``rem(0)`` is a division-by-zero error; float64 ``rem(0.0)`` is NaN.
"""

from __future__ import annotations

import builtins
import json
from typing import TYPE_CHECKING, Any, Self

from ddflow import _core
from ddflow.errors import PlanError
from ddflow.expr_dt import ExprDateTimeNamespace
from ddflow.expr_str import ExprStringNamespace

__all__ = ["FUNCTION_OPS", "ExprFunctions", "function_json", "function_repr"]

FUNCTION_OPS: frozenset[str] = frozenset(_core.EXPR_FUNCTIONS)
"""The JSON ``op`` names of the library, as the engine defines them (``expr::Func``)."""

_TWO_OPERANDS = ("pow", "rem")


def _quote(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


class ExprFunctions:
    """Library methods of :class:`~ddflow.expr.Expr` (a mixin: ``Expr`` supplies storage,
    the constructor and operand conversion)."""

    __slots__ = ()

    if TYPE_CHECKING:
        _op: str
        _args: tuple[Any, ...]
        _attrs: dict[builtins.str, Any]

        def __init__(self, op: builtins.str, args: tuple[Any, ...] = (), **attrs: Any) -> None: ...

        def _bin(self, op: builtins.str, other: object, reflected: bool = False) -> Self: ...

        def __ge__(self, other: Any) -> Self: ...

        def __le__(self, other: Any) -> Self: ...

        def __and__(self, other: Any) -> Self: ...

        def to_json(self) -> dict[builtins.str, Any]: ...

    # -- building blocks (used by ddflow.expr_str too) ----------------------------------------

    def _operand(self, value: object) -> Self:
        """``value`` as an expression (a Python scalar becomes a literal, as in operators)."""
        operand: Self = self._bin("operand", value)._args[1]
        return operand

    def _func(self, op: builtins.str, *others: object, **attrs: Any) -> Self:
        """The library node ``op`` with ``self`` (and ``others``) as operands."""
        return type(self)(op, (self, *(self._operand(o) for o in others)), **attrs)

    def _concat(self, parts: tuple[object, ...], separator: builtins.str) -> Self:
        """``concat_str`` of ``parts`` (scalars become literals)."""
        if not isinstance(separator, builtins.str):
            raise PlanError(f"concat_str separator must be a str, got {separator!r}")
        if not parts:
            raise PlanError("concat_str needs at least one expression")
        return type(self)("concat_str", tuple(self._operand(p) for p in parts), separator=separator)

    # -- membership ---------------------------------------------------------------------------

    def is_in(self, values: Any) -> Self:
        """Whether the value equals one of ``values`` (a list of literals of the operand's
        kind; int and float mix). NaN is in no list."""
        if isinstance(values, str | bytes) or not hasattr(values, "__iter__"):
            raise PlanError(f"is_in needs a list of literals, got {values!r}")
        lits = tuple(self._operand(v) for v in values)
        for v in lits:
            if v._op != "lit":
                raise PlanError(f"is_in takes literals, not expressions: {v!r}")
        return type(self)("is_in", (self,), values=lits)

    def is_between(self, lower: Any, upper: Any) -> Self:
        """``lower <= self <= upper`` (both ends included; NaN is between nothing)."""
        above: Self = self >= lower
        below: Self = self <= upper
        return above & below

    # -- math ---------------------------------------------------------------------------------

    def abs(self) -> Self:
        """Absolute value, same dtype (the least int64 is an overflow error)."""
        return self._func("abs")

    def __abs__(self) -> Self:
        return self.abs()

    def round(self, decimals: int = 0) -> Self:
        """Rounded to ``decimals >= 0`` places, half away from zero, on the shortest decimal
        form of a float; the identity on int64."""
        if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
            raise PlanError(f"round decimals must be an int >= 0, got {decimals!r}")
        return self._func("round", decimals=decimals)

    def floor(self) -> Self:
        """Largest integral value not above (float64 stays float64; identity on int64)."""
        return self._func("floor")

    def ceil(self) -> Self:
        """Smallest integral value not below (float64 stays float64; identity on int64)."""
        return self._func("ceil")

    def sqrt(self) -> Self:
        """Square root, float64 (NaN below zero)."""
        return self._func("sqrt")

    def log(self) -> Self:
        """Natural logarithm, float64 (``-inf`` at 0, NaN below)."""
        return self._func("log")

    def exp(self) -> Self:
        """``e ** x``, float64."""
        return self._func("exp")

    def pow(self, exponent: Any) -> Self:
        """``self ** exponent``, float64 (C ``pow``)."""
        return self._func("pow", exponent)

    def __pow__(self, exponent: Any) -> Self:
        return self.pow(exponent)

    def __rpow__(self, base: Any) -> Self:
        return self._operand(base).pow(self)

    def rem(self, divisor: Any) -> Self:
        """Remainder with the sign of the dividend (SQL ``%``); int64 ``rem(0)`` is an
        error, float64 ``rem(0.0)`` is NaN. The ``%`` operator floors like Python."""
        return self._func("rem", divisor)

    # -- namespaces (last: the property named ``str`` shadows the builtin in this class) -----

    @property
    def dt(self) -> ExprDateTimeNamespace[Self]:
        """Date and time functions: ``col("d").dt.year()``, ``.dt.offset_by("3mo")``, ..."""
        return ExprDateTimeNamespace(self)

    @property
    def str(self) -> ExprStringNamespace[Self]:
        """String functions: ``col("s").str.len_chars()``, ``.str.contains("a+")``, ..."""
        return ExprStringNamespace(self)


def function_json(e: ExprFunctions) -> dict[str, Any]:
    """The JSON form of a library node."""
    op, args, attrs = e._op, e._args, e._attrs
    if op not in FUNCTION_OPS:
        raise AssertionError(f"unknown op {op!r}")
    out: dict[str, Any] = {"op": op}
    if op in _TWO_OPERANDS or op == "concat_str":
        out["args"] = [a.to_json() for a in args]
    else:
        out["arg"] = args[0].to_json()
    for key, value in attrs.items():
        out[key] = [v.to_json() for v in value] if key == "values" else value
    return out


def function_repr(e: ExprFunctions) -> str:
    """Python-like source of a library node, identical to the Rust ``Display``."""
    op, args, attrs = e._op, e._args, e._attrs
    if op not in FUNCTION_OPS:
        raise AssertionError(f"unknown op {op!r}")
    if op == "concat_str":
        parts = ", ".join(repr(a) for a in args)
        return f"concat_str([{parts}], separator={_quote(attrs['separator'])})"
    a0 = args[0]
    head = f"lit({a0!r})" if a0._op == "lit" else repr(a0)
    if op == "is_in":
        return f"{head}.is_in([{', '.join(repr(v) for v in attrs['values'])}])"
    if op == "round":
        return f"{head}.round({attrs['decimals']})"
    if op in _TWO_OPERANDS:
        return f"{head}.{op}({args[1]!r})"
    if op in ("str.starts_with", "str.ends_with", "str.like"):
        key = {"str.starts_with": "prefix", "str.ends_with": "suffix"}.get(op, "pattern")
        return f"{head}.{op}({_quote(attrs[key])})"
    if op in ("dt.epoch", "dt.truncate", "dt.offset_by"):
        key = {"dt.epoch": "unit", "dt.truncate": "every"}.get(op, "by")
        return f"{head}.{op}({_quote(attrs[key])})"
    if op == "str.contains":
        return f"{head}.{op}({_quote(attrs['pattern'])}, literal={attrs['literal']})"
    if op == "str.slice":
        return f"{head}.{op}({attrs['offset']}, {attrs['length']})"
    if op == "str.replace":
        p, v, lit_ = _quote(attrs["pattern"]), _quote(attrs["value"]), attrs["literal"]
        return f"{head}.{op}({p}, {v}, literal={lit_})"
    return f"{head}.{op}()"
