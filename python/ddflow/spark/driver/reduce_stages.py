"""The Spark stages of a ``reduce``: its spec for the partition functions (output types
fixed from the plan, or by calling a Python reducer on an empty batch), its input widened
into the tagged schema, the ``repartition(key)`` + ``mapInArrow`` stage running the engine's
reduce operator (state shuffled beside the new input, or read and written by the tasks in
the reduce state store), and its output updates picked out of the tagged rows.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow.errors import PlanError
from ddflow.logical_types import arrow_type as logical_arrow_type
from ddflow.plan_dtypes import aggregate_dtypes
from ddflow.spark.driver.context import RunContext
from ddflow.spark.driver.schemas import (
    arrow_type,
    arrow_type_of_numpy,
    dtype_of_spark,
    map_in_arrow,
    spark_of_arrow,
    spark_schema,
    spark_type,
)
from ddflow.spark.driver.validate import UnsupportedOperatorError
from ddflow.spark.tasks.batches import (
    BUCKET,
    DIFF,
    TAG,
    TAG_DELTA_IN,
    TAG_DELTA_OUT,
    ccol,
    to_numpy,
)
from ddflow.spark.tasks.error_rows import ERROR_FIELDS
from ddflow.spark.tasks.reduce import ReduceSpec, reduce_partition, reduce_partition_stored
from ddflow.spark.tasks.store import StateStore

__all__ = ["ReduceStages"]


def _out_schema(spec: ReduceSpec) -> T.StructType:
    """The Spark schema of a reduce partition function's output: the tagged state schema,
    plus the error columns in collect mode."""
    schema = spark_schema(spec.schema)
    if not spec.collect:
        return schema
    errors = [T.StructField(e, T.StringType(), True) for e in ERROR_FIELDS]
    return T.StructType(schema.fields + errors)


class ReduceStages:
    """Builds the stages of the run's reduces."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def spec(self, n: int, arr_df: DataFrame, collect: bool = False) -> ReduceSpec:
        """Reduce node ``n`` over arrangement frame ``arr_df`` for the partition functions;
        ``collect``: its data errors become error rows."""
        ctx = self.ctx
        node = ctx.nodes[n]
        arr = node["inputs"][0]
        k = ctx.key_len(arr)
        n_vals = len(ctx.columns(arr)) - k
        n_outs = len(node["columns"]) - k
        agg = node["agg"]
        key_types = [arrow_type(arr_df.schema[ccol(i)].dataType) for i in range(k)]
        val_types = [arrow_type(arr_df.schema[ccol(k + i)].dataType) for i in range(n_vals)]
        kind = agg["kind"]
        out_types: list[pa.DataType]
        val_dtypes = [dtype_of_spark(arr_df.schema[ccol(k + i)].dataType) for i in range(n_vals)]
        typed = aggregate_dtypes(dict(agg), [], list(val_dtypes))
        if typed is not None and None not in typed:
            typed_all = [d for d in typed if d is not None]
            for j, d in enumerate(typed_all):
                spark_type(d, f"{node['label']}, output column {k + j}")
            out_types = [logical_arrow_type(d) for d in typed_all]
        elif kind == "python":
            out_types = self._reducer_types(int(agg["fn"]), node, k, n_vals, key_types, val_types)
        else:
            raise UnsupportedOperatorError(
                f"{node['label']}: aggregate {kind!r} is not supported on Spark"
            )
        if len(out_types) != n_outs:
            raise PlanError(f"{node['label']}: aggregate {kind!r} output arity mismatch")
        fields = [pa.field(ccol(i), t) for i, t in enumerate(key_types)]
        fields += [pa.field(f"_v{i}", t) for i, t in enumerate(val_types)]
        fields += [pa.field(f"_o{i}", t) for i, t in enumerate(out_types)]
        fields += [pa.field(t, pa.int64()) for t in ctx.tnames()]
        fields += [pa.field(DIFF, pa.int64()), pa.field(TAG, pa.int32())]
        return ReduceSpec(
            label=node["label"],
            agg=dict(agg),
            n_keys=k,
            n_vals=n_vals,
            n_outs=n_outs,
            in_names=tuple(ctx.columns(arr)),
            out_names=tuple(node["columns"]),
            out_types=tuple(out_types),
            dims=ctx.dims,
            schema=pa.schema(fields),
            collect=collect,
        )

    def _reducer_types(
        self,
        fn_id: int,
        node: dict[str, Any],
        k: int,
        n_vals: int,
        key_types: list[pa.DataType],
        val_types: list[pa.DataType],
    ) -> list[pa.DataType]:
        names = self.ctx.columns(node["inputs"][0])
        payload = {
            "keys": {names[i]: to_numpy(pa.array([], type=key_types[i])) for i in range(k)},
            "offsets": np.zeros(1, dtype=np.int64),
            "values": {
                names[k + i]: to_numpy(pa.array([], type=val_types[i])) for i in range(n_vals)
            },
            "counts": np.zeros(0, dtype=np.int64),
        }
        try:
            out = self.ctx.fns(fn_id, "reduce_py", payload)
        except Exception as exc:
            raise PlanError(
                f"{node['label']}: the Spark backend fixes a Python reducer's output types by "
                f"calling it on an empty batch, which raised {type(exc).__name__}: {exc}"
            ) from exc
        return [
            arrow_type_of_numpy(np.asarray(v))
            for name, v in out.items()
            if name not in ("__offsets__", "__count__")
        ]

    def widen(self, df: DataFrame, spec: ReduceSpec, parts: dict[str, str], tag: int) -> DataFrame:
        """``df``'s columns ``parts`` (tagged name -> column of ``df``) placed in the tagged
        schema, the other columns null, every row tagged ``tag``."""
        cols: list[Column] = []
        for f in spec.schema:
            typ = spark_of_arrow(f.type)
            if f.name == TAG:
                cols.append(F.lit(tag).cast(T.IntegerType()).alias(TAG))
            elif f.name in parts:
                cols.append(F.col(parts[f.name]).cast(typ).alias(f.name))
            else:
                cols.append(F.lit(None).cast(typ).alias(f.name))
        return df.select(*cols)

    def tagged_input(self, df: DataFrame, spec: ReduceSpec) -> DataFrame:
        """The reduce's input updates ``df`` as new input rows of the tagged schema."""
        parts = {ccol(i): ccol(i) for i in range(spec.n_keys)}
        parts.update({f"_v{i}": ccol(spec.n_keys + i) for i in range(spec.n_vals)})
        parts.update({t: t for t in self.ctx.tnames()})
        parts[DIFF] = DIFF
        return self.widen(df, spec, parts, TAG_DELTA_IN)

    def output(self, df: DataFrame, spec: ReduceSpec) -> DataFrame:
        """The output updates among a reduce stage's tagged rows, as an update DataFrame."""
        k = spec.n_keys
        return df.where(F.col(TAG) == TAG_DELTA_OUT).select(
            *[F.col(ccol(i)) for i in range(k)],
            *[F.col(f"_o{i}").alias(ccol(k + i)) for i in range(spec.n_outs)],
            *self.ctx.tnames(),
            DIFF,
        )

    def run(
        self,
        spec: ReduceSpec,
        tagged: DataFrame,
        stateful: bool,
    ) -> DataFrame:
        """The reduce stage over ``tagged`` rows (new input, and with ``stateful`` the
        accumulated state), repartitioned by key."""
        keys = [ccol(i) for i in range(spec.n_keys)]
        fn = functools.partial(reduce_partition, spec, self.ctx.fns, stateful)
        shuffled = tagged.repartition(self.ctx.partitions, *keys)
        return map_in_arrow(shuffled, fn, _out_schema(spec))

    def run_stored(
        self,
        n: int,
        spec: ReduceSpec,
        tagged: DataFrame,
        store: StateStore,
        version: int,
    ) -> DataFrame:
        """Superstep ``version`` of reduce ``n`` with its state in ``store``: only the new
        input is shuffled (by key, with its store bucket ``pmod(hash(key), P)``)."""
        partitions = self.ctx.partitions
        keys = [ccol(i) for i in range(spec.n_keys)]
        bucketed = tagged.withColumn(
            BUCKET, F.pmod(F.hash(*[F.col(k) for k in keys]), F.lit(partitions))
        )
        fn = functools.partial(reduce_partition_stored, spec, self.ctx.fns, store, n, version)
        return map_in_arrow(bucketed.repartition(partitions, *keys), fn, _out_schema(spec))
