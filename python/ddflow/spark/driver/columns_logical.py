"""Comparisons of logical-dtype operands compiled to Spark Columns, where Spark's result is
provably the engine's: both sides columns or literals of

* ``date32``: Spark ``date`` values are the same days, compared as integers;
* ``decimal128``: Spark compares decimals exactly after widening both to a common type,
  which is exact while ``max(p - s) + max(s) <= 38`` (beyond, Spark would round);
* the same timestamp dtype, zoned in the session's zone (Spark ``timestamp``: the same
  microseconds since the epoch);

and ``is_null`` / ``is_not_null`` of a column of any logical dtype. SQL nulls compare to
null on both. Anything else returns None and the caller goes on (usually to
``NotCompilable``: the Rust evaluator).
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Callable, Mapping
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow.spark.driver.schemas import session_timestamp

__all__ = ["compile_logical"]

Typed = tuple[Column, str]

_CMP: dict[str, Callable[[Column, Column], Column]] = {
    "eq": lambda x, y: x == y,
    "ne": lambda x, y: x != y,
    "lt": lambda x, y: x < y,
    "le": lambda x, y: x <= y,
    "gt": lambda x, y: x > y,
    "ge": lambda x, y: x >= y,
}

_EPOCH = datetime.date(1970, 1, 1)


def _decimal(dtype: str) -> tuple[int, int] | None:
    if not dtype.startswith("decimal128("):
        return None
    p, s = dtype[len("decimal128(") : -1].split(",")
    return int(p), int(s)


def _operand(expr: Mapping[str, Any], columns: Mapping[str, Typed]) -> Typed | None:
    """A column or a literal (not null) of a logical dtype this module compares."""
    if expr["op"] == "col" and expr["name"] in columns:
        c, dtype = columns[expr["name"]]
        return (c, dtype) if _kind(dtype) else None
    if expr["op"] != "lit" or expr.get("value") is None or "dtype" not in expr:
        return None
    dtype, value = str(expr["dtype"]), expr["value"]
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    kind = _kind(dtype)
    if kind == "date":
        return F.lit(_EPOCH + datetime.timedelta(days=value)), dtype
    if kind == "decimal":
        p, s = _decimal(dtype) or (0, 0)
        return F.lit(decimal.Decimal(value).scaleb(-s)).cast(T.DecimalType(p, s)), dtype
    if kind == "timestamp":
        return F.expr(f"timestamp_micros({value})"), dtype
    return None


def _kind(dtype: str) -> str | None:
    if dtype == "date32":
        return "date"
    if _decimal(dtype) is not None:
        return "decimal"
    if dtype == session_timestamp():
        return "timestamp"
    return None


def compile_logical(expr: Mapping[str, Any], columns: Mapping[str, Typed]) -> Typed | None:
    """``expr`` compiled when it is a comparison of two logical operands (or a null test of
    a logical column) that Spark evaluates exactly as the engine (see the module doc)."""
    op = expr["op"]
    if op in ("is_null", "is_not_null"):
        arg = expr["arg"]
        if arg["op"] != "col" or arg["name"] not in columns:
            return None
        c, dtype = columns[arg["name"]]
        if dtype in ("int64", "float64", "bool", "str"):
            return None  # the general compiler's
        return (c.isNull() if op == "is_null" else c.isNotNull()), "bool"
    if op not in _CMP or len(expr["args"]) != 2:
        return None
    left, right = (_operand(a, columns) for a in expr["args"])
    if left is None or right is None:
        return None
    (cl, tl), (cr, tr) = left, right
    kind = _kind(tl)
    if kind != _kind(tr):
        return None
    if kind == "decimal":
        (pl, sl), (pr, sr) = _decimal(tl) or (0, 0), _decimal(tr) or (0, 0)
        if max(pl - sl, pr - sr) + max(sl, sr) > 38:
            return None  # Spark's common type would round
    elif tl != tr:
        return None
    return _CMP[op](cl, cr), "bool"
