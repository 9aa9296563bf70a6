"""Columns handed to ``update_batch`` that numpy or Arrow would read wrongly: made exact, or
refused naming the input and the column.

- ``bytes`` (a numpy ``S`` array, a list or object array of ``bytes``) are ``binary`` values,
  never decoded as text; mixed with ``str`` they are refused.
- A list holding ``str`` stays a column of Python objects: numpy would turn every other value
  into text (``["a", 1]`` into ``["a", "1"]``) and drop trailing NUL characters. A list mixing
  ``bool`` with numbers is refused (numpy would read ``True`` as ``1``).
- In an object column ``NaN``, ``pandas.NA`` and ``pandas.NaT`` are missing values, nulls
  (pandas' meaning), unless every other value is a float: ``NaN`` is then a float value.
- Arrow extension types (a pandas ``Period`` or ``Interval`` column read through Arrow) are
  refused: their storage integers are not their values.
- A table whose column names repeat is refused.
- A column of only nulls takes the column's dtype where it is known (declared, or fixed by
  earlier batches): it has none of its own.

Only object columns (already one Python object per value) are looked at value by value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ddflow.dtypes import BinaryColumn, Utf8Column, WordColumn
from ddflow.errors import InvalidValueError, SchemaTypeError
from ddflow.logical_types import NULL_WORDS, offset_buffers, physical

__all__ = ["all_null", "check_names", "exact_column", "null_column"]

_BYTES = (bytes, bytearray, memoryview)
_MISSING_TYPES = ("NAType", "NaTType")


def check_names(table: object, what: str) -> None:
    """Refuses a table (pyarrow, pandas, polars...) whose column names repeat."""
    if isinstance(table, pa.Table | pa.RecordBatch):
        names = list(table.column_names)
    elif hasattr(table, "columns") and not isinstance(table, dict):
        try:
            names = [str(c) for c in table.columns]
        except TypeError:
            return
    else:
        return
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InvalidValueError(f"{what}: column names repeat: {repeated} (in {names})")


def _missing(v: object) -> bool:
    """pandas' missing values other than NaN: ``None``, ``pandas.NA``, ``pandas.NaT``."""
    return v is None or type(v).__name__ in _MISSING_TYPES


def _is_nan(v: object) -> bool:
    return isinstance(v, float | np.floating) and v != v


def exact_column(values: Any, what: str, want: str | None = None) -> Any:
    """``values`` as ``to_column`` should read it: a :class:`BinaryColumn` for bytes, an
    object array with missing values as ``None``, or ``values`` unchanged; refuses Arrow
    extension types naming ``what``. ``want``: the column's dtype if known (``NaN`` is a
    missing value unless it is ``float64``)."""
    arrow_type = getattr(values, "type", None)
    if isinstance(arrow_type, pa.BaseExtensionType):
        raise SchemaTypeError(
            f"{what}: Arrow extension type {arrow_type} (storage {arrow_type.storage_type}) is "
            "not supported; convert the column first (a pandas Period column: "
            ".dt.to_timestamp() or .astype(str))"
        )
    if isinstance(values, np.ndarray) and not isinstance(values, np.ma.MaskedArray):
        if values.ndim != 1:
            return values
        if values.dtype.kind == "S":
            return BinaryColumn.of_arrow(pa.array(values.tolist(), pa.large_binary()))
        if values.dtype.kind != "O":
            return values
        items: list[Any] | None = None
    elif isinstance(values, list | tuple):
        kinds = {type(v) for v in values}
        if kinds & {bool, np.bool_} and kinds - {bool, np.bool_, type(None)}:
            other = next(v for v in values if v is not None and not isinstance(v, bool | np.bool_))
            raise SchemaTypeError(  # numpy would read True as 1 beside numbers
                f"{what}: mixed value types: {type(other).__name__} {other!r} among bool values"
            )
        if not any(isinstance(v, str | bytes | bytearray | memoryview) for v in values):
            return values
        items = list(values)
    else:
        return values
    arr = values if items is None else _objects(items)
    return _object_values(arr, what, want)


def _objects(items: list[Any]) -> np.ndarray[Any, Any]:
    """A 1-D object array holding ``items`` as they are."""
    arr = np.empty(len(items), dtype=object)
    arr[:] = items
    return arr


def _object_values(arr: np.ndarray[Any, Any], what: str, want: str | None) -> Any:
    """An object column: bytes become a binary column; missing values become ``None``."""
    missing = np.fromiter((_missing(v) for v in arr), np.bool_, len(arr))
    nan = np.fromiter((_is_nan(v) for v in arr), np.bool_, len(arr))
    if nan.any():
        if want is None:  # NaN beside values that are not floats: a missing value
            present = arr[~(missing | nan)]
            floats = all(isinstance(v, float | np.floating | int) for v in present)
        else:
            floats = want == "float64"
        if not floats:
            missing |= nan
    if missing.any():
        arr = arr.copy()
        arr[missing] = None
    first = next((v for v in arr if v is not None), None)
    if not isinstance(first, _BYTES):
        if any(isinstance(v, _BYTES) for v in arr):
            bad = next(v for v in arr if isinstance(v, _BYTES))
            raise SchemaTypeError(
                f"{what}: mixed value types: bytes {bytes(bad)!r} (binary) among "
                f"{type(first).__name__} values"
            )
        return arr
    others = [v for v in arr if v is not None and not isinstance(v, _BYTES)]
    if others:
        raise SchemaTypeError(
            f"{what}: mixed value types: {type(others[0]).__name__} {others[0]!r} among bytes "
            "(binary) values"
        )
    binary = pa.array([None if v is None else bytes(v) for v in arr], pa.large_binary())
    return BinaryColumn.of_arrow(binary)


def all_null(values: Any) -> bool:
    """Whether a non-empty column (as :func:`exact_column` returns it) holds only nulls."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.broadcast_to(np.asarray(values.mask, dtype=np.bool_), values.shape)
        return bool(len(values)) and bool(mask.all())
    if isinstance(values, pa.Array | pa.ChunkedArray):
        return len(values) > 0 and values.null_count == len(values)
    if isinstance(values, np.ndarray):
        return values.dtype.kind == "O" and len(values) > 0 and all(v is None for v in values)
    if isinstance(values, list | tuple):
        return len(values) > 0 and all(v is None for v in values)
    return False


def null_column(dtype: str, n: int) -> Any:
    """``n`` nulls of ``dtype`` in the engine's column form."""
    if dtype == "str":
        return Utf8Column(*offset_buffers(pa.nulls(n, pa.large_string()), pa.large_string()))
    if dtype == "binary":
        return BinaryColumn.of_arrow(pa.nulls(n, pa.large_binary()))
    return WordColumn(dtype, np.full(n, NULL_WORDS[physical(dtype)], dtype=np.uint64))
