"""Arrow batches as the Spark backend's tasks see them: the internal column names of update
batches, the user-function table pickled with a stage, conversions between Arrow and the
engine's numpy columns, and the small table operations every partition function shares
(consolidation, the tagged reduce schema, splitting by state store bucket).

Column naming inside the backend: record columns ``_c0..``, outer time coordinates ``_t0..``,
the signed count ``_d``; reduce state batches also carry value columns ``_v0..``, aggregate
columns ``_o0..`` and a tag ``_g``; rows bound for the state store carry their bucket ``_b``.
Nothing here imports pyspark: executors run it without the driver's modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from ddflow.callbacks import _HANDLERS, Registered
from ddflow.errors import UserFunctionError
from ddflow.logical_types import is_logical, name_of_arrow, physical, words_of
from ddflow.logical_types import to_arrow as words_to_arrow

__all__ = [
    "DIFF",
    "TAG",
    "TAG_DELTA_IN",
    "TAG_IN_ACC",
    "TAG_OUT_ACC",
    "TAG_DELTA_OUT",
    "BUCKET",
    "PART",
    "ccol",
    "tcol",
    "FnTable",
    "logical_name",
    "to_numpy",
    "to_arrow",
    "table_of",
    "consolidated",
    "negated",
    "filter_join",
    "widen",
    "by_bucket",
    "PROBE_COLUMNS",
    "version_probe",
]

DIFF = "_d"
"""The signed count of an update."""
TAG = "_g"
"""The role of a row in a reduce's tagged schema (one of the ``TAG_*`` values)."""
TAG_DELTA_IN = 0
"""A new input update."""
TAG_IN_ACC = 1
"""The accumulated input of a key."""
TAG_OUT_ACC = 2
"""The accumulated output of a key."""
TAG_DELTA_OUT = 3
"""An output update of this iteration."""
BUCKET = "_b"
"""The state store bucket of a row: ``pmod(hash(key), P)``, computed by Spark."""
PART = "_p"
"""The Spark partition a row is in (``spark_partition_id()``, computed by Spark in the stage
that hands it to a task): names the part file a task writes, the same on a retry."""


def ccol(i: int) -> str:
    """The name of record column ``i``."""
    return f"_c{i}"


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


def logical_name(typ: pa.DataType) -> str | None:
    """The logical ddflow dtype of an Arrow type (``date32``, ``decimal128(12, 2)``,
    ``int32``...), or None for the four physical ones (and ``large_string``)."""
    name = name_of_arrow(typ)
    return name if is_logical(name) else None


def to_numpy(arr: pa.Array | pa.ChunkedArray) -> npt.NDArray[Any]:
    """An Arrow column as the engine's numpy form (str as an object array; a logical type as
    its words read as its physical dtype, as the embedded engine hands them to a Python
    function: a date as its days, a decimal as its unscaled int64)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    name = logical_name(arr.type)
    if name is not None:
        words = words_of(arr, name, "a column")
        return words.view(np.float64 if physical(name) == "float64" else np.int64)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        out = np.empty(len(arr), dtype=object)
        out[:] = arr.to_pylist() if len(arr) < 8 else arr.to_numpy(zero_copy_only=False)
        return out
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def to_arrow(values: npt.NDArray[Any], typ: pa.DataType, what: str) -> pa.Array:
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
        f"{typ} (output types are fixed by calling the function on an empty batch of "
        f"the input's types); make the function return {typ} columns"
    )


def table_of(batches: Iterator[pa.RecordBatch], schema: pa.Schema | None = None) -> pa.Table:
    items = list(batches)
    if not items:
        assert schema is not None
        return schema.empty_table()
    return pa.Table.from_batches(items)


def consolidated(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Sums ``_d`` per distinct ``keys`` (record and time columns), dropping zeros."""
    if table.num_rows == 0:
        return table.select([*keys, DIFF])
    grouped = table.group_by(list(keys), use_threads=False).aggregate([(DIFF, "sum")])
    out = pa.table([grouped[k] for k in keys] + [grouped[f"{DIFF}_sum"]], names=[*keys, DIFF])
    return out.filter(pc.not_equal(out[DIFF], 0))


_FILL: dict[str, Any] = {"int64": 0, "double": 0.0, "bool": False}


def _fill(typ: pa.DataType) -> pa.Scalar:
    """A non-null value of Arrow type ``typ`` (any, to stand in for a null)."""
    name = logical_name(typ)
    if name is not None:
        zero = pa.array([0], pa.float64() if physical(name) == "float64" else pa.int64())
        return words_to_arrow(zero, name)[0]
    return pa.scalar(_FILL.get(str(typ), ""), type=typ)


def _null_safe_keys(table: pa.Table, keys: Sequence[str]) -> tuple[pa.Table, list[str]]:
    """``table`` with two join columns per key column: its values with nulls filled, and
    whether it is null; joining on those matches a null key with a null key."""
    names = []
    for i, k in enumerate(keys):
        col = table[k]
        table = table.append_column(f"__k{i}", pc.fill_null(col, _fill(col.type)))
        table = table.append_column(f"__n{i}", pc.is_null(col))
        names += [f"__k{i}", f"__n{i}"]
    return table, names


def filter_join(left: pa.Table, right: pa.Table, keys: Sequence[str], how: str) -> pa.Table:
    """``left``'s rows whose ``keys`` do (``how="left semi"``) or do not (``"left anti"``)
    occur in ``right``, a null key matching a null key (grouping's rule: a key with nulls is
    one key). Arrow's own joins never match a null."""
    if not any(t[k].null_count for t in (left, right) for k in keys):
        return left.join(right, keys=list(keys), join_type=how, use_threads=False)
    lk, names = _null_safe_keys(left, keys)
    rk, _ = _null_safe_keys(right.select(list(keys)), keys)
    out = lk.join(rk.select(names), keys=names, join_type=how, use_threads=False)
    return out.select(left.column_names)


def negated(table: pa.Table) -> pa.Table:
    """``table`` with every diff negated."""
    return table.set_column(table.schema.get_field_index(DIFF), DIFF, pc.negate(table[DIFF]))


def widen(table: pa.Table, schema: pa.Schema, tag: int) -> pa.Table:
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


PROBE_COLUMNS = ("ddflow", "core", "python", "executable", "error")
"""The string columns of the rows ``version_probe``'s function returns."""


def version_probe() -> Callable[[Iterable[Any]], Iterator[Any]]:
    """A partition function reporting the executor's ddflow: one row per partition with
    ``ddflow.__version__``, ``ddflow._core.__version__``, the Python version and
    ``sys.executable``, or the error importing them.

    It is built here as a nested function, which Spark pickles by value: an executor
    without ddflow can still run it and report that, where a module-level function of
    ddflow would fail to unpickle there with an error that names neither interpreter."""

    def probe(batches: Iterable[Any]) -> Iterator[Any]:
        import platform
        import sys

        import pyarrow

        ddflow_version = core_version = error = None
        try:
            import ddflow
            from ddflow import _core

            ddflow_version = str(ddflow.__version__)
            core_version = str(_core.__version__)
        except Exception as exc:  # ImportError, or a broken install
            error = f"{type(exc).__name__}: {exc}"
        for batch in batches:
            if batch.num_rows:
                row = [ddflow_version, core_version, platform.python_version()]
                row += [sys.executable, error]
                arrays = [pyarrow.array([v], pyarrow.string()) for v in row]
                yield pyarrow.RecordBatch.from_arrays(arrays, names=list(PROBE_COLUMNS))

    return probe
