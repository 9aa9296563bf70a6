"""Partition functions that run one plan operator batch by batch: expressions the Spark
compiler cannot translate exactly (the Rust evaluator, ``ddflow._core.eval_expr``) and the
user's Python batch functions (map, filter, flat_map).

Each takes a whole partition (an iterator of Arrow record batches), converts columns to numpy
once, hands them to native code or to the user's function, and yields Arrow batches; nothing
loops over records in Python. A batch that fails on a record is rerun through the embedded
engine's own operator (``error_rows.rerun``) to get exactly its error updates: the task then
fails with a ``DataError`` or, with ``errors="collect"``, emits them as error rows beside the
output of the records that succeeded. A batch with SQL nulls, or any batch of expressions
that can make nulls (a null literal, ``cast(..., strict=False)``; the evaluator's kernel and
numpy hold no nulls) or that read or make a logical dtype (dates, timestamps, decimals, the
narrow integers: the kernel takes only the physical dtypes), runs through that operator
too: the engine's null semantics and types, Arrow nulls and Arrow's logical types out.
A Python function gets a logical column as its words (a date as its days), as on the
embedded engine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ddflow import _core
from ddflow.callbacks import ROW
from ddflow.errors import DataError
from ddflow.plan import FilterOp, FilterPyOp, FlatMapPyOp, SelectOp
from ddflow.spark.tasks import error_rows as er
from ddflow.spark.tasks.batches import DIFF, FnTable, logical_name, tcol, to_arrow, to_numpy
from ddflow.spark.tasks.engine_io import PlanRun, as_type, has_nulls, makes_nulls

__all__ = ["PySpec", "ExprSpec", "py_batches", "expr_batches"]


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
        records = [batch.column(f"_c{i}") for i in range(len(spec.in_names))]
        if any(c.null_count and not pa.types.is_string(c.type) for c in records):
            # An int64 / float64 / bool null reaching a Python function is an error update
            # on the engine (numpy has no null for them): the engine's operator says which.
            yield from _on_engine(spec, fns, batch)
            continue
        payload = {name: to_numpy(c) for name, c in zip(spec.in_names, records, strict=True)}
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
        if spec.kind == FilterPyOp.OP:
            yield _out(spec, batch.filter(pa.array(result)))
            continue
        if spec.kind == FlatMapPyOp.OP:
            rows = pa.array(np.asarray(result.pop(ROW), dtype=np.int64))
            rest = [c.take(rows) for c in rest]
        cols = [
            to_arrow(np.asarray(v), t, spec.label)
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
    tnames = [tcol(j) for j in range(spec.dims)]
    made = any(makes_nulls(json.loads(e)) for e in spec.exprs)
    typed_out = any(logical_name(t) is not None for t in spec.out_types)
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        records = [batch.column(f"_c{i}") for i in range(len(spec.in_names))]
        logical = typed_out or any(logical_name(c.type) is not None for c in records)
        if made or logical or has_nulls(records):
            # SQL nulls, or a logical dtype (a date, a decimal: the evaluator's kernel takes
            # only the physical dtypes): the engine's own operator.
            yield from _on_engine(spec, FnTable({}), batch)
            continue
        payload: dict[str, Any] = {
            name: to_numpy(c) for name, c in zip(spec.in_names, records, strict=True)
        }
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
        cols = [to_arrow(v, t, spec.label) for v, t in zip(values, spec.out_types, strict=True)]
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
    yield from _rerun_rows(spec, batch, result)


def _on_engine(
    spec: PySpec | ExprSpec, fns: FnTable, batch: pa.RecordBatch
) -> Iterator[pa.RecordBatch]:
    """``batch`` run through the engine's own operator (a batch with SQL nulls): its output
    and, in collect mode, its error rows; with ``errors="raise"`` an error update fails the
    task with a ``DataError``."""
    result = er.rerun(_node_json(spec), spec.in_names, spec.dims, fns, batch)
    if result.errors and not spec.collect:
        raise DataError(er.describe(result.errors), er.as_dicts(result.errors))
    yield from _rerun_rows(spec, batch, result)


def _node_json(spec: PySpec | ExprSpec) -> str:
    """The plan node a spec runs: its own, or (an expression stage of the backend's own
    making) a select or filter node built from its expressions."""
    if isinstance(spec, PySpec) or spec.node_json:
        return spec.node_json
    exprs = [json.loads(e) for e in spec.exprs]
    node: dict[str, Any] = {"op": SelectOp.OP, "label": spec.label}
    if spec.is_filter:
        node.update(op=FilterOp.OP, predicate=exprs[0], columns=list(spec.in_names))
    else:
        node.update(exprs=exprs, columns=[f"_o{j}" for j in range(len(exprs))])
    return json.dumps(node)


def _rerun_rows(
    spec: PySpec | ExprSpec, batch: pa.RecordBatch, result: PlanRun
) -> Iterator[pa.RecordBatch]:
    """The data rows (then, when there are any, the error rows) of a batch's rerun."""
    filters = spec.is_filter if isinstance(spec, ExprSpec) else spec.kind == FilterPyOp.OP
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
        cols = [as_type(c, t, spec.label) for c, t in zip(result.columns, types, strict=True)]
        cols += [pa.array(result.times[:, j]) for j in range(spec.dims)]
        cols.append(pa.array(result.diffs))
        yield _out(spec, pa.RecordBatch.from_arrays(cols, schema=data))
    if result.errors:
        yield er.error_batch(result.errors, data, spec.dims)
