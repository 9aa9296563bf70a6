"""Executor side of fused supersteps (``driver/fused.py``): the partition functions that write a
loop-invariant arrangement into the state store, and that run one whole superstep of a fused
iterate body on one key bucket.

A fused superstep, per bucket of the reduce's key: the reduce's new input (shuffled here by
Spark) advances the reduce's state in the store and gives the result's updates at this
iteration; they are the loop variable's updates for the next iteration (minus the variable's
source at iteration 0), which the same task joins with the invariant arrangement's rows of
the same bucket (read once per Python worker and kept), passes through the body's
expressions (the Rust evaluator) and emits as the reduce's new input for the next superstep.
Rows out are the next superstep's input, in the reduce's tagged schema (tag 0). The result's
updates are not emitted: the reduce's accumulated output in the store *is* the sum of the
result's updates over all iterations, compacted, which is what the loop's ``leave`` gives;
``read_result`` reads it once the loop has ended. Nothing loops over records in Python.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ddflow.errors import DataError
from ddflow.spark.tasks.batch_functions import ExprSpec, expr_batches
from ddflow.spark.tasks.batches import (
    BUCKET,
    DIFF,
    PART,
    TAG,
    TAG_DELTA_IN,
    TAG_OUT_ACC,
    FnTable,
    by_bucket,
    consolidated,
    negated,
    tcol,
    widen,
)
from ddflow.spark.tasks.error_rows import DATA_ERROR
from ddflow.spark.tasks.reduce import ReduceSpec, column_names, reduce_step
from ddflow.spark.tasks.store import StateStore

__all__ = [
    "ChainStep",
    "FusedSpec",
    "TAG_SOURCE",
    "TAG_COUNT",
    "FAULT_ENV",
    "fused_superstep",
    "write_invariant",
    "read_result",
]

TAG_SOURCE = 5
"""Rows of the loop variable's source (iteration 0 only), subtracted from the feedback."""
TAG_COUNT = 6
"""A fused task's count of the variable's updates it fed back (in ``diff``)."""

FAULT_ENV = "DDFLOW_SPARK_FAULT"
"""Fault injection for tests: ``"{superstep}:{marker path}"`` makes the first task of that
superstep that has written its reduce state kill its own Python worker (SIGKILL), once (the
marker file is created atomically), before emitting anything."""

_CACHE: dict[tuple[str, int, int], pa.Table] = {}
"""Invariant arrangement buckets read by this Python worker, by (store root, node, bucket)."""


@dataclass(frozen=True)
class ChainStep:
    """One body operator between the join and the reduce: a column reordering (``order``
    set: the new column order), an expression stage (``expr`` set) or, with neither, a
    pass-through (a union with inputs that do not change in the loop)."""

    order: tuple[int, ...] | None = None
    expr: ExprSpec | None = None


@dataclass(frozen=True)
class FusedSpec:
    """A fused iterate body as its tasks need it."""

    reduce: ReduceSpec
    reduce_node: int
    invariant_node: int
    """The plan node of the loop-invariant arrangement, as stored by ``write_invariant``."""
    var_order: tuple[int, ...]
    """The variable's arrangement: its columns reordered key first."""
    key_len: int
    """Join key length."""
    n_var: int
    """Columns of the variable (= the reduce's output columns)."""
    n_inv: int
    """Columns of the invariant arrangement (key first)."""
    join_label: str
    chain: tuple[ChainStep, ...]
    dims: int


def write_invariant(
    store: StateStore, node: int, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """Writes this task's rows of an invariant arrangement (``_c..``, times, diff, bucket
    ``_b``, Spark partition ``_p``) into the store, one part per bucket present, named by
    the partition (a retried task replaces its own part); yields one row (the rows
    written)."""
    written = 0
    for bucket, rows in by_bucket(batches):
        part = rows[PART][0].as_py()
        store.save_part(node, bucket, int(part), rows.drop_columns([BUCKET, PART]))
        written += rows.num_rows
    yield pa.RecordBatch.from_arrays([pa.array([written], pa.int64())], names=["rows"])


def _invariant(store: StateStore, node: int, bucket: int) -> pa.Table | None:
    key = (store.root, node, bucket)
    if key not in _CACHE:
        for old in [k for k in _CACHE if k[0] != store.root]:
            del _CACHE[old]  # an earlier run's rows
        _CACHE[key] = store.load_parts(node, bucket)
    return _CACHE[key]


def _join(spec: FusedSpec, var: pa.Table, inv: pa.Table) -> pa.Table:
    """The join of the variable's updates (key first) with the invariant arrangement:
    left columns, then the right's value columns; time = coordinate-wise max, diff =
    product (overflow raises ``DataError`` naming the join)."""
    k = spec.key_len
    tn = [tcol(j) for j in range(spec.dims)]
    right = inv.select([f"_c{i}" for i in range(spec.n_inv)] + tn + [DIFF]).rename_columns(
        [f"_r{i}" for i in range(spec.n_inv)] + [f"_r{t}" for t in tn] + ["_rd"]
    )
    joined = var.join(
        right,
        keys=[f"_c{i}" for i in range(k)],
        right_keys=[f"_r{i}" for i in range(k)],
        join_type="inner",
        use_threads=False,
    )
    cols = [joined[f"_c{i}"] for i in range(spec.n_var)]
    cols += [joined[f"_r{i}"] for i in range(k, spec.n_inv)]
    cols += [pc.max_element_wise(joined[t], joined[f"_r{t}"]) for t in tn]
    try:
        cols.append(pc.multiply_checked(joined[DIFF], joined["_rd"]))
    except pa.ArrowInvalid as exc:
        raise DataError(
            f"{DATA_ERROR}:\n  operator {spec.join_label}: diff overflow ({exc})", []
        ) from None
    n_out = spec.n_var + spec.n_inv - k
    return pa.table(cols, names=[f"_c{i}" for i in range(n_out)] + tn + [DIFF])


def _reorder(table: pa.Table, order: tuple[int, ...], dims: int) -> pa.Table:
    tn = [tcol(j) for j in range(dims)]
    cols = [table[f"_c{i}"] for i in order] + [table[t] for t in tn] + [table[DIFF]]
    return pa.table(cols, names=[f"_c{j}" for j in range(len(order))] + tn + [DIFF])


def _chain(spec: FusedSpec, table: pa.Table) -> pa.Table:
    for step in spec.chain:
        if table.num_rows == 0:
            break
        if step.order is not None:
            table = _reorder(table, step.order, spec.dims)
        elif step.expr is not None:
            out = list(expr_batches(step.expr, iter(table.to_batches())))
            if not out:
                return table.slice(0, 0)
            table = pa.Table.from_batches(out)
    return table


def _maybe_fault(version: int) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    at, marker = spec.split(":", 1)
    if int(at) != version:
        return
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def fused_superstep(
    spec: FusedSpec,
    fns: FnTable,
    store: StateStore,
    version: int,
    last: bool,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    """Superstep ``version`` of a fused body on this task's buckets (see the module doc).
    ``last``: no further iteration may run (``max_iterations``), so nothing is fed back.
    The task's last row (tag ``TAG_COUNT``, its count in ``diff``, other columns null)
    holds the number of the variable's updates it fed back, for the driver to sum."""
    rs = spec.reduce
    keys, vals, outs, tnames = column_names(rs)
    fed_back = 0
    for bucket, rows in by_bucket(batches):
        tag = rows[TAG]
        delta = rows.filter(pc.equal(tag, TAG_DELTA_IN)).select([*keys, *vals, *tnames, DIFF])
        source = rows.filter(pc.equal(tag, TAG_SOURCE)).select([*keys, *outs, *tnames, DIFF])
        if delta.num_rows:
            state = store.load(spec.reduce_node, bucket, version)
            if state is None:
                state = rs.schema.empty_table()
            new_state, out_delta, _ = reduce_step(rs, fns, state, delta)
            store.save(spec.reduce_node, bucket, version, new_state)
            _maybe_fault(version)
        else:
            out_delta = source.slice(0, 0)
        if last:
            continue
        var = consolidated(
            pa.concat_tables([out_delta, negated(source).cast(out_delta.schema)]),
            [*keys, *outs, *tnames],
        )
        fed_back += var.num_rows
        if var.num_rows == 0:
            continue
        var = var.rename_columns([f"_c{i}" for i in range(spec.n_var)] + tnames + [DIFF])
        inv = _invariant(store, spec.invariant_node, bucket)
        if inv is None:
            continue
        arranged = _reorder(var, spec.var_order, spec.dims)
        nxt = _chain(spec, _join(spec, arranged, inv))
        if nxt.num_rows == 0:
            continue
        # The reduce sums equal updates anyway; summing them here takes 44% of the rows that
        # cross into Spark and back off a busy BFS superstep (many sources reach one node at
        # one time).
        nxt = consolidated(nxt, [c for c in nxt.column_names if c != DIFF])
        k = rs.n_keys
        parts = {f"_c{i}": nxt[f"_c{i}"] for i in range(k)}
        parts.update({f"_v{i}": nxt[f"_c{k + i}"] for i in range(rs.n_vals)})
        parts.update({t: nxt[t] for t in tnames})
        parts[DIFF] = nxt[DIFF]
        yield from widen(pa.table(parts), rs.schema, TAG_DELTA_IN).to_batches()
    if fed_back:
        count = pa.table({DIFF: pa.array([fed_back], pa.int64())})
        yield from widen(count, rs.schema, TAG_COUNT).to_batches()


def read_result(
    spec: ReduceSpec, store: StateStore, node: int, before: int, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """The loop's result for the buckets named in ``batches`` (column ``id``): the reduce's
    accumulated output in the newest stored version below ``before``, as update rows
    (``_c..`` key and aggregate columns, times, diff)."""
    keys, _vals, outs, tnames = column_names(spec)
    k = spec.n_keys
    for batch in batches:
        for bucket in batch.column(0).to_pylist():
            state = store.load(node, int(bucket), before)
            if state is None or state.num_rows == 0:
                continue
            acc = state.filter(pc.equal(state[TAG], TAG_OUT_ACC))
            names = [f"_c{i}" for i in range(k + spec.n_outs)] + tnames + [DIFF]
            yield from acc.select([*keys, *outs, *tnames, DIFF]).rename_columns(names).to_batches()
