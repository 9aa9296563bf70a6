"""Compaction of a persistent dataflow's log into snapshots, one layer per input and checkpoint.

At a checkpoint with frontier ``F`` every time before ``F`` is complete, so the dataflow's
outputs at those times have been delivered and only their accumulation matters from here
on. Compaction therefore moves every time ``t < F`` up to ``F - 1`` (as a trace's compaction
advances times to its frontier) and sums the counts of equal rows at equal times: replaying
the snapshot gives every operator the same accumulations at ``F - 1`` and later, while the
log's size follows the number of distinct rows, not the number of ticks. Rows at or after
``F`` (a timed source's future rows) keep their times.

A checkpoint compacts only the ticks since the previous one into a new *layer*; the
journal merges an input's layers into one (the same function, given the layers) when they
grow too many, so each row is rewritten a logarithmic number of times, not at every
checkpoint. Bad rows (rows that did not fit the schema, late rows) are kept as errors at
their compacted times, so a restarted dataflow's error log still names them.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow.persist.records import Snapshot, Tick
from ddflow.sources import RowError, split_late

__all__ = ["advance", "compact"]

_TIME, _ORIGIN, _ROW, _DIFF = "\x00time", "\x00origin", "\x00row", "\x00diff"


def _error_time(e: RowError, default: int) -> int:
    """The time of a bad row's error update (as the run loop stamps it)."""
    return e.time if e.time is not None and e.time >= default else default


def compact(
    source: int,
    layers: list[Snapshot],
    ticks: list[Tick],
    frontier: int,
) -> Snapshot | None:
    """One snapshot of source ``source``'s input holding ``layers`` (earlier snapshots) and
    ``ticks``, compacted to ``frontier`` (``None`` when it has neither rows nor errors)."""
    # Imported here: pyarrow.compute is some 5 MB resident, and `import ddflow` imports
    # this module for every dataflow, persistent or not.
    import pyarrow.compute as pc

    floor = frontier - 1
    tables: list[pa.Table] = []
    diffs: list[npt.NDArray[np.int64]] = []
    errors: list[RowError] = []
    origins: dict[str, int] = {}

    def add(
        table: pa.Table, origin: npt.NDArray[np.int32], rows: object, times: object, d: object
    ) -> None:
        tables.append(_indexed(table, origin, rows, times))
        diffs.append(np.asarray(d, dtype=np.int64))

    for layer in layers:
        codes = np.array([origins.setdefault(o, len(origins)) for o in layer.origins], np.int32)
        if layer.table.num_rows:
            add(layer.table, codes[layer.origin], layer.rows, layer.times, layer.diffs)
        errors += [_moved(e, e.time if e.time is not None else floor, floor) for e in layer.errors]
    for tick in ticks:
        for k, batch in tick.batches:
            if k != source:
                continue
            default = tick.frontier if batch.times is not None else tick.now
            errors += [_moved(e, _error_time(e, default), floor) for e in batch.errors]
            if batch.times is not None:
                table, rows, times, late = split_late(batch, tick.frontier)
                errors += [_moved(e, tick.frontier, floor) for e in late]
            else:
                table = batch.table
                n = table.num_rows
                rows = batch.rows if batch.rows is not None else np.arange(1, n + 1)
                times = np.full(n, tick.now, dtype=np.int64)
            n = table.num_rows
            if n:
                code = origins.setdefault(batch.origin, len(origins))
                add(table, np.full(n, code, np.int32), rows, times, np.ones(n, np.int64))
    if not tables and not errors:
        return None
    names = list(origins)
    empty = np.zeros(0, dtype=np.int64)
    if not tables:
        return Snapshot(
            source, pa.table({}), names, empty.astype(np.int32), empty, empty, empty, errors
        )
    columns = [n for n in tables[0].column_names if not n.startswith("\x00")]
    merged = pa.concat_tables(tables, promote_options="permissive").append_column(
        _DIFF, pa.array(np.concatenate(diffs), pa.int64())
    )
    merged = merged.set_column(
        merged.schema.get_field_index(_TIME),
        _TIME,
        pc.max_element_wise(merged[_TIME], pa.scalar(floor, pa.int64())),
    )
    keys = [*columns, _TIME, _ORIGIN]
    grouped = merged.group_by(keys, use_threads=False).aggregate([(_ROW, "min"), (_DIFF, "sum")])
    grouped = grouped.filter(pc.not_equal(grouped[f"{_DIFF}_sum"], 0))
    return Snapshot(
        source,
        grouped.select(columns),
        names,
        np.asarray(grouped[_ORIGIN].to_numpy(), dtype=np.int32),
        np.asarray(grouped[f"{_ROW}_min"].to_numpy(), dtype=np.int64),
        np.asarray(grouped[_TIME].to_numpy(), dtype=np.int64),
        np.asarray(grouped[f"{_DIFF}_sum"].to_numpy(), dtype=np.int64),
        errors,
    )


def advance(snapshot: Snapshot, frontier: int) -> Snapshot:
    """``snapshot`` with every time before ``frontier`` moved up to ``frontier - 1``.

    A restart applies it to every layer with the last checkpoint's frontier: each layer was
    compacted to its own checkpoint's frontier, and the later frontier holds for all of them
    (every output before it was delivered), so the layers replay at one time and the engine
    rebuilds its state in one pass rather than one pass per layer."""
    floor = frontier - 1
    if not len(snapshot.times) or int(snapshot.times.min()) >= floor:
        times = snapshot.times
    else:
        times = np.maximum(snapshot.times, floor)
    errors = [_moved(e, e.time if e.time is not None else floor, floor) for e in snapshot.errors]
    return dataclasses.replace(snapshot, times=times, errors=errors)


def _moved(e: RowError, time: int, floor: int) -> RowError:
    """A bad row with its error's time compacted."""
    return RowError(e.origin, e.row, e.column, e.message, e.values, e.count, max(time, floor))


def _indexed(
    table: pa.Table, origin: npt.NDArray[np.int32], rows: object, times: object
) -> pa.Table:
    """``table`` with its rows' origins (indices), row numbers and times as extra columns."""
    return (
        table.append_column(_TIME, pa.array(times, pa.int64()))
        .append_column(_ORIGIN, pa.array(origin, pa.int32()))
        .append_column(_ROW, pa.array(rows, pa.int64()))
    )
