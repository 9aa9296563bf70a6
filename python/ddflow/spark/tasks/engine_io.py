"""Arrow columns into the embedded engine and the engine's output back as Arrow, SQL nulls
included, for the partition functions that run a small plan of the engine's own operators
(a reduce, a batch rerun through one operator).

Spark hands a task Arrow batches whose nulls are Arrow nulls. The engine holds a null as its
dtype's reserved word (``ddflow.dtypes.NULL_WORDS``): a column with nulls goes in as the
package's encoded form (``ddflow.dtypes.to_column(..., nullable=True)``: a ``WordColumn`` or a
``Utf8Column`` with null flags), never through numpy (which would turn an int64 null into a
float NaN). Output of a batch with nulls is read through a native ``CaptureState``, the embedded
capture's own path, whose columns carry their null flags, so nulls come back as Arrow
nulls, never as words; a batch without nulls through a plan that makes none
(:func:`makes_nulls`) keeps the faster raw ``capture_take``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from ddflow import _core
from ddflow.dtypes import BinaryColumn, WordColumn, to_column
from ddflow.errors import UserFunctionError
from ddflow.logical_types import is_logical, physical, to_arrow, words_of
from ddflow.spark.tasks.batches import FnTable, logical_name, to_numpy

__all__ = [
    "RawError",
    "PlanRun",
    "engine_column",
    "has_nulls",
    "makes_nulls",
    "as_type",
    "run_plan",
]

RawError = tuple[int, str, str, str, list[int], int]
"""An error update as the engine hands it out: node, operator label, message, values, time,
diff."""


def engine_column(arr: pa.Array | pa.ChunkedArray, what: str) -> Any:
    """An Arrow column as the engine takes it: numpy without nulls, else the encoded
    nullable form (null rows holding the dtype's null word). ``what`` names the column in
    errors (an int64 value of ``-2**63``, int64's null word, is refused)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    name = logical_name(arr.type)
    if name == "binary":
        return BinaryColumn.of_arrow(arr)
    if name is not None:
        # Its words, typed: never numpy (a date would become datetime64, an int32 an int64).
        return WordColumn(name, words_of(arr, name, what))
    if arr.null_count == 0:
        return to_numpy(arr)
    return to_column(arr, what, nullable=True)


def has_nulls(columns: Sequence[pa.Array | pa.ChunkedArray]) -> bool:
    """Whether any of ``columns`` holds a null."""
    return any(c.null_count for c in columns)


def makes_nulls(node: Any) -> bool:
    """Whether plan or expression JSON ``node`` can make a null of non-null input: a null
    literal (an outer join's padding too), a ``cast(..., strict=False)`` (null where a value
    does not convert), a Python map or reducer (its function may return ``None``)."""
    if isinstance(node, dict):
        op = node.get("op")
        if op == "lit" and node.get("value") is None:
            return True
        if op == "cast" and node.get("strict") is False:
            return True
        if op in ("map_py", "flat_map_py") or node.get("kind") == "python":
            return True
        return any(makes_nulls(v) for v in node.values())
    if isinstance(node, list):
        return any(makes_nulls(v) for v in node)
    return False


def _arrow(column: Any) -> pa.Array:
    """A native capture column as Arrow: numpy, ``(offsets, utf8)`` for strings, either in
    ``{"values": ..., "nulls": bool array}`` when it has nulls."""
    nulls = None
    if isinstance(column, dict):
        column, nulls = column["values"], column["nulls"]
    if isinstance(column, tuple):
        offsets, data = column
        n = len(offsets) - 1
        cls = pa.StringArray if offsets.dtype == np.int32 else pa.LargeStringArray
        validity = None
        if nulls is not None:
            validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
        return cls.from_buffers(
            n,
            pa.py_buffer(offsets),
            pa.py_buffer(data),
            validity,
            int(nulls.sum()) if nulls is not None else 0,
        )
    return pa.array(column, mask=nulls)


_PHYSICAL = {"int64": np.int64, "float64": np.float64}


def as_type(arr: pa.Array, typ: pa.DataType, what: str) -> pa.Array:
    """``arr`` as the planned Arrow type ``typ`` (strings of either width), or a
    ``UserFunctionError`` naming ``what`` when its values are of another type."""
    if arr.type == typ:
        return arr
    name = logical_name(typ)
    strings = (pa.string(), pa.large_string())
    if name == "binary" and arr.type in strings:
        return to_arrow(arr, name)  # the Latin-1 texts binary values are interned as
    if name is not None and arr.type == pa.from_numpy_dtype(_PHYSICAL[physical(name)]):
        # The engine's physical column of a planned logical dtype (its words): typed.
        return to_arrow(arr, name)
    if arr.type in strings and typ in strings:
        return arr.cast(typ)
    if len(arr) == 0 or pa.types.is_null(arr.type):
        return pa.nulls(len(arr), typ)
    raise UserFunctionError(
        f"{what}: produced values of type {arr.type}, but the Spark stage was planned with "
        f"{typ} (output types are fixed by calling the function on an empty batch of "
        f"the input's types); make the function return {typ} columns"
    )


@dataclass
class PlanRun:
    """What a small plan made of a batch: its error updates and the captured output
    (consolidated), as Arrow columns with nulls."""

    errors: list[RawError]
    columns: list[pa.Array]
    times: npt.NDArray[np.int64]
    """Output times, ``(n, dims)``."""
    diffs: npt.NDArray[np.int64]


def run_plan(
    plan_json: str,
    fns: FnTable,
    columns: Sequence[pa.Array | pa.ChunkedArray],
    in_names: Sequence[str],
    times: npt.NDArray[np.int64],
    diffs: npt.NDArray[np.int64],
    capture: int,
    out_names: Sequence[str],
    label: str,
) -> PlanRun:
    """Pushes one batch (Arrow record ``columns`` named ``in_names``, ``times`` ``(n,
    dims)``, ``diffs``) into input node 0 of ``plan_json``, runs it to completion and reads
    capture node ``capture`` (columns ``out_names``)."""
    dims = int(times.shape[1])
    engine = _core.Engine(plan_json, 1, fns)
    engine.set_logging(False)
    cols = [
        engine_column(c, f"{label}, column {name!r}")
        for c, name in zip(columns, in_names, strict=True)
    ]
    engine.push(0, cols, np.ascontiguousarray(times, dtype=np.int64), diffs)
    engine.close_input(0)
    engine.run()
    errors: list[RawError] = list(engine.errors_take())
    dtypes = engine.column_dtypes(capture)
    if not has_nulls(columns) and not makes_nulls(json.loads(plan_json)):
        # No null in and none made: the raw updates as numpy (a fifth faster than a capture
        # state's consolidation on a 500k-row reduce).
        cols, raw_times, raw_diffs = engine.capture_take(capture)
        n = len(raw_diffs)
        return PlanRun(
            errors,
            _typed(
                [
                    pa.array(c)
                    if isinstance(c, np.ndarray) and c.dtype != object
                    else pa.array(c, pa.string())
                    for c in cols
                ],
                dtypes,
            ),
            np.asarray(raw_times, dtype=np.int64).reshape(n, dims),
            np.asarray(raw_diffs, dtype=np.int64),
        )
    state = _core.CaptureState(label, list(out_names), dims, "history")
    fresh = engine.capture_poll(capture, state)
    if fresh is None:
        return PlanRun(errors, [], np.zeros((0, dims), np.int64), np.zeros(0, np.int64))
    out_cols, out_times, out_diffs = fresh
    out_diffs = np.asarray(out_diffs, dtype=np.int64)
    n = len(out_diffs)
    out_times = np.asarray(out_times, dtype=np.int64).reshape(n, dims)
    return PlanRun(errors, _typed([_arrow(c) for c in out_cols], dtypes), out_times, out_diffs)


def _typed(columns: list[pa.Array], dtypes: Sequence[str | None]) -> list[pa.Array]:
    """The engine's physical output columns as the Arrow types of their logical dtypes
    (``Engine.column_dtypes`` of the capture: a date32 column's int64 days as ``date32``)."""
    return [
        to_arrow(c, d) if d is not None and is_logical(d) else c
        for c, d in zip(columns, list(dtypes) + [None] * len(columns), strict=False)
    ]
