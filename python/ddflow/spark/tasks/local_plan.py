"""A key-local region of a plan run by the embedded engine on one Spark partition.

The driver (``driver/key_regions.py``) finds top-level regions whose keyed operators (reduces,
joins) all group by the same columns of one source node, hash-partitions that source by those
columns, and runs the region's sub-plan here, once per partition, over the partition's whole
history: every key's updates are in one partition, so the partition's output is exactly the
region's output for its keys. The engine's join walks long histories in time order and the
reduce consolidates, so intermediate histories never multiply (a Spark equi-join of two
histories emits every pair of updates of a key).

Output rows: the region's exit's record columns ``_c0..``, the time columns and ``_d``,
consolidated. SQL nulls go in and come out as Arrow nulls (``engine_io.py``). A data error
fails the task with a ``DataError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ddflow.errors import DataError
from ddflow.spark.tasks import error_rows as er
from ddflow.spark.tasks.batches import DIFF, FnTable, ccol, consolidated, tcol
from ddflow.spark.tasks.engine_io import as_type, run_plan

__all__ = ["LocalPlanSpec", "run_local_plan"]


@dataclass(frozen=True)
class LocalPlanSpec:
    """A region's sub-plan as the partition function needs it."""

    label: str
    """The region, for messages."""
    plan_json: str
    """The sub-plan: input node 0 (the source), the region's nodes, a capture of its exit."""
    in_names: tuple[str, ...]
    """The source's record columns in the partition's batches."""
    out_names: tuple[str, ...]
    """The exit's column names in the plan."""
    capture: int
    """The capture node of the exit in the sub-plan."""
    out_types: tuple[pa.DataType, ...]
    """The exit's record column types."""
    dims: int


def run_local_plan(
    spec: LocalPlanSpec, fns: FnTable, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The region's output for the keys of this partition (whole histories)."""
    items = list(batches)
    if not items:
        return
    table = pa.Table.from_batches(items)
    if table.num_rows == 0:
        return
    tnames = [tcol(j) for j in range(spec.dims)]
    times = np.column_stack([table[t].to_numpy() for t in tnames]).astype(np.int64)
    try:
        run = run_plan(
            spec.plan_json,
            fns,
            [table[c] for c in spec.in_names],
            spec.in_names,
            times,
            table[DIFF].to_numpy().astype(np.int64),
            spec.capture,
            spec.out_names,
            spec.label,
        )
    except Exception as exc:
        exc.add_note(f"ddflow: raised by {spec.label} on Spark")
        raise
    if run.errors:
        raise DataError(er.describe(run.errors), er.as_dicts(run.errors))
    n = len(run.diffs)
    if n == 0:
        return
    names = [ccol(j) for j in range(len(spec.out_types))]
    arrays = [as_type(c, t, spec.label) for c, t in zip(run.columns, spec.out_types, strict=True)]
    arrays += [pa.array(run.times[:, j]) for j in range(spec.dims)]
    arrays.append(pa.array(run.diffs))
    out = consolidated(pa.table(arrays, names=[*names, *tnames, DIFF]), [*names, *tnames])
    yield from out.to_batches()
