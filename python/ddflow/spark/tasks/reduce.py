"""The reduce partition functions of the Spark backend: the embedded engine's own reduce
operator run on a whole partition (keys grouped in Rust), at the top level over a whole
history and inside an iterate as one superstep on the keys with new input, with the state
shuffled beside the new input or kept in the reduce state store (``store.py``).

Rows are in the reduce's tagged schema (``batches.py``): new input (tag 0), accumulated input
(1) and output (2) of a key, output updates of this iteration (3). A data error (an
aggregate's overflow, a Python reducer's exception) fails the task with a ``DataError`` or,
with ``errors="collect"``, becomes error rows after the data rows (``error_rows.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ddflow.errors import DataError
from ddflow.plan import ArrangeOp, CaptureOp, InputOp, ReduceOp
from ddflow.spark.tasks import error_rows as er
from ddflow.spark.tasks.batches import (
    DIFF,
    TAG,
    TAG_DELTA_IN,
    TAG_DELTA_OUT,
    TAG_IN_ACC,
    TAG_OUT_ACC,
    FnTable,
    by_bucket,
    consolidated,
    filter_join,
    table_of,
    tcol,
    widen,
)
from ddflow.spark.tasks.engine_io import as_type, run_plan
from ddflow.spark.tasks.store import StateStore

__all__ = [
    "ReduceSpec",
    "column_names",
    "reduce_step",
    "reduce_partition",
    "reduce_partition_stored",
    "reduce_history",
]


@dataclass(frozen=True)
class ReduceSpec:
    """A ``reduce`` node as a partition function needs it."""

    label: str
    agg: dict[str, Any]
    n_keys: int
    n_vals: int
    n_outs: int
    in_names: tuple[str, ...]
    out_names: tuple[str, ...]
    out_types: tuple[pa.DataType, ...]
    """Types of the aggregate's output columns."""
    dims: int
    schema: pa.Schema
    """The tagged state schema (input and output of the partition function)."""
    collect: bool = False
    """Data errors become error rows (``errors="collect"``): the partition function's
    output schema is ``schema`` plus the error columns."""


def _mini_plan(spec: ReduceSpec) -> str:
    """A one-operator plan: input -> arrange(key) -> reduce -> capture."""
    cols = list(spec.in_names)
    outs = list(spec.out_names)
    nodes = [
        {"id": 0, "op": InputOp.OP, "scope": 0, "inputs": [], "columns": cols,
         "label": f"{spec.label} (Spark partition input)", "name": "partition"},
        {"id": 1, "op": ArrangeOp.OP, "scope": 0, "inputs": [0], "columns": cols,
         "label": f"{spec.label} (arrange)", "key": list(range(spec.n_keys))},
        {"id": 2, "op": ReduceOp.OP, "scope": 0, "inputs": [1], "columns": outs,
         "label": spec.label, "agg": spec.agg},
        {"id": 3, "op": CaptureOp.OP, "scope": 0, "inputs": [2], "columns": outs,
         "label": f"{spec.label} (capture)"},
    ]  # fmt: skip
    plan = {
        "version": 1,
        "time_dims": spec.dims,
        "scopes": [{"id": 0, "parent": None}],
        "nodes": nodes,
    }
    return json.dumps(plan, separators=(",", ":"))


def _run_reduce(
    spec: ReduceSpec, fns: FnTable, table: pa.Table
) -> tuple[pa.Table, list[er.RawError]]:
    """The reduce's output updates for the input updates in ``table`` (key, val, time, diff),
    and its error updates.

    Runs the embedded engine's own reduce operator on the whole table at once.
    """
    keys = [f"_c{i}" for i in range(spec.n_keys)]
    vals = [f"_v{i}" for i in range(spec.n_vals)]
    tnames = [tcol(j) for j in range(spec.dims)]
    out_names = keys + [f"_o{i}" for i in range(spec.n_outs)]
    empty = spec.schema.empty_table().select([*out_names, *tnames, DIFF])
    if table.num_rows == 0:
        return empty, []
    times = np.column_stack([table[t].to_numpy() for t in tnames]).astype(np.int64)
    diffs = table[DIFF].to_numpy().astype(np.int64)
    try:
        run = run_plan(
            _mini_plan(spec),
            fns,
            [table[c] for c in keys + vals],
            spec.in_names,
            times,
            diffs,
            3,
            spec.out_names,
            spec.label,
        )
    except Exception as exc:
        exc.add_note(f"ddflow: raised by {spec.label} on Spark")
        raise
    n = len(run.diffs)
    if n == 0:
        return empty, run.errors
    key_types = [spec.schema.field(k).type for k in keys]
    arrays = [
        as_type(c, t, spec.label)
        for c, t in zip(run.columns, key_types + list(spec.out_types), strict=True)
    ]
    arrays += [pa.array(run.times[:, j]) for j in range(spec.dims)]
    arrays.append(pa.array(run.diffs))
    return pa.table(arrays, names=[*out_names, *tnames, DIFF]), run.errors


def reduce_history(spec: ReduceSpec, fns: FnTable, table: pa.Table) -> pa.Table:
    """The reduce's output history for the input history ``table`` (keys ``_c..``, values
    ``_v..``, times, diff; whole keys): keys, ``_o..``, times, diff. A data error raises
    ``DataError``."""
    out, errors = _run_reduce(spec, fns, table)
    _fail(errors)
    return out


def _fail(errors: Sequence[er.RawError]) -> None:
    """Fails the task with a ``DataError`` when there are error updates."""
    if errors:
        raise DataError(er.describe(errors), er.as_dicts(errors))


def reduce_partition(
    spec: ReduceSpec,
    fns: FnTable,
    stateful: bool,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """One partition of a reduce superstep.

    Input rows are tagged: new input updates (0), the accumulated input (1) and the
    accumulated output (2) of the keys hashed to this partition, all with times advanced to the
    current iteration (so only outer time coordinates remain). Output: the new accumulated
    input (1) and output (2) when ``stateful``, and the output updates of this iteration (3):
    ``reduce(accumulated input) - accumulated output``, computed only for keys with new input;
    the state rows of the other keys are passed on as they came.
    """
    table = table_of(batches, spec.schema)
    keys, vals, outs, tnames = column_names(spec)
    is_delta = pc.equal(table[TAG], TAG_DELTA_IN)
    delta = table.filter(is_delta).select([*keys, *vals, *tnames, DIFF])
    if not stateful:
        fresh, errors = _run_reduce(spec, fns, delta)
        if not spec.collect:
            _fail(errors)
        out = widen(consolidated(fresh, [*keys, *outs, *tnames]), spec.schema, TAG_DELTA_OUT)
        yield from _outputs(spec, out, errors)
        return
    if delta.num_rows == 0:
        yield from _outputs(spec, table, [])
        return
    state = table.filter(pc.invert(is_delta))
    new_state, out_delta, err_delta = reduce_step(spec, fns, state, delta)
    out = widen(out_delta, spec.schema, TAG_DELTA_OUT)
    yield from _outputs(spec, pa.concat_tables([new_state, out]), err_delta)


def _outputs(
    spec: ReduceSpec, table: pa.Table, errors: Sequence[er.RawError]
) -> Iterator[pa.RecordBatch]:
    """A reduce partition's output batches (tagged schema; in collect mode with the error
    columns, then the error rows)."""
    for batch in table.to_batches():
        yield er.without_errors(batch) if spec.collect else batch
    if errors:
        yield er.error_batch(errors, spec.schema, spec.dims)


def _error_difference(new: Sequence[er.RawError], old: Sequence[er.RawError]) -> list[er.RawError]:
    """The error updates ``new - old``, consolidated (exact Python ints)."""
    sums: dict[tuple[Any, ...], int] = {}
    for sign, errors in ((1, new), (-1, old)):
        for node, label, message, values, time, diff in errors:
            key = (int(node), label, message, values, tuple(int(c) for c in time))
            sums[key] = sums.get(key, 0) + sign * int(diff)
    return [(*key[:4], list(key[4]), d) for key, d in sorted(sums.items()) if d]


def column_names(spec: ReduceSpec) -> tuple[list[str], list[str], list[str], list[str]]:
    """Key, value, aggregate-output and time column names of a reduce's batches."""
    return (
        [f"_c{i}" for i in range(spec.n_keys)],
        [f"_v{i}" for i in range(spec.n_vals)],
        [f"_o{i}" for i in range(spec.n_outs)],
        [tcol(j) for j in range(spec.dims)],
    )


def reduce_step(
    spec: ReduceSpec, fns: FnTable, state: pa.Table, delta: pa.Table
) -> tuple[pa.Table, pa.Table, list[er.RawError]]:
    """One superstep of a stateful reduce on one partition's keys.

    ``state``: the accumulated input (tag 1) and output (tag 2) rows in the tagged schema;
    ``delta``: the new input updates (keys, values, times, diff). Returns the new state (tagged
    schema), the output updates of this iteration: ``reduce(accumulated input) -
    accumulated output``, computed only for the keys with new input (the state rows of the
    other keys are passed on as they came), and in collect mode the error updates of this
    iteration: the errors of the keys with new input on their new accumulated input minus
    those on their previous one (a key's errors depend on its input history alone; the
    previous run is repeated rather than stored, so collect mode costs a second reduce run
    over those keys).
    """
    keys, vals, outs, tnames = column_names(spec)
    touched = delta.select(keys).group_by(keys, use_threads=False).aggregate([])
    kept = filter_join(state, touched, keys, "left anti")
    hit = filter_join(state, touched, keys, "left semi")
    tag = hit[TAG]
    in_acc = hit.filter(pc.equal(tag, TAG_IN_ACC)).select([*keys, *vals, *tnames, DIFF])
    out_acc = hit.filter(pc.equal(tag, TAG_OUT_ACC)).select([*keys, *outs, *tnames, DIFF])
    new_in = consolidated(
        pa.concat_tables([in_acc, delta.cast(in_acc.schema)]), [*keys, *vals, *tnames]
    )
    fresh, errors = _run_reduce(spec, fns, new_in)
    if spec.collect:
        old = _run_reduce(spec, fns, in_acc)[1] if in_acc.num_rows else []
        err_delta = _error_difference(errors, old)
    else:
        _fail(errors)
        err_delta = []
    negated = out_acc.set_column(
        out_acc.schema.get_field_index(DIFF), DIFF, pc.negate(out_acc[DIFF])
    )
    out_delta = consolidated(
        pa.concat_tables([fresh, negated.select(fresh.column_names)]), [*keys, *outs, *tnames]
    )
    new_out = consolidated(
        pa.concat_tables([out_acc, out_delta.select(out_acc.column_names)]),
        [*keys, *outs, *tnames],
    )
    new_state = pa.concat_tables(
        [
            kept.select(spec.schema.names).cast(spec.schema),
            widen(new_in, spec.schema, TAG_IN_ACC),
            widen(new_out, spec.schema, TAG_OUT_ACC),
        ]
    )
    return new_state, out_delta, err_delta


def reduce_partition_stored(
    spec: ReduceSpec,
    fns: FnTable,
    store: StateStore,
    node: int,
    version: int,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """One partition of a reduce superstep whose state lives in ``store``.

    Input rows: the new input updates of this superstep (tagged schema plus the bucket column
    ``_b``). For each bucket present, the state is read from the newest version below
    ``version``, advanced by ``_reduce_step`` and written as ``version``; buckets without
    new input are neither read nor written. Output: the output updates of this iteration
    (tag 3, tagged schema).
    """
    keys, vals, _outs, tnames = column_names(spec)
    for bucket, rows in by_bucket(batches):
        delta = rows.select([*keys, *vals, *tnames, DIFF])
        state = store.load(node, bucket, version)
        if state is None:
            state = spec.schema.empty_table()
        new_state, out_delta, err_delta = reduce_step(spec, fns, state, delta)
        store.save(node, bucket, version, new_state)
        yield from _outputs(spec, widen(out_delta, spec.schema, TAG_DELTA_OUT), err_delta)
