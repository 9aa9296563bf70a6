"""Executor-side work of the Spark backend: the functions ``mapInArrow`` runs on partitions.

Every function here takes a whole partition (an iterator of Arrow record batches), converts
columns to numpy once, hands them to native code (the embedded engine's operators, the Rust
expression evaluator) or to a user's batch function, and yields Arrow batches. Nothing loops
over records or keys in Python.

Data errors: a record that makes an expression, a user function or an aggregate fail is
an error update on the embedded engine. Here the partition function reruns the failing batch
through the embedded engine's own operator (a one-node plan) to get exactly those error
updates, then fails the task with a ``DataError`` or, with ``errors="collect"``, emits them
as error rows beside the output of the records that succeeded (``error_rows.py``).

Column naming inside the backend (see ``runner.py``): record columns ``_c0..``, outer time
coordinates ``_t0..``, the signed count ``_d``; reduce state batches also carry value columns
``_v0..``, aggregate columns ``_o0..`` and a tag ``_g``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ddflow.callbacks import _HANDLERS, ROW, Registered
from ddflow.errors import DataError, UserFunctionError
from ddflow.spark import error_rows as er
from ddflow.spark.store import StateStore

__all__ = [
    "DIFF",
    "TAG",
    "FnTable",
    "ReduceSpec",
    "consolidate",
    "expr_batches",
    "py_batches",
    "reduce_partition",
    "reduce_partition_stored",
    "to_numpy",
]

DIFF = "_d"
TAG = "_g"
TAG_DELTA_IN = 0
TAG_IN_ACC = 1
TAG_OUT_ACC = 2
TAG_DELTA_OUT = 3


def tcol(j: int) -> str:
    """The name of outer time coordinate ``j``."""
    return f"_t{j}"


class FnTable:
    """The user functions a stage needs, callable like the engine's dispatcher.

    Pickled to the executors with the stage (cloudpickle), so lambdas and closures work.
    """

    def __init__(self, entries: dict[int, Registered]) -> None:
        """Functions by their plan id."""
        self.entries = entries

    def __call__(self, fn_id: int, kind: str, payload: Any) -> Any:
        """Runs function ``fn_id`` on one batch, validating as the embedded engine does."""
        entry = self.entries[fn_id]
        if kind != entry.kind:
            raise UserFunctionError(f"{entry.label}: called a {entry.kind} function as {kind}")
        return _HANDLERS[kind](entry, payload)


def to_numpy(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An Arrow column as the engine's numpy form (str as an object array)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        out = np.empty(len(arr), dtype=object)
        out[:] = arr.to_pylist() if len(arr) < 8 else arr.to_numpy(zero_copy_only=False)
        return out
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def _arrow(values: np.ndarray, typ: pa.DataType, what: str) -> pa.Array:
    """A numpy column as Arrow of the declared type, or a clear error."""
    arr = pa.array(values, type=pa.string()) if values.dtype == object else pa.array(values)
    if arr.type == typ:
        return arr
    if pa.types.is_large_string(typ) and pa.types.is_string(arr.type):
        return arr.cast(typ)
    if len(arr) == 0:
        return pa.array([], type=typ)
    raise UserFunctionError(
        f"{what}: produced values of type {arr.type}, but the Spark stage was planned with "
        f"{typ} (output types are fixed by calling the function on an empty batch of the "
        f"input's types); make the function return {typ} columns"
    )


def _table(batches: Iterator[pa.RecordBatch], schema: pa.Schema | None = None) -> pa.Table:
    items = list(batches)
    if not items:
        assert schema is not None
        return schema.empty_table()
    return pa.Table.from_batches(items)


def consolidate(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Sums ``_d`` per distinct ``keys`` (record and time columns), dropping zeros."""
    if table.num_rows == 0:
        return table.select([*keys, DIFF])
    grouped = table.group_by(list(keys), use_threads=False).aggregate([(DIFF, "sum")])
    out = pa.table([grouped[k] for k in keys] + [grouped[f"{DIFF}_sum"]], names=[*keys, DIFF])
    return out.filter(pc.not_equal(out[DIFF], 0))


# -- Python batch functions (map / filter / flat_map) -------------------------------------------


@dataclass(frozen=True)
class PySpec:
    """A ``map_py`` / ``filter_py`` / ``flat_map_py`` node as a partition function needs it."""

    kind: str
    fn_id: int
    label: str
    in_names: tuple[str, ...]
    out_types: tuple[pa.DataType, ...]
    dims: int
    node_json: str = ""
    """The plan node, for rerunning a failing batch on the engine (``error_rows.rerun``)."""
    collect: bool = False
    """Data errors become error rows (``errors="collect"``) instead of failing the task."""


def py_batches(
    spec: PySpec, fns: FnTable, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Runs a user's batch function on each Arrow batch (one Python call per batch)."""
    tnames = [tcol(j) for j in range(spec.dims)]
    for batch in batches:
        if batch.num_rows == 0:
            continue
        payload = {name: to_numpy(batch.column(f"_c{i}")) for i, name in enumerate(spec.in_names)}
        rest = [batch.column(t) for t in tnames] + [batch.column(DIFF)]
        try:
            result = fns(spec.fn_id, spec.kind, payload)
        except Exception as exc:
            if spec.collect:
                yield from _collected(spec, fns, batch, exc)
                continue
            er.raise_data_errors(spec.node_json, spec.in_names, spec.dims, fns, batch)
            exc.add_note(f"ddflow: raised by {spec.label} on Spark")
            raise
        if spec.kind == "filter_py":
            yield _out(spec, batch.filter(pa.array(result)))
            continue
        if spec.kind == "flat_map_py":
            rows = pa.array(np.asarray(result.pop(ROW), dtype=np.int64))
            rest = [c.take(rows) for c in rest]
        cols = [
            _arrow(np.asarray(v), t, spec.label)
            for v, t in zip(result.values(), spec.out_types, strict=True)
        ]
        names = [f"_c{j}" for j in range(len(cols))] + tnames + [DIFF]
        yield _out(spec, pa.RecordBatch.from_arrays(cols + rest, names=names))


# -- expressions the Spark compiler cannot translate exactly ------------------------------------


@dataclass(frozen=True)
class ExprSpec:
    """A ``select`` (``exprs``) or ``filter`` (``predicate``) evaluated by the Rust evaluator."""

    label: str
    in_names: tuple[str, ...]
    exprs: tuple[str, ...]
    """Expression JSON texts (one per output column; one predicate for a filter)."""
    is_filter: bool
    out_types: tuple[pa.DataType, ...]
    dims: int
    node_json: str = ""
    """The plan node, for rerunning a failing batch on the engine (``error_rows.rerun``)."""
    collect: bool = False
    """Data errors become error rows (``errors="collect"``) instead of failing the task."""


def expr_batches(spec: ExprSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Evaluates expressions on whole columns in Rust (``ddflow._core.eval_expr``)."""
    from ddflow import _core

    tnames = [tcol(j) for j in range(spec.dims)]
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        payload = {name: to_numpy(batch.column(f"_c{i}")) for i, name in enumerate(spec.in_names)}
        try:
            values = [np.asarray(_core.eval_expr(e, payload, n)) for e in spec.exprs]
        except Exception as exc:
            if spec.collect:
                yield from _collected(spec, FnTable({}), batch, exc)
                continue
            er.raise_data_errors(spec.node_json, spec.in_names, spec.dims, FnTable({}), batch)
            exc.add_note(f"ddflow: raised by {spec.label} on Spark")
            raise
        if spec.is_filter:
            yield _out(spec, batch.filter(pa.array(values[0].astype(bool))))
            continue
        cols = [_arrow(v, t, spec.label) for v, t in zip(values, spec.out_types, strict=True)]
        rest = [batch.column(t) for t in tnames] + [batch.column(DIFF)]
        names = [f"_c{j}" for j in range(len(cols))] + tnames + [DIFF]
        yield _out(spec, pa.RecordBatch.from_arrays(cols + rest, names=names))


def _out(spec: PySpec | ExprSpec, batch: pa.RecordBatch) -> pa.RecordBatch:
    """A stage's output batch: with the (null) error columns in collect mode."""
    return er.without_errors(batch) if spec.collect else batch


def _collected(
    spec: PySpec | ExprSpec, fns: FnTable, batch: pa.RecordBatch, exc: Exception
) -> Iterator[pa.RecordBatch]:
    """Collect mode, ``batch`` failed: the output of its records that succeed, then its error
    rows, both found by rerunning it on the engine's operator. Re-raises ``exc`` when the
    failure is not about the data (no error updates)."""
    try:
        result = er.rerun(spec.node_json, spec.in_names, spec.dims, fns, batch)
    except Exception:
        raise exc from None
    if not result.errors:
        exc.add_note(f"ddflow: raised by {spec.label} on Spark")
        raise exc
    filters = spec.is_filter if isinstance(spec, ExprSpec) else spec.kind == "filter_py"
    types = (
        [batch.schema.field(f"_c{i}").type for i in range(len(spec.in_names))]
        if filters
        else list(spec.out_types)
    )
    fields = [pa.field(f"_c{j}", t) for j, t in enumerate(types)]
    fields += [pa.field(tcol(j), pa.int64()) for j in range(spec.dims)]
    data = pa.schema([*fields, pa.field(DIFF, pa.int64())])
    n = len(result.diffs)
    if n:
        cols = [_arrow(c, t, spec.label) for c, t in zip(result.columns, types, strict=True)]
        cols += [pa.array(result.times[:, j]) for j in range(spec.dims)]
        cols.append(pa.array(result.diffs))
        yield er.without_errors(pa.RecordBatch.from_arrays(cols, schema=data))
    yield er.error_batch(result.errors, data, spec.dims)


# -- reduce: the embedded engine's operator on a partition --------------------------------------


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
        {"id": 0, "op": "input", "scope": 0, "inputs": [], "columns": cols,
         "label": f"{spec.label} (Spark partition input)", "name": "partition"},
        {"id": 1, "op": "arrange", "scope": 0, "inputs": [0], "columns": cols,
         "label": f"{spec.label} (arrange)", "key": list(range(spec.n_keys))},
        {"id": 2, "op": "reduce", "scope": 0, "inputs": [1], "columns": outs,
         "label": spec.label, "agg": spec.agg},
        {"id": 3, "op": "capture", "scope": 0, "inputs": [2], "columns": outs,
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
    from ddflow import _core

    keys = [f"_c{i}" for i in range(spec.n_keys)]
    vals = [f"_v{i}" for i in range(spec.n_vals)]
    tnames = [tcol(j) for j in range(spec.dims)]
    out_names = keys + [f"_o{i}" for i in range(spec.n_outs)]
    if table.num_rows == 0:
        return spec.schema.empty_table().select([*out_names, *tnames, DIFF]), []
    engine = _core.Engine(_mini_plan(spec), 1, fns)
    engine.set_logging(False)
    columns = [to_numpy(table[c]) for c in keys + vals]
    times = np.column_stack([table[t].to_numpy() for t in tnames]).astype(np.int64)
    diffs = table[DIFF].to_numpy().astype(np.int64)
    try:
        engine.push(0, columns, np.ascontiguousarray(times), diffs)
        engine.close_input(0)
        engine.run()
    except Exception as exc:
        exc.add_note(f"ddflow: raised by {spec.label} on Spark")
        raise
    errors = list(engine.errors_take())
    out_cols, out_times, out_diffs = engine.capture_take(3)
    n = len(out_diffs)
    if n == 0:
        return spec.schema.empty_table().select([*out_names, *tnames, DIFF]), errors
    out_times = np.asarray(out_times, dtype=np.int64).reshape(n, spec.dims)
    key_types = [spec.schema.field(k).type for k in keys]
    arrays = [
        _arrow(np.asarray(c), t, spec.label)
        for c, t in zip(out_cols, key_types + list(spec.out_types), strict=True)
    ]
    arrays += [pa.array(out_times[:, j]) for j in range(spec.dims)]
    arrays.append(pa.array(np.asarray(out_diffs, dtype=np.int64)))
    return pa.table(arrays, names=[*out_names, *tnames, DIFF]), errors


def _fail(errors: Sequence[er.RawError]) -> None:
    """Fails the task with a ``DataError`` when there are error updates."""
    if errors:
        raise DataError(er.describe(errors), er.as_dicts(errors))


def _widen(table: pa.Table, schema: pa.Schema, tag: int) -> pa.Table:
    """``table``'s columns placed in the tagged state schema (absent columns null)."""
    n = table.num_rows
    arrays = []
    for field in schema:
        if field.name == TAG:
            arrays.append(pa.array(np.full(n, tag, dtype=np.int32)))
        elif field.name in table.column_names:
            arrays.append(table[field.name].combine_chunks().cast(field.type))
        else:
            arrays.append(pa.nulls(n, type=field.type))
    return pa.table(arrays, schema=schema)


def reduce_partition(
    spec: ReduceSpec,
    fns: FnTable,
    stateful: bool,
    counter: Any,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """One partition of a reduce superstep.

    Input rows are tagged: new input updates (0), the accumulated input (1) and the
    accumulated output (2) of the keys hashed to this partition, all with times advanced to the
    current iteration (so only outer time coordinates remain). Output: the new accumulated
    input (1) and output (2) when ``stateful``, and the output updates of this iteration (3):
    ``reduce(accumulated input) - accumulated output``, computed only for keys with new input;
    the state rows of the other keys are passed on as they came. ``counter`` (a Spark
    accumulator, or None) receives the number of output updates.
    """
    table = _table(batches, spec.schema)
    keys, vals, outs, tnames = _names(spec)
    is_delta = pc.equal(table[TAG], TAG_DELTA_IN)
    delta = table.filter(is_delta).select([*keys, *vals, *tnames, DIFF])
    if not stateful:
        fresh, errors = _run_reduce(spec, fns, delta)
        if not spec.collect:
            _fail(errors)
        out = _widen(consolidate(fresh, [*keys, *outs, *tnames]), spec.schema, TAG_DELTA_OUT)
        yield from _outputs(spec, out, errors)
        return
    if delta.num_rows == 0:
        yield from _outputs(spec, table, [])
        return
    state = table.filter(pc.invert(is_delta))
    new_state, out_delta, err_delta = _reduce_step(spec, fns, state, delta)
    if counter is not None:
        counter.add(out_delta.num_rows)
    out = _widen(out_delta, spec.schema, TAG_DELTA_OUT)
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


def _names(spec: ReduceSpec) -> tuple[list[str], list[str], list[str], list[str]]:
    """Key, value, aggregate-output and time column names of a reduce's batches."""
    return (
        [f"_c{i}" for i in range(spec.n_keys)],
        [f"_v{i}" for i in range(spec.n_vals)],
        [f"_o{i}" for i in range(spec.n_outs)],
        [tcol(j) for j in range(spec.dims)],
    )


def _reduce_step(
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
    keys, vals, outs, tnames = _names(spec)
    touched = delta.select(keys).group_by(keys, use_threads=False).aggregate([])
    kept = state.join(touched, keys=keys, join_type="left anti", use_threads=False)
    hit = state.join(touched, keys=keys, join_type="left semi", use_threads=False)
    tag = hit[TAG]
    in_acc = hit.filter(pc.equal(tag, TAG_IN_ACC)).select([*keys, *vals, *tnames, DIFF])
    out_acc = hit.filter(pc.equal(tag, TAG_OUT_ACC)).select([*keys, *outs, *tnames, DIFF])
    new_in = consolidate(
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
    out_delta = consolidate(
        pa.concat_tables([fresh, negated.select(fresh.column_names)]), [*keys, *outs, *tnames]
    )
    new_out = consolidate(
        pa.concat_tables([out_acc, out_delta.select(out_acc.column_names)]),
        [*keys, *outs, *tnames],
    )
    new_state = pa.concat_tables(
        [
            kept.select(spec.schema.names).cast(spec.schema),
            _widen(new_in, spec.schema, TAG_IN_ACC),
            _widen(new_out, spec.schema, TAG_OUT_ACC),
        ]
    )
    return new_state, out_delta, err_delta


BUCKET = "_b"
"""The state store bucket of a row: ``pmod(hash(key), P)``, computed by Spark."""


def by_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, pa.Table]]:
    """A partition's rows split by their store bucket (``_b``; usually one per task)."""
    items = [b for b in batches if b.num_rows]
    if not items:
        return
    table = pa.Table.from_batches(items)
    buckets = pc.unique(table[BUCKET]).to_pylist()
    for bucket in buckets:
        rows = table.filter(pc.equal(table[BUCKET], bucket)) if len(buckets) > 1 else table
        yield int(bucket), rows


def reduce_partition_stored(
    spec: ReduceSpec,
    fns: FnTable,
    store: StateStore,
    node: int,
    version: int,
    counter: Any,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """One partition of a reduce superstep whose state lives in ``store``.

    Input rows: the new input updates of this superstep (tagged schema plus the bucket column
    ``_b``). For each bucket present, the state is read from the newest version below
    ``version``, advanced by ``_reduce_step`` and written as ``version``; buckets without
    new input are neither read nor written. Output: the output updates of this iteration
    (tag 3, tagged schema). ``counter`` (a Spark accumulator, or None) receives their
    number.
    """
    keys, vals, _outs, tnames = _names(spec)
    for bucket, rows in by_bucket(batches):
        delta = rows.select([*keys, *vals, *tnames, DIFF])
        state = store.load(node, bucket, version)
        if state is None:
            state = spec.schema.empty_table()
        new_state, out_delta, err_delta = _reduce_step(spec, fns, state, delta)
        store.save(node, bucket, version, new_state)
        if counter is not None:
            counter.add(out_delta.num_rows)
        yield from _outputs(spec, _widen(out_delta, spec.schema, TAG_DELTA_OUT), err_delta)
