"""The Spark backend's driver: compiles a dataflow plan to Spark DataFrames and runs iterate
scopes as supersteps (iteration-major: superstep ``i`` computes iteration ``i`` for every outer
time at once).

Representation: every collection is a DataFrame of updates with record columns ``_c0..``,
outer time coordinates ``_t0..`` and the signed count ``_d``. Inside an iterate scope a
collection is represented per superstep by its *delta*: the updates whose iteration coordinate
is the current iteration ``i`` (the coordinate itself is implicit). Stateful operators keep
their state compacted to the current iteration (times advanced by the frontier ``{(0.., i)}``,
which just drops the iteration coordinate), so the state is the size of the live history:

* ``join``: ``dA_i x (B_<i + dB_i) + A_<i x dB_i`` (bilinear; time = coordinate-wise max).
  A side that does not depend on the loop variable (the edges of BFS) is partitioned by key
  and checkpointed once, before the first superstep, and never changes.
* ``reduce``: per key with new input, ``reduce(A_<=i) - R_<i`` computed by the embedded
  engine's own reduce operator in ``mapInArrow`` (see ``executor.py``).
* the variable: iteration 0 is the entered source; iteration ``i + 1`` is the result's
  iteration ``i`` (minus the source at ``i = 0``), exactly the engine's feedback edge.
* ``leave``: the sum over all iterations of the result's deltas.

Lineage is cut at every superstep (``localCheckpoint(eager=True)``, or ``checkpoint()``).
"""

from __future__ import annotations

import functools
import time as _time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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
from ddflow.errors import (
    ColumnNotFoundError,
    DdflowError,
    PlanError,
    SchemaTypeError,
)
from ddflow.input import InputSession
from ddflow.spark import executor as ex
from ddflow.spark.columns import SPARK_TYPES, NotCompilable, compile_expr, dtype_of

__all__ = ["run_on_spark", "explain_spark", "SparkResult", "Superstep", "UnsupportedOperatorError"]

SUPPORTED_OPS = frozenset(
    {
        "input", "select", "filter", "map_py", "filter_py", "flat_map_py", "concat", "negate",
        "consolidate", "arrange", "join", "reduce", "enter", "enter_arrangement", "variable",
        "leave",
    }
)  # fmt: skip
"""Plan operators the Spark backend runs (``capture``/``probe`` are outputs, not stages)."""

DIFF = ex.DIFF
TAG = ex.TAG


class UnsupportedOperatorError(PlanError):
    """The plan uses an operator (or a shape of plan) the Spark backend cannot run."""


def _c(i: int) -> str:
    return f"_c{i}"


def _t(j: int) -> str:
    return ex.tcol(j)


@dataclass
class Superstep:
    """Measurements of one phase of a run: the top level before the loop, one superstep, or
    the outputs."""

    phase: str
    iteration: int | None
    seconds: float
    rows_fed_back: int | None
    """Updates the superstep feeds back to the variable (the only number collected)."""
    shuffle_read: int
    shuffle_write: int
    jobs: int

    def line(self) -> str:
        """One progress line."""
        rows = "" if self.rows_fed_back is None else f", {self.rows_fed_back} updates fed back"
        return (
            f"{self.phase}: {self.seconds:.2f} s{rows}, shuffle write "
            f"{self.shuffle_write:,} B, read {self.shuffle_read:,} B, {self.jobs} jobs"
        )


@dataclass
class SparkResult(Mapping[Any, DataFrame]):
    """The outputs of ``run_on_spark``: ``result[collection]`` is a DataFrame of the complete
    consolidated output history (record columns, ``time`` or ``time_0..``, ``diff``)."""

    frames: dict[int, DataFrame]
    keys: dict[int, int]
    supersteps: list[Superstep] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    """How each node was compiled (``explain()``)."""

    def __getitem__(self, key: Any) -> DataFrame:
        return self.frames[self.keys[id(key)]]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.frames)

    def __len__(self) -> int:
        return len(self.frames)

    def explain(self) -> str:
        """The Spark stages each plan node became, then the measured phases."""
        lines = ["spark stages:", *("  " + s for s in self.stages), "phases:"]
        lines += ["  " + s.line() for s in self.supersteps]
        return "\n".join(lines)


# -- the job group / metrics ------------------------------------------------------------------


class _Meter:
    """Per-phase wall time, job count and shuffle bytes (Spark's status tracker and store)."""

    def __init__(self, spark: SparkSession, log: Callable[[str], None] | None) -> None:
        self.sc = spark.sparkContext
        self.log = log
        self.phases: list[Superstep] = []
        self._n = 0

    def run(self, phase: str, iteration: int | None, body: Callable[[], int | None]) -> int | None:
        self._n += 1
        group = f"ddflow-{id(self)}-{self._n}"
        self.sc.setJobGroup(group, f"ddflow {phase}")
        start = _time.perf_counter()
        try:
            rows = body()
        finally:
            self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        secs = _time.perf_counter() - start
        read, write, jobs = self._shuffle(group)
        step = Superstep(phase, iteration, secs, rows, read, write, jobs)
        self.phases.append(step)
        if self.log is not None:
            self.log(step.line())
        return rows

    def _shuffle(self, group: str) -> tuple[int, int, int]:
        tracker = self.sc.statusTracker()
        jobs = tracker.getJobIdsForGroup(group)
        stages: set[int] = set()
        for j in jobs:
            info = tracker.getJobInfo(j)
            if info is not None:
                stages.update(info.stageIds)
        read = write = 0
        try:
            store = self.sc._jsc.sc().statusStore()  # type: ignore[union-attr]
            jvm = self.sc._jvm
            empty = jvm.java.util.Collections.emptyList()  # type: ignore[union-attr]
            quantiles = self.sc._gateway.new_array(jvm.double, 0)  # type: ignore[union-attr]
            for s in stages:
                try:
                    data = store.stageAttempt(s, 0, False, empty, False, quantiles)._1()
                except Exception:  # a skipped stage has no attempt
                    continue
                read += int(data.shuffleReadBytes())
                write += int(data.shuffleWriteBytes())
        except Exception:  # pragma: no cover - metrics are best effort
            pass
        return read, write, len(jobs)


# -- the compiler -----------------------------------------------------------------------------


class _Compiler:
    def __init__(
        self,
        spark: SparkSession,
        flow: Dataflow,
        inputs: Mapping[InputSession, DataFrame],
        outputs: Sequence[Collection | Capture],
        partitions: int | None,
        checkpoint: str,
        meter: _Meter | None,
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
        self.checkpoint_mode = checkpoint
        self.meter = meter
        self.stages: list[str] = []
        self.memo: dict[int, DataFrame] = {}
        self.scope_out: dict[int, dict[int, DataFrame]] = {}
        self.invariant_arr: dict[int, DataFrame] = {}
        self.reduce_counts: dict[int, Accumulator[int]] = {}
        self.fixed: set[int] = set()
        """ids of the loop-invariant arrangements, partitioned and sorted by key once."""
        self.out_nodes = [self._output_node(o) for o in outputs]
        self.needed = self._needed(self.out_nodes)
        self._check_ops()
        self.dims = self._dims(inputs)
        self.frames = self._inputs(inputs)
        fns = flow._dispatcher
        self.fns = ex.FnTable({i: fns[i] for i in range(len(fns))})

    # -- validation ---------------------------------------------------------------------------

    def _output_node(self, out: Any) -> int:
        if isinstance(out, Capture):
            if out.flow is not self.flow:
                raise PlanError(f"run_on_spark: output {out!r} belongs to another dataflow")
            return int(self.nodes[out.node]["inputs"][0])
        if isinstance(out, Collection):
            if out.flow is not self.flow:
                raise PlanError(f"run_on_spark: output {out!r} belongs to another dataflow")
            if out.scope != 0:
                raise PlanError(
                    f"run_on_spark: output {out!r} is inside an iterate body; use the "
                    f"collection that iterate() returns"
                )
            return out.node
        raise PlanError(f"run_on_spark: outputs must be Collections or Captures, got {out!r}")

    def _needed(self, roots: Sequence[int]) -> set[int]:
        seen: set[int] = set()
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            node = self.nodes[n]
            stack.extend(node["inputs"])
            if node["op"] == "variable" and node.get("result") is not None:
                stack.append(node["result"])
        return seen

    def _check_ops(self) -> None:
        self.plan.validate()
        for n in sorted(self.needed):
            node = self.nodes[n]
            if node["op"] not in SUPPORTED_OPS:
                raise UnsupportedOperatorError(
                    f"{node['label']}: operator {node['op']!r} is not supported by the Spark "
                    f"backend (supported: {', '.join(sorted(SUPPORTED_OPS))})"
                )
            if self.plan.depth(node["scope"]) > 1:
                raise UnsupportedOperatorError(
                    f"{node['label']}: nested iterate (depth {self.plan.depth(node['scope'])}) is "
                    f"not supported by the Spark backend yet; one level of iterate is"
                )

    def _dims(self, inputs: Mapping[InputSession, DataFrame]) -> int:
        dims: int | None = self.flow.time_dims
        source = "the dataflow's time_dims"
        for session, df in inputs.items():
            cols = df.columns
            if "time" in cols:
                d = 1
            elif "time_0" in cols:
                d = 0
                while f"time_{d}" in cols:
                    d += 1
            else:
                raise ColumnNotFoundError(
                    f"input {session.name!r}: no time column: expected 'time' (int64) or "
                    f"'time_0', 'time_1', ... (one int64 column per time coordinate); the "
                    f"DataFrame has {cols}"
                )
            if dims is not None and d != dims:
                raise SchemaTypeError(
                    f"input {session.name!r}: {d} time coordinate(s), but {source} has {dims}"
                )
            dims, source = d, f"input {session.name!r}"
        return dims or 1

    def _inputs(self, inputs: Mapping[InputSession, DataFrame]) -> dict[int, DataFrame]:
        by_node: dict[int, DataFrame] = {}
        for session, df in inputs.items():
            if not isinstance(session, InputSession) or session.flow is not self.flow:
                raise PlanError(
                    f"run_on_spark: inputs must be keyed by this dataflow's input sessions, "
                    f"got {session!r}"
                )
            if not isinstance(df, DataFrame):
                raise SchemaTypeError(
                    f"input {session.name!r}: expected a Spark DataFrame, got {type(df).__name__}"
                )
            by_node[session.node] = self._input_frame(session, df)
        for n in sorted(self.needed):
            node = self.nodes[n]
            if node["op"] == "input" and n not in by_node:
                raise PlanError(
                    f"run_on_spark: no DataFrame for input {node['name']!r} ({node['label']}), "
                    f"which the outputs depend on"
                )
        return by_node

    def _input_frame(self, session: InputSession, df: DataFrame) -> DataFrame:
        what = f"input {session.name!r}"
        types = dict((f.name, f.dataType) for f in df.schema.fields)
        nullable = dict((f.name, f.nullable) for f in df.schema.fields)
        tnames = ["time"] if self.dims == 1 else [f"time_{j}" for j in range(self.dims)]
        for c in [*session.columns, *tnames, "diff"]:
            if c not in types:
                raise ColumnNotFoundError(
                    f"{what}: column {c!r} missing; the DataFrame has {df.columns}, the input "
                    f"needs {[*session.columns, *tnames, 'diff']}"
                )
        exprs: list[Column] = []
        for i, c in enumerate(session.columns):
            dtype = _record_dtype(types[c], f"{what}, column {c!r}")
            declared = session.dtypes.get(c)
            if declared is not None and declared != dtype:
                raise SchemaTypeError(
                    f"{what}, column {c!r}: Spark type {types[c].simpleString()} ({dtype}), "
                    f"the input is declared {declared}"
                )
            col = F.col(c).cast(SPARK_TYPES[dtype])
            if nullable[c]:
                col = F.when(
                    F.col(c).isNull(),
                    F.raise_error(
                        F.lit(f"ddflow: {what}, column {c!r}: null value (records have no nulls)")
                    ),
                ).otherwise(col)
            exprs.append(col.alias(_c(i)))
        for j, c in enumerate([*tnames, "diff"]):
            if not isinstance(types[c], T.LongType | T.IntegerType | T.ShortType | T.ByteType):
                raise SchemaTypeError(
                    f"{what}, column {c!r}: Spark type {types[c].simpleString()}, expected an "
                    f"integer type (int64)"
                )
            col = F.col(c).cast(T.LongType())
            checks = []
            if nullable[c]:
                checks.append((F.col(c).isNull(), "null value"))
            if c != "diff":
                checks.append((F.col(c) < 0, "negative time (times are non-negative)"))
            for cond, msg in reversed(checks):
                col = F.when(
                    cond, F.raise_error(F.lit(f"ddflow: {what}, column {c!r}: {msg}"))
                ).otherwise(col)
            exprs.append(col.alias(DIFF if c == "diff" else _t(j)))
        return df.select(*exprs)

    # -- helpers ------------------------------------------------------------------------------

    def _cp(self, df: DataFrame) -> DataFrame:
        """Cuts lineage (eagerly)."""
        if self.checkpoint_mode == "reliable":
            return df.checkpoint(eager=True)
        return df.localCheckpoint(eager=True)

    def _tnames(self) -> list[str]:
        return [_t(j) for j in range(self.dims)]

    def _ncols(self, n: int) -> int:
        return len(self.nodes[n]["columns"])

    def _key_len(self, n: int) -> int:
        node = self.nodes[n]
        while node["op"] == "enter_arrangement":
            node = self.nodes[node["inputs"][0]]
        return len(node["key"])

    def _note(self, n: int, how: str) -> None:
        node = self.nodes[n]
        self.stages.append(f"#{n} {node['op']} ({node['label']}): {how}")

    def _consolidate(self, df: DataFrame) -> DataFrame:
        keys = [c for c in df.columns if c != DIFF]
        return df.groupBy(*keys).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) != 0)

    def _empty_like(self, df: DataFrame) -> DataFrame:
        return df.limit(0)

    # -- linear operators (the same at top level and on superstep deltas) ---------------------

    def _linear(self, n: int, df: DataFrame, note: bool) -> DataFrame:
        node = self.nodes[n]
        op = node["op"]
        src = self.nodes[node["inputs"][0]]
        names = list(src["columns"])
        tn = self._tnames()
        if op in ("select", "filter"):
            typed = {
                name: (F.col(_c(i)), dtype_of(df.schema[_c(i)].dataType))
                for i, name in enumerate(names)
            }
            try:
                if op == "select":
                    cols = [compile_expr(e, typed, node["label"]) for e in node["exprs"]]
                    out = df.select(*[c.alias(_c(j)) for j, (c, _) in enumerate(cols)], *tn, DIFF)
                else:
                    pred, t = compile_expr(node["predicate"], typed, node["label"])
                    if t != "bool":
                        raise NotCompilable("non-bool predicate")
                    out = df.where(pred)
                if note:
                    self._note(n, "Spark Column expressions (no Python worker)")
                return out
            except NotCompilable as why:
                if note:
                    self._note(n, f"Rust expression evaluator in mapInArrow ({why})")
                return self._expr_native(n, df, names)
        if op in ("map_py", "filter_py", "flat_map_py"):
            if note:
                self._note(n, "Python batch function in mapInArrow (one call per Arrow batch)")
            return self._py(n, df, names)
        if op == "negate":
            return df.select(*[c for c in df.columns if c != DIFF], (-F.col(DIFF)).alias(DIFF))
        if op == "consolidate":
            if note:
                self._note(n, "groupBy(record, time).sum(diff)")
            return self._consolidate(df)
        if op == "arrange":
            key = list(node["key"])
            order = key + [i for i in range(len(names)) if i not in key]
            return df.select(*[F.col(_c(i)).alias(_c(j)) for j, i in enumerate(order)], *tn, DIFF)
        raise AssertionError(op)

    def _expr_native(self, n: int, df: DataFrame, names: list[str]) -> DataFrame:
        import json

        from ddflow import _core

        node = self.nodes[n]
        is_filter = node["op"] == "filter"
        exprs = [node["predicate"]] if is_filter else list(node["exprs"])
        texts = tuple(json.dumps(e, separators=(",", ":")) for e in exprs)
        empty = {
            name: ex.to_numpy(pa.array([], type=_arrow_type(df.schema[_c(i)].dataType)))
            for i, name in enumerate(names)
        }
        out_types: list[pa.DataType] = []
        if not is_filter:
            for t in texts:
                v = np.asarray(_core.eval_expr(t, empty, 0))
                out_types.append(_arrow_type_of_numpy(v))
        spec = ex.ExprSpec(
            node["label"], tuple(names), texts, is_filter, tuple(out_types), self.dims
        )
        if is_filter:
            schema = df.schema
        else:
            fields = [
                T.StructField(_c(j), _spark_of_arrow(t), False) for j, t in enumerate(out_types)
            ]
            schema = T.StructType(fields + _time_fields(self.dims))
        return _map_in_arrow(df, functools.partial(ex.expr_batches, spec), schema)

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
                name: ex.to_numpy(pa.array([], type=_arrow_type(df.schema[_c(i)].dataType)))
                for i, name in enumerate(names)
            }
            probe = table(fn_id, kind, empty)
            probe.pop("__row__", None)
            out_types = tuple(_arrow_type_of_numpy(np.asarray(v)) for v in probe.values())
            fields = [
                T.StructField(_c(j), _spark_of_arrow(t), False) for j, t in enumerate(out_types)
            ]
            schema = T.StructType(fields + _time_fields(self.dims))
        spec = ex.PySpec(kind, fn_id, node["label"], tuple(names), out_types, self.dims)
        return _map_in_arrow(df, functools.partial(ex.py_batches, spec, table), schema)

    def _union(self, n: int, frames: Sequence[DataFrame]) -> DataFrame:
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

    def _join(self, n: int, left: DataFrame, right: DataFrame, merge: bool = False) -> DataFrame:
        """The join node ``n`` of two update DataFrames. ``merge``: one side is a
        loop-invariant arrangement, hash-partitioned and sorted by key once; a sort-merge join
        then shuffles and sorts only the other side (a broadcast would resend it every
        superstep)."""
        node = self.nodes[n]
        kind = node["kind"]
        la, ra = node["inputs"]
        k = self._key_len(la)
        nl, nr = self._ncols(la), self._ncols(ra)
        tn = self._tnames()
        r = right.select(
            *[F.col(_c(i)).alias(f"_r{i}") for i in range(nr)],
            *[F.col(t).alias(f"_r{t}") for t in tn],
            F.col(DIFF).alias("_rd"),
        )
        if merge:
            r = r.hint("merge")
        cond = [F.col(_c(i)) == F.col(f"_r{i}") for i in range(k)]
        joined = left.join(r, on=functools.reduce(lambda a, b: a & b, cond), how="inner")
        times = [F.greatest(F.col(t), F.col(f"_r{t}")).alias(t) for t in tn]
        diff = (F.col(DIFF) * F.col("_rd")).alias(DIFF)
        lcols = [F.col(_c(i)) for i in range(nl)]
        if kind == "join":
            rcols = [F.col(f"_r{i}").alias(_c(nl + i - k)) for i in range(k, nr)]
            return joined.select(*lcols, *rcols, *times, diff)
        semi = joined.select(*lcols, *times, diff)
        if kind == "semijoin":
            return semi
        neg = semi.select(*[c for c in semi.columns if c != DIFF], (-F.col(DIFF)).alias(DIFF))
        return left.unionByName(neg)

    # -- reduce -------------------------------------------------------------------------------

    def _reduce_spec(self, n: int, arr_df: DataFrame) -> ex.ReduceSpec:
        node = self.nodes[n]
        arr = node["inputs"][0]
        k = self._key_len(arr)
        n_in = self._ncols(arr)
        n_vals = n_in - k
        n_outs = len(node["columns"]) - k
        agg = node["agg"]
        key_types = [_arrow_type(arr_df.schema[_c(i)].dataType) for i in range(k)]
        val_types = [_arrow_type(arr_df.schema[_c(k + i)].dataType) for i in range(n_vals)]
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
        fields = [pa.field(_c(i), t) for i, t in enumerate(key_types)]
        fields += [pa.field(f"_v{i}", t) for i, t in enumerate(val_types)]
        fields += [pa.field(f"_o{i}", t) for i, t in enumerate(out_types)]
        fields += [pa.field(t, pa.int64()) for t in self._tnames()]
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
            _arrow_type_of_numpy(np.asarray(v))
            for name, v in out.items()
            if name not in ("__offsets__", "__count__")
        ]

    def _widen(
        self, df: DataFrame, spec: ex.ReduceSpec, parts: dict[str, str], tag: int
    ) -> DataFrame:
        cols: list[Column] = []
        for f in spec.schema:
            typ = _spark_of_arrow(f.type)
            if f.name == TAG:
                cols.append(F.lit(tag).cast(T.IntegerType()).alias(TAG))
            elif f.name in parts:
                cols.append(F.col(parts[f.name]).cast(typ).alias(f.name))
            else:
                cols.append(F.lit(None).cast(typ).alias(f.name))
        return df.select(*cols)

    def _reduce_input(self, df: DataFrame, spec: ex.ReduceSpec) -> DataFrame:
        parts = {_c(i): _c(i) for i in range(spec.n_keys)}
        parts.update({f"_v{i}": _c(spec.n_keys + i) for i in range(spec.n_vals)})
        parts.update({t: t for t in self._tnames()})
        parts[DIFF] = DIFF
        return self._widen(df, spec, parts, ex.TAG_DELTA_IN)

    def _reduce_output(self, df: DataFrame, spec: ex.ReduceSpec) -> DataFrame:
        k = spec.n_keys
        return df.where(F.col(TAG) == ex.TAG_DELTA_OUT).select(
            *[F.col(_c(i)) for i in range(k)],
            *[F.col(f"_o{i}").alias(_c(k + i)) for i in range(spec.n_outs)],
            *self._tnames(),
            DIFF,
        )

    def _reduce_run(
        self,
        spec: ex.ReduceSpec,
        tagged: DataFrame,
        stateful: bool,
        counter: Accumulator[int] | None = None,
    ) -> DataFrame:
        keys = [_c(i) for i in range(spec.n_keys)]
        schema = _spark_schema(spec.schema)
        fn = functools.partial(ex.reduce_partition, spec, self.fns, stateful, counter)
        return _map_in_arrow(tagged.repartition(self.partitions, *keys), fn, schema)

    # -- top level ----------------------------------------------------------------------------

    def top(self, n: int) -> DataFrame:
        if n in self.memo:
            return self.memo[n]
        node = self.nodes[n]
        op = node["op"]
        ins = node["inputs"]
        if op == "input":
            df = self.frames[n]
        elif op == "concat":
            df = self._union(n, [self.top(i) for i in ins])
        elif op == "join":
            df = self._join(n, self.top(ins[0]), self.top(ins[1]))
            self._note(n, "Spark equi-join on the key, time = greatest, diff = product")
        elif op == "reduce":
            arr_df = self.top(ins[0])
            spec = self._reduce_spec(n, arr_df)
            raw = self._reduce_run(spec, self._reduce_input(arr_df, spec), stateful=False)
            df = self._reduce_output(raw, spec)
            self._note(n, "repartition(key) + engine reduce operator in mapInArrow, whole history")
        elif op == "leave":
            scope = self.nodes[ins[0]]["scope"]
            df = self._run_scope(scope)[n]
        else:
            df = self._linear(n, self.top(ins[0]), note=True)
        self.memo[n] = df
        return df

    def _invariant_arrangement(self, n: int) -> DataFrame:
        """A top-level arrangement entered into a loop: partitioned by key and cut once."""
        if n not in self.invariant_arr:
            k = self._key_len(n)
            keys = [_c(i) for i in range(k)]
            df = self.top(n).repartition(self.partitions, *keys).sortWithinPartitions(*keys)
            self.invariant_arr[n] = self._cp(df)
            self.fixed.add(id(self.invariant_arr[n]))
            self._note(
                n,
                f"loop-invariant: hash-partitioned by key into {self.partitions}, "
                f"sorted and checkpointed once",
            )
        return self.invariant_arr[n]

    # -- iterate ------------------------------------------------------------------------------

    def _run_scope(self, scope: int) -> dict[int, DataFrame]:
        if scope in self.scope_out:
            return self.scope_out[scope]
        members = sorted(n for n in self.needed if self.nodes[n]["scope"] == scope)
        variables = [n for n in members if self.nodes[n]["op"] == "variable"]
        if len(variables) != 1:
            raise UnsupportedOperatorError(
                f"{self.plan.scopes[scope].label}: expected one iteration variable, found "
                f"{len(variables)}"
            )
        var = variables[0]
        result = int(self.nodes[var]["result"])
        source = int(self.nodes[var]["inputs"][0])
        leaves = [
            n
            for n in self.needed
            if self.nodes[n]["op"] == "leave"
            and self.nodes[self.nodes[n]["inputs"][0]]["scope"] == scope
        ]
        max_it = self.plan.scopes[scope].max_iterations
        # Nodes that depend on the variable change at every iteration; the others only at 0.
        variant: set[int] = set()
        for n in members:
            node = self.nodes[n]
            if n == var or any(i in variant for i in node["inputs"]):
                variant.add(n)
        join_inputs = {
            i for n in members if self.nodes[n]["op"] == "join" for i in self.nodes[n]["inputs"]
        }
        acc: dict[int, DataFrame] = {}
        red_state: dict[int, DataFrame] = {}
        red_spec: dict[int, ex.ReduceSpec] = {}
        for n in members:
            op = self.nodes[n]["op"]
            if op == "reduce":
                self._note(
                    n,
                    "per superstep: repartition(key) of new input + state, engine "
                    "reduce operator in mapInArrow on keys with new input, state "
                    "checkpointed",
                )
            elif op == "join":
                how = [
                    ("invariant" if i not in variant else "variant")
                    for i in self.nodes[n]["inputs"]
                ]
                self._note(
                    n,
                    f"per superstep delta join (sides {how[0]}, {how[1]}): Spark "
                    f"equi-join, time = greatest, diff = product",
                )
            elif op in ("select", "filter", "map_py", "filter_py", "flat_map_py"):
                pass
        parts: list[DataFrame] = []
        var_next: DataFrame | None = None
        i = 0
        while True:
            holder: dict[str, Any] = {}

            def superstep(
                i: int = i,
                holder: dict[str, Any] = holder,
                var_next: DataFrame | None = var_next,
            ) -> int | None:
                delta: dict[int, DataFrame | None] = {}
                for n in members:
                    node = self.nodes[n]
                    op = node["op"]
                    ins = node["inputs"]
                    if n not in variant and i > 0:
                        delta[n] = None
                        continue
                    if op == "enter":
                        delta[n] = self.top(ins[0])
                    elif op == "enter_arrangement":
                        delta[n] = self._invariant_arrangement(ins[0])
                    elif op == "variable":
                        delta[n] = delta[source] if i == 0 else var_next
                    elif op == "concat":
                        present = [delta[x] for x in ins if delta[x] is not None]
                        delta[n] = self._union(n, present) if present else None  # type: ignore[arg-type]
                    elif op == "join":
                        delta[n] = self._delta_join(n, delta, acc)
                    elif op == "reduce":
                        delta[n] = self._delta_reduce(n, delta, red_state, red_spec)
                    elif op == "leave":
                        continue
                    else:
                        d = delta[ins[0]]
                        delta[n] = None if d is None else self._linear(n, d, note=i == 0)
                    if op == "arrange" and n in join_inputs and n not in variant:
                        d = delta[n]
                        if d is not None:
                            k = self._key_len(n)
                            keys = [_c(x) for x in range(k)]
                            cut = self._cp(
                                d.repartition(self.partitions, *keys).sortWithinPartitions(*keys)
                            )
                            self.fixed.add(id(cut))
                            delta[n] = cut
                # State for the next superstep, compacted to this iteration.
                for n in join_inputs:
                    d = delta.get(n)
                    if d is None:
                        continue
                    if n not in variant:
                        acc[n] = d
                    elif self._needs_acc(n, variant):
                        prev = acc.get(n)
                        merged = d if prev is None else self._consolidate(prev.unionByName(d))
                        acc[n] = self._cp(merged)
                res = delta[result]
                counted: int | None = None
                if res is not None and self.nodes[result]["op"] == "reduce":
                    # Consolidated per key partition and cut already; its size was counted
                    # by the reduce's tasks (no extra job).
                    counted = int(self.reduce_counts[result].value)
                elif res is not None:
                    res = self._cp(self._consolidate(res))
                if res is not None:
                    parts.append(res)
                if max_it is not None and i + 1 >= max_it:
                    holder["next"] = None
                    return None
                nxt: DataFrame | None = res
                if i == 0:
                    src = delta[source]
                    assert src is not None
                    neg = src.select(
                        *[c for c in src.columns if c != DIFF], (-F.col(DIFF)).alias(DIFF)
                    )
                    nxt = self._cp(self._consolidate(neg if res is None else res.unionByName(neg)))
                if nxt is None:
                    holder["next"] = None
                    return 0
                count = counted if (i > 0 and counted is not None) else nxt.count()
                holder["next"] = nxt if count else None
                return count

            if self.meter is not None:
                self.meter.run(f"superstep {i}", i, superstep)
            else:
                superstep()
            var_next = holder["next"]
            if var_next is None:
                break
            i += 1
        if parts:
            out = self._consolidate(functools.reduce(lambda a, b: a.unionByName(b), parts))
        else:
            out = self._empty_like(self.top(self.nodes[source]["inputs"][0]))
        self.scope_out[scope] = {leave: out for leave in leaves}
        return self.scope_out[scope]

    def _needs_acc(self, n: int, variant: set[int]) -> bool:
        """Whether a variant arrangement's accumulation is read: it joins a variant side."""
        for m in self.needed:
            node = self.nodes[m]
            if node["op"] == "join" and n in node["inputs"]:
                other = [x for x in node["inputs"] if x != n]
                if not other or other[0] in variant:
                    return True
        return False

    def _delta_join(
        self, n: int, delta: dict[int, DataFrame | None], acc: dict[int, DataFrame]
    ) -> DataFrame | None:
        a, b = self.nodes[n]["inputs"]
        da, db = delta.get(a), delta.get(b)
        pa_, pb = acc.get(a), acc.get(b)
        terms: list[DataFrame] = []
        fixed = self.fixed
        if da is not None:
            rhs = [x for x in (pb, db) if x is not None]
            if rhs:
                right = rhs[0] if len(rhs) == 1 else rhs[0].unionByName(rhs[1])
                terms.append(self._join(n, da, right, merge=id(right) in fixed))
        if db is not None and pa_ is not None:
            terms.append(self._join(n, pa_, db, merge=id(pa_) in fixed))
        if not terms:
            return None
        return functools.reduce(lambda x, y: x.unionByName(y), terms)

    def _delta_reduce(
        self,
        n: int,
        delta: dict[int, DataFrame | None],
        state: dict[int, DataFrame],
        specs: dict[int, ex.ReduceSpec],
    ) -> DataFrame | None:
        d = delta.get(self.nodes[n]["inputs"][0])
        if d is None:
            return None
        spec = specs.get(n)
        if spec is None:
            spec = specs[n] = self._reduce_spec(n, d)
        tagged = self._reduce_input(d, spec)
        if n in state:
            tagged = tagged.unionByName(state[n])
        counter = self.spark.sparkContext.accumulator(0)
        self.reduce_counts[n] = counter
        raw = self._cp(self._reduce_run(spec, tagged, stateful=True, counter=counter))
        state[n] = raw.where(F.col(TAG).isin(ex.TAG_IN_ACC, ex.TAG_OUT_ACC))
        return self._reduce_output(raw, spec)

    # -- outputs ------------------------------------------------------------------------------

    def output(self, n: int) -> DataFrame:
        df = self._consolidate(self.top(n))
        names = list(self.nodes[n]["columns"])
        tnames = ["time"] if self.dims == 1 else [f"time_{j}" for j in range(self.dims)]
        return df.select(
            *[F.col(_c(i)).alias(c) for i, c in enumerate(names)],
            *[F.col(_t(j)).alias(t) for j, t in enumerate(tnames)],
            F.col(DIFF).alias("diff"),
        )


def _map_in_arrow(df: DataFrame, fn: Callable[..., Any], schema: T.StructType) -> DataFrame:
    """``df.mapInArrow(fn, schema)``, without pyspark 3.5's own DeprecationWarning (its pandas
    version check uses distutils)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "distutils Version classes", DeprecationWarning)
        return df.mapInArrow(fn, schema)


# -- types ------------------------------------------------------------------------------------


def _record_dtype(typ: T.DataType, what: str) -> str:
    if isinstance(typ, T.LongType | T.IntegerType | T.ShortType | T.ByteType):
        return "int64"
    if isinstance(typ, T.DoubleType | T.FloatType):
        return "float64"
    if isinstance(typ, T.BooleanType):
        return "bool"
    if isinstance(typ, T.StringType):
        return "str"
    raise SchemaTypeError(
        f"{what}: Spark type {typ.simpleString()} is not supported (use bigint, double, "
        f"boolean or string)"
    )


def _arrow_type(typ: T.DataType) -> pa.DataType:
    return {"int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(), "str": pa.string()}[
        dtype_of(typ)
    ]


def _arrow_type_of_numpy(arr: np.ndarray) -> pa.DataType:
    kind = arr.dtype.kind
    if kind in "iu":
        return pa.int64()
    if kind == "f":
        return pa.float64()
    if kind == "b":
        return pa.bool_()
    return pa.string()


def _spark_of_arrow(typ: pa.DataType) -> T.DataType:
    if typ == pa.int64():
        return T.LongType()
    if typ == pa.float64():
        return T.DoubleType()
    if typ == pa.bool_():
        return T.BooleanType()
    if typ == pa.int32():
        return T.IntegerType()
    return T.StringType()


def _spark_schema(schema: pa.Schema) -> T.StructType:
    return T.StructType([T.StructField(f.name, _spark_of_arrow(f.type), True) for f in schema])


def _time_fields(dims: int) -> list[T.StructField]:
    return [T.StructField(_t(j), T.LongType(), False) for j in range(dims)] + [
        T.StructField(DIFF, T.LongType(), False)
    ]


# -- public -----------------------------------------------------------------------------------


def run_on_spark(
    spark: SparkSession,
    flow: Dataflow,
    inputs: Mapping[InputSession, DataFrame],
    outputs: Sequence[Collection | Capture],
    *,
    partitions: int | None = None,
    checkpoint: str = "local",
    progress: bool | Callable[[str], None] = False,
) -> SparkResult:
    """Runs ``flow`` on Spark over complete input histories and returns its output histories.

    ``inputs`` maps each input session to a DataFrame of updates: the input's record columns,
    ``time`` (int64; or ``time_0``, ``time_1``, ... for tuple times) and ``diff`` (int64).
    ``result[c]`` for ``c`` in ``outputs`` is a DataFrame of record columns, time column(s)
    and ``diff``: exactly the consolidated updates the embedded engine's
    ``capture().updates()`` gives for the same input. Iterate scopes run eagerly here, one
    superstep per iteration; top-level stages after them stay lazy DataFrames.

    ``partitions``: key partitions (default ``spark.sql.shuffle.partitions``);
    ``checkpoint``: ``"local"`` (``localCheckpoint``) or ``"reliable"`` (``checkpoint()`` to
    the SparkContext's checkpoint directory) at every superstep; ``progress``: print (or call
    the function with) one line per superstep.

    Schema problems and unsupported operators raise before any Spark job runs.
    """
    log: Callable[[str], None] | None
    if progress is True:
        log = functools.partial(print, flush=True)
    elif callable(progress):
        log = progress
    else:
        log = None
    meter = _Meter(spark, log)
    try:
        compiler = _Compiler(spark, flow, inputs, outputs, partitions, checkpoint, meter)
    except DdflowError:
        raise
    frames: dict[int, DataFrame] = {}
    keys: dict[int, int] = {}
    for out, n in zip(outputs, compiler.out_nodes, strict=True):
        if n not in frames:
            frames[n] = compiler.output(n)
        keys[id(out)] = n
    return SparkResult(frames, keys, meter.phases, compiler.stages)


def explain_spark(
    spark: SparkSession,
    flow: Dataflow,
    inputs: Mapping[InputSession, DataFrame],
    outputs: Sequence[Collection | Capture],
) -> str:
    """How each plan node runs on Spark, without running anything (validates like
    ``run_on_spark``)."""
    compiler = _Compiler(spark, flow, inputs, outputs, None, "local", None)
    lines = [
        f"ddflow on Spark: {len(compiler.needed)} plan nodes, time_dims {compiler.dims}, "
        f"{compiler.partitions} key partitions"
    ]
    for n in sorted(compiler.needed):
        node = compiler.nodes[n]
        op = node["op"]
        indent = "  " * (1 + compiler.plan.depth(node["scope"]))
        how = {
            "input": "DataFrame, validated and renamed",
            "select": "Spark Column expressions (Rust evaluator in mapInArrow where inexact)",
            "filter": "Spark Column predicate (Rust evaluator in mapInArrow where inexact)",
            "map_py": "Python batch function in mapInArrow",
            "filter_py": "Python batch function in mapInArrow",
            "flat_map_py": "Python batch function in mapInArrow",
            "concat": "unionByName",
            "negate": "diff = -diff",
            "consolidate": "groupBy(record, time).sum(diff)",
            "arrange": "columns ordered key first (partitioned by the consumer)",
            "join": "Spark equi-join, time = greatest, diff = product"
            + (" (per superstep: delta rule)" if node["scope"] else ""),
            "reduce": "repartition(key) + the engine's reduce operator in mapInArrow"
            + (
                " (per superstep, on keys with new input; state checkpointed)"
                if node["scope"]
                else ""
            ),
            "enter": "iteration 0 only",
            "enter_arrangement": "loop-invariant: partitioned by key and checkpointed once",
            "variable": "iteration 0: source; i+1: result at i (minus source at 0)",
            "leave": "sum of the result's deltas over all supersteps",
        }[op]
        lines.append(f"{indent}#{n} {op}: {how}  [{node['label']}]")
    return "\n".join(lines)
