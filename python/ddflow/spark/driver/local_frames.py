"""Update tables on the Spark driver: the operations a small incremental run
(``local_continuation.py``) applies to Arrow tables of updates instead of DataFrames.

A table has the backend's update columns (record ``_c0..``, time ``_t0..``, diff ``_d``;
``_i`` for an iteration). ``None`` stands for no updates, as in ``delta_frames.py``. The
operations are whole-column Arrow kernels (the engine's reduce and the Rust expression
evaluator are the tasks' own functions, called here on whole tables): nothing goes record
by record through Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ddflow.errors import DataError
from ddflow.spark.tasks.batches import DIFF, ccol, filter_join

__all__ = [
    "concat",
    "consolidate",
    "negate",
    "semi",
    "key_set",
    "join_updates",
    "conform",
]

_LIMIT = float(2**63)


def concat(tables: Sequence[pa.Table | None]) -> pa.Table | None:
    """The tables that are not None, one after another (types unified: ``string`` and
    ``large_string``, nullability); None when all are None."""
    present = [t for t in tables if t is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    names = present[0].column_names
    return pa.concat_tables([t.select(names) for t in present], promote_options="permissive")


def consolidate(table: pa.Table | None, what: str) -> pa.Table | None:
    """Sums ``_d`` per distinct record and time, dropping zeros; None when nothing is left.
    A sum outside int64 raises ``DataError`` naming ``what`` (Arrow's grouped sum wraps;
    the float sum beside it tells, so a sum within about 1e3 of the bound raises too)."""
    if table is None or table.num_rows == 0:
        return None
    keys = [c for c in table.column_names if c != DIFF]
    floats = table.append_column("_df", pc.cast(table[DIFF], pa.float64(), safe=False))
    grouped = floats.group_by(keys, use_threads=False).aggregate([(DIFF, "sum"), ("_df", "sum")])
    wide = np.abs(grouped["_df_sum"].to_numpy())
    if len(wide) and float(wide.max()) >= _LIMIT:
        raise DataError(f"ddflow: {what}: a consolidated diff leaves int64 on Spark")
    out = pa.table([grouped[k] for k in keys] + [grouped[f"{DIFF}_sum"]], names=[*keys, DIFF])
    out = out.filter(pc.not_equal(out[DIFF], 0))
    return out if out.num_rows else None


def negate(table: pa.Table | None) -> pa.Table | None:
    """Every diff negated (the least int64 raises)."""
    if table is None:
        return None
    at = table.schema.get_field_index(DIFF)
    return table.set_column(at, DIFF, pc.negate_checked(table[DIFF]))


def key_set(table: pa.Table, k: int) -> pa.Table:
    """The distinct first ``k`` record columns of ``table``."""
    keys = [ccol(i) for i in range(k)]
    return table.select(keys).group_by(keys, use_threads=False).aggregate([])


def semi(table: pa.Table | None, keys: pa.Table | None, k: int) -> pa.Table | None:
    """The rows of ``table`` whose first ``k`` record columns are a row of ``keys``
    (null-safe: a null key is a key like any other, as in a reduce); None when none."""
    if table is None or keys is None or table.num_rows == 0 or keys.num_rows == 0:
        return None
    if k == 1:
        mask = pc.is_in(table[ccol(0)], value_set=keys[ccol(0)].combine_chunks(), skip_nulls=False)
        out = table.filter(mask)
    else:
        out = filter_join(table, keys, [ccol(i) for i in range(k)], "left semi")
    return out if out.num_rows else None


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table``'s columns ``schema``'s names, cast to its types."""
    return pa.table([table[f.name].cast(f.type) for f in schema], schema=pa.schema(list(schema)))


def join_updates(
    left: pa.Table | None,
    right: pa.Table | None,
    k: int,
    nl: int,
    nr: int,
    tnames: Sequence[str],
    semijoin: bool,
    label: str,
) -> pa.Table | None:
    """The equi-join of two update tables on their first ``k`` record columns (a null key
    never matches): left columns then the right's non-key columns (``semijoin``: left
    columns only), time the greatest of both, diff the product (outside int64 raises).
    Arrow builds its hash table on the right; the smaller side is put there."""
    if left is None or right is None or left.num_rows == 0 or right.num_rows == 0:
        return None
    lnames = [ccol(i) for i in range(nl)]
    lt = left.select([*lnames, *tnames, DIFF])
    rt = right.select([ccol(i) for i in range(nr)] + [*tnames, DIFF])
    rt = rt.rename_columns([f"_r{i}" for i in range(nr)] + [f"_r{t}" for t in tnames] + ["_rd"])
    lkeys = [ccol(i) for i in range(k)]
    rkeys = [f"_r{i}" for i in range(k)]
    if lt.num_rows < rt.num_rows:
        joined = rt.join(lt, keys=rkeys, right_keys=lkeys, join_type="inner", use_threads=False)
    else:
        joined = lt.join(rt, keys=lkeys, right_keys=rkeys, join_type="inner", use_threads=False)
    if joined.num_rows == 0:
        return None
    # Arrow keeps one side's key columns only; the key values are equal on both.
    cols: list[pa.ChunkedArray] = []
    names: list[str] = []
    for i in range(nl):
        name = ccol(i)
        src = name if name in joined.column_names else f"_r{i}"
        cols.append(joined[src])
        names.append(name)
    if not semijoin:
        for i in range(k, nr):
            cols.append(joined[f"_r{i}"])
            names.append(ccol(nl + i - k))
    for t in tnames:
        cols.append(pc.max_element_wise(joined[t], joined[f"_r{t}"]))
        names.append(t)
    try:
        cols.append(pc.multiply_checked(joined[DIFF], joined["_rd"]))
    except pa.ArrowInvalid:
        raise DataError(f"ddflow: {label}: a join's diff product leaves int64 on Spark") from None
    names.append(DIFF)
    return pa.table(cols, names=names)
