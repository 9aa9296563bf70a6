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
from collections.abc import Sequence
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
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
        return f"{value!r} does not fit {t}: {exc}"
    if pa.types.is_decimal(t) and isinstance(value, decimal.Decimal):
        unscaled = value.scaleb(t.scale)
        if abs(unscaled) > _WORD:
            return f"{value} does not fit {t}: ddflow holds decimals of up to 18 digits"
    return None


def _column(values: list[Any], t: pa.DataType) -> tuple[pa.Array | None, dict[int, str]]:
    """The column, or the rows that do not fit and why."""
    if pa.types.is_decimal(t) or any(isinstance(v, Unreadable) for v in values):
        bad = {i: why for i, v in enumerate(values) if (why := _fits(v, t)) is not None}
        if bad:
            return None, bad
    try:
        return pa.array(values, type=t), {}
    except (pa.ArrowException, OverflowError, TypeError, ValueError):
        bad = {i: why for i, v in enumerate(values) if (why := _fits(v, t)) is not None}
        return None, bad


def to_table(
    rows: Sequence[tuple[Any, ...]],
    schema: pa.Schema,
    numbers: npt.NDArray[np.int64],
    keys: Sequence[str],
    origin: str,
) -> tuple[pa.Table, npt.NDArray[np.int64], list[RowError]]:
    """``rows`` as a table of ``schema``, the kept rows' ``numbers`` and the errors of the
    others (``keys[i]`` names row ``i`` by its key, ``origin`` the table)."""
    columns: list[pa.Array | None] = []
    bad: dict[int, list[tuple[str, str]]] = {}
    for j, field in enumerate(schema):
        values = [row[j] for row in rows]
        column, failed = _column(values, field.type)
        columns.append(column)
        for i, why in failed.items():
            bad.setdefault(i, []).append((field.name, why))
    if not bad:
        table = pa.Table.from_arrays(columns, schema=schema)
        return table, numbers, []
    keep = [i for i in range(len(rows)) if i not in bad]
    errors = [
        RowError(
            f"{origin}, key {keys[i]}",
            int(numbers[i]),
            problems[0][0],
            "; ".join(why for _, why in problems),
            ", ".join(f"{c}={rows[i][schema.names.index(c)]!r}" for c, _ in problems),
        )
        for i, problems in sorted(bad.items())
    ]
    kept = [rows[i] for i in keep]
    table = pa.Table.from_arrays(
        [pa.array([row[j] for row in kept], type=f.type) for j, f in enumerate(schema)],
        schema=schema,
    )
    return table, numbers[keep], errors
