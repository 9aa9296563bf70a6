"""The ``.str`` namespace of expressions (``dd.col("s").str.len_chars()``), modelled on
Polars (``ddflow.expr.concat_str`` joins several string expressions).

Characters are Unicode code points; whitespace is Unicode ``White_Space``; case mapping is
full Unicode (``"ß".upper() == "SS"``). Regexes use the syntax of the Rust ``regex`` crate
(like Python's ``re`` for common patterns; no look-around or backreferences); an invalid
pattern raises :class:`ddflow.PlanError` when the expression is built. Strings produced by
expressions are interned like input strings.
"""

from __future__ import annotations

import json
from typing import Any, Generic, Protocol, Self, TypeVar

from ddflow import _core
from ddflow.errors import PlanError

__all__ = ["ExprStringNamespace"]


class _Node(Protocol):
    """What the namespace needs of an expression (``ddflow.expr.Expr`` provides it)."""

    def _func(self, op: str, *others: object, **attrs: Any) -> Self: ...

    def _concat(self, parts: tuple[object, ...], separator: str) -> Self: ...

    def to_json(self) -> dict[str, Any]: ...


E = TypeVar("E", bound=_Node)


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise PlanError(f"{name} must be a str, got {value!r}")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise PlanError(f"{name} must be a bool, got {value!r}")
    return value


def _checked(e: E) -> E:
    """``e`` after the Rust parser accepted it (an invalid regex or LIKE pattern raises
    ``PlanError`` now, not when the dataflow runs)."""
    _core.expr_repr(json.dumps(e.to_json()))
    return e


class ExprStringNamespace(Generic[E]):
    """String functions of an expression of dtype str."""

    __slots__ = ("_expr",)

    def __init__(self, expr: E) -> None:
        self._expr = expr

    def len_chars(self) -> E:
        """The number of characters (Unicode code points), int64."""
        return self._expr._func("str.len_chars")

    def to_lowercase(self) -> E:
        """Lowercase (full Unicode mapping)."""
        return self._expr._func("str.to_lowercase")

    def to_uppercase(self) -> E:
        """Uppercase (full Unicode mapping: ``"ß"`` becomes ``"SS"``)."""
        return self._expr._func("str.to_uppercase")

    def strip_chars(self) -> E:
        """Leading and trailing whitespace (Unicode ``White_Space``) removed."""
        return self._expr._func("str.strip_chars")

    def starts_with(self, prefix: str) -> E:
        """Whether the string starts with ``prefix`` (a literal), bool."""
        return self._expr._func("str.starts_with", prefix=_text("prefix", prefix))

    def ends_with(self, suffix: str) -> E:
        """Whether the string ends with ``suffix`` (a literal), bool."""
        return self._expr._func("str.ends_with", suffix=_text("suffix", suffix))

    def contains(self, pattern: str, literal: bool = False) -> E:
        """Whether the string contains a match of regex ``pattern`` (or the plain text, with
        ``literal=True``), bool."""
        p, lit = _text("pattern", pattern), _flag("literal", literal)
        return _checked(self._expr._func("str.contains", pattern=p, literal=lit))

    def like(self, pattern: str) -> E:
        """SQL ``LIKE``: the whole string matches ``pattern``, where ``%`` is any run of
        characters, ``_`` any one character, and ``\\`` makes the next ``%``, ``_`` or ``\\``
        literal; bool."""
        return _checked(self._expr._func("str.like", pattern=_text("pattern", pattern)))

    def slice(self, offset: int, length: int | None = None) -> E:
        """Characters from ``offset`` (0-based; negative counts from the end), at most
        ``length`` of them (``None``: to the end). Out-of-range parts are clipped."""
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise PlanError(f"slice offset must be an int, got {offset!r}")
        if length is not None and (
            isinstance(length, bool) or not isinstance(length, int) or length < 0
        ):
            raise PlanError(f"slice length must be an int >= 0 or None, got {length!r}")
        if not -(2**63) <= offset < 2**63 or (length is not None and length >= 2**63):
            raise PlanError("slice offset and length must fit in int64")
        return self._expr._func("str.slice", offset=offset, length=length)

    def replace(self, pattern: str, value: str, literal: bool = False) -> E:
        """The first match of regex ``pattern`` (or the plain text, ``literal=True``)
        replaced by ``value``, taken literally (``$1`` is not expanded)."""
        p, v = _text("pattern", pattern), _text("value", value)
        lit = _flag("literal", literal)
        return _checked(self._expr._func("str.replace", pattern=p, value=v, literal=lit))

    def concat(self, *others: object, separator: str = "") -> E:
        """This string followed by ``others`` (expressions or str literals), joined by
        ``separator``: ``concat_str([self, *others], separator=...)``."""
        return self._expr._concat((self._expr, *others), separator)

    def __repr__(self) -> str:
        return f"<.str of {self._expr!r}>"
