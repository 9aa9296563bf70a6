"""Rows of a PostgreSQL table as Arrow columns of the input's types, without the rows that do
not fit.

The Postgres source hands over rows as tuples of Python values (psycopg's loaders parse the
text PostgreSQL sends). :func:`to_table` builds each column with pyarrow; a value that does
not convert (an ``int8`` over an ``int32`` column of ``schema=``, ``'infinity'`` as a date, a
``numeric`` whose unscaled value does not fit the 64 bits ddflow keeps) takes its row out of
the batch and becomes a :class:`~ddflow.sources.RowError` naming the table, the row's key and
the column. Every other row goes in.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow.sources import RowError

__all__ = ["Unreadable", "to_table"]

_WORD = 2**63 - 1
"""The greatest unscaled decimal ddflow holds (one signed 64-bit word, less the null)."""


@dataclass(frozen=True)
class Unreadable:
    """A value psycopg could not parse: what it said."""

    message: str
    text: str

    def __repr__(self) -> str:
        return self.text


def _fits(value: Any, t: pa.DataType) -> str | None:
    """Why ``value`` does not fit ``t`` (``None`` when it does)."""
    if isinstance(value, Unreadable):
        return value.message
    if value is None:
        return None
    try:
        pa.array([value], type=t)
    except Exception as exc:
        return f"{value!r} does not fit {t}: {exc}"
    return _too_wide(value, t)


def _too_wide(value: Any, t: pa.DataType) -> str | None:
    """Why a decimal ``value`` does not fit ddflow's 64-bit unscaled values, if it does not."""
    if isinstance(value, decimal.Decimal) and abs(value.scaleb(t.scale)) > _WORD:
        return f"{value} does not fit {t}: ddflow holds decimals of up to 18 digits"
    return None


def _column(values: list[Any], t: pa.DataType) -> tuple[pa.Array | None, dict[int, str]]:
    """The column, or the rows that do not fit and why (a value pyarrow cannot convert, an
    :class:`Unreadable`, a decimal too wide)."""
    try:
        array = pa.array(values, type=t)
    except Exception:
        return None, {i: why for i, v in enumerate(values) if (why := _fits(v, t)) is not None}
    if pa.types.is_decimal(t):
        bad = {i: why for i, v in enumerate(values) if (why := _too_wide(v, t)) is not None}
        if bad:
            return None, bad
    return array, {}


def to_table(
    columns: Sequence[list[Any]],
    schema: pa.Schema,
    numbers: npt.NDArray[np.int64],
    key_of: Callable[[int], str],
    origin: str,
) -> tuple[pa.Table, npt.NDArray[np.int64], list[RowError]]:
    """The values of ``columns`` (one list per field of ``schema``) as a table, the kept
    rows' ``numbers`` and the errors of the others (``key_of(i)`` names row ``i`` by its key,
    ``origin`` the table)."""
    arrays: list[pa.Array | None] = []
    bad: dict[int, list[tuple[int, str]]] = {}
    for j, field in enumerate(schema):
        array, failed = _column(columns[j], field.type)
        arrays.append(array)
        for i, why in failed.items():
            bad.setdefault(i, []).append((j, why))
    if not bad:
        return pa.Table.from_arrays(arrays, schema=schema), numbers, []
    errors = [
        RowError(
            f"{origin}, key {key_of(i)}",
            int(numbers[i]),
            schema.names[problems[0][0]],
            "; ".join(why for _, why in problems),
            ", ".join(f"{schema.names[j]}={columns[j][i]!r}" for j, _ in problems),
        )
        for i, problems in sorted(bad.items())
    ]
    keep = np.ones(len(numbers), dtype=bool)
    keep[list(bad)] = False
    kept = np.flatnonzero(keep)
    out = [
        array.filter(pa.array(keep))
        if array is not None
        else pa.array([columns[j][i] for i in kept], type=field.type)
        for j, (array, field) in enumerate(zip(arrays, schema, strict=True))
    ]
    return pa.Table.from_arrays(out, schema=schema), numbers[keep], errors
