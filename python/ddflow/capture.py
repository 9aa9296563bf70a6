"""Reading a running dataflow: ``Capture`` (output updates as Arrow tables) and ``Probe``.

A capture's state lives in Rust (``ddflow._core.CaptureState``): it takes the raw updates
the engine hands out, holds those at times the capture's frontier has not passed, and
returns the rest consolidated (summed per (record, time) with checked sums, zeros dropped).
It keeps either the whole history (``keep="history"``) or only the accumulated collection
at its frontier (``keep="state"``, memory bounded by the live data). Python only presents:
it builds pyarrow tables from the native buffers (strings as Arrow offsets and bytes, never
one Python object per value) and sorts them by time, then record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow._core import CaptureState
from ddflow.engine import Runtime
from ddflow.errorlog import describe
from ddflow.errors import DataError, InvalidValueError, PlanError, TimeError
from ddflow.logical_types import arrow_type, is_logical, to_arrow
from ddflow.times import Time, frontier_passed

__all__ = ["Capture", "Probe", "KEEP_MODES"]

KEEP_MODES = ("history", "state")
"""What a capture keeps: every completed update, or only the current accumulated state."""


def _numeric(values: npt.NDArray[Any], nulls: npt.NDArray[np.bool_] | None = None) -> pa.Array:
    """A 1-D numpy array of numbers or bools as a pyarrow array, numbers without a copy.

    Built from the array's buffer rather than with ``pa.array``: ``pa.array`` (and any
    ``to_numpy``) makes pyarrow import pandas when it is installed, some 35 MB of resident
    memory that reading a capture does not need. Other arrays go through ``pa.array``.
    """
    if values.ndim != 1 or values.dtype.kind not in "iufb" or not values.flags.c_contiguous:
        return pa.array(values, mask=nulls)
    n = len(values)
    bitmap, null_count = None, 0
    if nulls is not None and nulls.any():
        bitmap = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
        null_count = int(nulls.sum())
    if values.dtype.kind == "b":
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), n, [bitmap, data], null_count)
    typ = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(values)], null_count)


def _arrow(column: Any) -> pa.Array:
    """A native output column as a pyarrow array: numpy, or ``(offsets, utf8)`` for strings;
    a column with nulls comes as ``{"values": either, "nulls": bool array}``."""
    nulls = None
    if isinstance(column, dict):
        column, nulls = column["values"], column["nulls"]
    if isinstance(column, tuple):
        offsets, data = column
        n = len(offsets) - 1
        cls = pa.StringArray if offsets.dtype == np.int32 else pa.LargeStringArray
        if nulls is None:
            return cls.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))
        bitmap = np.packbits(~nulls, bitorder="little")
        return cls.from_buffers(
            n,
            pa.py_buffer(offsets),
            pa.py_buffer(data),
            pa.py_buffer(bitmap),
            int(nulls.sum()),
        )
    return _numeric(column, nulls)


class _Frontiered:
    """A top-level node whose frontier the engine reports."""

    def __init__(self, flow: Runtime, node: int, label: str) -> None:
        self.flow = flow
        self.node = node
        self.label = label

    def _raw_frontier(self) -> list[list[int]]:
        engine = self.flow.started_engine()
        return [] if engine is None else [list(f) for f in engine.frontier(self.node)]

    def frontier(self) -> list[Time]:
        """The output frontier: the least times that may still change ([] when complete).

        Before the dataflow starts this is the least time.
        """
        if self.flow.started_engine() is None:
            return [self.flow.time_shape.to_user(self.flow.time_shape.zero())]
        return [self.flow.time_shape.to_user(f) for f in self._raw_frontier()]

    def done(self, time: Time) -> bool:
        """Whether every output at times ``<= time`` is final (the frontier has passed it)."""
        coords = self.flow.time_shape.normalize(time, f"{self.label}: done()", fix=False)
        if self.flow.started_engine() is None:
            return False
        return frontier_passed(self._raw_frontier(), coords)


class Probe(_Frontiered):
    """Tells how far a collection's output is complete: ``done(t)``, ``frontier()``."""

    def __repr__(self) -> str:
        return f"Probe(#{self.node}, frontier={self.frontier()})"


class Capture(_Frontiered):
    """The output of a collection: ``updates()``, ``at(t)``, ``state()`` and subscribers."""

    def __init__(
        self,
        flow: Runtime,
        node: int,
        columns: Sequence[str],
        label: str,
        errors: str = "raise",
        keep: str = "history",
    ) -> None:
        """Built by ``Collection.capture()``."""
        super().__init__(flow, node, label)
        if keep not in KEEP_MODES:
            raise PlanError(f'{label}: keep must be "history" or "state", got {keep!r}')
        self.errors_mode = errors
        self.keep = keep
        self.columns = tuple(columns)
        self._native: CaptureState | None = None
        self._subscribers: list[Callable[[pa.Table], Any]] = []
        self._undelivered: list[pa.Table] = []

    def __repr__(self) -> str:
        return f"Capture(#{self.node}: ({', '.join(self.columns)}), keep={self.keep!r})"

    # -- pulling from the engine --------------------------------------------------------------

    def _dims(self) -> int:
        times = self.flow.time_shape
        return times.dims or len(times.zero())

    def _state(self) -> CaptureState:
        if self._native is None:
            self._native = CaptureState(self.label, list(self.columns), self._dims(), self.keep)
        return self._native

    def _poll(self) -> None:
        """Takes new updates from the engine into the native state; keeps the newly completed
        ones for subscribers."""
        engine = self.flow.started_engine()
        if engine is None:
            return
        self.flow.poll_errors()
        fresh = engine.capture_poll(self.node, self._state())
        if fresh is not None and self._subscribers:
            self._undelivered.append(self._timed(*fresh))

    def _deliver(self) -> None:
        """Polls the engine and calls subscribers with the newly completed updates."""
        self._poll()
        if not self._undelivered:
            return
        fresh = pa.concat_tables(self._undelivered)
        self._undelivered = []
        table = self._sorted(fresh, with_time=True)
        first: Exception | None = None
        for fn in self._subscribers:  # a subscriber that raises makes no other miss the round
            try:
                fn(table)
            except Exception as exc:
                exc.add_note(
                    f"ddflow: raised by subscriber {_describe(fn)} of {self.label} "
                    f"(the other subscribers were called)"
                )
                first = first or exc
        if first is not None:
            raise first

    # -- presenting ---------------------------------------------------------------------------

    def _dtypes(self) -> list[str]:
        """The record columns' dtypes: the first update's; before it, those the plan and the
        data so far give (a declared input's, through the operators that pass its columns
        on or compute from them: ``plan_dtypes``), int64 where none is known."""
        dtypes = self._native.dtypes() if self._native is not None else None
        if dtypes:
            return list(dtypes)
        known = self.flow.plan_dtypes(self.node)
        return [d or "int64" for d in known] or ["int64"] * len(self.columns)

    def _fields(self) -> list[pa.Field]:
        """The record columns' fields (see :meth:`_dtypes`)."""
        types = [arrow_type(d) for d in self._dtypes()]
        return [pa.field(c, t) for c, t in zip(self.columns, types, strict=True)]

    def _time_array(self, times: npt.NDArray[np.int64]) -> pa.Array:
        """``time``: int64 for one coordinate, ``fixed_size_list<int64>`` for tuples."""
        dims = self._dims()
        flat = _numeric(np.ascontiguousarray(times, dtype=np.int64).reshape(-1))
        return flat if dims == 1 else pa.FixedSizeListArray.from_arrays(flat, dims)

    def _records(self, columns: list[Any]) -> list[pa.Array]:
        """Native record columns as Arrow arrays of their dtypes (a date stays a date, a
        decimal a decimal)."""
        arrays = [_arrow(c) for c in columns]
        dtypes = self._dtypes()
        return [
            to_arrow(a, d) if is_logical(d) else a.cast(arrow_type(d)) if len(a) == 0 else a
            for a, d in zip(arrays, dtypes, strict=True)
        ]

    def _timed(
        self, columns: list[Any], times: npt.NDArray[np.int64], diffs: npt.NDArray[np.int64]
    ) -> pa.Table:
        """A native ``(columns, times, diffs)`` batch as record columns, ``time``, ``diff``."""
        arrays = self._records(columns)
        arrays += [self._time_array(times), _numeric(diffs)]
        return pa.table(arrays, names=[*self.columns, "time", "diff"])

    def _untimed(self, columns: list[Any], diffs: npt.NDArray[np.int64]) -> pa.Table:
        """A native ``(columns, diffs)`` batch as record columns and ``diff``."""
        arrays = self._records(columns) + [_numeric(diffs)]
        return pa.table(arrays, names=[*self.columns, "diff"])

    def _empty(self, with_time: bool) -> pa.Table:
        fields = self._fields()
        if with_time:
            dims = self._dims()
            t = pa.int64() if dims == 1 else pa.list_(pa.int64(), dims)
            fields.append(pa.field("time", t))
        fields.append(pa.field("diff", pa.int64()))
        return pa.schema(fields).empty_table()

    def _sorted(self, table: pa.Table, with_time: bool) -> pa.Table:
        """Sorted by time coordinates (lexicographically), then record columns."""
        keys = [(c, "ascending") for c in self.columns]
        dims = self._dims()
        if with_time and dims == 1:
            keys.insert(0, ("time", "ascending"))
        if keys and table.num_rows > 1:
            table = table.sort_by(keys)
        if with_time and dims > 1 and table.num_rows > 1:
            # Tuple times: a stable sort by the coordinates keeps the record order within one.
            flat = table["time"].combine_chunks().flatten().to_numpy()
            coords = flat.reshape(-1, dims)
            order = np.lexsort([coords[:, j] for j in reversed(range(dims))])
            table = table.take(pa.array(order))
        return table

    # -- public -------------------------------------------------------------------------------

    def updates(self) -> pa.Table:
        """Every captured update at a completed time: record columns, ``time``, ``diff``.

        Summed per (record, time) with zeros dropped, sorted by time (lexicographically), then
        record. ``time`` is int64 for int times and ``fixed_size_list<int64>`` for tuples.
        Each call returns the whole history so far. Needs ``keep="history"``.
        """
        if self.keep != "history":
            raise InvalidValueError(
                f"{self.label}: updates() needs the history, and this capture keeps only its "
                f'state (keep="state"); read state() or at(t), or capture with keep="history"'
            )
        self._poll()
        self._check_errors("updates()")
        if self._native is None or self.flow.started_engine() is None:
            return self._empty(with_time=True)
        columns, times, diffs, ordered = self._state().kept_ordered()
        table = self._timed(columns, times, diffs)
        del columns, times, diffs
        return table if ordered else self._sorted(table, with_time=True)

    def state(self) -> pa.Table:
        """The accumulated collection of every completed update: record columns and ``diff``
        (its count), sorted by record. Works with either ``keep``."""
        self._poll()
        self._check_errors("state()")
        if self._native is None or self.flow.started_engine() is None:
            return self._empty(with_time=False)
        return self._sorted(self._untimed(*self._state().state()), with_time=False)

    def at(self, time: Time) -> pa.Table:
        """The accumulated collection at ``time``: record columns and ``diff`` (its count).

        Raises ``TimeError`` if ``time`` is not complete yet, or (``keep="state"``) if updates
        after ``time`` have already been folded into the state.
        """
        coords = self.flow.time_shape.normalize(time, f"{self.label}: at()", fix=False)
        self._poll()
        if self.flow.started_engine() is None or not frontier_passed(self._raw_frontier(), coords):
            raise TimeError(
                f"{self.label}: time {time!r} is not complete yet (frontier "
                f"{self.frontier()}); advance the inputs past it and run_until({time!r})"
            )
        if self.errors_mode == "raise":
            live = self.flow.poll_errors().live_at(coords, self.flow.upstream(self.node))
            if live:
                self._raise_data_error(f"at({time!r})", live)
        acc = self._state().at(list(coords))
        return self._sorted(self._untimed(*acc), with_time=False)

    def to_pandas(self) -> Any:
        """``updates()`` (``keep="history"``) or ``state()`` (``keep="state"``) as a pandas
        ``DataFrame``; needs pandas."""
        try:
            import pandas  # noqa: F401
        except ImportError as e:
            raise ImportError(f"{self.label}: to_pandas() needs pandas (pip install pandas)") from e
        return self._result().to_pandas()

    def to_polars(self) -> Any:
        """``updates()`` (``keep="history"``) or ``state()`` (``keep="state"``) as a polars
        ``DataFrame``; needs polars."""
        try:
            import polars
        except ImportError as e:
            raise ImportError(f"{self.label}: to_polars() needs polars (pip install polars)") from e
        return polars.from_arrow(self._result())

    def _result(self) -> pa.Table:
        return self.updates() if self.keep == "history" else self.state()

    # -- errors -------------------------------------------------------------------------------

    def _check_errors(self, what: str) -> None:
        if self.errors_mode == "raise":
            first = self.flow.poll_errors().first_live(
                self.flow.upstream(self.node), self._complete
            )
            if first is not None:
                time, live = first
                self._raise_data_error(f"{what} (time {self._user(time)!r})", live)

    def _user(self, coords: Sequence[int]) -> Any:
        return self.flow.time_shape.to_user(coords)

    def _complete(self, coords: Sequence[int]) -> bool:
        return frontier_passed(self._raw_frontier(), tuple(coords))

    def _raise_data_error(self, what: str, live: list[dict[str, Any]]) -> None:
        for e in live:
            e["since"] = self._user(e["since"])
        raise DataError(
            f"{self.label}: {what}: {len(live)} error(s) live upstream (records that made an "
            f'operator fail; retract them, or capture(errors="collect") to read the data '
            f"anyway):\n{describe(live, lambda t: t)}",
            live,
        )

    def errors(self) -> pa.Table:
        """The error updates upstream of this capture at completed times, consolidated:
        ``operator``, ``message``, ``values``, ``time``, ``diff``."""
        self._poll()
        return self.flow.poll_errors().table(
            self.flow.upstream(self.node), self._complete, self._user
        )

    def errors_at(self, time: Time) -> list[dict[str, Any]]:
        """The errors upstream of this capture live at ``time`` (which must be complete):
        dicts with ``operator``, ``message``, ``values``, ``count``, ``since``."""
        coords = self.flow.time_shape.normalize(time, f"{self.label}: errors_at()", fix=False)
        self._poll()
        if self.flow.started_engine() is None or not frontier_passed(self._raw_frontier(), coords):
            raise TimeError(f"{self.label}: time {time!r} is not complete yet")
        live = self.flow.poll_errors().live_at(coords, self.flow.upstream(self.node))
        for e in live:
            e["since"] = self._user(e["since"])
        return live

    def subscribe(self, fn: Callable[[pa.Table], Any]) -> None:
        """Calls ``fn`` with the consolidated updates (as ``updates()``) of each newly completed
        interval, after every ``step`` / ``run_until`` / ``run`` that completes one."""
        self._subscribers.append(fn)


def _describe(fn: Callable[..., Any]) -> str:
    """A subscriber's name for error notes: its qualified name and where it is defined."""
    name = getattr(fn, "__qualname__", None) or repr(fn)
    code = getattr(fn, "__code__", None)
    if code is not None:
        return f"{name} ({code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno})"
    return str(name)
