"""``InputSession``: feeding updates ``(record, time, diff)`` into a dataflow input.

Records are validated in Python (arity, types, int64 range; times against the input's
frontier) so that errors name the input, the column and the value and nothing is accepted
partially. Single-record updates are buffered in per-column lists and handed to the engine as
one batch before the dataflow next runs (never one engine call per record); ``update_batch``
takes whole numpy / pyarrow columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from threading import RLock
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow._core import Engine
from ddflow.batch_columns import all_null, check_names, exact_column, null_column
from ddflow.dtypes import (
    INT64_MAX,
    INT64_MIN,
    BinaryColumn,
    WordColumn,
    arrow_columns,
    arrow_utf8_column,
    check_int64,
    check_int64_min,
    check_utf8,
    coerce_column,
    column_dtype,
    dtype_name,
    empty_column,
    nullable_column,
    scalar_dtype,
    to_column,
)
from ddflow.engine import AttachedEngine, Runtime
from ddflow.errors import (
    ColumnNotFoundError,
    DdflowError,
    InvalidValueError,
    PersistenceError,
    SchemaTypeError,
    ShapeError,
    TimeError,
)
from ddflow.gate import EngineGate, interrupts_deferred, ungated
from ddflow.logical_types import (
    NULL_WORDS,
    is_logical,
    name_of_arrow,
    physical,
    scalar_kind,
    word_of,
)
from ddflow.times import Coords, Time, is_int, less_equal

__all__ = ["InputSession"]

_PY_TYPES: dict[str, type] = {"int64": int, "float64": float, "bool": bool, "str": str}

_INT64 = np.dtype(np.int64)
_FLUSH_AT = 1 << 16
"""Buffered single-record updates handed to the engine at once when this many accumulate."""


def _utf8_ok(value: str) -> bool:
    """Whether a str is valid Unicode text (encodable as UTF-8: no lone surrogates)."""
    if value.isascii():
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _plain_int64(values: object) -> TypeGuard[npt.NDArray[np.int64]]:
    """Whether ``values`` is a C-contiguous 1-D int64 numpy array (taken as it is)."""
    return (
        type(values) is np.ndarray
        and values.dtype == _INT64
        and values.ndim == 1
        and values.flags.c_contiguous
    )


def _int64_checker(
    columns: Sequence[int], str_columns: Sequence[int] = ()
) -> Callable[[tuple[Any, ...]], bool]:
    """A fast test that a record's int columns (Python ints) fit in int64 and its str
    columns are valid text (records failing it take the checked path, which names the
    problem). ``-2**63`` is int64's null word: it takes the checked path, which refuses it."""
    lo, hi = INT64_MIN + 1, INT64_MAX
    if str_columns:
        ints = _int64_checker(columns)
        strs = tuple(str_columns)
        return lambda record: ints(record) and all(_utf8_ok(record[k]) for k in strs)
    if not columns:
        return lambda record: True
    if len(columns) == 1:
        (i,) = columns
        return lambda record: lo <= record[i] <= hi
    if len(columns) == 2:
        i, j = columns
        return lambda record: lo <= record[i] <= hi and lo <= record[j] <= hi
    return lambda record: all(lo <= record[k] <= hi for k in columns)


class InputSession:
    """Feeds one input of a dataflow: ``update_at``, ``update_batch``, ``advance_to``."""

    def __init__(
        self,
        flow: Runtime,
        node: int,
        name: str,
        columns: Sequence[str],
        dtypes: Sequence[str | None],
    ) -> None:
        """Built by ``Dataflow.new_input``."""
        self.flow = flow
        self.node = node
        self.name = name
        self.columns: tuple[str, ...] = tuple(columns)
        self._dtypes: list[str | None] = list(dtypes)
        self._declared: list[str | None] = list(dtypes)
        self._accepted = False
        """Whether the engine has accepted a batch of this input (its dtypes are fixed
        there); until then a refused first batch leaves the dtypes open again."""
        self._frontier: Coords | None = None
        self._closed = False
        self._buf_rows: list[Sequence[Any]] = []
        """Buffered records, one tuple (or list) of column values each."""
        self._buf_times: list[Coords] = []
        self._buf_diffs: list[int] = []
        self._fast: tuple[type, ...] | None = None
        """Python types of a record that needs no conversion (set once dtypes are fixed and
        the dataflow has started): records of exactly these types take a fast path."""
        self._ints_fit: Callable[[tuple[Any, ...]], bool] = _int64_checker([])
        self._frontier_int: int | None = None
        self._gate: EngineGate = self.flow.gate
        self._lock: RLock = self._gate.lock
        """The engine gate and its lock (taken by ``update_at``'s fast path)."""
        self._engine: Any = None
        self._fast_ints = False
        """Whether every column is int64, while ``_fast`` is set (its dtypes are fixed)."""
        """The engine without its gate (:func:`~ddflow.gate.ungated`), for the fast paths'
        calls, made with the gate held; set on first use."""
        self._unread: frozenset[int] = frozenset()
        """Columns no operator reads (``read_columns``): Arrow columns taken as nulls."""
        self.on_first_use: Callable[[], None] | None = None
        """Called before the input is first fed, advanced or asked its frontier (a
        persistent dataflow restores its inputs then)."""
        self.recorder: (
            Callable[[list[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]], None] | None
        ) = None
        """Given every batch handed to the engine (columns, times, diffs) once it accepted
        it (a persistent dataflow logs what is fed by hand)."""
        self.on_advance: Callable[[int | None], None] | None = None
        """Called with the new frontier (None: closing) before the engine learns of it."""
        self.source_name: str | None = None
        """The source feeding this input in a persistent dataflow: it resumes from what the
        source read, so feeding it by hand too is refused (it could not be restored)."""

    def __repr__(self) -> str:
        return f"InputSession({self.name!r}: ({', '.join(self.columns)}), time={self.time!r})"

    @property
    def dtypes(self) -> dict[str, str | None]:
        """Column dtypes (``None`` until fixed by the first update)."""
        return dict(zip(self.columns, self._dtypes, strict=True))

    @property
    def time(self) -> Time | None:
        """The input's current time (its frontier, set by ``advance_to``); None when closed."""
        if self._closed:
            return None
        return self.flow.time_shape.to_user(self._current())

    def _current(self) -> Coords:
        if self._frontier is None:
            self._frontier = self.flow.time_shape.zero()
        return self._frontier

    def _what(self) -> str:
        return f"input {self.name!r}"

    def declare(self, engine: Engine | AttachedEngine) -> None:
        """Fixes the declared dtypes in the engine (an empty batch) when every column has
        one, so the plan knows them before any data arrives (an outer join pads the other
        side's columns with nulls of these dtypes). A declared dtype that conflicts with a
        column another input fixed raises ``SchemaTypeError`` here."""
        if self._accepted or any(d is None for d in self._declared):
            return
        arrays = [empty_column(d) for d in self._declared if d is not None]
        dims = len(self._current())
        times = np.zeros((0, dims), dtype=np.int64)
        engine.push(self.node, arrays, times, np.zeros(0, dtype=np.int64))
        self._accepted = True

    def skip_unread(self, columns: frozenset[int]) -> None:
        """Takes the columns ``columns`` (that no operator reads) as nulls from now on,
        where a batch gives them as Arrow arrays of the column's dtype (``read_columns``)."""
        self._unread = columns

    @property
    def unread_columns(self) -> tuple[str, ...]:
        """The columns no operator of the plan reads, known once the dataflow has started:
        ``update_batch`` takes them as nulls when given as Arrow columns of their dtype."""
        return tuple(c for i, c in enumerate(self.columns) if i in self._unread)

    def _unread_nulls(self, i: int, values: object) -> WordColumn | None:
        """Nulls in place of Arrow column ``values`` for unread column ``i`` when its dtype is
        the column's (else ``None``: converted as any column)."""
        want = self._dtypes[i]
        if want is None or not isinstance(values, pa.Array | pa.ChunkedArray):
            return None
        if name_of_arrow(values.type) != want:
            return None
        words = np.full(len(values), NULL_WORDS[physical(want)], dtype=np.uint64)
        return WordColumn(want, words)

    def _check_open(self) -> None:
        if self._closed:
            raise DdflowError(f"{self._what()} is closed; it accepts no more updates")

    def _take_gate(self) -> RLock:
        """Takes the engine's gate for a short path and returns its lock, which the caller
        releases: ``EngineGate.wait`` with the uncontended case first (a user function of
        the engine's own run gets ``ReentrancyError``, holding nothing)."""
        lock = self._lock
        if not lock.acquire(False):  # positional: a keyword costs ~2x here
            self.flow.gate.wait()
        if self._gate.running is not None:
            try:
                self._gate.check_idle()
            except BaseException:
                lock.release()
                raise
        return lock

    # -- single records -----------------------------------------------------------------------

    def update_at(self, record: Any, time: Time, diff: int = 1) -> None:
        """Adds ``diff`` copies of ``record`` at ``time`` (which must not be before the input's
        frontier). ``record`` is a tuple (or list, or dict by column name); a bare value is
        accepted for a one-column input."""
        if self._fast is not None:
            # The buffer is shared with other threads and the engine's hand-off: the checks
            # (the frontier) and the appends happen under the engine's gate.
            lock = self._take_gate()
            try:
                fast = self._fast
                if (
                    fast is not None
                    and type(record) is tuple
                    and type(time) is int
                    and type(diff) is int
                    and tuple(map(type, record)) == fast
                    and self._ints_fit(record)
                    and INT64_MIN <= diff <= INT64_MAX
                    and self._frontier_int <= time <= INT64_MAX  # type: ignore[operator]
                ):
                    self._buf_rows.append(record)
                    self._buf_times.append((time,))
                    self._buf_diffs.append(diff)
                    if len(self._buf_diffs) >= _FLUSH_AT:
                        self.flush()
                    return
            finally:
                lock.release()
        self._first_use()
        self._refuse_by_hand()
        with self.flow.gate:
            self._update_checked(record, time, diff)

    def _update_checked(self, record: Any, time: Time, diff: int) -> None:
        """``update_at`` with every check and conversion (the general path; the caller
        holds the gate)."""
        self._check_open()
        values = self._record(record)
        new_dtypes = self._check_values(values)
        if not is_int(diff):
            raise SchemaTypeError(f"{self._what()}: diff must be an int, got {diff!r}")
        check_int64(int(diff), f"{self._what()}: diff")
        coords = self._time(time)
        self.flow.freeze()
        self._commit_dtypes(new_dtypes)
        self._buf_rows.append(values)
        self._buf_times.append(coords)
        self._buf_diffs.append(int(diff))
        if len(self._buf_diffs) >= _FLUSH_AT:
            self.flush()

    def insert(self, record: Any, time: Time | None = None) -> None:
        """Adds one copy of ``record`` at ``time`` (default: the input's current time)."""
        self.update_at(record, self._default_time(time), 1)

    def remove(self, record: Any, time: Time | None = None) -> None:
        """Removes one copy of ``record`` at ``time`` (default: the input's current time)."""
        self.update_at(record, self._default_time(time), -1)

    def update(self, record: Any, diff: int) -> None:
        """Adds ``diff`` copies of ``record`` at the input's current time."""
        self.update_at(record, self._default_time(None), diff)

    def _default_time(self, time: Time | None) -> Time:
        if time is not None:
            return time
        self._check_open()
        return self.flow.time_shape.to_user(self._current())

    def _record(self, record: Any) -> list[Any]:
        """The record's values in column order, checking arity."""
        n = len(self.columns)
        if isinstance(record, Mapping):
            missing = [c for c in self.columns if c not in record]
            extra = [k for k in record if k not in self.columns]
            if missing or extra:
                raise SchemaTypeError(
                    f"{self._what()}: record {record!r} does not match columns "
                    f"{list(self.columns)}"
                )
            return [record[c] for c in self.columns]
        if isinstance(record, tuple | list):
            if len(record) != n:
                raise SchemaTypeError(
                    f"{self._what()}: record {tuple(record)!r} has {len(record)} values, "
                    f"the input has {n} columns {list(self.columns)}"
                )
            return list(record)
        if n == 1:
            return [record]
        raise SchemaTypeError(
            f"{self._what()}: record {record!r} must be a tuple of {n} values "
            f"{list(self.columns)}"
        )

    def _check_values(self, values: list[Any]) -> dict[int, str]:
        """Type-checks values against the dtypes; returns the dtypes this record would fix."""
        fixes: dict[int, str] = {}
        for i, v in enumerate(values):
            kind = scalar_dtype(v) or scalar_kind(v)
            column = self.columns[i]
            if v is None:
                if self._dtypes[i] is None:
                    raise SchemaTypeError(
                        f"{self._what()}, column {column!r}: a null (None) before the column's "
                        "dtype is known; declare it (new_input({name: dtype})) or send a value "
                        "first"
                    )
                continue
            if kind is None:
                raise SchemaTypeError(
                    f"{self._what()}, column {column!r}: unsupported value {v!r} of type "
                    f"{type(v).__name__} (use int, float, bool or str)"
                )
            want = self._dtypes[i]
            if want == "binary" or kind == "binary":
                if kind != "binary" or want not in (None, "binary"):
                    raise SchemaTypeError(
                        f"{self._what()}, column {column!r}: value {v!r} is {kind}, the "
                        f"column is {want}"
                    )
                values[i] = bytes(v)  # buffered as bytes, interned at flush
                if want is None:
                    fixes[i] = "binary"
                continue
            if is_logical(want) or is_logical(kind):
                # Dates, decimals, narrow ints...: buffered as their engine words.
                target = want or kind
                assert target is not None
                values[i] = word_of(v, target, f"{self._what()}, column {column!r}")
                if want is None:
                    fixes[i] = target
                continue
            if want == "float64" and kind == "int64":
                kind = "float64"  # ints widen to a float column
            if want is None:
                fixes[i] = kind
            elif kind != want:
                raise SchemaTypeError(
                    f"{self._what()}, column {column!r}: value {v!r} is {kind}, the column is "
                    f"{want}"
                )
            if kind == "int64":
                check_int64(int(v), f"{self._what()}, column {column!r}")
                if int(v) == INT64_MIN:
                    raise InvalidValueError(
                        f"{self._what()}, column {column!r}: value {INT64_MIN} is int64's "
                        "reserved null word (the one int64 value ddflow cannot hold; send "
                        "None for a null)"
                    )
                values[i] = int(v)
            elif kind == "float64":
                values[i] = float(v)
            elif kind == "bool":
                values[i] = bool(v)
            elif kind == "str":
                check_utf8([v], f"{self._what()}, column {column!r}")
        return fixes

    def _commit_dtypes(self, fixes: Mapping[int, str]) -> None:
        for i, kind in fixes.items():
            self._dtypes[i] = kind
        if self._fast is None and all(d is not None for d in self._dtypes):
            ints = [i for i, d in enumerate(self._dtypes) if d == "int64"]
            strs = [i for i, d in enumerate(self._dtypes) if d == "str"]
            self._ints_fit = _int64_checker(ints, strs)
            self._sync_frontier()

    def _sync_frontier(self) -> None:
        """Enables the fast path of ``update_at`` for 1-D times, caching the frontier."""
        frontier = self._current()
        if (
            len(frontier) == 1
            and all(d is not None for d in self._dtypes)
            and self.source_name is None
        ):
            self._frontier_int = frontier[0]
            if not any(is_logical(d) for d in self._dtypes):
                self._gate = self.flow.gate  # the plan is frozen: its engine is fixed
                self._lock = self._gate.lock
                self._fast = tuple(_PY_TYPES[d] for d in self._dtypes if d is not None)
                self._fast_ints = self._ints_only()

    def _time(self, time: Time) -> Coords:
        """A validated time for a new update: the right shape, not before the frontier."""
        coords = self.flow.time_shape.normalize(time, self._what())
        frontier = self._current()
        if not less_equal(frontier, coords):
            raise TimeError(
                f"{self._what()}: time {time!r} is not in the future of the input's frontier "
                f"{self.flow.time_shape.to_user(frontier)!r} (set by advance_to)"
            )
        return coords

    # -- batches ------------------------------------------------------------------------------

    def update_batch(
        self,
        columns: Mapping[str, Any] | Sequence[Any] | Any,
        times: Any = None,
        diffs: Any = None,
    ) -> None:
        """Adds many updates at once from numpy / pyarrow / list columns.

        ``columns``: a dict by column name, a sequence in column order, or a pyarrow
        Table / RecordBatch. ``times``: a scalar time for all, or int64 of shape (n,) (int
        times) or (n, k); default the input's current time. ``diffs``: an int or int64 (n,);
        default +1. Validated as a whole: on error nothing is added.
        """
        if self._fast is not None and type(columns) is dict and self._fast_ints:
            # A started input of int64 columns given int64 numpy columns: the short path
            # below; anything else (and every error) goes the general way.
            lock = self._take_gate()
            try:
                if self._batch_of_ints(columns, times, diffs):
                    return
            finally:
                lock.release()
        self._first_use()
        self._refuse_by_hand()
        with self.flow.gate:
            self._update_batch(columns, times, diffs)

    def _batch_of_ints(self, columns: dict[Any, Any], times: Any, diffs: Any) -> bool:
        """``update_batch``'s short path, with the gate held: every column a C-contiguous
        1-D int64 numpy array without int64's null word, times an int or such an array not
        before the frontier (or none), diffs such an array (or none). Pushes the batch and
        returns True; returns False, having done nothing, for anything else. (Columns no
        operator reads are taken as nulls only from Arrow arrays: numpy ones go as given.)"""
        frontier = self._frontier_int
        if (
            self._fast is None
            or frontier is None
            or self.on_first_use is not None
            or self.recorder is not None
            or len(columns) != len(self.columns)
        ):
            return False
        arrays: list[npt.NDArray[np.int64]] = []
        for name in self.columns:
            v = columns.get(name)
            if not _plain_int64(v) or (arrays and len(v) != len(arrays[0])):
                return False
            arrays.append(v)
        n = len(arrays[0])
        if n == 0 or any(int(v.min()) == INT64_MIN for v in arrays):
            return False
        if times is None:
            times = frontier
        if type(times) is int:
            if not frontier <= times <= INT64_MAX:
                return False
            time_arr = np.broadcast_to(np.array([[times]], dtype=np.int64), (n, 1))
        elif _plain_int64(times) and len(times) == n and int(times.min()) >= frontier:
            time_arr = times.reshape(n, 1)
        else:
            return False
        if diffs is None:
            diff_arr = np.broadcast_to(np.int64(1), (n,))
        elif _plain_int64(diffs) and len(diffs) == n:
            diff_arr = diffs
        else:
            return False
        if self._buf_diffs:
            self._flush()
        engine = self._engine
        if engine is None:
            engine = self._engine = ungated(self.flow.engine())
        with interrupts_deferred():
            self._push_checked(lambda: engine.push(self.node, arrays, time_arr, diff_arr), "push")
        return True

    def push_from_source(self, columns: Any, times: Any, diffs: Any) -> None:
        """``update_batch`` for the run loop, which feeds the input from its source."""
        with self.flow.gate:
            self._update_batch(columns, times, diffs)

    def _refuse_by_hand(self) -> None:
        if self.source_name is not None:
            raise PersistenceError(
                f"{self._what()} is fed by {self.source_name} in a persistent dataflow, "
                "which restores it from what the source read: it cannot be fed by hand too "
                "(feed a separate input by hand and combine the two collections)"
            )

    def _update_batch(self, columns: Any, times: Any, diffs: Any) -> None:
        """``update_batch`` with the gate held."""
        self._check_open()
        arrays = self._batch_columns(columns)
        n = len(arrays[0]) if arrays else 0
        for name, arr in zip(self.columns, arrays, strict=True):
            if len(arr) != n:
                raise ShapeError(
                    f"{self._what()}: column {name!r} has {len(arr)} rows, "
                    f"column {self.columns[0]!r} has {n}"
                )
        fixes = self._check_batch_dtypes(arrays)
        time_arr = self._batch_times(times, n)
        diff_arr = self._batch_diffs(diffs, n)
        self.flow.freeze()
        if n == 0:
            self._commit_dtypes(fixes)
            return
        self.flush()
        # The dtypes are fixed once the engine has accepted the batch: it refuses a first
        # batch whose dtypes disagree with a column the plan links it with (a join key, say).
        engine = self.flow.engine()
        with interrupts_deferred():  # pushed and recorded as such, or not pushed
            engine.push(self.node, arrays, time_arr, diff_arr)
            self._accepted = True
            self._commit_dtypes(fixes)
            if self.recorder is not None:
                self.recorder(arrays, time_arr, diff_arr)

    def push_logged(
        self, columns: list[Any], times: npt.NDArray[np.int64], diffs: npt.NDArray[np.int64]
    ) -> None:
        """Pushes a batch as the engine took it before (engine columns, int times), as a
        persistent dataflow replays what was fed by hand; not recorded again."""
        with self.flow.gate:
            self._check_open()
            arrays = list(columns)
            fixes = self._check_batch_dtypes(arrays)
            time_arr = self._batch_times(times, len(diffs))
            self.flow.freeze()
            engine = self.flow.engine()
            with interrupts_deferred():
                engine.push(self.node, arrays, time_arr, diffs)
                self._accepted = True
                self._commit_dtypes(fixes)

    def _first_use(self) -> None:
        """Runs what the dataflow asked to run before the input is first used (it clears
        the hook once that succeeded)."""
        if self.on_first_use is not None:
            self.on_first_use()

    def frontier(self) -> Time | None:
        """The time from which the program feeds this input: its frontier (None once
        closed). In a persistent dataflow the first call restores the inputs from the
        checkpoint directory: every update before the returned time is back, and the
        program feeds again from it (see the persistence docs); 0 in a new directory."""
        self._first_use()
        return self.time

    def _batch_columns(self, columns: Any) -> list[Any]:
        check_names(columns, self._what())
        table = arrow_columns(columns)
        if table is not None:
            columns = table
        elif hasattr(columns, "columns") and hasattr(columns, "to_numpy"):
            # A pandas DataFrame without the Arrow stream protocol: its columns by name.
            columns = {str(name): columns[name] for name in columns.columns}
        if isinstance(columns, Mapping):
            unknown = [k for k in columns if k not in self.columns]
            missing = [c for c in self.columns if c not in columns]
            if unknown:
                raise ColumnNotFoundError(
                    f"{self._what()}: unknown columns {unknown}; the input has "
                    f"{list(self.columns)}"
                )
            if missing:
                raise SchemaTypeError(f"{self._what()}: missing columns {missing}")
            items = [columns[c] for c in self.columns]
        elif isinstance(columns, Sequence) and not isinstance(columns, str):
            if len(columns) != len(self.columns):
                raise SchemaTypeError(
                    f"{self._what()}: {len(columns)} columns given, the input has "
                    f"{len(self.columns)} {list(self.columns)}"
                )
            items = list(columns)
        else:
            raise SchemaTypeError(
                f"{self._what()}: columns must be a dict by name, a list, or a pyarrow Table"
            )
        out: list[Any] = []
        for i, (c, v) in enumerate(zip(self.columns, items, strict=True)):
            nulls = self._unread_nulls(i, v) if i in self._unread else None
            if nulls is not None:
                out.append(nulls)
                continue
            what = f"{self._what()}, column {c!r}"
            # Arrow strings cross as their buffers; everything else as numpy arrays, or as
            # core words when the column has nulls.
            utf8 = arrow_utf8_column(v, what, nullable=True)
            if utf8 is not None:
                out.append(utf8)
                continue
            exact = exact_column(_numpy_or_arrow(v), what, self._dtypes[i])
            want = self._dtypes[i]
            if want is not None and all_null(exact):  # no dtype of its own: the column's
                out.append(null_column(want, len(exact)))
            elif isinstance(exact, BinaryColumn):
                out.append(exact)
            else:
                out.append(to_column(exact, what, nullable=True))
        return out

    def _check_batch_dtypes(self, arrays: list[Any]) -> dict[int, str]:
        fixes: dict[int, str] = {}
        for i, arr in enumerate(arrays):
            kind = column_dtype(arr)
            want = self._dtypes[i]
            if len(arr) == 0:
                if want is not None:
                    arrays[i] = empty_column(want)
                continue
            if kind == "int64" and not isinstance(arr, WordColumn):
                check_int64_min(arr, f"{self._what()}, column {self.columns[i]!r}")
            if want == "float64" and kind == "int64":
                # ints widen to a float column
                if isinstance(arr, WordColumn):
                    arrays[i] = arr = arr.as_float64()
                else:
                    arrays[i] = arr = arr.astype(np.float64)
                kind = "float64"
            if want is not None and kind != want and is_logical(want):
                arrays[i] = arr = coerce_column(
                    arr, kind, want, f"{self._what()}, column {self.columns[i]!r}"
                )
                kind = want
            if want is None:
                fixes[i] = kind
            elif kind != want:
                raise SchemaTypeError(
                    f"{self._what()}, column {self.columns[i]!r}: values of dtype {kind} "
                    f"(first {arr[0]!r}), the column is {want}"
                )
        return fixes

    def _batch_times(self, times: Any, n: int) -> npt.NDArray[np.int64]:
        what = self._what()
        if times is None:
            times = self.flow.time_shape.to_user(self._current())
        shape = self.flow.time_shape
        arr = shape.array(times, n, what)
        frontier = np.asarray(self._current(), dtype=np.int64)
        if n and arr.shape[1] == frontier.shape[0]:
            behind = ~np.all(arr >= frontier, axis=1)
            if behind.any():
                bad = shape.to_user(arr[np.argmax(behind)].tolist())
                raise TimeError(
                    f"{what}: time {bad!r} is not in the future of the input's frontier "
                    f"{shape.to_user(self._current())!r} (set by advance_to)"
                )
        return arr

    def _batch_diffs(self, diffs: Any, n: int) -> npt.NDArray[np.int64]:
        what = f"{self._what()}: diffs"
        # One diff for all: a read-only broadcast (the engine converts it once).
        if diffs is None:
            return np.broadcast_to(np.int64(1), (n,))
        if is_int(diffs):
            check_int64(int(diffs), what)
            return np.broadcast_to(np.int64(int(diffs)), (n,))
        arr = to_column(diffs, what)
        if arr.dtype.kind != "i":
            raise SchemaTypeError(f"{what} must be integers, got dtype {arr.dtype}")
        if arr.shape != (n,):
            raise ShapeError(f"{what}: {len(arr)} diffs for {n} updates")
        return arr

    # -- frontier -----------------------------------------------------------------------------

    def advance_to(self, time: Time) -> None:
        """Promises no more updates at times not ``>= time``; lets outputs before it complete."""
        if self._fast is not None and type(time) is int and self.on_first_use is None:
            # Int times on a started input (the fast path of ``update_at``): the check, the
            # hand-off of the buffer and the advance under one hold of the gate. Anything
            # else, and every error, takes the general path below.
            lock = self._take_gate()
            try:
                frontier = self._frontier_int
                if self._fast is not None and frontier is not None and frontier <= time:
                    if time <= INT64_MAX:
                        self._advance_int(time, frontier)
                        return
            finally:
                lock.release()
        self._first_use()
        with self.flow.gate:
            self._advance_to(time)

    def _advance_int(self, time: int, frontier: int) -> None:
        """``advance_to(time)`` on the fast path: the gate held, ``time`` an int64 not before
        the input's ``frontier``."""
        if self._buf_diffs:
            self._flush()
        if self.on_advance is not None and time != frontier:
            self.on_advance(time)
        engine = self._engine
        if engine is None:
            engine = self._engine = ungated(self.flow.engine())
        try:
            engine.advance_input(self.node, [time])
        except RuntimeError as exc:
            self._gate.raise_if_borrowed("advance_input", exc)
            raise
        self._frontier = (time,)
        self._frontier_int = time

    def _advance_to(self, time: Time) -> None:
        """``advance_to`` with the gate held."""
        self._check_open()
        coords = self.flow.time_shape.normalize(time, f"{self._what()}: advance_to")
        current = self._current()
        if not less_equal(current, coords):
            raise TimeError(
                f"{self._what()}: advance_to({time!r}) would go backwards from "
                f"{self.flow.time_shape.to_user(current)!r}"
            )
        self.flow.freeze()
        self.flush()
        if self.on_advance is not None and coords != current:
            self.on_advance(int(coords[0]))
        self.flow.engine().advance_input(self.node, list(coords))
        self._frontier = coords
        if self._fast is not None:
            self._sync_frontier()

    def close(self) -> None:
        """Closes the input: no more updates; outputs can complete for every time."""
        self._first_use()
        with self.flow.gate:
            if self._closed:
                return
            self.flow.freeze()
            self.flush()
            if self.on_advance is not None:
                self.on_advance(None)
            self.flow.engine().close_input(self.node)
            self._closed = True
            self._fast = None

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def flush(self) -> None:
        """Hands buffered single-record updates to the engine as one batch."""
        with self.flow.gate:
            if self._buf_diffs:
                self._flush()

    def flush_held(self) -> None:
        """``flush`` by a caller that holds the gate (so no thread appends meanwhile)."""
        if self._buf_diffs:
            self._flush()

    def _ints_only(self) -> bool:
        """Whether every column is int64 (or not fixed yet): buffered rows go to the engine
        as they are (``push_int_rows``)."""
        return all(kind in (None, "int64") for kind in self._dtypes)

    def _flush(self) -> None:
        """``flush`` with the gate held and updates buffered."""
        if self.recorder is None and (
            self._fast_ints if self._fast is not None else self._ints_only()
        ):
            # Int64 rows go to the engine as buffered, without numpy arrays (a single
            # update's hand-off); any other value sends them the general way below.
            engine = self._engine
            if engine is None:
                engine = self._engine = ungated(self.flow.engine())
            buffered = (self._buf_rows, self._buf_times, self._buf_diffs)
            width = len(self._dtypes)
            with interrupts_deferred():
                pushed = self._push_checked(
                    lambda: engine.push_int_rows(self.node, width, *buffered), "push_int_rows"
                )
                if pushed:
                    self._accepted = True
                    self._clear_buffer()
            if pushed:
                return
        arrays: list[Any] = []
        rows = self._buf_rows
        for j, kind in enumerate(self._dtypes):
            values = list(map(itemgetter(j), rows))  # column j of every buffered row
            if kind == "binary":
                arrays.append(BinaryColumn.of_arrow(pa.array(values, pa.binary())))
                continue
            if is_logical(kind):
                assert kind is not None
                null = NULL_WORDS[physical(kind)]
                words = np.fromiter(
                    (null if v is None else v & 0xFFFF_FFFF_FFFF_FFFF for v in values),
                    np.uint64,
                    len(values),
                )
                arrays.append(WordColumn(kind, words))
                continue
            if kind is not None and None in values:  # C-level scan; Python scalars only
                nulls = np.fromiter((v is None for v in values), np.bool_, len(values))
                fill: object = "" if kind == "str" else 0
                dense = [fill if v is None else v for v in values]
                if kind == "str":
                    arr = np.empty(len(values), dtype=object)
                    arr[:] = dense
                else:
                    arr = np.asarray(dense, dtype=np.dtype(kind))
                arrays.append(nullable_column(arr, nulls, kind, self._what()))
                continue
            if kind == "str":
                arr = np.empty(len(values), dtype=object)
                arr[:] = values
            else:
                arr = np.asarray(values, dtype=np.dtype(kind or "int64"))
            arrays.append(arr)
        times = np.asarray(self._buf_times, dtype=np.int64).reshape(len(self._buf_diffs), -1)
        diffs = np.asarray(self._buf_diffs, dtype=np.int64)
        engine = self.flow.engine()
        # Cleared only once the engine has accepted the batch: on error nothing is lost; and
        # a Ctrl-C waits until the buffer is pushed and cleared, so it is never pushed twice...
        with interrupts_deferred():
            self._push_buffer(engine, arrays, times, diffs)

    def _push_buffer(
        self,
        engine: Any,
        arrays: list[Any],
        times: npt.NDArray[np.int64],
        diffs: npt.NDArray[np.int64],
    ) -> None:
        """Pushes the buffer's batch and clears the buffer."""
        self._push_checked(lambda: engine.push(self.node, arrays, times, diffs), "push")
        self._accepted = True
        if self.recorder is not None:
            self.recorder(arrays, times, diffs)
        self._clear_buffer()

    def _push_checked(self, push: Callable[[], Any], method: str) -> Any:
        """Runs ``push`` (a push of the whole buffer by the engine's ``method``); returns its
        result. A first batch
        refused for its dtypes refuses the buffer and opens the input's dtypes again (the
        caller marks the input accepted once something was pushed)."""
        try:
            result = push()
        except SchemaTypeError as exc:
            if self._accepted:
                raise
            # ... except a first batch the engine refuses for its dtypes (a column the plan
            # links with another input's, fixed differently): every buffered record has those
            # dtypes, so all of them are refused, and the input's dtypes are open again;
            # keeping them would refuse every later run.
            refused = len(self._buf_diffs)
            self._clear_buffer()
            self._dtypes = list(self._declared)
            self._fast = None
            self._ints_fit = _int64_checker([])
            exc.add_note(f"ddflow: the {refused} buffered updates of {self._what()} were refused")
            raise
        except RuntimeError as exc:  # the push may call the engine without its gated wrapper
            self._gate.raise_if_borrowed(method, exc)
            raise
        return result

    def _clear_buffer(self) -> None:
        self._buf_rows = []
        self._buf_times = []
        self._buf_diffs = []

    @staticmethod
    def parse_columns(
        columns: Sequence[str] | Mapping[str, Any] | str | Any,
    ) -> tuple[tuple[str, ...], list[str | None]]:
        """Column names and declared dtypes from ``("a", "b")``, ``{"a": "int64", ...}`` or
        a ``pyarrow.Schema``."""
        if isinstance(columns, str):
            columns = (columns,)
        if hasattr(columns, "names") and hasattr(columns, "field"):
            listed = list(columns.names)
            if len(set(listed)) != len(listed):
                raise InvalidValueError(f"column names repeat: {listed}")
            columns = {name: columns.field(name).type for name in listed}
        if isinstance(columns, Mapping):
            names = tuple(columns.keys())
            dtypes: list[str | None] = [dtype_name(v) for v in columns.values()]
        else:
            names = tuple(columns)
            dtypes = [None] * len(names)
        if not names:
            raise InvalidValueError("an input needs at least one column")
        for name in names:
            if not isinstance(name, str) or not name:
                raise InvalidValueError(f"column names must be non-empty str, got {name!r}")
        if len(set(names)) != len(names):
            raise InvalidValueError(f"column names repeat: {list(names)}")
        return names, dtypes


def _numpy_or_arrow(values: Any) -> Any:
    """A column as numpy or pyarrow: objects that only speak the Arrow PyCapsule protocol
    (a polars Series, say) become pyarrow arrays; pandas Series become numpy arrays."""
    import pyarrow as pa

    if isinstance(values, np.ndarray | pa.Array | pa.ChunkedArray):
        return values
    if hasattr(values, "__arrow_c_stream__"):
        return pa.chunked_array(values)
    if hasattr(values, "__arrow_c_array__"):
        return pa.array(values)
    if hasattr(values, "to_numpy") and hasattr(values, "dtype"):
        return values.to_numpy()
    return values
