"""Reading a running dataflow: ``Capture`` (output updates as Arrow tables) and ``Probe``.

A capture pulls raw updates from the engine (``capture_take``), keeps those at times its
frontier has not passed yet, and consolidates the rest: summed per (record, time), zeros
dropped, sorted by time (lexicographically) then record. Everything is vectorised with
pyarrow group-by and sort, never a Python loop per row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ddflow.errorlog import describe
from ddflow.errors import DataError, OverflowError, TimeError
from ddflow.times import Time, frontier_mask, frontier_passed

if TYPE_CHECKING:
    from ddflow.dataflow import Dataflow

__all__ = ["Capture", "Probe", "consolidate_table"]


def _rec(i: int) -> str:
    return f"r{i}"


def _tc(i: int) -> str:
    return f"t{i}"


_SAFE_SUM = float(2**62)
"""Group sums whose float estimate stays below this are exact in int64 (the wrapped int64
sum equals the true total whenever the total fits); larger ones are recomputed exactly."""


def consolidate_table(
    table: pa.Table,
    keys: Sequence[str],
    what: str = "capture",
    names: Mapping[str, str] | None = None,
) -> pa.Table:
    """Sums ``diff`` per distinct ``keys`` and drops zero sums (order unspecified).

    Sums are exact: a total outside int64 raises ``OverflowError`` naming ``what``, the
    record (its keys renamed by ``names``) and the total (never a wrapped value).
    """
    if table.num_rows == 0:
        return table.select([*keys, "diff"])
    est = pc.cast(table["diff"], pa.float64(), safe=False)
    work = table.select([*keys, "diff"]).append_column("_est", est)
    grouped = work.group_by(list(keys), use_threads=False).aggregate(
        [("diff", "sum"), ("_est", "sum")]
    )
    big = pc.greater_equal(pc.abs(grouped["_est_sum"]), _SAFE_SUM)
    if pc.any(big).as_py():
        _check_exact_sums(table, keys, what, names or {})
    columns = [grouped[k] for k in keys] + [grouped["diff_sum"]]
    out = pa.table(columns, names=[*keys, "diff"])
    return out.filter(pc.not_equal(out["diff"], 0))


def _check_exact_sums(
    table: pa.Table, keys: Sequence[str], what: str, names: Mapping[str, str]
) -> None:
    """Recomputes the sums of ``diff`` per ``keys`` exactly; raises if one leaves int64."""
    exact = table.select([*keys]).append_column(
        "diff", pc.cast(table["diff"], pa.decimal128(38, 0))
    )
    grouped = exact.group_by(list(keys), use_threads=False).aggregate([("diff", "sum")])
    sums = grouped["diff_sum"]
    lo, hi = pa.scalar(-(2**63), pa.decimal128(38, 0)), pa.scalar(2**63 - 1, pa.decimal128(38, 0))
    bad = pc.or_(pc.less(sums, lo), pc.greater(sums, hi))
    if pc.any(bad).as_py():
        row = grouped.filter(bad).slice(0, 1).to_pylist()[0]
        total = row.pop("diff_sum")
        row = {names.get(k, k): v for k, v in row.items()}
        raise OverflowError(
            f"{what}: the diffs of {row} sum to {total}, outside the 64-bit signed range "
            f"of a diff"
        )


class _Frontiered:
    """A top-level node whose frontier the engine reports."""

    def __init__(self, flow: Dataflow, node: int, label: str) -> None:
        self.flow = flow
        self.node = node
        self.label = label

    def _raw_frontier(self) -> list[list[int]]:
        engine = self.flow._engine_started()
        return [] if engine is None else [list(f) for f in engine.frontier(self.node)]

    def frontier(self) -> list[Time]:
        """The output frontier: the least times that may still change ([] when complete).

        Before the dataflow starts this is the least time.
        """
        if self.flow._engine_started() is None:
            return [self.flow._times.to_user(self.flow._times.zero())]
        return [self.flow._times.to_user(f) for f in self._raw_frontier()]

    def done(self, time: Time) -> bool:
        """Whether every output at times ``<= time`` is final (the frontier has passed it)."""
        coords = self.flow._times.normalize(time, f"{self.label}: done()", fix=False)
        if self.flow._engine_started() is None:
            return False
        return frontier_passed(self._raw_frontier(), coords)


class Probe(_Frontiered):
    """Tells how far a collection's output is complete: ``done(t)``, ``frontier()``."""

    def __repr__(self) -> str:
        return f"Probe(#{self.node}, frontier={self.frontier()})"


class Capture(_Frontiered):
    """The output of a collection, kept for ``updates()``, ``at(t)`` and subscribers."""

    def __init__(
        self,
        flow: Dataflow,
        node: int,
        columns: Sequence[str],
        label: str,
        errors: str = "raise",
    ) -> None:
        """Built by ``Collection.capture()``."""
        super().__init__(flow, node, label)
        self.errors_mode = errors
        self.columns = tuple(columns)
        self._pending: list[pa.Table] = []
        self._history: pa.Table | None = None
        self._dims: int | None = None
        self._types: list[pa.DataType] | None = None
        self._subscribers: list[Callable[[pa.Table], Any]] = []
        self._undelivered: list[pa.Table] = []

    def __repr__(self) -> str:
        return f"Capture(#{self.node}: ({', '.join(self.columns)}))"

    # -- pulling from the engine --------------------------------------------------------------

    def _names(self) -> dict[str, str]:
        """Internal column names to the user's (for error messages)."""
        names = {_rec(i): c for i, c in enumerate(self.columns)}
        dims = self._dims or 1
        names.update({_tc(j): "time" if dims == 1 else f"time[{j}]" for j in range(dims)})
        return names

    def _internal(
        self, columns: list[np.ndarray], times: np.ndarray, diffs: np.ndarray
    ) -> pa.Table:
        """Raw updates as a table with internal names r0.., t0.., diff."""
        data: dict[str, Any] = {}
        types = []
        for i, c in enumerate(columns):
            arr = pa.array(c, type=pa.string()) if c.dtype == object else pa.array(c)
            types.append(arr.type)
            data[_rec(i)] = arr
        if self._types is None and len(diffs):
            self._types = types
        times = np.asarray(times, dtype=np.int64).reshape(len(diffs), -1)
        for j in range(times.shape[1]):
            data[_tc(j)] = pa.array(times[:, j])
        data["diff"] = pa.array(np.asarray(diffs, dtype=np.int64))
        return pa.table(data)

    def _poll(self) -> pa.Table | None:
        """Takes new updates from the engine; returns the newly completed, consolidated part."""
        engine = self.flow._engine_started()
        if engine is None:
            return None
        self.flow._poll_errors()
        columns, times, diffs = engine.capture_take(self.node)
        if len(diffs):
            if self._dims is None:
                self._dims = int(np.asarray(times).reshape(len(diffs), -1).shape[1])
            self._pending.append(self._internal(list(columns), times, diffs))
        if not self._pending:
            return None
        frontier = self._raw_frontier()
        pending = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        tcols = [_tc(j) for j in range(self._dims or 0)]
        time_arr = np.column_stack([pending[t].to_numpy() for t in tcols]).astype(np.int64)
        done = frontier_mask(frontier, time_arr)
        if not done.any():
            self._pending = [pending]
            return None
        complete = pending.filter(pa.array(done))
        self._pending = [pending.filter(pa.array(~done))] if not done.all() else []
        keys = [_rec(i) for i in range(len(self.columns))] + tcols
        fresh = consolidate_table(complete, keys, self.label, self._names())
        if fresh.num_rows:
            self._history = (
                fresh if self._history is None else pa.concat_tables([self._history, fresh])
            )
            if self._subscribers:
                self._undelivered.append(fresh)
        return fresh

    def _deliver(self) -> None:
        """Polls the engine and calls subscribers with the newly completed updates."""
        self._poll()
        if not self._undelivered:
            return
        fresh = pa.concat_tables(self._undelivered)
        self._undelivered = []
        table = self._present(self._sorted(fresh))
        for fn in self._subscribers:
            fn(table)

    # -- presenting ---------------------------------------------------------------------------

    def _time_keys(self) -> list[str]:
        return [_tc(j) for j in range(self._dims or self.flow._times.dims or 1)]

    def _sorted(self, table: pa.Table) -> pa.Table:
        """Sorted by time coordinates, then record columns."""
        keys = self._time_keys() + [_rec(i) for i in range(len(self.columns))]
        return table.sort_by([(k, "ascending") for k in keys])

    def _empty(self) -> pa.Table:
        """An empty internal table with this capture's columns."""
        types = self._types or [pa.int64()] * len(self.columns)
        fields = [pa.field(_rec(i), t) for i, t in enumerate(types)]
        fields += [pa.field(k, pa.int64()) for k in self._time_keys()]
        fields.append(pa.field("diff", pa.int64()))
        return pa.schema(fields).empty_table()

    def _present(self, table: pa.Table, with_time: bool = True) -> pa.Table:
        """Internal names to the user's: record columns, ``time``, ``diff``."""
        arrays: list[Any] = [table[_rec(i)] for i in range(len(self.columns))]
        names = list(self.columns)
        if with_time:
            tkeys = self._time_keys()
            if len(tkeys) == 1:
                arrays.append(table[tkeys[0]])
            else:
                flat = np.column_stack([table[k].to_numpy() for k in tkeys]).reshape(-1)
                arrays.append(
                    pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.int64()), len(tkeys))
                )
            names.append("time")
        arrays.append(table["diff"])
        names.append("diff")
        return pa.table(arrays, names=names)

    # -- public -------------------------------------------------------------------------------

    def updates(self) -> pa.Table:
        """Every captured update at a completed time: record columns, ``time``, ``diff``.

        Summed per (record, time) with zeros dropped, sorted by time (lexicographically), then
        record. ``time`` is int64 for int times and ``fixed_size_list<int64>`` for tuples.
        Each call returns the whole history so far.
        """
        self._poll()
        if self.errors_mode == "raise":
            first = self.flow._error_log.first_live(self.flow._upstream(self.node), self._complete)
            if first is not None:
                time, live = first
                self._raise_data_error(f"updates() (time {self._user(time)!r})", live)
        history = self._history if self._history is not None else self._empty()
        return self._present(self._sorted(history))

    def at(self, time: Time) -> pa.Table:
        """The accumulated collection at ``time``: record columns and ``diff`` (its count).

        Raises ``TimeError`` if ``time`` is not complete yet.
        """
        coords = self.flow._times.normalize(time, f"{self.label}: at()", fix=False)
        self._poll()
        if self.flow._engine_started() is None or not frontier_passed(self._raw_frontier(), coords):
            raise TimeError(
                f"{self.label}: time {time!r} is not complete yet (frontier "
                f"{self.frontier()}); advance the inputs past it and run_until({time!r})"
            )
        if self.errors_mode == "raise":
            live = self.flow._error_log.live_at(coords, self.flow._upstream(self.node))
            if live:
                self._raise_data_error(f"at({time!r})", live)
        history = self._history if self._history is not None else self._empty()
        tkeys = self._time_keys()
        if history.num_rows:
            mask = np.ones(history.num_rows, dtype=bool)
            for j, k in enumerate(tkeys):
                mask &= history[k].to_numpy() <= coords[j]
            history = history.filter(pa.array(mask))
        recs = [_rec(i) for i in range(len(self.columns))]
        acc = consolidate_table(
            history.select([*recs, "diff"]), recs, f"{self.label}: at({time!r})", self._names()
        )
        acc = acc.sort_by([(k, "ascending") for k in recs])
        return self._present(acc, with_time=False)

    # -- errors -------------------------------------------------------------------------------

    def _user(self, coords: Sequence[int]) -> Any:
        return self.flow._times.to_user(coords)

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
        return self.flow._error_log.table(
            self.flow._upstream(self.node), self._complete, self._user
        )

    def errors_at(self, time: Time) -> list[dict[str, Any]]:
        """The errors upstream of this capture live at ``time`` (which must be complete):
        dicts with ``operator``, ``message``, ``values``, ``count``, ``since``."""
        coords = self.flow._times.normalize(time, f"{self.label}: errors_at()", fix=False)
        self._poll()
        if self.flow._engine_started() is None or not frontier_passed(self._raw_frontier(), coords):
            raise TimeError(f"{self.label}: time {time!r} is not complete yet")
        live = self.flow._error_log.live_at(coords, self.flow._upstream(self.node))
        for e in live:
            e["since"] = self._user(e["since"])
        return live

    def subscribe(self, fn: Callable[[pa.Table], Any]) -> None:
        """Calls ``fn`` with the consolidated updates (as ``updates()``) of each newly completed
        interval, after every ``step`` / ``run_until`` / ``run`` that completes one."""
        self._subscribers.append(fn)
