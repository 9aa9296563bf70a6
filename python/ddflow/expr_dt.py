"""The ``.dt`` namespace of expressions (``dd.col("d").dt.year()``), modelled on Polars, for
``date32`` and ``timestamp`` columns.

A timestamp with a time zone is taken apart in its zone. ``weekday`` is ISO (Monday 1 to
Sunday 7). Periods and offsets are Polars' duration strings: terms ``<int><unit>`` with
units ``ns``, ``us``, ``ms``, ``s``, ``m``, ``h``, ``d``, ``w``, ``mo``, ``q``, ``y``
(``"3mo"``, ``"-1y"``, ``"1d12h"``); months, quarters and years are calendar units, with
the day clamped to the month's last (January 31 plus ``"1mo"`` is February 28 or 29). The
kernels are the engine's (chrono); a bad string raises :class:`ddflow.PlanError` when the
expression is built.
"""

from __future__ import annotations

import json
from typing import Any, Generic, Protocol, Self, TypeVar

from ddflow import _core
from ddflow.errors import PlanError

__all__ = ["ExprDateTimeNamespace"]


class _Node(Protocol):
    """What the namespace needs of an expression (``ddflow.expr.Expr`` provides it)."""

    def _func(self, op: str, *others: object, **attrs: Any) -> Self: ...

    def to_json(self) -> dict[str, Any]: ...


E = TypeVar("E", bound=_Node)


def _checked(e: E) -> E:
    """``e`` after the Rust parser accepted it (a bad duration string or unit raises
    ``PlanError`` now, not when the dataflow runs)."""
    _core.expr_repr(json.dumps(e.to_json()))
    return e


def _text(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise PlanError(f"{name} must be a str, got {value!r}")
    return value


class ExprDateTimeNamespace(Generic[E]):
    """Date and time functions of an expression of dtype date32 or timestamp."""

    __slots__ = ("_expr",)

    def __init__(self, expr: E) -> None:
        self._expr = expr

    def year(self) -> E:
        """The year, int64."""
        return self._expr._func("dt.year")

    def month(self) -> E:
        """The month, 1 to 12, int64."""
        return self._expr._func("dt.month")

    def day(self) -> E:
        """The day of the month, 1 to 31, int64."""
        return self._expr._func("dt.day")

    def hour(self) -> E:
        """The hour, 0 to 23 (0 for a date), int64."""
        return self._expr._func("dt.hour")

    def minute(self) -> E:
        """The minute, 0 to 59, int64."""
        return self._expr._func("dt.minute")

    def second(self) -> E:
        """The second, 0 to 59, int64."""
        return self._expr._func("dt.second")

    def weekday(self) -> E:
        """The ISO weekday: Monday 1 to Sunday 7, int64."""
        return self._expr._func("dt.weekday")

    def epoch(self, unit: str = "us") -> E:
        """The count of ``unit`` (``"d"``, ``"s"``, ``"ms"``, ``"us"``, ``"ns"``) since
        1970-01-01 (floored), int64."""
        return _checked(self._expr._func("dt.epoch", unit=_text("unit", unit)))

    def truncate(self, every: str) -> E:
        """The start of the ``every`` period holding the value (``"1mo"``, ``"1d"``,
        ``"15m"``), of the same dtype; calendar periods count from January of year 0,
        fixed ones from the epoch, in local time for a timestamp with a zone."""
        return _checked(self._expr._func("dt.truncate", every=_text("every", every)))

    def offset_by(self, by: str) -> E:
        """The value moved by the duration string ``by`` (``"3mo"``, ``"-1y"``, ``"2d"``),
        of the same dtype (a date moves by whole days)."""
        return _checked(self._expr._func("dt.offset_by", by=_text("by", by)))

    def __repr__(self) -> str:
        return f"<.dt of {self._expr!r}>"
