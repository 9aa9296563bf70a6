"""Columnar kernels of the ddflow core: sorting, consolidation, lattice functions, interesting
times and traces (arranged collections), callable on whole columns.

This is the public, typed facade over the kernel functions of the native module
:mod:`ddflow._core`. It is what user code and the executors of a distributed backend (for
example Spark, on Arrow batches) call: columns in, columns out, no per-record Python calls,
and the GIL released while a kernel runs, so several threads can run kernels in parallel.

Inputs may be numpy arrays, pyarrow arrays (``Array`` or ``ChunkedArray``, without nulls) or
Python sequences; they are converted here and passed to :mod:`ddflow._core`, which accepts
numpy arrays only. An int64, uint64 or float64 Arrow array without nulls (sliced or not, or a
``ChunkedArray`` of one chunk) reaches the kernel as a view of its Arrow buffer, without a
copy; an Arrow string record column (any string type, chunked or not) is read by the core
from its offsets and bytes, without a ``str`` object per value. Narrower numbers are widened,
several numeric chunks combined and bools unpacked (copies). The kernels only read their
inputs.

Records and columns
    A record is a row of columns, each ``int64``, ``uint64``, ``float64``, ``bool`` or
    ``str`` (narrower integer and float columns are widened; strings may be ``object``, ``U``
    or Arrow string arrays). Arrow nulls are rejected: ddflow has no null semantics.

Times
    A time has 1 to 4 non-negative integer coordinates (an outer time plus one coordinate per
    nested iteration) and is ordered as a product: ``a <= b`` iff every coordinate is. A
    column of times is an ``(n, k)`` int64 array, or ``(n,)`` for one coordinate. A
    *frontier* (an antichain of times) is given as an ``int`` (one 1-D time), a sequence of
    ints (one time), or a sequence of times (``[[0, 2], [1, 0]]``) or an ``(m, k)`` array.

Diffs
    Signed 64-bit counts. Sums that leave the int64 range raise
    :class:`ddflow.errors.OverflowError`; nothing wraps silently.

Errors
    Bad input raises a :class:`ddflow.errors.DdflowError` subclass naming the argument:
    :class:`~ddflow.errors.ShapeError` (lengths or shapes disagree),
    :class:`~ddflow.errors.SchemaTypeError` (unsupported dtype),
    :class:`~ddflow.errors.InvalidValueError` (negative or wrongly-dimensioned times, Arrow
    nulls), :class:`~ddflow.errors.UnsortedInputError`,
    :class:`~ddflow.errors.OverflowError`, :class:`~ddflow.errors.TimeError` (a time or
    frontier behind a frontier it must be in the future of).

Example::

    import numpy as np
    from ddflow import kernels as K

    src = np.random.randint(0, 1_000_000, 10_000_000)
    dst = np.random.randint(0, 1_000_000, 10_000_000)
    graph = K.Trace.from_static_pairs(src, dst)     # compacted, ~5 bytes per edge
    cols, times, diffs = graph.read_keys([np.array([7, 42])])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from ddflow import _core
from ddflow.dtypes import arrow_utf8_column, from_arrow, to_column, uint64_as_int64
from ddflow.errors import InvalidValueError, SchemaTypeError

__all__ = [
    "ArrayLike",
    "TimesLike",
    "FrontierLike",
    "Columns",
    "sort_values",
    "sort_pairs",
    "consolidate",
    "consolidate_pairs",
    "release_sort_buffers",
    "less_equal",
    "join",
    "meet",
    "advance_by",
    "antichain",
    "frontier_less_equal",
    "frontier_meet",
    "interesting_times",
    "interesting_times_reference",
    "Trace",
    "TraceHandle",
    "as_column",
    "as_times",
    "as_diffs",
]

ArrayLike: TypeAlias = Any
"""A numpy array, a pyarrow ``Array``/``ChunkedArray`` without nulls, or a sequence."""

TimesLike: TypeAlias = Any
"""An ``(n, k)`` or ``(n,)`` array (or nested sequence) of non-negative integer times."""

FrontierLike: TypeAlias = int | Sequence[int] | Sequence[Sequence[int]] | npt.NDArray[Any]
"""An int (a 1-D time), a sequence of ints (one time), or a sequence / ``(m, k)`` array of
times."""

Columns: TypeAlias = tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]
"""Updates as ``(columns, times, diffs)``."""


def as_column(x: ArrayLike, name: str = "column") -> npt.NDArray[Any]:
    """Converts a column to a 1-D numpy array of a dtype the core accepts
    (:func:`ddflow.dtypes.to_column`, with uint64 kept: traces here may be keyed by it).

    Integers narrower than 64 bits are widened to int64, float32 to float64; strings become
    an ``object`` array of ``str``. Arrow nulls raise :class:`~ddflow.errors.InvalidValueError`.
    """
    return to_column(x, name, keep_uint64=True)


def _count_arg(value: Any, name: str, minimum: int = 0) -> int:
    """A non-negative (or ``>= minimum``) int argument that fits in int64, or an error naming it."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise SchemaTypeError(f"{name} must be an int, got {value!r}")
    if not minimum <= int(value) <= 2**63 - 1:
        raise InvalidValueError(f"{name} must be an int from {minimum} to 2**63-1, got {value!r}")
    return int(value)


def as_times(x: TimesLike | None, name: str = "times") -> npt.NDArray[np.int64] | None:
    """Converts times to an int64 ``(n, k)`` or ``(n,)`` array (``None`` passes through)."""
    if x is None:
        return None
    x = from_arrow(x, name)
    arr = np.asarray(x)
    if arr.dtype.kind == "u":
        arr = uint64_as_int64(arr, name)
    elif arr.dtype.kind == "i" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    elif arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    return arr


def as_diffs(x: ArrayLike | None, name: str = "diffs") -> npt.NDArray[np.int64] | None:
    """Converts diffs to an int64 array (``None`` passes through)."""
    if x is None:
        return None
    x = from_arrow(x, name)
    arr = np.asarray(x)
    if arr.dtype.kind == "u":
        arr = uint64_as_int64(arr, name)
    elif arr.dtype.kind == "i" and arr.dtype != np.int64:
        arr = arr.astype(np.int64)
    elif arr.size == 0 and arr.dtype.kind == "f":
        arr = arr.astype(np.int64)
    return arr


def _times(x: TimesLike, name: str = "times") -> npt.NDArray[np.int64]:
    """:func:`as_times` of an argument the core requires (typed as an array: a ``None``
    is passed on unchanged for the core to reject)."""
    return cast("npt.NDArray[np.int64]", as_times(x, name))


def _diffs(x: ArrayLike, name: str = "diffs") -> npt.NDArray[np.int64]:
    """:func:`as_diffs` of an argument the core requires (as :func:`_times`)."""
    return cast("npt.NDArray[np.int64]", as_diffs(x, name))


def _frontier(f: FrontierLike, name: str = "frontier") -> Any:
    if isinstance(f, np.ndarray):
        if f.dtype.kind not in "iu":
            raise SchemaTypeError(f"{name}: unsupported dtype {f.dtype} (times must be ints)")
        return f.astype(np.int64, copy=False)
    return f


def _record_column(x: ArrayLike, name: str) -> Any:
    """A record column for the core: a pyarrow string column as its Arrow buffers (a
    :class:`~ddflow.dtypes.Utf8Column`, which the core interns without the GIL and without a
    ``str`` object per value), anything else as :func:`as_column` gives it."""
    if type(x).__module__.startswith("pyarrow"):
        utf8 = arrow_utf8_column(x, name)
        if utf8 is not None:
            return utf8
    return as_column(x, name)


def _columns(cols: Sequence[ArrayLike], name: str = "columns") -> list[Any]:
    if isinstance(cols, np.ndarray) or not isinstance(cols, Sequence):
        raise SchemaTypeError(f"{name}: expected a list of columns, got {type(cols).__name__}")
    return [_record_column(c, f"{name}[{i}]") for i, c in enumerate(cols)]


def _int_column(x: ArrayLike, name: str) -> npt.NDArray[Any]:
    arr = as_column(x, name)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    return arr


# --- sorting and consolidation ---------------------------------------------------------


def sort_values(values: ArrayLike) -> npt.NDArray[Any]:
    """Returns ``values`` (int64 or uint64) sorted ascending, by LSD radix sort.

    Equivalent to ``np.sort(values)``; only the bits that vary are sorted on.
    """
    return _core.sort_values(_int_column(values, "values"))


def sort_pairs(keys: ArrayLike, vals: ArrayLike) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Sorts ``(key, val)`` pairs by key, then val; returns ``(keys, vals)``.

    ``keys`` and ``vals`` are int64 or uint64 columns of equal length (each keeps its dtype).
    When the varying bits of both fit one 64-bit word the pairs are packed and radix-sorted
    as single words. Equivalent to ``np.lexsort((vals, keys))`` applied to both.
    """
    return _core.sort_pairs(_int_column(keys, "keys"), _int_column(vals, "vals"))


def consolidate(columns: Sequence[ArrayLike], times: TimesLike, diffs: ArrayLike) -> Columns:
    """Consolidates updates: sums the diffs of equal ``(record, time)``, drops zero sums.

    Returns ``(columns, times, diffs)`` sorted by record, then time (lexicographically).
    Numeric columns sort by value; ``str`` columns are grouped (equal strings adjacent) in
    an unspecified order. ``-0.0`` is returned as ``0.0`` and NaNs are all equal. ``times``
    keeps its shape kind (``(n,)`` or ``(n, k)``).

    Raises :class:`~ddflow.errors.OverflowError` if a sum leaves the int64 range.
    """
    return _core.consolidate(_columns(columns), _times(times), _diffs(diffs))


def consolidate_pairs(
    keys: ArrayLike, vals: ArrayLike, diffs: ArrayLike
) -> tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[np.int64]]:
    """Consolidates untimed ``(key, val, diff)`` triples of int64/uint64 keys and vals.

    Returns ``(keys, vals, diffs)`` sorted by key then val, one row per distinct pair with
    a non-zero total.
    """
    return _core.consolidate_pairs(
        _int_column(keys, "keys"), _int_column(vals, "vals"), _diffs(diffs)
    )


def release_sort_buffers() -> None:
    """Frees the calling thread's radix-sort scratch buffers.

    Each thread keeps one sorter whose buffers grow to the largest input it has sorted and
    are reused by later calls.
    """
    _core.release_sort_buffers()


# --- lattice ---------------------------------------------------------------------------


def less_equal(a: TimesLike, b: TimesLike) -> npt.NDArray[np.bool_]:
    """``a[i] <= b[i]`` in the product order (every coordinate ``<=``), as a bool array.

    Either argument may hold a single time (shape ``(1, k)``), which is broadcast. Times of
    different dimensions are compared with missing coordinates taken as zero.
    """
    return _core.less_equal(_times(a, "a"), _times(b, "b"))


def join(a: TimesLike, b: TimesLike) -> npt.NDArray[np.int64]:
    """Coordinate-wise maximum (least upper bound) of ``a[i]`` and ``b[i]``."""
    return _core.join(_times(a, "a"), _times(b, "b"))


def meet(a: TimesLike, b: TimesLike) -> npt.NDArray[np.int64]:
    """Coordinate-wise minimum (greatest lower bound) of ``a[i]`` and ``b[i]``."""
    return _core.meet(_times(a, "a"), _times(b, "b"))


def advance_by(times: TimesLike, frontier: FrontierLike) -> npt.NDArray[np.int64]:
    """Advances each time by ``frontier``: the meet over ``f`` in ``frontier`` of
    ``join(t, f)``.

    The result compares with every time in the future of ``frontier`` exactly as the
    original does, which is what makes compaction safe. An empty frontier changes nothing.
    """
    return _core.advance_by(_times(times), _frontier(frontier))


def antichain(times: TimesLike) -> npt.NDArray[np.int64]:
    """The minimal elements of a set of times (a frontier), sorted lexicographically."""
    return _core.antichain(_times(times))


def frontier_less_equal(frontier: FrontierLike, times: TimesLike) -> npt.NDArray[np.bool_]:
    """Whether each time is in the future of ``frontier`` (some element is ``<=`` it)."""
    return _core.frontier_less_equal(_frontier(frontier), _times(times))


def frontier_meet(a: TimesLike, b: TimesLike) -> npt.NDArray[np.int64]:
    """The meet of two frontiers given as ``(m, k)`` arrays: the minimal elements of their
    union."""
    ta = np.atleast_2d(np.asarray(as_times(a, "a")))
    tb = np.atleast_2d(np.asarray(as_times(b, "b")))
    if ta.size == 0:
        ta = ta.reshape(0, tb.shape[1])
    if tb.size == 0:
        tb = tb.reshape(0, ta.shape[1])
    return _core.antichain(np.concatenate([ta, tb]).astype(np.int64))


def interesting_times(edits: TimesLike, new_times: TimesLike) -> npt.NDArray[np.int64]:
    """The times at which a reduce output may change: joins of a subset of ``edits`` with a
    non-empty subset of ``new_times``, sorted lexicographically, without duplicates.

    Output-sensitive coordinate sweep; agrees with :func:`interesting_times_reference`.
    """
    return _core.interesting_times(_times(edits, "edits"), _times(new_times, "new_times"))


def interesting_times_reference(edits: TimesLike, new_times: TimesLike) -> npt.NDArray[np.int64]:
    """:func:`interesting_times` by the quadratic reference algorithm (for tests)."""
    return _core.interesting_times_reference(_times(edits, "edits"), _times(new_times, "new_times"))


# --- traces ----------------------------------------------------------------------------


class _Reader:
    """Reading and compaction methods shared by :class:`Trace` and :class:`TraceHandle`."""

    __slots__ = ("_raw",)
    _raw: _core.Trace | _core.TraceHandle

    @property
    def raw(self) -> Any:
        """The underlying :mod:`ddflow._core` object."""
        return self._raw

    @property
    def dtypes(self) -> list[str]:
        """Column dtype names (key columns first)."""
        return list(self._raw.dtypes)

    @property
    def key_columns(self) -> int:
        """Number of leading key columns."""
        return int(self._raw.key_columns)

    @property
    def time_dims(self) -> int:
        """Coordinates per time."""
        return int(self._raw.time_dims)

    def to_columns(self) -> Columns:
        """The whole trace as ``(columns, times (n, time_dims), diffs)``.

        Consolidated; sorted by key, then value, in trace order (int64 by their
        two's-complement bits: non-negative ascending, then negative ascending; str by
        interned id), then time. Times are advanced by this reader's compaction frontier,
        so the result does not depend on how far merging has progressed.
        """
        return self._raw.to_columns()

    def read_keys(self, keys: Sequence[ArrayLike]) -> Columns:
        """Histories of the given keys (one column per key column; any order; duplicates
        and absent keys ignored), as ``(columns, times, diffs)`` with all columns."""
        return self._raw.read_keys(_columns(keys, "keys"))

    def read_range(self, lo: int | None = None, hi: int | None = None) -> Columns:
        """Updates of the keys in ``[lo, hi)`` in value order (``None``: unbounded), for a
        trace keyed by one int64 or uint64 column."""
        return self._raw.read_range(lo, hi)

    def key_history(self, key: Any) -> Columns:
        """History of one key (a scalar, or a tuple of one value per key column) as
        ``(value columns, times, diffs)``."""
        return self._raw.key_history(key)

    def advance_compaction(self, frontier: FrontierLike) -> None:
        """Promises to read only at times in the future of ``frontier``, letting the trace
        compact (advance and merge) older times. Raises :class:`~ddflow.errors.TimeError`
        if ``frontier`` is not in the future of the current one."""
        self._raw.advance_compaction(_frontier(frontier))

    def compaction_frontier(self) -> list[list[int]]:
        """This reader's compaction frontier."""
        return self._raw.compaction_frontier()

    def upper(self) -> list[list[int]]:
        """The trace's upper frontier (no inserted time is in its future)."""
        return self._raw.upper()

    def heap_bytes(self) -> int:
        """Heap bytes held by the trace (its own accounting of its batches)."""
        return int(self._raw.heap_bytes())

    def len(self) -> int:
        """Updates physically stored (all batches, including merges in progress)."""
        return int(self._raw.len())

    def __len__(self) -> int:
        return int(self._raw.len())

    def __repr__(self) -> str:
        return repr(self._raw)


class Trace(_Reader):
    """An arranged collection: updates ``(record, time, diff)`` indexed by key then value,
    held as a spine of immutable batches that merge progressively and compact times by the
    meet of the readers' compaction frontiers.

    The trace object is the writer and a reader; :meth:`handle` creates more readers.
    Records are ``key_columns`` key columns followed by value columns.
    """

    __slots__ = ()
    _raw: _core.Trace

    def __init__(self, dtypes: Sequence[str], key_columns: int, time_dims: int = 1) -> None:
        """An empty trace of records with columns of ``dtypes`` (``"int64"``, ``"uint64"``,
        ``"float64"``, ``"bool"``, ``"str"``) and times of ``time_dims`` coordinates."""
        key_columns = _count_arg(key_columns, "Trace: key_columns")
        time_dims = _count_arg(time_dims, "Trace: time_dims", 1)
        self._raw = _core.Trace(list(dtypes), key_columns, time_dims)

    @classmethod
    def _wrap(cls, raw: Any) -> Trace:
        t = cls.__new__(cls)
        t._raw = raw
        return t

    @classmethod
    def from_columns(
        cls,
        columns: Sequence[ArrayLike],
        key_columns: int,
        times: TimesLike | None = None,
        diffs: ArrayLike | None = None,
    ) -> Trace:
        """A trace holding one batch built from columns; dtypes are taken from the arrays,
        the time dimension from ``times`` (default: all at the least time, diff 1)."""
        return cls._wrap(
            _core.Trace.from_columns(
                _columns(columns), key_columns, as_times(times), as_diffs(diffs)
            )
        )

    @classmethod
    def from_static_pairs(cls, src: ArrayLike, dst: ArrayLike, time_dims: int = 1) -> Trace:
        """The trace of a static graph: edges ``(src, dst)`` at the least time, diff 1 each
        (repeated edges add up), keyed by ``src``.

        int64/uint64 ids are radix-sorted (packed into one word when they fit) and stored
        narrowed to 32 bits when every id fits, about 5 bytes per edge for a graph with 10
        edges per node.
        """
        return cls._wrap(
            _core.Trace.from_static_pairs(as_column(src, "src"), as_column(dst, "dst"), time_dims)
        )

    def insert(
        self,
        columns: Sequence[ArrayLike],
        times: TimesLike | None = None,
        diffs: ArrayLike | None = None,
        *,
        upper: FrontierLike | None = None,
        sorted: bool = False,
    ) -> None:
        """Builds a batch from columns and adds it to the trace.

        ``times``: ``(n, time_dims)`` (or ``(n,)``) int64, default the least time; ``diffs``:
        int64, default 1. Every time must be in the future of the trace's compaction
        frontier (:class:`~ddflow.errors.TimeError`). ``upper`` becomes the trace's upper
        frontier (default: one past the batch's largest first coordinate, joined with the
        previous upper). With ``sorted=True`` the updates must already be in trace order
        (:class:`~ddflow.errors.UnsortedInputError` otherwise) and skip the sort.
        """
        self._raw.insert(
            _columns(columns),
            as_times(times),
            as_diffs(diffs),
            upper=None if upper is None else _frontier(upper, "upper"),
            sorted=sorted,
        )

    def exert(self, fuel: int | None = None) -> bool:
        """Does up to ``fuel`` units of merge work (all of it if ``None``): finishes merges,
        merges batches into one, compacts. Returns whether work remains."""
        if fuel is not None:
            fuel = _count_arg(fuel, "exert: fuel")
        return bool(self._raw.exert(fuel))

    def n_batches(self) -> int:
        """Number of batches (the two inputs of a merge in progress count separately)."""
        return int(self._raw.n_batches())

    def readers(self) -> int:
        """Number of live readers (this trace and its unreleased handles)."""
        return int(self._raw.readers())

    def handle(self) -> TraceHandle:
        """A new reader starting at this trace's compaction frontier. The trace does not
        compact past it until it advances or is released (or garbage collected)."""
        return TraceHandle._wrap(self._raw.handle())


class TraceHandle(_Reader):
    """A reader of a :class:`Trace` with its own compaction frontier; a context manager
    that releases itself on exit."""

    __slots__ = ()
    _raw: _core.TraceHandle

    @classmethod
    def _wrap(cls, raw: Any) -> TraceHandle:
        h = cls.__new__(cls)
        h._raw = raw
        return h

    def release(self) -> None:
        """Releases this reader's hold on compaction (idempotent). Reading afterwards raises
        :class:`~ddflow.errors.InvalidValueError`."""
        self._raw.release()

    @property
    def released(self) -> bool:
        """Whether :meth:`release` was called."""
        return bool(self._raw.released)

    def __enter__(self) -> TraceHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
