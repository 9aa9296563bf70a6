"""Schemas of file connectors: the input's schema from ``schema=`` or a file, and rows made
to fit it.

``schema=`` takes what ``Dataflow.new_input`` takes: column names (their types then come from
the first file), ``{name: dtype}`` or a ``pyarrow.Schema``. Types inferred from a file become
ddflow's: a column of nulls only is a string column, nested and binary types are refused.

:func:`conform` casts a batch's columns to the schema with pyarrow. A value that does not cast
makes its row an error (:class:`~ddflow.sources.RowError` naming the column and the value);
the failing rows are found by casting halves of the column until they stand alone, so a
batch with ``k`` bad rows costs about ``log2(k) + 2`` casts of the column. A column missing
from a file is one error standing for all its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow.dtypes import dtype_name
from ddflow.errors import SchemaTypeError
from ddflow.input import InputSession
from ddflow.logical_types import arrow_type, name_of_arrow
from ddflow.sources import RowError, value_text

__all__ = ["conform", "ddflow_type", "resolve_schema"]


def ddflow_type(t: pa.DataType, column: str, origin: str) -> pa.DataType:
    """The type an inferred column takes in ddflow (``SchemaTypeError`` if none holds it)."""
    if pa.types.is_null(t):
        return pa.string()
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if name_of_arrow(t) is None:
        raise SchemaTypeError(
            f"{origin}: column {column!r} is {t}, which ddflow cannot hold; pass schema= "
            "with the columns to read (bool, integers, floats, strings, date32, timestamps, "
            "durations, decimal128)"
        )
    return t


def resolve_schema(schema: Any, infer: Callable[[], pa.Schema | None], origin: str) -> pa.Schema:
    """The input's schema: ``schema`` (names, ``{name: dtype}``, a ``pyarrow.Schema``) with
    the types of names given without one taken from ``infer()`` (the first file's schema,
    read only when needed)."""
    inferred = infer() if schema is None else None
    if schema is None:
        if inferred is None:
            raise SchemaTypeError(f"{origin}: no file to infer the schema from; pass schema=")
        return pa.schema([pa.field(f.name, ddflow_type(f.type, f.name, origin)) for f in inferred])
    names, dtypes = InputSession.parse_columns(
        schema if isinstance(schema, Mapping | pa.Schema) else tuple(_names(schema))
    )
    fields = []
    for name, dtype in zip(names, dtypes, strict=True):
        if dtype is not None:
            fields.append(pa.field(name, arrow_type(dtype_name(dtype))))
            continue
        if inferred is None:
            inferred = infer()
        if inferred is None or name not in inferred.names:
            raise SchemaTypeError(
                f"{origin}: column {name!r} has no type and is not in the first file; "
                "give its type in schema="
            )
        fields.append(pa.field(name, ddflow_type(inferred.field(name).type, name, origin)))
    return pa.schema(fields)


def _names(schema: Any) -> Sequence[str]:
    if isinstance(schema, str):
        return (schema,)
    return tuple(schema)


def conform(
    table: pa.Table, schema: pa.Schema, origin: str, rows: npt.NDArray[np.int64]
) -> tuple[pa.Table, npt.NDArray[np.int64], list[RowError]]:
    """``table``'s columns cast to ``schema`` (in its order), without the rows that do not
    fit; returns the table, the kept rows' numbers and the errors."""
    n = table.num_rows
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        if n == 0:
            return schema.empty_table(), rows[:0], []
        error = RowError(
            origin,
            int(rows[0]),
            missing[0],
            f"column {missing[0]!r} is missing (rows {int(rows[0])}-{int(rows[-1])})",
            f"columns {table.column_names}",
            count=n,
        )
        return schema.empty_table(), rows[:0], [error]
    columns = []
    bad: dict[int, list[tuple[str, str]]] = {}
    for field in schema:
        column = table[field.name]
        if column.type == field.type:
            columns.append(column)
            continue
        values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        cast, failed = _cast(values, field.type, origin, field.name)
        for i, message in failed:
            bad.setdefault(i, []).append((field.name, message))
        columns.append(cast)
    out = pa.Table.from_arrays(columns, schema=schema)
    if not bad:
        return out, rows, []
    errors = []
    for i in sorted(bad):
        problems = bad[i]
        errors.append(
            RowError(
                origin,
                int(rows[i]),
                problems[0][0],
                "; ".join(message for _, message in problems),
                ", ".join(f"{c}={value_text(table[c], i)}" for c, _ in problems),
            )
        )
    keep = np.ones(n, dtype=bool)
    keep[list(bad)] = False
    return out.filter(pa.array(keep)), rows[keep], errors


def _cast(
    values: pa.Array, t: pa.DataType, origin: str, column: str, offset: int = 0
) -> tuple[pa.Array, list[tuple[int, str]]]:
    """``values`` cast to ``t``, with nulls where a value does not cast, and those rows
    (index, message)."""
    try:
        return values.cast(t), []
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaTypeError(
            f"{origin}: column {column!r} is {values.type}, which does not convert to {t}: {exc}"
        ) from None
    except pa.ArrowInvalid:
        if len(values) == 1:
            message = f"{value_text(values, 0)} does not convert to {t}"
            return pa.nulls(1, t), [(offset, message)]
    half = len(values) // 2
    head, head_bad = _cast(values.slice(0, half), t, origin, column, offset)
    tail, tail_bad = _cast(values.slice(half), t, origin, column, offset + half)
    return pa.concat_arrays([head, tail]), head_bad + tail_bad
