"""How the TPC-H queries write their constants: in TPC-H's own types, or (temporarily, for
Spark) in the integer encodings of :mod:`benches.tpch.encoding`.

The queries of :mod:`benches.tpch.queries` take a :class:`Literals` and write every date,
date interval, decimal constant and ``extract(year ...)`` through it:

* :data:`TYPED` (the default): ``DATE`` literals are ``dd.lit(datetime.date(...))``, ``date
  + interval 'n' month`` is ``.dt.offset_by("nmo")``, decimal constants are
  ``dd.lit(Decimal(...))`` (exact decimal arithmetic in the engine), and the year is
  ``.dt.year()``. Inputs are the tables' Arrow types (``date32``, ``decimal128(15, 2)``).
* :data:`INTEGER_ENCODED` (temporary: the Spark backend does not take dates and decimals
  yet): dates are int64 day numbers, decimal constants int64 hundredths, the year
  :func:`benches.tpch.encoding.year_of`. A hundredths constant is right where it is added to,
  subtracted from or compared with a ``DECIMAL(15, 2)`` column, not as a factor, so only the
  queries listed in :data:`INTEGER_ENCODED_QUERIES` (checked to use it that way) may be built
  with it. Delete this, with ``encoding.py``, when Spark takes the logical types.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Protocol

from benches.tpch import encoding

import ddflow as dd
from ddflow.expr import Expr

__all__ = ["INTEGER_ENCODED", "INTEGER_ENCODED_QUERIES", "TYPED", "Literals", "add_months"]

INTEGER_ENCODED_QUERIES: tuple[str, ...] = ("q1", "q3", "q5", "q13", "q18", "q22")
"""The queries that may be built with :data:`INTEGER_ENCODED` (those run on Spark)."""


def add_months(day: datetime.date, months: int) -> datetime.date:
    """``day + interval 'months' month`` as SQL has it (the day clamped to the month's end)."""
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    for last in (31, 30, 29, 28):
        try:
            return datetime.date(year, month + 1, min(day.day, last))
        except ValueError:
            continue
    raise AssertionError("unreachable")


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


class _IntegerEncoded:
    """Literals in the temporary integer encodings (day numbers, hundredths)."""

    def date(self, day: datetime.date) -> Expr:
        return dd.lit((day - encoding.EPOCH).days)

    def add_months(self, day: datetime.date, months: int) -> Expr:
        return self.date(add_months(day, months))

    def dec(self, text: str) -> Expr:
        return dd.lit(encoding.cents(text))

    def year(self, day: Expr) -> Expr:
        return encoding.year_of(day)


TYPED: Literals = _Typed()
"""Dates, decimals and years in the engine's logical types (the workload's default)."""

INTEGER_ENCODED: Literals = _IntegerEncoded()
"""Temporary, for Spark only: day numbers and hundredths (see the module docstring)."""
