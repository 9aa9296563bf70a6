"""How the TPC-H queries write their constants, in TPC-H's own types.

The queries of :mod:`benches.tpch.queries` take a :class:`Literals` and write every date,
date interval, decimal constant and ``extract(year ...)`` through it. :data:`TYPED`, its one
implementation: ``DATE`` literals are ``dd.lit(datetime.date(...))``, ``date + interval 'n'
month`` is ``.dt.offset_by("nmo")``, decimal constants are ``dd.lit(Decimal(...))`` (exact
decimal arithmetic in the engine), and the year is ``.dt.year()``. Inputs are the tables'
Arrow types (``date32``, ``decimal128(15, 2)``).
"""

from __future__ import annotations

import datetime
import decimal
from typing import Protocol

import ddflow as dd
from ddflow.expr import Expr

__all__ = ["TYPED", "Literals"]


class Literals(Protocol):
    """The constants and date functions a query writes (see the module docstring)."""

    def date(self, day: datetime.date) -> Expr:
        """The ``DATE`` literal ``day``."""
        ...

    def add_months(self, day: datetime.date, months: int) -> Expr:
        """``date 'day' + interval 'months' month``."""
        ...

    def dec(self, text: str) -> Expr:
        """The ``DECIMAL`` literal written ``text`` (``"0.05"``)."""
        ...

    def year(self, day: Expr) -> Expr:
        """``extract(year from day)`` as int64."""
        ...


class _Typed:
    """Literals in TPC-H's types (``date32``, ``decimal128``)."""

    def date(self, day: datetime.date) -> Expr:
        return dd.lit(day)

    def add_months(self, day: datetime.date, months: int) -> Expr:
        return dd.lit(day).dt.offset_by(f"{months}mo")

    def dec(self, text: str) -> Expr:
        return dd.lit(decimal.Decimal(text))

    def year(self, day: Expr) -> Expr:
        return day.dt.year()


TYPED: Literals = _Typed()
"""Dates, decimals and years in the engine's logical types (the queries' default)."""
