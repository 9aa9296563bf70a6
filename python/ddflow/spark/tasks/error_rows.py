"""Data errors in the Spark backend's partition functions (the executor side).

A record that makes an operator fail (an expression, a user function, an aggregate) is an
*error update* on the embedded engine. A partition function that hits one reruns the
failing Arrow batch through the engine's own operator (a one-node plan), which isolates the
failing records and returns exactly the engine's error updates (operator, message, values,
time, diff) and the output of the records that succeeded.

With ``errors="raise"`` the task then fails with a ``DataError`` carrying them (the driver
re-raises it, ``driver/progress.py``). With ``errors="collect"`` the stage's output schema
has three more nullable string columns, ``_eo`` (operator), ``_em`` (message) and ``_ev``
(values): a data row has them null, an error row has them set, its record columns null, its
outer time in ``_t0..`` and its diff in ``_d``. The driver splits the two
(``driver/error_frames.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ddflow.errors import DataError
from ddflow.plan import CaptureOp, InputOp
from ddflow.spark.tasks.batches import FnTable
from ddflow.spark.tasks.engine_io import PlanRun, RawError, run_plan

__all__ = [
    "DATA_ERROR",
    "ERR_OP",
    "ERR_MSG",
    "ERR_VALS",
    "ERROR_FIELDS",
    "RawError",
    "rerun",
    "raise_data_errors",
    "describe",
    "as_dicts",
    "error_batch",
    "with_error_fields",
    "without_errors",
]

DATA_ERROR = "ddflow data error on Spark"
"""The first words of a ``DataError`` raised in a task (found again in Spark's exception)."""

ERR_OP = "_eo"
ERR_MSG = "_em"
ERR_VALS = "_ev"
ERROR_FIELDS = (ERR_OP, ERR_MSG, ERR_VALS)
"""The error columns of a stage's output in ``errors="collect"`` mode (null on data rows)."""

_SHOWN = 5


def rerun(
    node_json: str,
    in_names: Sequence[str],
    dims: int,
    fns: FnTable,
    batch: pa.RecordBatch,
) -> PlanRun:
    """Runs ``batch`` (record columns ``_c0..``, times ``_t0..``, diffs ``_d``) through the
    plan node ``node_json`` on a one-node embedded dataflow: its error updates and the
    (consolidated) output of the records that succeed, as Arrow columns with nulls."""
    node = dict(json.loads(node_json), id=1, inputs=[0], scope=0)
    nodes = [
        {"id": 0, "op": InputOp.OP, "scope": 0, "inputs": [], "columns": list(in_names),
         "label": f"{node['label']} (Spark batch input)", "name": "batch"},
        node,
        {"id": 2, "op": CaptureOp.OP, "scope": 0, "inputs": [1], "columns": node["columns"],
         "label": f"{node['label']} (capture)"},
    ]  # fmt: skip
    plan = {"version": 1, "time_dims": dims, "scopes": [{"id": 0, "parent": None}],
            "nodes": nodes}  # fmt: skip
    in_cols = [batch.column(f"_c{i}") for i in range(len(in_names))]
    times = np.column_stack([batch.column(f"_t{j}").to_numpy() for j in range(dims)])
    diffs = batch.column("_d").to_numpy().astype(np.int64)
    return run_plan(
        json.dumps(plan, separators=(",", ":")),
        fns,
        in_cols,
        in_names,
        times.astype(np.int64),
        diffs,
        2,
        node["columns"],
        node["label"],
    )


def describe(errors: Sequence[RawError]) -> str:
    """The text of a ``DataError`` listing the first few errors."""
    lines = [
        f"  operator {label}: {message} (values: {values}; time {tuple(time)}, diff {diff})"
        for _node, label, message, values, time, diff in errors[:_SHOWN]
    ]
    if len(errors) > _SHOWN:
        lines.append(f"  ... and {len(errors) - _SHOWN} more")
    return f"{DATA_ERROR}:\n" + "\n".join(lines)


def as_dicts(errors: Sequence[RawError]) -> list[dict[str, Any]]:
    """Errors as the dicts a ``DataError`` carries."""
    return [
        {"operator": label, "message": m, "values": v, "time": tuple(t), "diff": d}
        for _n, label, m, v, t, d in errors
    ]


def raise_data_errors(
    node_json: str, in_names: Sequence[str], dims: int, fns: FnTable, batch: pa.RecordBatch
) -> None:
    """Raises ``DataError`` when the engine turns ``batch`` into error updates; returns
    otherwise (the caller re-raises its own exception)."""
    if not node_json:
        return
    try:
        errors = rerun(node_json, in_names, dims, fns, batch).errors
    except Exception:
        return
    if errors:
        raise DataError(describe(errors), as_dicts(errors))


def with_error_fields(data: pa.Schema) -> pa.Schema:
    """A stage's data schema (record columns, times, diff) with the error columns added."""
    return pa.schema([*data, *(pa.field(name, pa.string()) for name in ERROR_FIELDS)])


def error_batch(errors: Sequence[RawError], data: pa.Schema, dims: int) -> pa.RecordBatch:
    """Error rows of a stage whose data rows have schema ``data``: record columns null,
    outer time, diff and the three error columns set."""
    n = len(errors)
    times = np.array([list(e[4])[:dims] for e in errors], dtype=np.int64).reshape(n, dims)
    set_cols: dict[str, pa.Array] = {
        ERR_OP: pa.array([e[1] for e in errors], pa.string()),
        ERR_MSG: pa.array([e[2] for e in errors], pa.string()),
        ERR_VALS: pa.array([e[3] for e in errors], pa.string()),
        "_d": pa.array([int(e[5]) for e in errors], pa.int64()),
    }
    for j in range(dims):
        set_cols[f"_t{j}"] = pa.array(times[:, j])
    schema = with_error_fields(data)
    arrays = [set_cols.get(f.name, pa.nulls(n, f.type)) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def without_errors(batch: pa.RecordBatch) -> pa.RecordBatch:
    """A data batch with the error columns added (null)."""
    n = batch.num_rows
    arrays = [*batch.columns, *(pa.nulls(n, pa.string()) for _ in ERROR_FIELDS)]
    return pa.RecordBatch.from_arrays(arrays, names=[*batch.schema.names, *ERROR_FIELDS])
