"""SQL literals, types and intervals as ddflow values.

* Numbers: an integer literal is int64, one with a decimal point an exact decimal
  (DuckDB's ``DECIMAL(p, s)``: ``0.06`` is ``decimal128(3, 2)``), one with an exponent a
  float64. Strings are str; ``TRUE`` / ``FALSE`` bool; ``DATE '1994-01-01'`` a date32 and
  ``TIMESTAMP '...'`` a ``timestamp[us]``.
* ``CAST`` / ``::`` types map onto ddflow dtypes (:func:`dtype_of`): the integer types are
  int64, ``REAL`` / ``FLOAT`` / ``DOUBLE`` float64, ``DECIMAL(p, s)`` ``decimal128(p, s)``
  (``DECIMAL`` alone is DuckDB's ``DECIMAL(18, 3)``), the text types str.
* Intervals (:func:`interval_of`): ``INTERVAL '3' MONTH``, ``INTERVAL 3 MONTH``,
  ``INTERVAL '90 days'``, as a Polars duration string for ``.dt.offset_by`` (``"3mo"``,
  ``"90d"``); months and years are calendar units.
"""

from __future__ import annotations

import datetime
import decimal
import re

from sqlglot import exp

__all__ = ["dtype_of", "interval_of", "number_value", "temporal_value"]

_INTS = {
    exp.DataType.Type.TINYINT,
    exp.DataType.Type.SMALLINT,
    exp.DataType.Type.INT,
    exp.DataType.Type.BIGINT,
    exp.DataType.Type.UTINYINT,
    exp.DataType.Type.USMALLINT,
    exp.DataType.Type.UINT,
}
_FLOATS = {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE}
_TEXT = {exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT, exp.DataType.Type.CHAR}

_UNITS = {
    "year": "y",
    "years": "y",
    "month": "mo",
    "months": "mo",
    "week": "w",
    "weeks": "w",
    "day": "d",
    "days": "d",
    "hour": "h",
    "hours": "h",
    "minute": "m",
    "minutes": "m",
    "second": "s",
    "seconds": "s",
}


def dtype_of(to: exp.DataType) -> str | None:
    """The ddflow dtype for a SQL type, or None if ddflow has none for it."""
    kind = to.this
    if kind in _INTS:
        return "int64"
    if kind in _FLOATS:
        return "float64"
    if kind in _TEXT:
        return "str"
    if kind == exp.DataType.Type.BOOLEAN:
        return "bool"
    if kind == exp.DataType.Type.DATE:
        return "date32"
    if kind == exp.DataType.Type.TIMESTAMP:
        return "timestamp[us]"
    if kind == exp.DataType.Type.DECIMAL:
        params = [p.this for p in to.expressions]
        values = [int(p.this) for p in params if isinstance(p, exp.Literal)]
        if len(values) != len(params):
            return None
        precision, scale = (values + [18, 3][len(values) :])[:2] if values else (18, 3)
        if len(values) == 1:
            scale = 0
        return f"decimal128({precision}, {scale})"
    return None


def number_value(text: str) -> int | decimal.Decimal | float:
    """The value of a numeric literal as written: int, exact decimal, or float (exponent)."""
    if re.fullmatch(r"\d+", text):
        return int(text)
    if "e" in text.lower():
        return float(text)
    return decimal.Decimal(text)


def temporal_value(dtype: str, text: str) -> datetime.date | datetime.datetime | None:
    """The date or timestamp a ``DATE '...'`` / ``TIMESTAMP '...'`` literal names, or None
    if the text is not one."""
    try:
        if dtype == "date32":
            return datetime.date.fromisoformat(text.strip())
        if dtype.startswith("timestamp"):
            return datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return None


def interval_of(node: exp.Interval) -> tuple[int, str] | None:
    """``(count, unit)`` of an interval literal, ``unit`` a Polars duration unit (``"mo"``,
    ``"d"``, ...), or None if it is not a literal with one supported unit."""
    value = node.this
    unit = node.args.get("unit")
    if not isinstance(value, exp.Literal):
        return None
    text = str(value.this).strip()
    if unit is None:
        m = re.fullmatch(r"(-?\d+)\s*([a-zA-Z]+)", text)
        if m is None:
            return None
        text, unit_text = m.group(1), m.group(2)
    else:
        unit_text = unit.name if isinstance(unit, exp.Var | exp.Identifier) else unit.sql()
    if not re.fullmatch(r"-?\d+", text):
        return None
    short = _UNITS.get(unit_text.lower())
    if short is None:
        return None
    return int(text), short
