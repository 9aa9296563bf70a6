"""Small incremental Spark runs computed on the driver: a continuation
(``run_on_spark(..., state=path)`` after a first run) with at most ``LOCAL_RUN`` input
updates applies the rules of ``incremental.py`` and ``incremental_iterate.py`` to Arrow
tables in the driver process instead of to DataFrames.

Why: such a run's new work is small, but the DataFrame path pays Spark's fixed costs for
every term of every superstep (a broadcast job per small side, a job per superstep, a
Parquet scan of each stored history per use: 5-7 jobs per superstep, 43-53% of a first
run's time in ``benches/results/spark_incremental.md``). Here one Spark job per input
collects its updates, the stored histories are read from their Parquet layers with Arrow
(each layer once per driver process: layers are never rewritten, so ``LayerCache`` keeps
them, and a later run in the same process reads only the layers written since), each term
filters a stored history by the keys this run touches (``pyarrow.compute.is_in``), and the
new layers and outputs are written as Parquet beside the DataFrame path's, in the same
layout (an iterate's layers partitioned by ``_i``), so either path continues from either's
state. The output is returned as a DataFrame reading the run's output files.

The operators are the tasks' own functions on whole tables (the engine's reduce operator,
the Rust expression evaluator), so the results are the DataFrame path's. Plans with an
operator this module does not handle (Python batch functions, ``advance_iteration``, a join
with ``nulls_equal``) take the DataFrame path, as does a run with more input updates.
"""

from __future__ import annotations

import json
import operator
import os
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ddflow.plan import (
    ArrangeOp,
    ConcatOp,
    ConsolidateOp,
    ConstantOp,
    DelayOp,
    EnterArrangementOp,
    EnterOp,
    FilterOp,
    InputOp,
    JoinOp,
    LeaveOp,
    NegateOp,
    ReduceOp,
    ScaleOp,
    SelectOp,
    VariableOp,
)
from ddflow.spark.driver import local_frames as lf
from ddflow.spark.driver.schemas import arrow_type, spark_of_arrow
from ddflow.spark.driver.stored_state import ITER, Manifest, StateDir
from ddflow.spark.tasks.batch_functions import expr_batches
from ddflow.spark.tasks.batches import DIFF, ccol
from ddflow.spark.tasks.reduce import ReduceSpec, reduce_history

if TYPE_CHECKING:
    from ddflow.spark.driver.compiler import Compiler

__all__ = ["LOCAL_RUN", "LayerCache", "LocalContinuation", "local_refusal", "collect_table"]

LOCAL_RUN = 100_000
"""A continuation with at most this many input updates runs on the driver."""

_LINEAR = {
    SelectOp.OP,
    FilterOp.OP,
    NegateOp.OP,
    ScaleOp.OP,
    ConsolidateOp.OP,
    ArrangeOp.OP,
    DelayOp.OP,
}
_HANDLED = _LINEAR | {
    InputOp.OP,
    ConstantOp.OP,
    ConcatOp.OP,
    JoinOp.OP,
    ReduceOp.OP,
    LeaveOp.OP,
    EnterOp.OP,
    EnterArrangementOp.OP,
    VariableOp.OP,
}


_PLAIN = (T.LongType, T.IntegerType, T.DoubleType, T.StringType, T.BooleanType)
"""The column types a driver run reads and writes (others take the DataFrame path)."""


def local_refusal(compiler: Compiler) -> str | None:
    """Why this plan cannot run on the driver (None: it can)."""
    ctx = compiler.ctx
    for n in sorted(ctx.needed):
        node = ctx.nodes[n]
        op = node["op"]
        if op not in _HANDLED:
            return f"{ctx.label(n)}: operator {op!r}"
        if op == JoinOp.OP and node.get("nulls_equal", False):
            return f"{ctx.label(n)}: a join with nulls_equal"
    return None


def collect_table(df: DataFrame) -> pa.Table:
    """``df``'s rows as an Arrow table (one Spark job)."""
    schema = pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in df.schema.fields])
    if getattr(type(df), "toArrow", None) is not None:  # pyspark 4: classic and Connect
        table = operator.methodcaller("toArrow")(df)
    else:  # pyspark 3.5 classic
        batches = df._collect_as_arrow()
        table = pa.Table.from_batches(batches) if batches else schema.empty_table()
    return lf.conform(table, schema)


class _Typed:
    """Stands for a DataFrame where a spec builder reads only its ``schema``."""

    def __init__(self, schema: T.StructType) -> None:
        self.schema = schema


def _spark_schema(schema: pa.Schema) -> T.StructType:
    return T.StructType([T.StructField(f.name, spark_of_arrow(f.type), True) for f in schema])


def arrow_schema(spark_json: str) -> pa.Schema:
    """The Arrow schema of a stored Spark schema (JSON)."""
    st = T.StructType.fromJson(json.loads(spark_json))
    return pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in st.fields])


class LayerCache:
    """Stored layers read into this process, by path (and iteration), least recently used
    dropped beyond ``DDFLOW_SPARK_LAYER_CACHE_MB`` (default 2048) megabytes."""

    def __init__(self) -> None:
        self.tables: OrderedDict[str, pa.Table | None] = OrderedDict()
        self.bytes = 0

    @staticmethod
    def limit() -> int:
        return int(os.environ.get("DDFLOW_SPARK_LAYER_CACHE_MB", "2048")) * 1024 * 1024

    def get(self, key: str, load: Callable[[], pa.Table | None]) -> pa.Table | None:
        if key in self.tables:
            self.tables.move_to_end(key)
            return self.tables[key]
        table = load()
        self.put(key, table)
        return table

    def put(self, key: str, table: pa.Table | None) -> None:
        self.tables[key] = table
        self.bytes += 0 if table is None else table.nbytes
        while self.bytes > self.limit() and len(self.tables) > 1:
            _, old = self.tables.popitem(last=False)
            self.bytes -= 0 if old is None else old.nbytes


CACHE = LayerCache()


def _read_dir(fs: pafs.FileSystem, path: str, schema: pa.Schema) -> pa.Table | None:
    """The Parquet files directly in ``path`` (Spark's or this module's), or None."""
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    files = sorted(
        i.path
        for i in infos
        if i.type == pafs.FileType.File
        and i.base_name.endswith(".parquet")
        and not i.base_name.startswith((".", "_"))
    )
    parts = [lf.conform(pq.read_table(f, filesystem=fs), schema) for f in files]
    out = lf.concat([p for p in parts if p.num_rows])
    return out


class _Stored:
    """The stored histories of one run's prior state, read through the cache."""

    def __init__(self, state: StateDir, prior: Manifest) -> None:
        self.state = state
        self.prior = prior
        self.schemas: dict[int, pa.Schema] = {}

    def schema(self, n: int) -> pa.Schema:
        if n not in self.schemas:
            full = arrow_schema(self.prior.schemas[n])
            self.schemas[n] = pa.schema([f for f in full if f.name != ITER])
        return self.schemas[n]

    def top(self, n: int) -> pa.Table | None:
        """Top-level node ``n``'s stored history."""
        layers = self.prior.layers.get(n, [])
        return lf.concat([self._layer(n, p, None) for p in layers])

    def at(self, n: int, i: int) -> pa.Table | None:
        """Iterate node ``n``'s stored updates at iteration ``i`` (no ``_i`` column)."""
        layers = self.prior.layers.get(n, [])
        return lf.concat([self._layer(n, p, i) for p in layers])

    def _layer(self, n: int, relative: str, i: int | None) -> pa.Table | None:
        path = f"{self.state.path}/{relative}" + ("" if i is None else f"/{ITER}={i}")
        key = f"{self.state.fs.type_name}:{path}"
        return CACHE.get(key, lambda: _read_dir(self.state.fs, path, self.schema(n)))


class LocalContinuation:
    """One small incremental run on the driver: every top-level node's new updates
    (memoized), the new layers of the stored nodes, the supersteps of each iterate."""

    def __init__(
        self,
        compiler: Compiler,
        stored: set[int],
        state: StateDir,
        prior: Manifest,
        inputs: dict[int, pa.Table],
    ) -> None:
        self.c = compiler
        self.ctx = compiler.ctx
        self.stored = stored
        self.hist = _Stored(state, prior)
        self.prior = prior
        self.inputs = inputs
        self.tnames = self.ctx.tnames()
        self.memo: dict[int, pa.Table | None] = {}
        self.layers: dict[int, pa.Table] = {}
        """Per stored node: this run's updates (with ``_i`` inside an iterate)."""
        self.supersteps: dict[int, int] = {}
        self.leaves: dict[int, pa.Table | None] = {}
        self.specs: dict[int, object] = {}

    # -- operators -----------------------------------------------------------------------

    def linear(self, n: int, t: pa.Table | None) -> pa.Table | None:
        """Linear operator ``n`` on updates ``t``."""
        if t is None:
            return None
        ctx = self.ctx
        op = ctx.nodes[n]["op"]
        if op in (SelectOp.OP, FilterOp.OP):
            spec = self.specs.get(n)
            if spec is None:
                names = ctx.columns(ctx.inputs(n)[0])
                typed = cast(DataFrame, _Typed(_spark_schema(t.schema)))
                spec = self.specs[n] = self.c.ops.expr_spec(n, typed, names, collect=False)
            out = [b for b in expr_batches(spec, iter(t.to_batches())) if b.num_rows]  # type: ignore[arg-type]
            return pa.Table.from_batches(out) if out else None
        if op == NegateOp.OP:
            return lf.negate(t)
        if op == ScaleOp.OP:
            factor = pa.scalar(int(ctx.nodes[n]["factor"]), pa.int64())
            at = t.schema.get_field_index(DIFF)
            return t.set_column(at, DIFF, pc.multiply_checked(t[DIFF], factor))
        if op == ConsolidateOp.OP:
            return lf.consolidate(t, ctx.label(n))
        if op == ArrangeOp.OP:
            key = list(ctx.nodes[n]["key"])
            width = len(ctx.columns(ctx.inputs(n)[0]))
            order = key + [i for i in range(width) if i not in key]
            cols = [t[ccol(i)] for i in order] + [t[x] for x in self.tnames] + [t[DIFF]]
            return pa.table(cols, names=[ccol(j) for j in range(width)] + self.tnames + [DIFF])
        assert op == DelayOp.OP, op
        return t

    def join(self, n: int, left: pa.Table | None, right: pa.Table | None) -> pa.Table | None:
        """The product part of join ``n`` (an antijoin's negated semijoin products); the
        larger side first narrowed to the smaller one's keys."""
        if left is None or right is None:
            return None
        ctx = self.ctx
        node = ctx.nodes[n]
        la, ra = node["inputs"]
        k = ctx.key_len(la)
        if k == 1 and left.num_rows > 4 * right.num_rows:
            left = lf.semi(left, lf.key_set(right, k), k)
        elif k == 1 and right.num_rows > 4 * left.num_rows:
            right = lf.semi(right, lf.key_set(left, k), k)
        kind = node["kind"]
        out = lf.join_updates(
            left,
            right,
            k,
            len(ctx.columns(la)),
            len(ctx.columns(ra)),
            self.tnames,
            kind in ("semijoin", "antijoin"),
            ctx.label(n),
        )
        return lf.negate(out) if kind == "antijoin" else out

    def recompute(self, n: int, accumulated: pa.Table | None) -> pa.Table | None:
        """Reduce ``n``'s whole output history for the keys in ``accumulated`` (their whole
        input history): the engine's reduce operator."""
        if accumulated is None:
            return None
        ctx = self.ctx
        arr = ctx.inputs(n)[0]
        spec = self.specs.get(n)
        if spec is None:
            typed = cast(DataFrame, _Typed(_spark_schema(accumulated.schema)))
            spec = self.specs[n] = self.c.reduces.spec(n, typed)
        assert isinstance(spec, ReduceSpec)
        k, width = ctx.key_len(arr), len(ctx.columns(arr))
        cols = [accumulated[ccol(i)] for i in range(width)]
        cols += [accumulated[x] for x in self.tnames] + [accumulated[DIFF]]
        names = [ccol(i) for i in range(k)] + [f"_v{i}" for i in range(width - k)]
        table = pa.table(cols, names=names + self.tnames + [DIFF])
        out = reduce_history(spec, ctx.fns, table)
        outs = [ccol(i) for i in range(k)] + [ccol(k + j) for j in range(spec.n_outs)]
        out = out.rename_columns(outs + self.tnames + [DIFF])
        return lf.consolidate(out, ctx.label(n))

    # -- top level -----------------------------------------------------------------------

    def delta(self, n: int) -> pa.Table | None:
        """Top-level node ``n``'s new updates (None: none)."""
        if n in self.memo:
            return self.memo[n]
        ctx = self.ctx
        op = ctx.nodes[n]["op"]
        d: pa.Table | None
        if op == InputOp.OP:
            d = self.inputs[n] if self.inputs[n].num_rows else None
        elif op == ConstantOp.OP:
            d = None  # a constant's rows are at time 0: part of the first run only
        elif op == ConcatOp.OP:
            d = lf.concat([self.delta(i) for i in ctx.inputs(n)])
        elif op == JoinOp.OP:
            d = self._join(n)
        elif op == ReduceOp.OP:
            d = self._reduce(n)
        elif op == LeaveOp.OP:
            d = self._leave(n)
        else:
            d = self.linear(n, self.delta(ctx.inputs(n)[0]))
        if d is not None and n in self.stored:
            self.layers[n] = d
        self.memo[n] = d
        return d

    def _join(self, n: int) -> pa.Table | None:
        a, b = self.ctx.inputs(n)
        da, db = self.delta(a), self.delta(b)
        ha, hb = self.hist.top(a), self.hist.top(b)
        terms = []
        if self.ctx.nodes[n]["kind"] == "antijoin":
            terms.append(da)
        terms.append(self.join(n, da, lf.concat([hb, db])))
        terms.append(self.join(n, ha, db))
        return lf.consolidate(lf.concat(terms), self.ctx.label(n))

    def _reduce(self, n: int) -> pa.Table | None:
        ctx = self.ctx
        arr = ctx.inputs(n)[0]
        d = self.delta(arr)
        if d is None:
            return None
        k = ctx.key_len(arr)
        touched = lf.key_set(d, k)
        accumulated = lf.concat([d, lf.semi(self.hist.top(arr), touched, k)])
        full = self.recompute(n, accumulated)
        old = lf.negate(lf.semi(self.hist.top(n), touched, k))
        return lf.consolidate(lf.concat([full, old]), ctx.label(n))

    def _leave(self, n: int) -> pa.Table | None:
        if n not in self.leaves:
            from ddflow.spark.driver.local_iterate import LocalIterate

            scope = self.ctx.nodes[self.ctx.inputs(n)[0]]["scope"]
            self.leaves.update(LocalIterate(self, scope).run())
        return self.leaves[n]


def small_inputs(compiler: Compiler, prior: Manifest | None) -> dict[int, pa.Table] | None:
    """This run's input updates as Arrow tables when it runs on the driver (a continuation
    of a plan this module handles, with at most ``LOCAL_RUN`` updates per input and the
    outputs' schemas stored); None for the DataFrame path. One Spark job per input."""
    if prior is None or local_refusal(compiler) is not None:
        return None
    if any(n not in prior.output_schemas for n in compiler.out_nodes):
        return None  # a state an older ddflow wrote: the DataFrame path records them
    stored = [*prior.output_schemas.values(), *prior.schemas.values()]
    schemas = [T.StructType.fromJson(json.loads(s)) for s in stored]
    schemas += [df.schema for df in compiler.frames.values()]
    if any(not isinstance(f.dataType, _PLAIN) for s in schemas for f in s.fields):
        return None  # dates, decimals, timestamps: their Parquet forms are Spark's to write
    tables = {}
    for n, df in compiler.frames.items():
        table = collect_table(df.limit(LOCAL_RUN + 1))
        if table.num_rows > LOCAL_RUN:
            return None
        tables[n] = table
    return tables


def input_ranges(tables: dict[int, pa.Table], tname: str) -> list[tuple[int, int, int, int]]:
    """Per non-empty input: node, least and greatest time, updates."""
    out = []
    for n, t in tables.items():
        if t.num_rows:
            lo, hi = pc.min_max(t[tname]).values()
            out.append((n, int(lo.as_py()), int(hi.as_py()), t.num_rows))
    return out


def _write(state: StateDir, relative: str, table: pa.Table) -> None:
    """``table`` as Parquet under ``relative`` (by ``_i=`` directory when it has one), in
    the layout Spark writes and reads."""
    fs = state.fs
    base = f"{state.path}/{relative}"
    if ITER not in table.column_names:
        fs.create_dir(base, recursive=True)
        pq.write_table(table, f"{base}/part-00000.parquet", filesystem=fs)
        CACHE.put(f"{fs.type_name}:{base}", table if table.num_rows else None)
        return
    its = table[ITER]
    for j in sorted(pc.unique(its).to_pylist()):
        sub = table.filter(pc.equal(its, j)).drop_columns([ITER])
        fs.create_dir(f"{base}/{ITER}={j}", recursive=True)
        pq.write_table(sub, f"{base}/{ITER}={j}/part-00000.parquet", filesystem=fs)
        CACHE.put(f"{fs.type_name}:{base}/{ITER}={j}", sub)


def run_local(
    cont: LocalContinuation, state: StateDir, manifest: Manifest, run_dir: str
) -> dict[int, DataFrame]:
    """Computes the run on the driver, writes its outputs and layers and records them in
    ``manifest`` (not committed); returns the outputs' DataFrames by node."""
    spark = cont.ctx.spark
    frames: dict[int, DataFrame] = {}
    for n in cont.c.out_nodes:
        if n in frames:
            continue
        schema_json = manifest.output_schemas[n]
        schema = arrow_schema(schema_json)
        d = lf.consolidate(cont.delta(n), cont.ctx.label(n))
        relative = f"{run_dir}/out{n}"
        _write(state, relative, schema.empty_table() if d is None else lf.conform(d, schema))
        frames[n] = spark.read.schema(T.StructType.fromJson(json.loads(schema_json))).parquet(
            state.uri(relative)
        )
        manifest.outputs[n] = relative
    for n, layer in sorted(cont.layers.items()):
        if n in manifest.schemas:
            layer = lf.conform(layer, arrow_schema(manifest.schemas[n]))
        else:
            manifest.schemas[n] = _spark_schema(layer.schema).json()
        relative = f"{run_dir}/n{n}"
        _write(state, relative, layer)
        manifest.layers.setdefault(n, []).append(relative)
    for scope, steps in cont.supersteps.items():
        manifest.supersteps[scope] = max(steps, manifest.supersteps.get(scope, 0))
    return frames
