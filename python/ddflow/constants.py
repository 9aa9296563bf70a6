"""The plan node of a constant collection (``Dataflow.constant``): rows checked and encoded
as the plan's JSON values, with one dtype per column.

Each value is encoded as a literal of its column's dtype is (:func:`ddflow.expr.lit`), so a
constant holds exactly what ``dd.lit`` can write: ints, floats, bools, strings, bytes, nulls
and the logical dtypes' Python values (dates, datetimes, decimals, ...). A column whose dtype
the schema does not declare takes the dtype of its first non-null value. A row that does not
fit (the wrong number of values, a value its column's dtype cannot hold) raises
``PlanError`` naming the row and the column; the engine checks the same again when it reads
the plan. :func:`constant_table` reads a node's rows back as an Arrow table (for the Spark
backend, which builds a constant's DataFrame from it).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from ddflow.errors import DdflowError, PlanError
from ddflow.expr import lit
from ddflow.logical_types import arrow_type, physical, to_arrow
from ddflow.plan import ConstantOp

__all__ = ["constant_op", "constant_table"]


def constant_op(
    rows: Iterable[Sequence[Any]] | Mapping[str, Sequence[Any]],
    names: Sequence[str],
    dtypes: Sequence[str | None],
    label: str,
) -> ConstantOp:
    """The ``constant`` operator of ``rows`` (tuples, one value per column of ``names``; or a
    mapping from each column name to its values) with columns of ``dtypes`` (``None``: the
    dtype of the column's first non-null value)."""
    table = _row_lists(rows, names, label)
    types = [
        d if d is not None else _natural_dtype(table, c, name, label)
        for c, (name, d) in enumerate(zip(names, dtypes, strict=True))
    ]
    encoded = [
        [_encode(v, types[c], r, names[c], label) for c, v in enumerate(row)]
        for r, row in enumerate(table)
    ]
    return ConstantOp(encoded, types)


def _row_lists(
    rows: Iterable[Sequence[Any]] | Mapping[str, Sequence[Any]], names: Sequence[str], label: str
) -> list[list[Any]]:
    """The rows as lists, checked for arity."""
    if isinstance(rows, Mapping):
        if sorted(rows) != sorted(names):
            raise PlanError(
                f"{label}: the columns given {list(rows)} are not the schema's {list(names)}"
            )
        lengths = {name: len(rows[name]) for name in names}
        if len(set(lengths.values())) > 1:
            raise PlanError(f"{label}: the columns have different lengths {lengths}")
        n = next(iter(lengths.values()), 0)
        return [[rows[name][r] for name in names] for r in range(n)]
    if isinstance(rows, str | bytes):
        raise PlanError(f"{label}: rows must be a sequence of tuples, got {rows!r}")
    table: list[list[Any]] = []
    for r, row in enumerate(rows):
        if isinstance(row, str | bytes) or not isinstance(row, Sequence):
            raise PlanError(f"{label}: row {r} must be a tuple of {len(names)} values, got {row!r}")
        if len(row) != len(names):
            raise PlanError(
                f"{label}: row {r} has {len(row)} values, the constant has {len(names)} "
                f"columns {list(names)}"
            )
        table.append(list(row))
    return table


def _natural_dtype(table: list[list[Any]], c: int, name: str, label: str) -> str:
    """The dtype of column ``c``'s first non-null value."""
    for r, row in enumerate(table):
        if row[c] is not None:
            try:
                return str(lit(row[c]).to_json()["dtype"])
            except DdflowError as e:
                raise PlanError(f"{label}: row {r}, column {name!r}: {e}") from None
    raise PlanError(
        f"{label}: column {name!r} has no non-null value to take its dtype from; declare it "
        f"({{{name!r}: dtype}})"
    )


def _encode(value: Any, dtype: str, r: int, name: str, label: str) -> Any:
    """The JSON value of ``value`` in a column of ``dtype``."""
    try:
        return lit(value, dtype).to_json()["value"]
    except (DdflowError, TypeError, ValueError, ArithmeticError) as e:
        raise PlanError(
            f"{label}: row {r}, column {name!r}: {value!r} does not fit dtype {dtype}: {e}"
        ) from None


def constant_table(node: Mapping[str, Any]) -> pa.Table:
    """The rows of ``constant`` plan node ``node`` as an Arrow table of its dtypes."""
    arrays = []
    for c, dtype in enumerate(node["dtypes"]):
        values = [row[c] for row in node["rows"]]
        if dtype == "binary":
            arrays.append(pa.array([_bytes(v) for v in values], pa.binary()))
            continue
        kind = physical(dtype)
        if kind == "float64":
            arr = pa.array([None if v is None else float(v) for v in values], pa.float64())
        else:
            arr = pa.array(values, arrow_type(kind))
        arrays.append(arr if kind == dtype else to_arrow(arr, dtype))
    return pa.Table.from_arrays(arrays, names=list(node["columns"]))


def _bytes(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value)
