"""A key-local region of a plan run by the embedded engine on one Spark partition.

The driver (``driver/key_regions.py``) finds top-level regions whose keyed operators (reduces,
joins) all group by the same columns of one source node, hash-partitions that source by those
columns, and runs the region's sub-plan here, once per partition, over the partition's whole
history: every key's updates are in one partition, so the partition's output is exactly the
region's output for its keys. The engine's join walks long histories in time order and the
reduce consolidates, so intermediate histories never multiply (a Spark equi-join of two
histories emits every pair of updates of a key).

Output rows: ``_x`` (the index of the region's exit), every exit's record columns
(``_e{exit}_{column}``, null in the other exits' rows), the time columns and ``_d``; each
exit's updates consolidated. A data error fails the task with a ``DataError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ddflow import _core
from ddflow.errors import DataError
from ddflow.spark.tasks import error_rows as er
from ddflow.spark.tasks.batches import (
    DIFF,
    FnTable,
    consolidated,
    tcol,
    to_arrow,
    to_numpy,
)

__all__ = ["EXIT", "LocalPlanSpec", "exit_column", "run_local_plan"]

EXIT = "_x"
"""The column holding the index of the exit an output row belongs to."""


def exit_column(exit_index: int, column: int) -> str:
    """The output column of record column ``column`` of exit ``exit_index``."""
    return f"_e{exit_index}_{column}"


@dataclass(frozen=True)
class LocalPlanSpec:
    """A region's sub-plan as the partition function needs it."""

    label: str
    """The region, for messages."""
    plan_json: str
    """The sub-plan: one input node (the source), the region's nodes, one capture per exit."""
    input_node: int
    """The source's input node in the sub-plan."""
    in_names: tuple[str, ...]
    """The source's record columns in the partition's batches."""
    captures: tuple[int, ...]
    """The capture node of each exit in the sub-plan."""
    exit_types: tuple[tuple[pa.DataType, ...], ...]
    """Each exit's record column types."""
    dims: int
    schema: pa.Schema
    """The output schema (see the module doc)."""


def _exit_table(spec: LocalPlanSpec, e: int, engine: _core.Engine) -> pa.Table:
    """Exit ``e``'s captured updates, consolidated, in the output schema."""
    cols, times, diffs = engine.capture_take(spec.captures[e])
    n = len(diffs)
    types = spec.exit_types[e]
    names = [exit_column(e, j) for j in range(len(types))]
    tnames = [tcol(j) for j in range(spec.dims)]
    if n == 0:
        return spec.schema.empty_table()
    times = np.asarray(times, dtype=np.int64).reshape(n, spec.dims)
    arrays = [to_arrow(np.asarray(c), t, spec.label) for c, t in zip(cols, types, strict=True)]
    arrays += [pa.array(times[:, j]) for j in range(spec.dims)]
    arrays.append(pa.array(np.asarray(diffs, dtype=np.int64)))
    table = consolidated(pa.table(arrays, names=[*names, *tnames, DIFF]), [*names, *tnames])
    rows = table.num_rows
    out = []
    for field in spec.schema:
        if field.name == EXIT:
            out.append(pa.array(np.full(rows, e, dtype=np.int32)))
        elif field.name in table.column_names:
            out.append(table[field.name].combine_chunks().cast(field.type))
        else:
            out.append(pa.nulls(rows, field.type))
    return pa.table(out, schema=spec.schema)


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
    engine = _core.Engine(spec.plan_json, 1, fns)
    engine.set_logging(False)
    columns = [to_numpy(table[c]) for c in spec.in_names]
    tnames = [tcol(j) for j in range(spec.dims)]
    times = np.column_stack([table[t].to_numpy() for t in tnames]).astype(np.int64)
    diffs = table[DIFF].to_numpy().astype(np.int64)
    del table
    try:
        engine.push(spec.input_node, columns, np.ascontiguousarray(times), diffs)
        engine.close_input(spec.input_node)
        engine.run()
    except Exception as exc:
        exc.add_note(f"ddflow: raised by {spec.label} on Spark")
        raise
    errors = list(engine.errors_take())
    if errors:
        raise DataError(er.describe(errors), er.as_dicts(errors))
    for e in range(len(spec.captures)):
        yield from _exit_table(spec, e, engine).to_batches()
