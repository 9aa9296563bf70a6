"""Incremental Spark runs: ``run_on_spark(..., state=path)`` continues from the state a
previous run stored and returns only the new output updates.

A run computes, for every plan node the outputs need, its *new* updates (its delta) from the
new input updates and the stored histories (``stored_state.py``), by rules that hold for
whole update histories:

* linear operators (``select``, ``filter``, Python functions, ``negate``, ...) act on the
  delta; ``concat`` unions the deltas;
* ``join``: ``dA x (B + dB) + A x dB`` with ``A``, ``B`` the stored histories of its inputs
  (an ``antijoin`` adds its left delta once, then the negated semijoin products);
* ``reduce``: the keys with new input are recomputed from their whole input history (stored
  plus new), minus their stored output;
* an ``iterate`` runs as supersteps over the same rules with the iteration kept beside every
  stored update (``incremental_iterate.py``).

The delta of every join and reduce input and of every reduce becomes a new layer of its
stored history; the run commits a new manifest with the new frontier. Concatenating every
run's outputs gives exactly the updates of one run over the whole history (tests compare
with the embedded engine).

Checked before anything is computed: the stored plan equals this one, times have one
coordinate, ``errors="raise"``; then one job reads the inputs' least and greatest times and
refuses an update before the stored frontier.

A continuation with at most ``local_continuation.LOCAL_RUN`` updates per input (and a plan
that module handles) applies the same rules to Arrow tables on the driver instead
(``local_continuation.py``, ``local_iterate.py``): one job per input collects its updates,
and the supersteps run no Spark job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError
from ddflow.input import InputSession
from ddflow.plan import ConcatOp, ConstantOp, InputOp, JoinOp, LeaveOp, ReduceOp
from ddflow.spark.driver.columns import negate_diffs
from ddflow.spark.driver.compiler import Compiler
from ddflow.spark.driver.delta_frames import semi_on_keys, union_all
from ddflow.spark.driver.incremental_iterate import IterateContinuation
from ddflow.spark.driver.lineage import consolidated
from ddflow.spark.driver.local_continuation import (
    LocalContinuation,
    input_ranges,
    run_local,
    small_inputs,
)
from ddflow.spark.driver.ops import SPARK_OPS
from ddflow.spark.driver.preflight import check_executors
from ddflow.spark.driver.progress import Meter
from ddflow.spark.driver.stored_state import Manifest, StateDir, StateError, plan_lines
from ddflow.spark.driver.validate import UnsupportedOperatorError
from ddflow.spark.tasks.batches import DIFF, ccol, tcol

__all__ = ["SMALL_RUN", "Continuation", "run_continuation", "stored_nodes"]

SMALL_RUN = 1_000_000
"""A continuation with at most this many input updates broadcasts its deltas (and the keys
they touch) to the stored histories, which are then scanned once per use and never shuffled;
a larger one joins by shuffling both sides, as a first run does."""


def stored_nodes(compiler: Compiler) -> set[int]:
    """The nodes whose histories a later run reads: join and reduce inputs, reduces."""
    ctx = compiler.ctx
    out: set[int] = set()
    for n in ctx.needed:
        op = ctx.nodes[n]["op"]
        if op == JoinOp.OP:
            out.update(ctx.inputs(n))
        elif op == ReduceOp.OP:
            out.add(n)
            out.update(ctx.inputs(n))
    return out


class Continuation:
    """One incremental run's deltas of the top-level nodes (memoized), and the new layers
    of the stored nodes."""

    def __init__(
        self, compiler: Compiler, state: StateDir, prior: Manifest | None, small: bool = False
    ) -> None:
        """``small``: this run's updates are few beside the stored state, so its deltas are
        broadcast to the stored histories they meet (scanned, never shuffled)."""
        self.c = compiler
        self.small = small
        self.ctx = compiler.ctx
        self.ops = compiler.ops
        self.cuts = compiler.state.cuts
        self.state = state
        self.prior = prior
        self.stored = stored_nodes(compiler)
        self.memo: dict[int, DataFrame | None] = {}
        self.layers: dict[int, DataFrame] = {}
        """Per stored node: this run's updates (with ``_i`` inside an iterate), cut."""
        self.supersteps: dict[int, int] = {}
        self.leaves: dict[int, DataFrame | None] = {}

    def small_side(self, df: DataFrame) -> DataFrame:
        """``df`` (this run's updates) marked for broadcast in a small run."""
        return F.broadcast(df) if self.small else df

    def history(self, n: int) -> DataFrame | None:
        """Stored node ``n``'s history before this run (None: empty)."""
        if self.prior is None:
            return None
        return self.state.history(self.prior, n)

    def delta(self, n: int) -> DataFrame | None:
        """Top-level node ``n``'s new updates (None: none)."""
        if n in self.memo:
            return self.memo[n]
        ctx = self.ctx
        op = ctx.nodes[n]["op"]
        d: DataFrame | None
        if op == InputOp.OP:
            d = self.c.frames[n]
        elif op == ConstantOp.OP:
            # A constant's rows are at time 0: part of the first run only.
            d = self.c.top(n) if self.prior is None else None
        elif op == ConcatOp.OP:
            d = union_all([self.delta(i) for i in ctx.inputs(n)])
        elif op == JoinOp.OP:
            d = self._join(n)
        elif op == ReduceOp.OP:
            d = self._reduce(n)
        elif op == LeaveOp.OP:
            d = self._leave(n)
        elif SPARK_OPS[op].linear is not None:
            src = self.delta(ctx.inputs(n)[0])
            rule = SPARK_OPS[op].linear
            assert rule is not None
            d = None if src is None else rule(self.ops, n, src, True)
        else:
            raise UnsupportedOperatorError(
                f"{ctx.label(n)}: operator {op!r} is not supported by incremental Spark runs"
            )
        if d is not None and n in self.stored:
            d = self.cuts.cut_lazy(d)
            self.layers[n] = d
        self.memo[n] = d
        return d

    def _join(self, n: int) -> DataFrame | None:
        a, b = self.ctx.inputs(n)
        da, db = self.delta(a), self.delta(b)
        ha, hb = self.history(a), self.history(b)
        terms: list[DataFrame | None] = []
        if self.ctx.nodes[n]["kind"] == "antijoin":
            terms.append(da)
        right = union_all([hb, db])
        if da is not None and right is not None:
            terms.append(self.ops.join(n, self.small_side(da), right, product_only=True))
        if db is not None and ha is not None:
            terms.append(self.ops.join(n, ha, self.small_side(db), product_only=True))
        both = union_all(terms)
        self.ctx.note(n, "incremental: dA x (B + dB) + A x dB over the stored histories")
        return None if both is None else consolidated(both)

    def _reduce(self, n: int) -> DataFrame | None:
        ctx = self.ctx
        arr = ctx.inputs(n)[0]
        d = self.delta(arr)
        if d is None:
            return None
        k = ctx.key_len(arr)
        touched = self.small_side(d.select(*[ccol(i) for i in range(k)]).distinct())
        old_in, old_out = self.history(arr), self.history(n)
        accumulated = d if old_in is None else d.unionByName(semi_on_keys(old_in, touched, k))
        full = self.recompute(n, accumulated)
        parts: list[DataFrame | None] = [full]
        if old_out is not None:
            parts.append(negate_diffs(semi_on_keys(old_out, touched, k), DIFF, ctx.label(n)))
        ctx.note(n, "incremental: keys with new input recomputed from their stored history")
        both = union_all(parts)
        assert both is not None
        return consolidated(both)

    def recompute(self, n: int, accumulated: DataFrame) -> DataFrame:
        """Reduce ``n``'s whole output history for the keys in ``accumulated`` (their whole
        input history): the engine's reduce per key partition."""
        reduces = self.c.reduces
        spec = reduces.spec(n, accumulated)
        raw = reduces.run(spec, reduces.tagged_input(accumulated, spec), stateful=False)
        return reduces.output(raw, spec)

    def _leave(self, n: int) -> DataFrame | None:
        if n not in self.leaves:
            scope = self.ctx.nodes[self.ctx.inputs(n)[0]]["scope"]
            self.leaves.update(IterateContinuation(self, scope).run())
        return self.leaves[n]


def _checked_frontier(
    compiler: Compiler, prior: Manifest | None, where: str, names: Mapping[int, str]
) -> tuple[int | None, int]:
    """The frontier after this run and the number of input updates; refuses an update
    before the stored one (one job)."""
    frames = compiler.frames
    t = tcol(0)
    aggs = []
    for n, df in frames.items():
        aggs.append(df.select(F.lit(n).alias("n"), F.col(t).alias("t")))
    both = union_all(aggs)
    if both is None:
        return (None if prior is None else prior.frontier), 0
    rows = (
        both.groupBy("n")
        .agg(F.min("t").alias("lo"), F.max("t").alias("hi"), F.count("t").alias("rows"))
        .collect()
    )
    ranges = [(int(r["n"]), int(r["lo"]), int(r["hi"]), int(r["rows"])) for r in rows]
    return _frontier(ranges, prior, where, names)


def _frontier(
    ranges: list[tuple[int, int, int, int]],
    prior: Manifest | None,
    where: str,
    names: Mapping[int, str],
) -> tuple[int | None, int]:
    """The frontier after this run and its number of input updates, from each input's
    (node, least time, greatest time, updates); refuses an update before the stored
    frontier."""
    old = None if prior is None else prior.frontier
    frontier = old
    updates = 0
    for n, lo, hi, rows in ranges:
        updates += rows
        if old is not None and lo < old:
            raise StateError(
                f"state {where}: input {names[n]!r} has an update at time {lo}, "
                f"before the stored frontier {old} (earlier runs covered every time before "
                f"it); give only updates at times >= {old}"
            )
        frontier = hi + 1 if frontier is None else max(frontier, hi + 1)
    return frontier, updates


def run_continuation(
    spark: SparkSession,
    flow: Dataflow,
    inputs: Mapping[InputSession, DataFrame],
    outputs: Sequence[Collection | Capture],
    state: str,
    *,
    partitions: int | None,
    checkpoint: str,
    log: Callable[[str], None] | None,
    errors: str,
) -> tuple[Compiler, dict[int, DataFrame], Meter]:
    """Runs ``flow`` on the new ``inputs`` from the state at ``state``; commits the new state.
    Returns the compiler (for notes), the output frames by node, and the measurements."""
    meter = Meter(spark, log)
    compiler = Compiler(
        spark, flow, inputs, outputs, partitions, checkpoint, meter, "shuffle", None, errors,
        key_regions=False,
    )  # fmt: skip
    ctx = compiler.ctx
    if ctx.dims != 1:
        raise PlanError(
            f"run_on_spark(state=...): incremental runs take one time coordinate ('time'); "
            f"this dataflow's times have {ctx.dims}"
        )
    if ctx.collect:
        raise PlanError(
            'run_on_spark(state=...): errors="collect" is not supported by incremental runs '
            'yet; use errors="raise"'
        )
    dirs = StateDir(spark, state)
    prior = dirs.current()
    fns = flow.builder.functions
    types = {n: [f"{f.name}:{f.dataType.simpleString()}" for f in df.schema.fields]
             for n, df in compiler.frames.items()}  # fmt: skip
    lines = plan_lines(
        ctx.plan, ctx.needed, compiler.out_nodes, [fns[i] for i in range(len(fns))], types
    )
    if prior is not None:
        prior.check_plan(lines, dirs.root)
    names = {n: str(ctx.nodes[n].get("name", n)) for n in compiler.frames}
    version = 1 if prior is None else prior.version + 1
    run_dir = dirs.run_dir(version)
    frames: dict[int, DataFrame] = {}
    try:
        local = small_inputs(compiler, prior)
        if local is not None:
            ranges = input_ranges(local, tcol(0))
            frontier, updates = _frontier(ranges, prior, dirs.root, names)
        else:
            check_executors(spark, ctx.partitions)
            frontier, updates = _checked_frontier(compiler, prior, dirs.root, names)

        def fresh() -> Manifest:
            return Manifest(
                version=version,
                plan=lines,
                frontier=frontier,
                supersteps=dict(prior.supersteps) if prior else {},
                schemas=dict(prior.schemas) if prior else {},
                layers={k: list(v) for k, v in prior.layers.items()} if prior else {},
                output_schemas=dict(prior.output_schemas) if prior else {},
            )

        manifest = fresh()
        if local is not None:
            assert prior is not None
            on_driver = LocalContinuation(compiler, stored_nodes(compiler), dirs, prior, local)
            try:
                frames = run_local(on_driver, dirs, manifest, run_dir)
            except pa.ArrowNotImplementedError as exc:
                # A column type Arrow's kernels lack (nothing is committed): the DataFrame
                # path runs instead, from a clean run directory.
                dirs.discard(version)
                frames = {}
                manifest = fresh()
                ctx.note(compiler.out_nodes[0], f"driver run abandoned ({exc}); DataFrames")
                check_executors(spark, ctx.partitions)
            else:
                dirs.commit(manifest)
                return compiler, frames, meter
        cont = Continuation(compiler, dirs, prior, small=prior is not None and updates <= SMALL_RUN)
        for n in compiler.out_nodes:
            if n in frames:
                continue
            d = cont.delta(n)
            assert d is not None, "every input has a frame, so every top-level delta is one"
            relative = f"{run_dir}/out{n}"
            frames[n] = dirs.write(consolidated(d), relative)
            manifest.outputs[n] = relative
            manifest.output_schemas[n] = frames[n].schema.json()
        for n, layer in sorted(cont.layers.items()):
            relative = f"{run_dir}/n{n}"
            dirs.write(layer, relative)
            manifest.schemas[n] = layer.schema.json()
            manifest.layers.setdefault(n, []).append(relative)
        for scope, steps in cont.supersteps.items():
            manifest.supersteps[scope] = max(steps, manifest.supersteps.get(scope, 0))
        dirs.commit(manifest)
    except BaseException:
        dirs.discard(version)
        raise
    finally:
        compiler.close()
    return compiler, frames, meter
