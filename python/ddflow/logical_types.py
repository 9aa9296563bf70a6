"""Arrow's logical types at the Python boundary: dates, timestamps, durations, decimals, and
the narrow integers and float32.

The engine stores every value as one 64-bit word of a physical dtype (``int64``,
``float64``, ``bool``, ``str``); a logical dtype keeps its meaning in the schema (the core's
``dtype`` module has the table): a ``date32`` is its days since 1970-01-01, a
``timestamp[us]`` its microseconds since the epoch (UTC), a ``duration[ms]`` its count of
milliseconds, a ``decimal128(12, 2)`` its unscaled value (``12.34`` is ``1234``), an
``int32`` its value. This module converts between pyarrow arrays (and Python scalars:
``datetime.date``, ``datetime.datetime``, ``datetime.timedelta``, ``decimal.Decimal``) and
those words, and names the types as the engine does (``_core.canonical_dtype`` is the one
parser). A decimal's unscaled value must fit 64 bits (about 18 digits), whatever its
declared precision: a larger value is refused naming the column, row and value.

A ``binary`` value (``bytes``) is interned as the text of its bytes read as Latin-1 (the
native module converts; :func:`to_arrow` turns captured texts back into bytes without a
Python object per value). Nested types (list, struct, map), date64, time-of-day and interval
types are refused with a clear error.
"""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow import _core
from ddflow.errors import InvalidValueError, SchemaTypeError

__all__ = [
    "NULL_WORDS",
    "PHYSICAL_DTYPES",
    "arrow_type",
    "canonical",
    "column_of",
    "is_logical",
    "latin1_to_binary",
    "name_of_arrow",
    "offset_buffers",
    "physical",
    "scalar_kind",
    "to_arrow",
    "word_of",
    "words_of",
]

PHYSICAL_DTYPES = ("int64", "float64", "bool", "str")
"""The four dtypes words are read as."""

NULL_WORDS: dict[str, int] = {
    "int64": 1 << 63,
    "float64": 0x7FF8_0000_0000_DD01,
    "bool": 2,
    "str": (1 << 64) - 1,
}
"""Each physical dtype's null word (the core's ``encoding::null_word``; ``tests`` check they
agree). A logical dtype's null word is its physical dtype's."""

_INT64_MIN = -(2**63)


def canonical(name: str) -> str:
    """The engine's name for the dtype ``name`` (``SchemaTypeError`` if it cannot hold it)."""
    return str(_core.canonical_dtype(name))


def physical(name: str) -> str:
    """The physical dtype the words of ``name`` are read as."""
    if name in PHYSICAL_DTYPES:
        return name
    return str(_core.physical_dtype(name))


def is_logical(name: str | None) -> bool:
    """Whether ``name`` is a dtype other than the four physical ones."""
    return name is not None and name not in PHYSICAL_DTYPES


def name_of_arrow(t: pa.DataType) -> str | None:
    """The engine's name for a pyarrow type, or ``None`` for one it cannot hold."""
    if pa.types.is_boolean(t):
        return "bool"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "str"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return "binary"
    if pa.types.is_float64(t):
        return "float64"
    if pa.types.is_float32(t):
        return "float32"
    if pa.types.is_integer(t):
        return str(t)
    if pa.types.is_date32(t):
        return "date32"
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return canonical(str(t))
    if pa.types.is_decimal(t) and t.bit_width == 128:
        return canonical(str(t))
    return None


def arrow_type(name: str) -> pa.DataType:
    """The pyarrow type of the dtype ``name``."""
    simple = {
        "int64": pa.int64(),
        "float64": pa.float64(),
        "bool": pa.bool_(),
        "str": pa.string(),
        "float32": pa.float32(),
        "date32": pa.date32(),
        "binary": pa.binary(),
    }
    name = canonical(name)
    if name in simple:
        return simple[name]
    if name.startswith(("int", "uint")):
        return pa.type_for_alias(name)
    if name.startswith(("timestamp[", "duration[")):
        inner = name[name.index("[") + 1 : -1]
        unit, _, zone = inner.partition(", tz=")
        if name.startswith("duration"):
            return pa.duration(unit)
        return pa.timestamp(unit, tz=zone or None)
    if name.startswith("decimal128("):
        p, s = name[len("decimal128(") : -1].split(",")
        return pa.decimal128(int(p), int(s))
    raise SchemaTypeError(f"no pyarrow type for dtype {name!r}")


def _values(arr: pa.Array, width: int, dtype: Any) -> npt.NDArray[Any]:
    """The fixed-width value buffer of ``arr`` (offset applied) as numpy."""
    buf = arr.buffers()[1]
    n = len(arr)
    if buf is None or n == 0:
        return np.zeros(0, dtype=dtype)
    raw = np.frombuffer(buf, dtype=dtype)
    return raw[arr.offset * width : (arr.offset + n) * width]


def words_of(arr: Any, name: str, what: str) -> npt.NDArray[np.uint64]:
    """The engine words of a pyarrow array (or chunked array) of the logical dtype ``name``,
    null rows holding the null word. A value that does not fit a word (a decimal whose
    unscaled value needs more than 64 bits, a uint64 above ``2**63 - 1``, a timestamp equal
    to ``-2**63``) is refused naming ``what``, the row and the value."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    t = arr.type
    n = len(arr)
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        floats = arr.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
        floats = np.array(floats, dtype=np.float64)
        floats[floats == 0.0] = 0.0
        floats[np.isnan(floats)] = np.nan
        float_words: npt.NDArray[np.uint64] = floats.view(np.uint64)
        if nulls is not None:
            float_words[nulls] = np.uint64(NULL_WORDS["float64"])
        return float_words
    if pa.types.is_decimal(t):
        pairs = _values(arr, 2, np.int64).reshape(n, 2)
        low, high = pairs[:, 0], pairs[:, 1]
        bad = (high != (low >> 63)) | (low == _INT64_MIN)
        values = low.copy()
    elif pa.types.is_date32(t):
        values = _values(arr, 1, np.int32).astype(np.int64)
        bad = None
    elif pa.types.is_timestamp(t) or pa.types.is_duration(t):
        values = _values(arr, 1, np.int64).copy()
        bad = values == _INT64_MIN
    elif pa.types.is_unsigned_integer(t) and t.bit_width == 64:
        raw = _values(arr, 1, np.uint64)
        bad = raw > np.uint64(2**63 - 1)
        values = raw.astype(np.int64)
    elif pa.types.is_integer(t):
        values = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        values = np.array(values, dtype=np.int64)
        bad = values == _INT64_MIN
    else:
        raise SchemaTypeError(f"{what}: pyarrow type {t} is not a logical dtype ddflow holds")
    if bad is not None:
        if nulls is not None:
            bad &= ~nulls
        if bad.any():
            row = int(np.argmax(bad))
            raise InvalidValueError(
                f"{what}: value {arr[row].as_py()!r} at row {row} does not fit {name} as "
                "ddflow stores it (one 64-bit word: decimals up to about 18 digits, uint64 "
                "up to 2**63 - 1, int64 and times above -2**63)"
            )
    words = values.view(np.uint64)
    if nulls is not None:
        words[nulls] = np.uint64(NULL_WORDS["int64"])
    return np.ascontiguousarray(words)


def column_of(values: list[Any], name: str, what: str) -> npt.NDArray[np.uint64]:
    """The words of Python values (``None`` for null) of the logical dtype ``name``."""
    try:
        arr = pa.array(values, type=arrow_type(name), from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise InvalidValueError(f"{what}: values do not fit {name}: {exc}") from None
    return words_of(arr, name, what)


def scalar_kind(value: object) -> str | None:
    """The dtype a ``datetime.date``, ``datetime.datetime``, ``datetime.timedelta`` or
    ``decimal.Decimal`` is taken as (``None`` for anything else): ``date32``,
    ``timestamp[us]`` (with the zone of an aware datetime), ``duration[us]``, and the
    smallest ``decimal128(p, s)`` holding the decimal's digits."""
    if isinstance(value, datetime.datetime):
        t = pa.scalar(value).type
        return canonical(str(t))
    if isinstance(value, datetime.date):
        return "date32"
    if isinstance(value, datetime.timedelta):
        return "duration[us]"
    if isinstance(value, bytes | bytearray | memoryview):
        return "binary"
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return None
        sign, digits, exponent = value.as_tuple()
        assert isinstance(exponent, int)
        scale = max(0, -exponent)
        precision = max(len(digits) + max(exponent, 0), scale, 1)
        return f"decimal128({min(precision, 38)}, {scale})"
    return None


def word_of(value: object, name: str, what: str) -> int:
    """The engine word (as a signed int) of one Python value of the logical dtype ``name``;
    ``InvalidValueError`` naming ``what`` when it does not fit."""
    words = column_of([value], name, what)
    return int(words.view(np.int64)[0])


def offset_buffers(
    arr: Any, large: pa.DataType
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8], npt.NDArray[np.bool_] | None]:
    """The int64 offsets (``n + 1``), the data bytes and the null flags (None: no null) of a
    string or binary pyarrow array (or chunked array), read in the large layout ``large``
    (``pa.large_string()`` / ``pa.large_binary()``): views of Arrow's buffers, no per-value
    work."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if arr.type != large:
        arr = arr.cast(large)
    n = len(arr)
    _, offsets_buf, data_buf = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + n + 1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    nulls = arr.is_null().to_numpy(zero_copy_only=False) if arr.null_count else None
    return offsets, data, nulls


def latin1_to_binary(arr: pa.Array) -> pa.Array:
    """Binary values from their interned Latin-1 texts (a string array whose chars are all
    below U+0100), vectorised over the UTF-8 buffer: a two-byte char becomes its byte."""
    offsets, data, nulls = offset_buffers(arr, pa.large_string())
    n = len(offsets) - 1
    lo, hi = (int(offsets[0]), int(offsets[-1])) if n else (0, 0)
    text = data[lo:hi]
    lead = text >= 0xC0
    out = text.copy()
    at = np.nonzero(lead)[0]
    out[at] = ((text[at] & 0x03) << 6) | (text[at + 1] & 0x3F)
    cont = (text & 0xC0) == 0x80
    before = np.concatenate([[0], np.cumsum(cont, dtype=np.int64)])
    new_offsets = (offsets - lo) - before[offsets - lo]
    mask = pa.array(~nulls).buffers()[1] if nulls is not None else None
    return pa.Array.from_buffers(
        pa.large_binary(),
        n,
        [mask, pa.py_buffer(new_offsets.tobytes()), pa.py_buffer(out[~cont].tobytes())],
        int(nulls.sum()) if nulls is not None else 0,
    ).cast(pa.binary())


def to_arrow(arr: pa.Array, name: str) -> pa.Array:
    """A capture's physical column (``int64`` or ``float64``, nulls as Arrow nulls; ``str``
    for binary) as the Arrow type of the logical dtype ``name``."""
    t = arrow_type(name)
    if pa.types.is_binary(t):
        return latin1_to_binary(arr)
    if pa.types.is_date32(t):
        return arr.cast(pa.int32()).view(pa.date32())
    if pa.types.is_timestamp(t) or pa.types.is_duration(t):
        return arr.view(t)
    if pa.types.is_decimal(t):
        n = len(arr)
        low = arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        pairs = np.empty((n, 2), dtype=np.int64)
        pairs[:, 0] = low
        pairs[:, 1] = low >> 63
        validity = arr.buffers()[0] if arr.null_count else None
        if validity is not None and arr.offset:
            validity = pa.array(arr.is_valid()).buffers()[1]
        return pa.Array.from_buffers(
            t, n, [validity, pa.py_buffer(pairs.tobytes())], arr.null_count
        )
    return arr.cast(t)
