"""Column dtypes at the Python boundary and conversion of user columns to engine columns.

ddflow columns have one of four dtypes: ``int64``, ``float64``, ``bool`` and ``str``. The engine
takes them as int64 / float64 / bool numpy arrays and numpy object arrays of ``str``. This module
names dtypes, infers them from Python scalars, and converts numpy, pyarrow and list columns into
that canonical form (rejecting unsupported types with a message naming the column).

Nulls (SQL nulls: Arrow nulls, numpy masked values, ``None``) are accepted where the caller
asks (``to_column(..., nullable=True)``: engine inputs). A column with nulls crosses to the
engine already encoded as core words (:class:`WordColumn`; :class:`Utf8Column` with null
flags for ``str``), null rows holding their dtype's null word: the sentinels defined in
``rust/ddflow-core/src/encoding.rs`` (mirrored in :data:`NULL_WORDS`). int64's null word is
``-2**63``, so that one value is refused in int64 input columns.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Literal, overload

import numpy as np
import numpy.typing as npt

from ddflow import _core
from ddflow.errors import InvalidValueError, OverflowError, SchemaTypeError
from ddflow.logical_types import (
    NULL_WORDS,
    canonical,
    is_logical,
    name_of_arrow,
    offset_buffers,
    physical,
    words_of,
)

__all__ = [
    "DTYPES",
    "dtype_name",
    "scalar_dtype",
    "to_column",
    "empty_column",
    "array_dtype",
    "Utf8Column",
    "arrow_utf8_column",
    "arrow_columns",
    "WordColumn",
    "BinaryColumn",
    "NULL_WORDS",
    "column_dtype",
    "check_int64_min",
    "nullable_column",
    "coerce_column",
]

DTYPES = ("int64", "float64", "bool", "str")
"""The dtypes a ddflow column can have."""

INT64_MIN = -(2**63)
"""The least int64 (also the null word of int64 columns)."""
INT64_MAX = 2**63 - 1
"""The greatest int64."""


_ALIASES: dict[str, str] = {
    "int": "int64",
    "int64": "int64",
    "i8": "int64",
    "float": "float64",
    "float64": "float64",
    "f8": "float64",
    "double": "float64",
    "bool": "bool",
    "boolean": "bool",
    "str": "str",
    "string": "str",
    "utf8": "str",
    "large_string": "str",
    "object": "str",
}


def dtype_name(spec: object) -> str:
    """The ddflow dtype named by ``spec``: a name, a Python type, a numpy or pyarrow dtype;
    the logical dtypes by their Arrow names (``"date32"``, ``"timestamp[us, tz=UTC]"``,
    ``"decimal128(12, 2)"``, ``"int32"``) or pyarrow types."""
    if isinstance(spec, str) and spec not in _ALIASES:
        return canonical(spec)
    if type(spec).__module__.startswith("pyarrow"):
        import pyarrow as pa

        if isinstance(spec, pa.DataType):
            name = name_of_arrow(spec)
            if name is None:
                raise SchemaTypeError(
                    f"unsupported dtype {spec!r}: ddflow holds bool, integers, floats, "
                    "strings, date32, timestamps, durations and decimal128"
                )
            return name
    if spec is int:
        return "int64"
    if spec is float:
        return "float64"
    if spec is bool:
        return "bool"
    if spec is str:
        return "str"
    if isinstance(spec, str):
        name = _ALIASES.get(spec.lower())
        if name is None:
            raise SchemaTypeError(f"unsupported dtype {spec!r}; use one of {', '.join(DTYPES)}")
        return name
    try:
        kind = np.dtype(spec).kind  # type: ignore[call-overload]
    except TypeError:
        text = str(spec)  # pyarrow types print as int64, double, string, bool, ...
        if text in _ALIASES:
            return _ALIASES[text]
        raise SchemaTypeError(
            f"unsupported dtype {spec!r}; use one of {', '.join(DTYPES)}"
        ) from None
    kinds = {"i": "int64", "u": "int64", "f": "float64", "b": "bool", "U": "str", "T": "str"}
    if kind not in kinds:
        raise SchemaTypeError(f"unsupported dtype {spec!r}; use one of {', '.join(DTYPES)}")
    return kinds[kind]


def scalar_dtype(value: object) -> str | None:
    """The dtype of a Python or numpy scalar, or ``None`` if ddflow cannot store it."""
    if isinstance(value, bool | np.bool_):
        return "bool"
    if isinstance(value, int | np.integer):
        return "int64"
    if isinstance(value, float | np.floating):
        return "float64"
    if isinstance(value, str):
        return "str"
    return None


def check_int64(value: int, what: str) -> None:
    """Raises ``OverflowError`` unless the Python int fits in int64."""
    if not INT64_MIN <= value <= INT64_MAX:
        raise OverflowError(f"{what}: {value!r} does not fit in int64")


def check_utf8(values: Sequence[str] | npt.NDArray[Any], what: str) -> None:
    """Raises ``InvalidValueError`` naming the first value that is not valid Unicode text
    (a lone surrogate such as ``"\\ud800"`` cannot be encoded as UTF-8, the engine's form).

    One C-level encode of the joined values; the failing value is found only on error.
    """
    try:
        "".join(values).encode("utf-8")
    except UnicodeEncodeError:
        for index, value in enumerate(values):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidValueError(
                    f"{what}: value {value!r} (row {index}) is not valid Unicode text: "
                    f"{exc.reason}"
                ) from None


def array_dtype(arr: npt.NDArray[Any]) -> str:
    """The ddflow dtype of a canonical column (as returned by :func:`to_column`)."""
    return {"i": "int64", "f": "float64", "b": "bool", "O": "str"}[arr.dtype.kind]


class _OffsetsColumn:
    """A column kept in Arrow's variable-width layout: int64 ``offsets`` (``n + 1``) into the
    bytes ``data``, and null flags (None: no null). Quacks like a 1-D object array where the
    input code looks (``len``, ``ndim``, indexing for error messages)."""

    ndim = 1

    def __init__(
        self,
        offsets: npt.NDArray[Any],
        data: npt.NDArray[Any],
        nulls: npt.NDArray[np.bool_] | None = None,
    ) -> None:
        """Wraps the two buffers (not copied); ``nulls`` flags null rows (None: no null)."""
        self._buffers = (offsets, data, nulls)

    def __len__(self) -> int:
        """Number of values."""
        return max(len(self._buffers[0]) - 1, 0)

    def _bytes(self, i: int) -> bytes | None:
        """Value ``i``'s bytes (for messages, never on a hot path); None if null."""
        offsets, data, nulls = self._buffers
        if nulls is not None and nulls[i]:
            return None
        return bytes(data[offsets[i] : offsets[i + 1]])


class Utf8Column(_OffsetsColumn):
    """A ``str`` column in Arrow's layout (UTF-8 bytes). The native module validates and
    interns it with the GIL released (``_ddflow_utf8``), so a column of a million strings
    costs no Python object per value."""

    dtype = np.dtype(object)

    @property
    def _ddflow_utf8(self) -> tuple[Any, ...]:
        """The buffers, under the name the native module reads a str column by."""
        return self._buffers

    def __getitem__(self, i: int) -> str | None:
        """String ``i`` (decoded); None if null."""
        raw = self._bytes(i)
        return None if raw is None else raw.decode("utf-8", errors="replace")


class BinaryColumn(_OffsetsColumn):
    """A ``binary`` column in Arrow's layout. The native module interns each value as its
    Latin-1 text with the GIL released (``_ddflow_binary``; ``ddflow.logical_types``)."""

    ddflow_dtype = "binary"

    @property
    def _ddflow_binary(self) -> tuple[Any, ...]:
        """The buffers, under the name the native module reads a binary column by."""
        return self._buffers

    @classmethod
    def of_arrow(cls, arr: Any) -> BinaryColumn:
        """The column of a pyarrow binary array (or chunked array) of any binary layout."""
        import pyarrow as pa

        return cls(*offset_buffers(arr, pa.large_binary()))

    def __getitem__(self, i: int) -> bytes | None:
        """Value ``i``; None if null."""
        return self._bytes(i)


class WordColumn:
    """An int64 / float64 / bool column with nulls, as the engine's core words (uint64):
    values encoded as the core encodes them, null rows holding :data:`NULL_WORDS` of the
    dtype. The native module takes the words as they are (``_ddflow_words``)."""

    ndim = 1

    def __init__(self, dtype: str, words: npt.NDArray[np.uint64]) -> None:
        """Wraps encoded words (see :func:`nullable_column`)."""
        self.ddflow_dtype = dtype
        self._ddflow_words = (dtype, words)

    def __len__(self) -> int:
        """Number of values."""
        return len(self._ddflow_words[1])

    def __getitem__(self, i: int) -> object:
        """Value ``i`` (None if null; for messages)."""
        dtype, words = self._ddflow_words
        w = int(words[i])
        if is_logical(dtype):
            kind = physical(dtype)
            if w == NULL_WORDS[kind]:
                return None
            if kind == "float64":
                return float(words[i : i + 1].view(np.float64)[0])
            return _core.render_word(dtype, int(words[i : i + 1].view(np.int64)[0]))
        if w == NULL_WORDS[dtype]:
            return None
        if dtype == "int64":
            return int(words[i : i + 1].view(np.int64)[0])
        if dtype == "float64":
            return float(words[i : i + 1].view(np.float64)[0])
        return bool(w)

    def as_float64(self) -> WordColumn:
        """An int64 column widened to float64 (nulls stay null)."""
        dtype, words = self._ddflow_words
        nulls = words == np.uint64(NULL_WORDS[dtype])
        out = nullable_column(words.view(np.int64).astype(np.float64), nulls, "float64", "")
        assert isinstance(out, WordColumn)
        return out


def column_dtype(arr: Any) -> str:
    """The ddflow dtype of a canonical column (numpy, :class:`WordColumn`, :class:`Utf8Column`)."""
    if isinstance(arr, WordColumn | BinaryColumn):
        return arr.ddflow_dtype
    return {"i": "int64", "f": "float64", "b": "bool", "O": "str"}[arr.dtype.kind]


def check_int64_min(arr: npt.NDArray[Any], what: str) -> None:
    """Refuses int64 ``-2**63`` (int64's null word) in a column, naming its first row."""
    if arr.dtype == np.int64 and arr.size:
        bad = arr == INT64_MIN
        if bad.any():
            row = int(np.argmax(bad))
            raise InvalidValueError(
                f"{what}: value {INT64_MIN} at row {row} is int64's reserved null word "
                "(the one int64 value ddflow cannot hold; send None for a null)"
            )


def nullable_column(
    values: npt.NDArray[Any], nulls: npt.NDArray[np.bool_], dtype: str, what: str
) -> Any:
    """A column of ``dtype`` with null rows ``nulls`` as the engine takes it: a
    :class:`WordColumn` (int64 / float64 / bool) or a :class:`Utf8Column` with null flags
    (``str``: ``values`` an object array; null rows are ignored). ``values`` must already
    have the dtype's numpy form; the values of null rows are ignored."""
    nulls = np.ascontiguousarray(nulls, dtype=np.bool_)
    if dtype == "str":
        import pyarrow as pa

        filled = np.where(nulls, "", values).astype(object)
        check_utf8(filled, what)
        arr = pa.array(filled, type=pa.large_string())
        _, offsets_buf, data_buf = arr.buffers()
        offsets = np.frombuffer(offsets_buf, dtype=np.int64)[: len(arr) + 1]
        data = (
            np.frombuffer(data_buf, dtype=np.uint8)
            if data_buf is not None
            else np.zeros(0, np.uint8)
        )
        return Utf8Column(offsets, data, nulls)
    if dtype == "int64":
        ints = np.array(values, dtype=np.int64)
        check_int64_min(np.where(nulls, 0, ints), what)
        words = ints.view(np.uint64)
    elif dtype == "float64":
        floats = np.array(values, dtype=np.float64)
        floats[floats == 0.0] = 0.0  # -0.0 is stored as 0.0
        floats[np.isnan(floats)] = np.nan  # one canonical NaN (a value, not null)
        words = floats.view(np.uint64)
    elif dtype == "bool":
        words = np.array(values, dtype=np.bool_).astype(np.uint64)
    else:
        raise SchemaTypeError(f"{what}: unsupported dtype {dtype!r}")
    words[nulls] = np.uint64(NULL_WORDS[dtype])
    return WordColumn(dtype, np.ascontiguousarray(words))


def _arrow_object(values: object) -> Any | None:
    """``values`` as a pyarrow Array / ChunkedArray when it is one, or speaks the Arrow
    PyCapsule protocol (polars Series, pandas arrow-backed, nanoarrow...), else None."""
    import pyarrow as pa

    if isinstance(values, pa.Array | pa.ChunkedArray):
        return values
    if hasattr(values, "__arrow_c_stream__"):
        return pa.chunked_array(values)
    if hasattr(values, "__arrow_c_array__"):
        return pa.array(values)
    return None


def arrow_utf8_column(values: object, what: str, *, nullable: bool = False) -> Utf8Column | None:
    """A :class:`Utf8Column` for an Arrow string column (any Arrow string type, chunked or
    not, through the PyCapsule protocol too), or None for anything else. Nulls are flagged
    with ``nullable``, else rejected naming ``what``. Only buffer views are made here: no
    per-value Python work."""
    import pyarrow as pa

    arr = _arrow_object(values)
    if arr is None:
        if not _looks_like_strings(values):
            return None
        try:
            # One C-level pass builds the Arrow buffers (no Python bytecode per value); the
            # type is inferred for objects, so that bytes are not taken as text (binary: the
            # exact path); a numpy str array converts with its type, whole (inferring would
            # cut each string at its first NUL character).
            unicode = isinstance(values, np.ndarray) and values.dtype.kind == "U"
            text = pa.large_string() if unicode else None
            arr = pa.array(values, type=text, from_pandas=False)
        except (pa.ArrowException, UnicodeError, TypeError, ValueError):
            return None  # not all str, nulls, lone surrogates: the exact checks say which

    if not (
        pa.types.is_string(arr.type)
        or pa.types.is_large_string(arr.type)
        or pa.types.is_string_view(arr.type)
    ):
        return None
    if arr.null_count and not nullable:
        raise InvalidValueError(f"{what}: {arr.null_count} null values (nulls are not supported)")
    return Utf8Column(*offset_buffers(arr, pa.large_string()))


def _looks_like_strings(values: object) -> bool:
    """A numpy str / object array, or a list or tuple starting with a str."""
    if isinstance(values, np.ndarray):
        return values.ndim == 1 and values.dtype.kind in "UO" and values.size > 0
    if isinstance(values, list | tuple):
        return bool(values) and isinstance(values[0], str)
    return False


def arrow_columns(table: object) -> dict[str, Any] | None:
    """The columns by name of a table-like object: a pyarrow Table / RecordBatch, or anything
    that speaks the Arrow PyCapsule stream protocol (polars and pandas DataFrames, DuckDB
    results...); None for other objects."""
    import pyarrow as pa

    if not isinstance(table, pa.Table | pa.RecordBatch):
        if not hasattr(table, "__arrow_c_stream__") or hasattr(table, "__arrow_c_array__"):
            return None
        try:
            table = pa.table(table)
        except (TypeError, pa.ArrowInvalid):
            return None
    return {name: table.column(name) for name in table.column_names}


def empty_column(dtype: str) -> Any:
    """A zero-length canonical column of ``dtype`` (a :class:`WordColumn` for the logical
    dtypes)."""
    if is_logical(dtype):
        return WordColumn(dtype, np.empty(0, dtype=np.uint64))
    return np.empty(0, dtype=object if dtype == "str" else np.dtype(dtype))


def from_arrow(values: Any, what: str, *, nullable: bool = False) -> Any:
    """A pyarrow Array / ChunkedArray as numpy (chunks combined, dictionaries decoded,
    strings as an ``object`` array of ``str``); with nulls a column of
    :func:`nullable_column` if ``nullable``, else refused; anything else unchanged.

    Integer and float arrays without nulls, sliced or not, and a ChunkedArray of one such
    chunk come back as read-only views of the Arrow buffer (no copy); several chunks are
    combined into one new buffer, and bools (bit-packed in Arrow) and strings are
    converted."""
    null_count = getattr(values, "null_count", None)
    if null_count is None or not hasattr(values, "to_numpy"):
        return values
    if null_count and not nullable:
        raise InvalidValueError(
            f"{what}: {null_count} null values (nulls are not supported here; fill or filter "
            "them first)"
        )
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        # combine_chunks copies even a single chunk; that chunk is the array itself.
        values = values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    t = values.type
    if pa.types.is_dictionary(t):
        values = values.dictionary_decode()
        t = values.type
    logical = name_of_arrow(t)
    if logical == "binary":
        return BinaryColumn.of_arrow(values)
    if logical is not None and is_logical(logical) and physical(logical) == "int64":
        if not (pa.types.is_integer(t)):
            return WordColumn(logical, words_of(values, logical, what))
    if null_count:
        nulls = values.is_null().to_numpy(zero_copy_only=False)
        if pa.types.is_null(t):
            raise SchemaTypeError(
                f"{what}: a column of only nulls has no dtype; declare it in new_input"
            )
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
            filled = np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
            return nullable_column(filled, nulls, "str", what)
        if pa.types.is_boolean(t):
            fill: object = False
        elif pa.types.is_floating(t):
            fill = 0.0
        else:
            fill = 0
        dense = to_column(values.fill_null(pa.scalar(fill, type=t)), what)
        return nullable_column(dense, nulls, array_dtype(dense), what)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return np.asarray(values.to_numpy(zero_copy_only=False), dtype=object)
    return values.to_numpy(zero_copy_only=False)


def uint64_as_int64(arr: npt.NDArray[Any], what: str) -> npt.NDArray[np.int64]:
    """An unsigned integer array (any shape) as int64: the package's side of the native
    module's one uint64 policy (``rust/ddflow-py/src/convert/uint64.rs``). Every value must fit;
    the first that does not raises :class:`~ddflow.errors.OverflowError` naming it and its
    row, as the native module does. Nothing is wrapped."""
    if arr.dtype.itemsize == 8 and arr.size:
        over = arr > INT64_MAX
        if over.any():
            i = int(np.argmax(over.reshape(-1)))
            row = i // (arr.shape[1] if arr.ndim == 2 and arr.shape[1] else 1)
            raise OverflowError(
                f"{what}: value {int(arr.reshape(-1)[i])} at row {row} does not fit in int64"
            )
    return np.ascontiguousarray(arr, dtype=np.int64)


@overload
def to_column(
    values: object, what: str, *, keep_uint64: bool = False, nullable: Literal[False] = False
) -> npt.NDArray[Any]: ...


@overload
def to_column(values: object, what: str, *, keep_uint64: bool = False, nullable: bool) -> Any: ...


def to_column(
    values: object, what: str, *, keep_uint64: bool = False, nullable: bool = False
) -> Any:
    """Converts a column (numpy, pyarrow, sequence) to its canonical engine form: the one
    column conversion of the Python package (inputs, callbacks' results, the kernel API).

    Returns int64 / float64 / bool arrays (C-contiguous) or an object array of ``str``.
    uint64 follows the native module's policy: read as int64 where every value fits (an
    ``OverflowError`` otherwise), or kept as uint64 with ``keep_uint64`` (the kernel API keys
    traces by uint64). ``what`` names the column (``"input 'edges', column 'src'"``) in
    error messages. With ``nullable``, nulls (Arrow nulls, masked values of a numpy masked
    array, ``None`` in a list or object array) give a :func:`nullable_column`; without, they
    are refused.
    """
    if isinstance(values, np.ma.MaskedArray):
        data = np.asarray(values.data)
        mask = np.broadcast_to(np.asarray(values.mask, dtype=np.bool_), data.shape)
        if not mask.any():
            values = data
        elif not nullable:
            raise InvalidValueError(f"{what}: {int(mask.sum())} masked values (nulls)")
        else:
            dense = to_column(data, what)
            return nullable_column(dense, mask, array_dtype(dense), what)
    if isinstance(values, np.ndarray):
        arr = values
    elif hasattr(values, "null_count") and hasattr(values, "to_numpy"):
        arr = from_arrow(values, what, nullable=nullable)
        if not isinstance(arr, np.ndarray):
            return arr
    else:
        try:
            arr = np.asarray(values)
        except (ValueError, TypeError, builtins.OverflowError) as exc:
            raise SchemaTypeError(f"{what}: cannot be converted to a column: {exc}") from None
    if arr.ndim != 1:
        raise SchemaTypeError(f"{what}: a column must be one-dimensional, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "i":
        return np.ascontiguousarray(arr, dtype=np.int64)
    if kind == "u":
        if keep_uint64 and arr.dtype.itemsize == 8:
            return np.ascontiguousarray(arr)
        return uint64_as_int64(arr, what)
    if kind == "f":
        return np.ascontiguousarray(arr, dtype=np.float64)
    if kind == "b":
        return np.ascontiguousarray(arr, dtype=np.bool_)
    if kind in "UT":
        out = arr.astype(object)
        check_utf8(out, what)
        return out
    if kind == "O":
        return _object_column(arr, what, nullable)
    raise SchemaTypeError(f"{what}: unsupported dtype {arr.dtype}; use one of {', '.join(DTYPES)}")


def _object_column(arr: npt.NDArray[Any], what: str, nullable: bool = False) -> Any:
    """An object array must hold only ``str`` (or only ints / floats / bools: converted);
    ``None`` values are nulls where ``nullable``."""
    if arr.size == 0:
        return arr
    if nullable:
        nulls = np.fromiter((v is None for v in arr), dtype=np.bool_, count=len(arr))
        if nulls.all():
            raise SchemaTypeError(
                f"{what}: a column of only nulls has no dtype; declare it in new_input"
            )
        if nulls.any():
            dense = _object_column(arr[~nulls], what)
            full = np.empty(len(arr), dtype=dense.dtype)
            full[~nulls] = dense
            if dense.dtype.kind == "O":
                full[nulls] = ""
            else:
                full[nulls] = 0
            return nullable_column(full, nulls, array_dtype(dense), what)
    kinds = {scalar_dtype(v) for v in arr}
    if kinds == {"str"}:
        check_utf8(arr, what)
        return arr
    if None in kinds:
        bad = next(v for v in arr if scalar_dtype(v) is None)
        if bad is None:
            raise InvalidValueError(f"{what}: None values (nulls are not supported)")
        raise SchemaTypeError(f"{what}: unsupported value {bad!r} of type {type(bad).__name__}")
    if len(kinds) == 1:
        (kind,) = kinds
        if kind == "int64":
            for v in arr:
                check_int64(int(v), what)
        return np.asarray(arr.tolist(), dtype=np.dtype(kind))
    raise SchemaTypeError(f"{what}: mixed value types {sorted(k for k in kinds if k)}")


def _int_range(name: str) -> tuple[int, int] | None:
    if name.startswith("uint"):
        bits = int(name[4:])
        return 0, min(2**bits - 1, 2**63 - 1)
    if name.startswith("int"):
        bits = int(name[3:])
        return -(2 ** (bits - 1)) + (bits == 64), 2 ** (bits - 1) - 1
    return None


def _decimal_scale(name: str) -> int | None:
    if name.startswith("decimal128("):
        return int(name[:-1].split(",")[1])
    return None


def coerce_column(arr: Any, kind: str, want: str, what: str) -> WordColumn:
    """A batch column of dtype ``kind`` as the declared logical dtype ``want``, where that
    loses nothing: integers into a narrower integer dtype (each value checked), float64 into
    float32 (rounded, as a cast), a decimal or an integer into a decimal of a scale at least
    as large (rescaled exactly). Anything else is a ``SchemaTypeError`` naming both dtypes;
    a value that does not fit is an ``InvalidValueError`` naming the row and value."""
    source = physical(kind)
    if isinstance(arr, WordColumn):
        words = arr._ddflow_words[1]
    elif source == "int64":
        words = np.ascontiguousarray(arr, dtype=np.int64).view(np.uint64)
    elif source == "float64":
        words = np.ascontiguousarray(arr, dtype=np.float64).view(np.uint64)
    else:
        words = None
    target = physical(want)
    null = np.uint64(NULL_WORDS[target])
    refuse = SchemaTypeError(
        f"{what}: values of dtype {kind}, the column is {want} (cast the values first)"
    )
    if words is None or source != target:
        raise refuse
    nulls = words == null
    out = words.copy()
    if target == "float64":
        if want != "float32":
            raise refuse
        floats = words.view(np.float64).astype(np.float32).astype(np.float64)
        out = floats.view(np.uint64)
        out[nulls] = null
        return WordColumn(want, out)
    values = words.view(np.int64)
    bounds = _int_range(want)
    want_scale = _decimal_scale(want)
    if bounds is not None and _int_range(kind) is not None:
        lo, hi = bounds
        bad = ((values < lo) | (values > hi)) & ~nulls
    elif want_scale is not None and (
        _int_range(kind) is not None or _decimal_scale(kind) is not None
    ):
        shift = want_scale - (_decimal_scale(kind) or 0)
        if shift < 0:
            raise refuse
        factor = 10**shift
        limit = (2**63 - 1) // factor
        bad = (np.abs(values) > limit) & ~nulls
        out = (values * factor).view(np.uint64)
    else:
        raise refuse
    if bad.any():
        row = int(np.argmax(bad))
        raise InvalidValueError(f"{what}: value {arr[row]!r} at row {row} does not fit {want}")
    out = np.where(nulls, null, out).astype(np.uint64)
    return WordColumn(want, out)
