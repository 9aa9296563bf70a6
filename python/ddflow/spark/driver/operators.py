"""The DataFrame operations of single plan operators on update DataFrames, the same on a
whole history (top level) and on a superstep's delta (inside an iterate): expressions (Spark
Columns where exact, else the Rust evaluator in ``mapInArrow``), Python batch functions,
the diff operators, ``arrange``, unions and the equi-join.

Representation: every collection is a DataFrame of updates with record columns ``_c0..``,
outer time coordinates ``_t0..`` and the signed count ``_d``. Which method runs a linear
operator is the operator's entry in the registry (``ops.py``); each such method takes the
node, its input frame (history or delta) and whether to note how it was compiled.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow import _core
from ddflow.errors import SchemaTypeError
from ddflow.logical_types import arrow_type as logical_arrow_type
from ddflow.plan import FilterOp, FilterPyOp
from ddflow.spark.driver.columns import (
    NotCompilable,
    compile_expr,
    compile_output,
    negate_diffs,
    scale_diffs,
)
from ddflow.spark.driver.context import RunContext
from ddflow.spark.driver.lineage import consolidated
from ddflow.spark.driver.schemas import (
    arrow_type,
    arrow_type_of_numpy,
    dtype_of_spark,
    map_in_arrow,
    spark_of_arrow,
    spark_type,
    time_fields,
)
from ddflow.spark.tasks.batch_functions import ExprSpec, PySpec, expr_batches, py_batches
from ddflow.spark.tasks.batches import DIFF, FnTable, ccol, to_numpy
from ddflow.spark.tasks.error_rows import ERROR_FIELDS

__all__ = ["Operators"]

PartitionFn = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def _out_type(text: str, schema: list[tuple[str, str]], what: str) -> pa.DataType:
    """The Arrow type of expression ``text``'s output over ``schema``, typed by the engine's
    binder (a logical dtype too); a dtype Spark cannot hold is refused naming ``what``."""
    dtype = str(_core.expr_dtype(text, schema))
    spark_type(dtype, what)
    return logical_arrow_type(dtype)


class Operators:
    """Builds the DataFrames of single plan operators for one run."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def _names(self, n: int) -> list[str]:
        return self.ctx.columns(self.ctx.inputs(n)[0])

    # -- expressions ---------------------------------------------------------------------------

    def expressions(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        """A ``select`` or ``filter``: Spark Column expressions where exact, else the Rust
        evaluator in ``mapInArrow``."""
        ctx = self.ctx
        node = ctx.nodes[n]
        names = self._names(n)
        typed = {
            name: (F.col(ccol(i)), dtype_of_spark(df.schema[ccol(i)].dataType))
            for i, name in enumerate(names)
        }
        try:
            strict = not ctx.collect
            if node["op"] == FilterOp.OP:
                pred, t = compile_expr(node["predicate"], typed, node["label"], strict)
                if t != "bool":
                    raise NotCompilable("non-bool predicate")
                out = df.where(pred)
            else:
                cols = [compile_output(e, typed, node["label"], strict) for e in node["exprs"]]
                aliased = [c.alias(ccol(j)) for j, (c, _) in enumerate(cols)]
                out = df.select(*aliased, *ctx.tnames(), DIFF)
            if note:
                ctx.note(n, "Spark Column expressions (no Python worker)")
            return out
        except NotCompilable as why:
            if note:
                ctx.note(n, f"Rust expression evaluator in mapInArrow ({why})")
            return self._expr_native(n, df, names)

    def _expr_native(self, n: int, df: DataFrame, names: list[str]) -> DataFrame:
        spec = self.expr_spec(n, df, names)
        if spec.is_filter:
            schema = df.schema
        else:
            fields = [
                T.StructField(ccol(j), spark_of_arrow(t), True)
                for j, t in enumerate(spec.out_types)
            ]
            schema = T.StructType(fields + time_fields(self.ctx.dims))
        return self._fallible(n, df, functools.partial(expr_batches, spec), schema)

    def _fallible(self, n: int, df: DataFrame, fn: PartitionFn, schema: T.StructType) -> DataFrame:
        """``mapInArrow(fn)`` of a stage that can fail on a record. In collect mode its output
        also has the error columns (every column nullable); the error rows are split off."""
        ctx = self.ctx
        if not ctx.collect:
            return map_in_arrow(df, fn, schema)
        fields = [T.StructField(f.name, f.dataType, True) for f in schema.fields]
        fields += [T.StructField(e, T.StringType(), True) for e in ERROR_FIELDS]
        tagged = map_in_arrow(df, fn, T.StructType(fields))
        return ctx.errors.split(n, tagged, schema.names, ctx.iteration)

    def expr_spec(
        self, n: int, df: DataFrame, names: list[str], collect: bool | None = None
    ) -> ExprSpec:
        """Select or filter node ``n`` for the Rust evaluator, on input ``df`` (columns
        ``names``). ``collect``: whether its data errors become error rows (default: the
        run's ``errors`` mode)."""
        node = self.ctx.nodes[n]
        is_filter = node["op"] == FilterOp.OP
        exprs = [node["predicate"]] if is_filter else list(node["exprs"])
        return self._eval_spec(
            node["label"],
            df,
            names,
            exprs,
            is_filter,
            json.dumps(node),
            self.ctx.collect if collect is None else collect,
        )

    def _eval_spec(
        self,
        label: str,
        df: DataFrame,
        names: list[str],
        exprs: list[Any],
        is_filter: bool,
        node_json: str = "",
        collect: bool = False,
    ) -> ExprSpec:
        """Expressions ``exprs`` over ``df`` (columns ``names``) for the Rust evaluator; a
        select's output types found by evaluating on an empty batch."""
        texts = tuple(json.dumps(e, separators=(",", ":")) for e in exprs)
        schema = [
            (name, dtype_of_spark(df.schema[ccol(i)].dataType)) for i, name in enumerate(names)
        ]
        out_types = tuple(
            _out_type(t, schema, f"{label}, output column {j}")
            for j, t in enumerate([] if is_filter else texts)
        )
        return ExprSpec(
            label, tuple(names), texts, is_filter, out_types, self.ctx.dims, node_json, collect
        )

    def native_value(
        self, n: int, df: DataFrame, names: list[str], expr: Any, out: str
    ) -> DataFrame:
        """``df`` (columns ``names``) with column ``out``: int64 expression ``expr`` of node
        ``n``, evaluated by the Rust evaluator in ``mapInArrow``."""
        label = self.ctx.label(n)
        passed = [{"op": "col", "name": name} for name in names]
        spec = self._eval_spec(label, df, names, [*passed, expr], False)
        if spec.out_types[-1] != pa.int64():
            raise SchemaTypeError(f"{label}: the value must be an int64 expression")
        k = len(names)
        fields = [
            T.StructField(ccol(j), spark_of_arrow(t), True) for j, t in enumerate(spec.out_types)
        ]
        schema = T.StructType(fields + time_fields(self.ctx.dims))
        valued = map_in_arrow(df, functools.partial(expr_batches, spec), schema)
        return valued.withColumnRenamed(ccol(k), out)

    # -- Python batch functions ----------------------------------------------------------------

    def python_fn(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        """A ``map``, ``filter`` or ``flat_map`` with a Python batch function: one call per
        Arrow batch in ``mapInArrow``; output types fixed by a call on an empty batch."""
        ctx = self.ctx
        if note:
            ctx.note(n, "Python batch function in mapInArrow (one call per Arrow batch)")
        node = ctx.nodes[n]
        names = self._names(n)
        kind = node["op"]
        fn_id = int(node["fn"])
        table = FnTable({fn_id: ctx.fns.entries[fn_id]})
        if kind == FilterPyOp.OP:
            schema = df.schema
            out_types: tuple[pa.DataType, ...] = ()
        else:
            empty = {
                name: to_numpy(pa.array([], type=arrow_type(df.schema[ccol(i)].dataType)))
                for i, name in enumerate(names)
            }
            probe = table(fn_id, kind, empty)
            probe.pop("__row__", None)
            out_types = tuple(arrow_type_of_numpy(np.asarray(v)) for v in probe.values())
            fields = [
                T.StructField(ccol(j), spark_of_arrow(t), True) for j, t in enumerate(out_types)
            ]
            schema = T.StructType(fields + time_fields(ctx.dims))
        spec = PySpec(
            kind,
            fn_id,
            node["label"],
            tuple(names),
            out_types,
            ctx.dims,
            json.dumps(node),
            ctx.collect,
        )
        return self._fallible(n, df, functools.partial(py_batches, spec, table), schema)

    # -- diffs, consolidation, arrangement -----------------------------------------------------

    def negate(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        """Every diff negated (the least int64 fails the job)."""
        return negate_diffs(df, DIFF, self.ctx.label(n))

    def scale(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        """Every diff multiplied by the node's factor (a product outside int64 fails)."""
        return scale_diffs(df, DIFF, int(self.ctx.nodes[n]["factor"]), self.ctx.label(n))

    def identity(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        """The input unchanged (``delay``: a superstep handles each iteration's updates
        together already)."""
        return df

    def consolidation(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        """``groupBy(record, time).sum(diff)``."""
        if note:
            self.ctx.note(n, "groupBy(record, time).sum(diff)")
        return consolidated(df)

    def arranged(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        """The columns reordered key first (the consumer partitions by key)."""
        key = list(self.ctx.nodes[n]["key"])
        order = key + [i for i in range(len(self._names(n))) if i not in key]
        cols = [F.col(ccol(i)).alias(ccol(j)) for j, i in enumerate(order)]
        return df.select(*cols, *self.ctx.tnames(), DIFF)

    def union(self, n: int, frames: Sequence[DataFrame]) -> DataFrame:
        """``concat``: the inputs' updates together (their column types must agree). A
        column of untyped nulls (an outer join's padding) takes its peers' type."""
        frames = _typed_nulls(frames)
        first = frames[0]
        for other in frames[1:]:
            for a, b in zip(first.schema.fields, other.schema.fields, strict=True):
                if a.dataType != b.dataType:
                    raise SchemaTypeError(
                        f"{self.ctx.label(n)}: inputs have different types for a column "
                        f"({a.dataType.simpleString()} and {b.dataType.simpleString()})"
                    )
        out = first
        for other in frames[1:]:
            out = out.unionByName(other)
        return out

    # -- join ----------------------------------------------------------------------------------

    def join(
        self,
        n: int,
        left: DataFrame,
        right: DataFrame,
        fixed: str | None = None,
        product_only: bool = False,
    ) -> DataFrame:
        """The join node ``n`` of two update DataFrames. ``product_only``: only the part
        that is a product of the two sides (an ``antijoin``'s negated semijoin, without the
        left side it subtracts from), for delta rules that add the left's own delta once.
        ``fixed`` (``"left"`` or
        ``"right"``): that side is a loop-invariant arrangement, hash-partitioned by key once;
        the other side (a superstep's delta) is shuffled to its partitioning and hashed
        (shuffled hash join, built on the delta), so the invariant side is only scanned: not
        shuffled, sorted or hashed again (a broadcast would resend it every superstep)."""
        ctx = self.ctx
        node = ctx.nodes[n]
        kind = node["kind"]
        la, ra = node["inputs"]
        k = ctx.key_len(la)
        nl, nr = len(ctx.columns(la)), len(ctx.columns(ra))
        tn = ctx.tnames()
        r = right.select(
            *[F.col(ccol(i)).alias(f"_r{i}") for i in range(nr)],
            *[F.col(t).alias(f"_r{t}") for t in tn],
            F.col(DIFF).alias("_rd"),
        )
        if fixed == "left":
            r = r.hint("shuffle_hash")
        elif fixed == "right":
            left = left.hint("shuffle_hash")
        # Null keys never match (SQL), unless the join says nulls_equal (null-safe equality).
        if node.get("nulls_equal", False):
            cond = [F.col(ccol(i)).eqNullSafe(F.col(f"_r{i}")) for i in range(k)]
        else:
            cond = [F.col(ccol(i)) == F.col(f"_r{i}") for i in range(k)]
        joined = left.join(r, on=functools.reduce(lambda a, b: a & b, cond), how="inner")
        times = [F.greatest(F.col(t), F.col(f"_r{t}")).alias(t) for t in tn]
        # Spark's long product wraps silently; try_multiply gives null where it leaves int64.
        product = F.try_multiply(F.col(DIFF), F.col("_rd"))
        overflow = F.raise_error(
            F.lit(f"ddflow: {node['label']}: a join's diff product leaves int64 on Spark")
        )
        diff = F.when(product.isNull(), overflow).otherwise(product).alias(DIFF)
        lcols = [F.col(ccol(i)) for i in range(nl)]
        if kind in ("semijoin", "antijoin"):
            semi = joined.select(*lcols, *times, diff)
            if kind == "semijoin":
                return semi
            if product_only:
                return negate_diffs(semi, DIFF, node["label"])
            return left.unionByName(negate_diffs(semi, DIFF, node["label"]))
        rcols = [F.col(f"_r{i}").alias(ccol(nl + i - k)) for i in range(k, nr)]
        return joined.select(*lcols, *rcols, *times, diff)


def _typed_nulls(frames: Sequence[DataFrame]) -> list[DataFrame]:
    """``frames`` with each ``NullType`` column cast to the type the same column has in
    another frame (the engine types an untyped null from the columns the plan puts it
    beside); unchanged where no frame has a type for it."""
    peer: dict[str, T.DataType] = {}
    for df in frames:
        for f in df.schema.fields:
            if not isinstance(f.dataType, T.NullType):
                peer.setdefault(f.name, f.dataType)
    out = []
    for df in frames:
        if any(isinstance(f.dataType, T.NullType) and f.name in peer for f in df.schema.fields):
            df = df.select(
                *[
                    F.col(f.name).cast(peer[f.name]).alias(f.name)
                    if isinstance(f.dataType, T.NullType) and f.name in peer
                    else F.col(f.name)
                    for f in df.schema.fields
                ]
            )
        out.append(df)
    return out
