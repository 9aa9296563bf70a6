"""Plan compilation for the Spark backend: each plan node of the dataflow becomes Spark
DataFrame operations on update DataFrames.

Representation: every collection is a DataFrame of updates with record columns ``_c0..``,
outer time coordinates ``_t0..`` and the signed count ``_d``. Outside loops every operator
processes its input's whole history once (``Compiler.top``); the operators that also run on
superstep deltas inside an iterate (linear operators, ``join``, the reduce's partition
function) are compiled here and driven by ``supersteps.py``.
"""

from __future__ import annotations

import functools
import json
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark import Accumulator
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow.callbacks import Registered
from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError, SchemaTypeError
from ddflow.input import InputSession
from ddflow.spark import executor as ex
from ddflow.spark import validate
from ddflow.spark.columns import (
    NotCompilable,
    compile_expr,
    dtype_of,
    negate_diffs,
    scale_diffs,
)
from ddflow.spark.error_frames import ErrorFrames
from ddflow.spark.error_rows import ERROR_FIELDS
from ddflow.spark.progress import Meter
from ddflow.spark.schemas import (
    DIFF,
    TAG,
    arrow_type,
    arrow_type_of_numpy,
    ccol,
    map_in_arrow,
    spark_of_arrow,
    spark_schema,
    tcol,
    time_fields,
)
from ddflow.spark.state import State, consolidate
from ddflow.spark.store import StateStore
from ddflow.spark.supersteps import IterateDriver
from ddflow.spark.validate import UnsupportedOperatorError

__all__ = ["Compiler"]


def _state_parent(spark: SparkSession, state_dir: str | None) -> str:
    """Where the reduce state store goes: ``state_dir``; in local mode by default the
    temporary directory (``spark.local.dir`` when set); on a cluster by default the
    SparkContext's checkpoint directory. Raises before any job when a cluster has neither."""
    if state_dir:
        return state_dir
    sc = spark.sparkContext
    if sc.master.startswith("local"):
        local = sc.getConf().get("spark.local.dir")
        return local.split(",")[0] if local else tempfile.gettempdir()
    checkpoint_dir = sc._jsc.sc().getCheckpointDir()
    if checkpoint_dir.isDefined():
        return str(checkpoint_dir.get())
    raise PlanError(
        f"run_on_spark on master {sc.master!r}: the reduce state store needs a directory "
        "every executor can read and write; pass state_dir='hdfs://...' (or a shared "
        "path), set sc.setCheckpointDir(...), or pass reduce_state='shuffle' to keep the "
        "state in DataFrames"
    )


def _out_schema(spec: ex.ReduceSpec) -> T.StructType:
    """The Spark schema of a reduce partition function's output: the tagged state schema,
    plus the error columns in collect mode."""
    schema = spark_schema(spec.schema)
    if not spec.collect:
        return schema
    errors = [T.StructField(e, T.StringType(), True) for e in ERROR_FIELDS]
    return T.StructType(schema.fields + errors)


class Compiler:
    """Compiles the plan nodes an output needs into DataFrames (lazily, memoized); runs each
    iterate scope through an ``IterateDriver`` when its ``leave`` is first needed."""

    def __init__(
        self,
        spark: SparkSession,
        flow: Dataflow,
        inputs: Mapping[InputSession, DataFrame],
        outputs: Sequence[Collection | Capture],
        partitions: int | None,
        checkpoint: str,
        meter: Meter | None,
        reduce_state: str = "store",
        state_dir: str | None = None,
        errors: str = "raise",
    ) -> None:
        self.spark = spark
        self.flow = flow
        self.plan = flow._plan
        self.nodes = self.plan.nodes
        self.partitions = int(partitions or spark.conf.get("spark.sql.shuffle.partitions") or 8)
        if checkpoint not in ("local", "reliable"):
            raise PlanError(
                f"run_on_spark: checkpoint must be 'local' or 'reliable', got {checkpoint!r}"
            )
        if reduce_state not in ("store", "shuffle"):
            raise PlanError(
                f"run_on_spark: reduce_state must be 'store' or 'shuffle', got {reduce_state!r}"
            )
        self.reduce_state = reduce_state
        if errors not in ("raise", "collect"):
            raise PlanError(f"run_on_spark: errors must be 'raise' or 'collect', got {errors!r}")
        self.collect = errors == "collect"
        """Data errors become error rows (``error_frames.py``) instead of failing the job."""
        self.iteration: int | None = None
        """The superstep being compiled (None outside iterates): the iteration of its errors."""
        self.state_parent = _state_parent(spark, state_dir) if reduce_state == "store" else None
        self.store: StateStore | None = None
        """Created by the first stateful reduce superstep (``State.reduce_step``)."""
        self.meter = meter
        self.stages: list[str] = []
        self.memo: dict[int, DataFrame] = {}
        self.out_nodes = [validate.output_node(flow, o) for o in outputs]
        self.needed = validate.needed_nodes(self.nodes, self.out_nodes)
        validate.check_ops(flow, self.needed)
        self.dims = validate.time_dims(flow, inputs)
        self.frames = validate.input_frames(flow, self.needed, inputs, self.dims)
        fns = flow._dispatcher
        self.fns = ex.FnTable({i: fns[i] for i in range(len(fns))})
        self.state = State(self, checkpoint)
        self.errors = ErrorFrames(spark, self.dims)
        self.driver = IterateDriver(self)

    # -- helpers ------------------------------------------------------------------------------

    def tnames(self) -> list[str]:
        """The outer time coordinate columns."""
        return [tcol(j) for j in range(self.dims)]

    def _ncols(self, n: int) -> int:
        return len(self.nodes[n]["columns"])

    def key_len(self, n: int) -> int:
        """The key length of arrangement ``n`` (through ``enter_arrangement``)."""
        node = self.nodes[n]
        while node["op"] == "enter_arrangement":
            node = self.nodes[node["inputs"][0]]
        return len(node["key"])

    def note(self, n: int, how: str) -> None:
        """Records how node ``n`` was compiled (``SparkResult.explain``)."""
        node = self.nodes[n]
        self.stages.append(f"#{n} {node['op']} ({node['label']}): {how}")

    def _empty_like(self, df: DataFrame) -> DataFrame:
        return df.limit(0)

    # -- linear operators (the same at top level and on superstep deltas) ---------------------

    def linear(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        node = self.nodes[n]
        op = node["op"]
        src = self.nodes[node["inputs"][0]]
        names = list(src["columns"])
        tn = self.tnames()
        if op in ("select", "filter"):
            typed = {
                name: (F.col(ccol(i)), dtype_of(df.schema[ccol(i)].dataType))
                for i, name in enumerate(names)
            }
            try:
                strict = not self.collect
                if op == "select":
                    cols = [compile_expr(e, typed, node["label"], strict) for e in node["exprs"]]
                    out = df.select(*[c.alias(ccol(j)) for j, (c, _) in enumerate(cols)], *tn, DIFF)
                else:
                    pred, t = compile_expr(node["predicate"], typed, node["label"], strict)
                    if t != "bool":
                        raise NotCompilable("non-bool predicate")
                    out = df.where(pred)
                if note:
                    self.note(n, "Spark Column expressions (no Python worker)")
                return out
            except NotCompilable as why:
                if note:
                    self.note(n, f"Rust expression evaluator in mapInArrow ({why})")
                return self._expr_native(n, df, names)
        if op in ("map_py", "filter_py", "flat_map_py"):
            if note:
                self.note(n, "Python batch function in mapInArrow (one call per Arrow batch)")
            return self._py(n, df, names)
        if op == "negate":
            return negate_diffs(df, DIFF, node["label"])
        if op == "scale":
            return scale_diffs(df, DIFF, int(node["factor"]), node["label"])
        if op == "delay":
            # A superstep handles each iteration's updates together already.
            return df
        if op == "consolidate":
            if note:
                self.note(n, "groupBy(record, time).sum(diff)")
            return consolidate(df)
        if op == "arrange":
            key = list(node["key"])
            order = key + [i for i in range(len(names)) if i not in key]
            return df.select(
                *[F.col(ccol(i)).alias(ccol(j)) for j, i in enumerate(order)], *tn, DIFF
            )
        raise AssertionError(op)

    def _expr_native(self, n: int, df: DataFrame, names: list[str]) -> DataFrame:
        spec = self.expr_spec(n, df, names)
        if spec.is_filter:
            schema = df.schema
        else:
            fields = [
                T.StructField(ccol(j), spark_of_arrow(t), False)
                for j, t in enumerate(spec.out_types)
            ]
            schema = T.StructType(fields + time_fields(self.dims))
        return self._fallible(n, df, functools.partial(ex.expr_batches, spec), schema)

    def _fallible(self, n: int, df: DataFrame, fn: Any, schema: T.StructType) -> DataFrame:
        """``mapInArrow(fn)`` of a stage that can fail on a record. In collect mode its output
        also has the error columns (every column nullable); the error rows are split off."""
        if not self.collect:
            return map_in_arrow(df, fn, schema)
        fields = [T.StructField(f.name, f.dataType, True) for f in schema.fields]
        fields += [T.StructField(e, T.StringType(), True) for e in ERROR_FIELDS]
        tagged = map_in_arrow(df, fn, T.StructType(fields))
        return self.errors.split(n, tagged, schema.names, self.iteration)

    def expr_spec(
        self, n: int, df: DataFrame, names: list[str], collect: bool | None = None
    ) -> ex.ExprSpec:
        """Select or filter node ``n`` for the Rust evaluator, on input ``df`` (columns
        ``names``). ``collect``: whether its data errors become error rows (default: the
        run's ``errors`` mode)."""
        node = self.nodes[n]
        is_filter = node["op"] == "filter"
        exprs = [node["predicate"]] if is_filter else list(node["exprs"])
        return self._eval_spec(
            node["label"],
            df,
            names,
            exprs,
            is_filter,
            json.dumps(node),
            self.collect if collect is None else collect,
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
    ) -> ex.ExprSpec:
        """Expressions ``exprs`` over ``df`` (columns ``names``) for the Rust evaluator; a
        select's output types found by evaluating on an empty batch."""
        from ddflow import _core

        texts = tuple(json.dumps(e, separators=(",", ":")) for e in exprs)
        empty = {
            name: ex.to_numpy(pa.array([], type=arrow_type(df.schema[ccol(i)].dataType)))
            for i, name in enumerate(names)
        }
        out_types = tuple(
            arrow_type_of_numpy(np.asarray(_core.eval_expr(t, empty, 0)))
            for t in ([] if is_filter else texts)
        )
        return ex.ExprSpec(
            label, tuple(names), texts, is_filter, out_types, self.dims, node_json, collect
        )

    def native_value(
        self, n: int, df: DataFrame, names: list[str], expr: Any, out: str
    ) -> DataFrame:
        """``df`` (columns ``names``) with column ``out``: int64 expression ``expr`` of node
        ``n``, evaluated by the Rust evaluator in ``mapInArrow``."""
        label = self.nodes[n]["label"]
        passed = [{"op": "col", "name": name} for name in names]
        spec = self._eval_spec(label, df, names, [*passed, expr], False)
        if spec.out_types[-1] != pa.int64():
            raise SchemaTypeError(f"{label}: the value must be an int64 expression")
        k = len(names)
        fields = [
            T.StructField(ccol(j), spark_of_arrow(t), True) for j, t in enumerate(spec.out_types)
        ]
        schema = T.StructType(fields + time_fields(self.dims))
        valued = map_in_arrow(df, functools.partial(ex.expr_batches, spec), schema)
        return valued.withColumnRenamed(ccol(k), out)

    def _py(self, n: int, df: DataFrame, names: list[str]) -> DataFrame:
        node = self.nodes[n]
        kind = node["op"]
        fn_id = int(node["fn"])
        entry: Registered = self.fns.entries[fn_id]
        table = ex.FnTable({fn_id: entry})
        if kind == "filter_py":
            schema = df.schema
            out_types: tuple[pa.DataType, ...] = ()
        else:
            empty = {
                name: ex.to_numpy(pa.array([], type=arrow_type(df.schema[ccol(i)].dataType)))
                for i, name in enumerate(names)
            }
            probe = table(fn_id, kind, empty)
            probe.pop("__row__", None)
            out_types = tuple(arrow_type_of_numpy(np.asarray(v)) for v in probe.values())
            fields = [
                T.StructField(ccol(j), spark_of_arrow(t), False) for j, t in enumerate(out_types)
            ]
            schema = T.StructType(fields + time_fields(self.dims))
        spec = ex.PySpec(
            kind,
            fn_id,
            node["label"],
            tuple(names),
            out_types,
            self.dims,
            json.dumps(node),
            self.collect,
        )
        return self._fallible(n, df, functools.partial(ex.py_batches, spec, table), schema)

    def union(self, n: int, frames: Sequence[DataFrame]) -> DataFrame:
        first = frames[0]
        for other in frames[1:]:
            for a, b in zip(first.schema.fields, other.schema.fields, strict=True):
                if a.dataType != b.dataType:
                    raise SchemaTypeError(
                        f"{self.nodes[n]['label']}: inputs have different types for a column "
                        f"({a.dataType.simpleString()} and {b.dataType.simpleString()})"
                    )
        out = first
        for other in frames[1:]:
            out = out.unionByName(other)
        return out

    # -- join ---------------------------------------------------------------------------------

    def join(
        self, n: int, left: DataFrame, right: DataFrame, fixed: str | None = None
    ) -> DataFrame:
        """The join node ``n`` of two update DataFrames. ``fixed`` (``"left"`` or
        ``"right"``): that side is a loop-invariant arrangement, hash-partitioned by key once;
        the other side (a superstep's delta) is shuffled to its partitioning and hashed
        (shuffled hash join, built on the delta), so the invariant side is only scanned: not
        shuffled, sorted or hashed again (a broadcast would resend it every superstep)."""
        node = self.nodes[n]
        kind = node["kind"]
        la, ra = node["inputs"]
        k = self.key_len(la)
        nl, nr = self._ncols(la), self._ncols(ra)
        tn = self.tnames()
        r = right.select(
            *[F.col(ccol(i)).alias(f"_r{i}") for i in range(nr)],
            *[F.col(t).alias(f"_r{t}") for t in tn],
            F.col(DIFF).alias("_rd"),
        )
        if fixed == "left":
            r = r.hint("shuffle_hash")
        elif fixed == "right":
            left = left.hint("shuffle_hash")
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
        if kind == "join":
            rcols = [F.col(f"_r{i}").alias(ccol(nl + i - k)) for i in range(k, nr)]
            return joined.select(*lcols, *rcols, *times, diff)
        semi = joined.select(*lcols, *times, diff)
        if kind == "semijoin":
            return semi
        return left.unionByName(negate_diffs(semi, DIFF, node["label"]))

    # -- reduce -------------------------------------------------------------------------------

    def reduce_spec(self, n: int, arr_df: DataFrame, collect: bool = False) -> ex.ReduceSpec:
        """Reduce node ``n`` for the partition functions; ``collect``: its data errors become
        error rows."""
        node = self.nodes[n]
        arr = node["inputs"][0]
        k = self.key_len(arr)
        n_in = self._ncols(arr)
        n_vals = n_in - k
        n_outs = len(node["columns"]) - k
        agg = node["agg"]
        key_types = [arrow_type(arr_df.schema[ccol(i)].dataType) for i in range(k)]
        val_types = [arrow_type(arr_df.schema[ccol(k + i)].dataType) for i in range(n_vals)]
        kind = agg["kind"]
        out_types: list[pa.DataType]
        if kind == "count":
            out_types = [pa.int64()]
        elif kind in ("min", "max", "sum"):
            out_types = [val_types[int(agg["column"])]]
        elif kind in ("distinct", "top_k", "threshold_py"):
            out_types = list(val_types)
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
        fields += [pa.field(t, pa.int64()) for t in self.tnames()]
        fields += [pa.field(DIFF, pa.int64()), pa.field(TAG, pa.int32())]
        return ex.ReduceSpec(
            label=node["label"],
            agg=dict(agg),
            n_keys=k,
            n_vals=n_vals,
            n_outs=n_outs,
            in_names=tuple(self.nodes[arr]["columns"]),
            out_names=tuple(node["columns"]),
            out_types=tuple(out_types),
            dims=self.dims,
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
        arr = self.nodes[node["inputs"][0]]
        names = arr["columns"]
        payload = {
            "keys": {names[i]: ex.to_numpy(pa.array([], type=key_types[i])) for i in range(k)},
            "offsets": np.zeros(1, dtype=np.int64),
            "values": {
                names[k + i]: ex.to_numpy(pa.array([], type=val_types[i])) for i in range(n_vals)
            },
            "counts": np.zeros(0, dtype=np.int64),
        }
        try:
            out = self.fns(fn_id, "reduce_py", payload)
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

    def _widen(
        self, df: DataFrame, spec: ex.ReduceSpec, parts: dict[str, str], tag: int
    ) -> DataFrame:
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

    def reduce_input(self, df: DataFrame, spec: ex.ReduceSpec) -> DataFrame:
        parts = {ccol(i): ccol(i) for i in range(spec.n_keys)}
        parts.update({f"_v{i}": ccol(spec.n_keys + i) for i in range(spec.n_vals)})
        parts.update({t: t for t in self.tnames()})
        parts[DIFF] = DIFF
        return self._widen(df, spec, parts, ex.TAG_DELTA_IN)

    def reduce_output(self, df: DataFrame, spec: ex.ReduceSpec) -> DataFrame:
        k = spec.n_keys
        return df.where(F.col(TAG) == ex.TAG_DELTA_OUT).select(
            *[F.col(ccol(i)) for i in range(k)],
            *[F.col(f"_o{i}").alias(ccol(k + i)) for i in range(spec.n_outs)],
            *self.tnames(),
            DIFF,
        )

    def reduce_run(
        self,
        spec: ex.ReduceSpec,
        tagged: DataFrame,
        stateful: bool,
        counter: Accumulator[int] | None = None,
    ) -> DataFrame:
        keys = [ccol(i) for i in range(spec.n_keys)]
        fn = functools.partial(ex.reduce_partition, spec, self.fns, stateful, counter)
        return map_in_arrow(tagged.repartition(self.partitions, *keys), fn, _out_schema(spec))

    def reduce_run_stored(
        self,
        n: int,
        spec: ex.ReduceSpec,
        tagged: DataFrame,
        version: int,
        counter: Accumulator[int] | None,
    ) -> DataFrame:
        """Superstep ``version`` of reduce ``n`` with its state in the state store: only the
        new input is shuffled (by key, with its store bucket ``pmod(hash(key), P)``)."""
        assert self.store is not None
        keys = [ccol(i) for i in range(spec.n_keys)]
        bucketed = tagged.withColumn(
            ex.BUCKET, F.pmod(F.hash(*[F.col(k) for k in keys]), F.lit(self.partitions))
        )
        fn = functools.partial(
            ex.reduce_partition_stored, spec, self.fns, self.store, n, version, counter
        )
        return map_in_arrow(bucketed.repartition(self.partitions, *keys), fn, _out_schema(spec))

    # -- top level ----------------------------------------------------------------------------

    def top(self, n: int) -> DataFrame:
        """Top-level node ``n``'s whole history (memoized)."""
        if n in self.memo:
            return self.memo[n]
        inside, self.iteration = self.iteration, None
        try:
            return self._top(n)
        finally:
            self.iteration = inside

    def _top(self, n: int) -> DataFrame:
        node = self.nodes[n]
        op = node["op"]
        ins = node["inputs"]
        if op == "input":
            df = self.frames[n]
        elif op == "concat":
            df = self.union(n, [self.top(i) for i in ins])
        elif op == "join":
            df = self.join(n, self.top(ins[0]), self.top(ins[1]))
            self.note(n, "Spark equi-join on the key, time = greatest, diff = product")
        elif op == "reduce":
            arr_df = self.top(ins[0])
            spec = self.reduce_spec(n, arr_df, collect=self.collect)
            raw = self.reduce_run(spec, self.reduce_input(arr_df, spec), stateful=False)
            if self.collect:
                self.errors.split(n, raw, raw.columns, None)
            df = self.reduce_output(raw, spec)
            self.note(n, "repartition(key) + engine reduce operator in mapInArrow, whole history")
        elif op == "leave":
            scope = self.nodes[ins[0]]["scope"]
            df = self.driver.run_scope(scope)[n]
        else:
            df = self.linear(n, self.top(ins[0]), note=True)
        self.memo[n] = df
        return df

    # -- outputs ------------------------------------------------------------------------------

    def output(self, n: int) -> DataFrame:
        df = self.top(n)
        if self.nodes[n]["op"] != "reduce":
            # A reduce's output is consolidated already: each key is in one partition, whose
            # function sums equal updates and drops zeros.
            df = consolidate(df)
        names = list(self.nodes[n]["columns"])
        tnames = ["time"] if self.dims == 1 else [f"time_{j}" for j in range(self.dims)]
        return df.select(
            *[F.col(ccol(i)).alias(c) for i, c in enumerate(names)],
            *[F.col(tcol(j)).alias(t) for j, t in enumerate(tnames)],
            F.col(DIFF).alias("diff"),
        )
