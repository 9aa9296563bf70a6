"""A collection's current state by primary key, for sinks that keep a table equal to it.

A keyed sink (``dd.io.postgres.write``, ``dd.io.deltalake.write`` with ``primary_key=``)
turns each completed time's updates into two sets: the rows to *upsert* (per key, the last
row that entered at that time) and the keys to *delete* (those whose count, the sum of the
diffs of all their rows so far, dropped to zero). :class:`KeyedState` holds each live key's
count as an Arrow table and computes both sets with Arrow's hash group-by and join, never
row by row in Python.

The collection should hold at most one row per key. Where it holds more, a key stays as
long as any of its rows does, and the row written is the last one that entered; a key
whose count goes negative is deleted (a negative count is no row).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["KeyedState"]

_COUNT = "__ddflow_count"
_DIFF = "__ddflow_diff"
_INDEX = "__ddflow_index"


class KeyedState:
    """The count of every live key of a collection, and the changes a time makes to it."""

    def __init__(self, primary_key: Sequence[str], columns: Sequence[str]) -> None:
        self.primary_key = list(primary_key)
        self.columns = list(columns)
        self.counts: pa.Table | None = None
        """Per live key (count > 0): the key columns and ``__ddflow_count``."""

    def __len__(self) -> int:
        return 0 if self.counts is None else self.counts.num_rows

    def apply(self, updates: pa.Table) -> tuple[pa.Table, pa.Table]:
        """Applies the updates of one time (record columns, ``diff``; other columns are
        ignored) and returns ``(upserts, deletes)``: the rows to write (record columns,
        the last row that entered per key still live) and the keys whose count dropped to
        zero (key columns)."""
        keys = self.primary_key
        n = updates.num_rows
        base = updates.select(self.columns)
        diff = updates["diff"]
        indexed = base.append_column(_INDEX, pa.array(np.arange(n, dtype=np.int64)))
        entered = indexed.filter(pc.greater(diff, 0))
        last = entered.group_by(keys, use_threads=False).aggregate([(_INDEX, "max")])
        net = (
            base.select(keys)
            .append_column(_DIFF, diff)
            .group_by(keys, use_threads=False)
            .aggregate([(_DIFF, "sum")])
            .rename_columns([*keys, _DIFF])
        )
        if self.counts is None:
            empty = net.select(keys).slice(0, 0)
            self.counts = empty.append_column(_COUNT, pa.array([], pa.int64()))
        # Every key touched, with its count before (0 when new) and after this time.
        touched = net.join(self.counts, keys, join_type="left outer", use_threads=False)
        before = pc.fill_null(touched[_COUNT], 0)
        after = pc.add(before, touched[_DIFF])
        alive = pc.greater(after, 0)
        untouched = self.counts.join(
            net.select(keys), keys, join_type="left anti", use_threads=False
        )
        now = touched.select(keys).append_column(_COUNT, after).filter(alive)
        self.counts = pa.concat_tables([untouched.select(now.column_names), now]).combine_chunks()
        deletes = touched.filter(pc.and_(pc.invert(alive), pc.greater(before, 0))).select(keys)
        live_last = last.join(now.select(keys), keys, join_type="inner", use_threads=False)
        rows = pc.sort_indices(live_last[f"{_INDEX}_max"])
        upserts = base.take(pc.take(live_last[f"{_INDEX}_max"], rows))
        return upserts, deletes
