"""A collection's current state by primary key, for sinks that keep a table equal to it.

A keyed sink (``dd.io.postgres.write``, ``dd.io.deltalake.write`` with ``primary_key=``)
turns each completed time's updates into two sets: the rows to *upsert* (per key, the last
row that entered at that time) and the keys to *delete* (those whose count, the sum of the
diffs of all their rows so far, dropped to zero). :class:`KeyedState` groups a time's updates by key
with Arrow's hash group-by (the sum of the diffs, the last row entering), then updates a
dict of the live keys' counts for the keys touched only: the Python work per time is one
step per key touched, never per row, and never over the whole state (an Arrow join with
the state per time cost 0.55 s per small time at 1M keys).

The collection should hold at most one row per key. Where it holds more, a key stays as
long as any of its rows does, and the row written is the last one that entered; a key
whose count goes negative is deleted (a negative count is no row).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["KeyedState"]

_DIFF = "__ddflow_diff"
_INDEX = "__ddflow_index"


class KeyedState:
    """The count of every live key of a collection, and the changes a time makes to it."""

    def __init__(self, primary_key: Sequence[str], columns: Sequence[str]) -> None:
        self.primary_key = list(primary_key)
        self.columns = list(columns)
        self.counts: dict[tuple[Any, ...], int] = {}
        """Per live key (count > 0): its count."""

    def __len__(self) -> int:
        return len(self.counts)

    def apply(self, updates: pa.Table) -> tuple[pa.Table, pa.Table]:
        """Applies the updates of one time (record columns, ``diff``; other columns are
        ignored) and returns ``(upserts, deletes)``: the rows to write (record columns,
        the last row that entered per key still live) and the keys whose count dropped to
        zero (key columns)."""
        keys = self.primary_key
        base = updates.select(self.columns)
        diff = updates["diff"]
        index = pa.array(np.arange(updates.num_rows, dtype=np.int64))
        entered = pc.if_else(pc.greater(diff, 0), index, pa.scalar(None, pa.int64()))
        # Per key touched: the sum of its diffs and its last row that entered (null: none).
        net = (
            base.select(keys)
            .append_column(_DIFF, diff)
            .append_column(_INDEX, entered)
            .group_by(keys, use_threads=False)
            .aggregate([(_DIFF, "sum"), (_INDEX, "max")])
        )
        touched = list(zip(*(net[k].to_pylist() for k in keys), strict=True))
        before = np.array([self.counts.get(k, 0) for k in touched], dtype=np.int64)
        after = before + net[f"{_DIFF}_sum"].to_numpy()
        alive = after > 0
        for key, count, live in zip(touched, after.tolist(), alive.tolist(), strict=True):
            if live:
                self.counts[key] = count
            else:
                self.counts.pop(key, None)
        deletes = net.filter(pa.array(~alive & (before > 0))).select(keys)
        last = net[f"{_INDEX}_max"].filter(pa.array(alive))
        upserts = base.take(pc.drop_null(last).combine_chunks().sort())
        return upserts, deletes
