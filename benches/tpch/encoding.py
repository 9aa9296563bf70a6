"""Temporary integer encodings of TPC-H's DATE and DECIMAL, for the Spark backend only.

The embedded engine takes TPC-H's types as they are (``date32``, ``decimal128(15, 2)``);
the Spark backend does not yet, so the Spark test (``tests/spark/test_tpch_spark.py``) feeds
the tables in these encodings and builds its queries with
:data:`benches.tpch.literals.INTEGER_ENCODED`. Every computation those queries do stays
exact in integers:

========================  ==========================================  =====================
TPC-H type                engine column                               example
========================  ==========================================  =====================
``DATE``                  int64 days since 1970-01-01                 1998-12-01 -> 10561
``DECIMAL(15, 2)``        int64 hundredths (the unscaled value)       0.06 -> 6
``INTEGER``/``BIGINT``    int64
``CHAR``/``VARCHAR``      str
========================  ==========================================  =====================

A product of two decimals is an int64 at scale 4, of three at scale 6:
``l_extendedprice * (1 - l_discount)`` is ``price * (100 - discount)`` in ten-thousandths,
``... * (1 + l_tax)`` is ``price * (100 - discount) * (100 + tax)`` in millionths.

Delete this module (with ``INTEGER_ENCODED``) once Spark takes dates and decimals.
"""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ddflow as dd
from ddflow.expr import Expr

__all__ = [
    "EPOCH",
    "cents",
    "days",
    "encode_column",
    "encode_table",
    "year_of",
]

EPOCH = datetime.date(1970, 1, 1)
"""Day 0 of the DATE encoding."""


def days(iso: str) -> int:
    """The encoded DATE of an ISO date: ``days("1998-12-01") == 10561``."""
    return (datetime.date.fromisoformat(iso) - EPOCH).days


def cents(text: str) -> int:
    """The encoded DECIMAL(15, 2) of a decimal literal: ``cents("0.06") == 6``."""
    value = decimal.Decimal(text).scaleb(2)
    if value != value.to_integral_value():
        raise ValueError(f"{text!r} has more than two decimal places")
    return int(value)


def _decimal_unscaled(array: pa.Array) -> pa.Array:
    """The unscaled int64 values of a decimal128 array (exact; each must fit in int64)."""
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    if array.null_count:
        raise ValueError("NULL decimals have no encoding yet")
    words = np.frombuffer(array.buffers()[1], dtype=np.int64)
    pairs = words[2 * array.offset : 2 * (array.offset + len(array))].reshape(-1, 2)
    low, high = pairs[:, 0], pairs[:, 1]
    if not np.array_equal(high, low >> 63):  # the high word must be the sign extension
        raise OverflowError("a decimal does not fit in int64")
    return pa.array(low.copy(), type=pa.int64())


def encode_column(array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One column in its engine encoding (see the module's table)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    kind = array.type
    if pa.types.is_date32(kind):
        return pc.cast(array.view(pa.int32()), pa.int64())
    if pa.types.is_decimal(kind):
        if kind.scale != 2:
            raise ValueError(f"only DECIMAL(_, 2) is encoded, got {kind}")
        return _decimal_unscaled(array)
    if pa.types.is_integer(kind):
        return pc.cast(array, pa.int64())
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return pc.cast(array, pa.string())
    if pa.types.is_floating(kind):
        return pc.cast(array, pa.float64())
    raise ValueError(f"no encoding for {kind}")


def encode_table(table: pa.Table) -> pa.Table:
    """Every column of ``table`` in its engine encoding, names unchanged."""
    return pa.table({name: encode_column(table[name]) for name in table.column_names})


def year_of(day: Expr | str) -> Expr:
    """The calendar year of an encoded DATE, as an int64 expression (exact for every date:
    the days-to-civil algorithm of the proleptic Gregorian calendar, in floor divisions)."""
    d = dd.col(day) if isinstance(day, str) else day
    z = d + 719468  # days since 0000-03-01
    era = z // 146097
    doe = z - era * 146097  # day of the 400-year era, 0..146096
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365  # year of the era
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)  # day of the year from March 1st
    mp = (5 * doy + 2) // 153  # month from March: 0..11; 10 and 11 are January, February
    return yoe + era * 400 + dd.when(mp >= 10).then(1).otherwise(0)
