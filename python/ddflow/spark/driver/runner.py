"""The Spark backend's public entry points: ``run_on_spark`` (compile the plan, run its
iterate scopes as supersteps, return the output histories as DataFrames), ``explain_spark``
(how each plan node runs, without running anything), ``warm_up`` and ``SparkResult``.

The backend is split into the driver (this package, ``ddflow.spark.driver``: may use
pyspark) and the tasks (``ddflow.spark.tasks``: what ``mapInArrow`` runs on the executors,
no pyspark). Driver modules by job: ``validate.py`` (inputs and plan, before any job),
``ops.py`` (the operator registry: how each plan operator runs, or why it is refused),
``compiler.py`` (top-level nodes to DataFrames), ``context.py`` (what the parts of a run
share), ``operators.py`` and ``reduce_stages.py`` (the DataFrame operations of single
operators), ``supersteps.py`` (the iterate driver), ``fused.py`` (iterate bodies run as one
stage per superstep), ``state.py`` (invariant arrangements, join and reduce state; the
reduce state store's place and lifetime), ``held.py`` (``advance_iteration``'s held
updates), ``lineage.py`` (consolidation and checkpoints),
``error_frames.py`` (data errors as data with ``errors="collect"``), ``progress.py``
(per-superstep measurements and lines), ``columns.py`` and ``schemas.py`` (expressions as
Spark Columns; type mapping).
"""

from __future__ import annotations

import functools
import time as _time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError
from ddflow.input import InputSession
from ddflow.plan import LeaveOp, VariableOp
from ddflow.spark.driver import fused
from ddflow.spark.driver.compiler import Compiler
from ddflow.spark.driver.context import key_partitions
from ddflow.spark.driver.error_frames import ErrorFrames
from ddflow.spark.driver.incremental import run_continuation
from ddflow.spark.driver.ops import SPARK_OPS
from ddflow.spark.driver.preflight import ExecutorVersionError, check_executors
from ddflow.spark.driver.progress import Meter, Superstep
from ddflow.spark.driver.session import check_session
from ddflow.spark.driver.validate import UnsupportedOperatorError
from ddflow.spark.tasks import warm_up_batches

__all__ = [
    "run_on_spark",
    "explain_spark",
    "warm_up",
    "SparkResult",
    "Superstep",
    "UnsupportedOperatorError",
    "ExecutorVersionError",
]


@dataclass
class SparkResult(Mapping[Any, DataFrame]):
    """The outputs of ``run_on_spark``: ``result[collection]`` is a DataFrame of the complete
    consolidated output history (record columns, ``time`` or ``time_0..``, ``diff``)."""

    frames: dict[int, DataFrame]
    node_of: dict[int, int]
    """The plan node of each output, by ``id(output)``."""
    supersteps: list[Superstep] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    """How each node was compiled (``explain()``)."""
    error_frames: ErrorFrames | None = None
    """The run's error rows (``errors="collect"``)."""
    upstream: Callable[[int], frozenset[int]] | None = None
    """The plan nodes whose errors reach a node."""

    def __getitem__(self, key: Any) -> DataFrame:
        return self.frames[self.node_of[id(key)]]

    def errors(self, key: Any) -> DataFrame:
        """The consolidated error updates upstream of output ``key`` (a run with
        ``errors="collect"``): ``operator``, ``message``, ``values``, ``time`` (or
        ``time_0..``), ``iteration`` (the superstep inside an iterate, else empty), ``diff``;
        the same rows as the embedded engine's ``capture(errors="collect").errors()``."""
        if self.error_frames is None or self.upstream is None:
            raise PlanError('SparkResult.errors: run_on_spark(..., errors="collect") collects them')
        return self.error_frames.of(self.upstream(self.node_of[id(key)]))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.frames)

    def __len__(self) -> int:
        return len(self.frames)

    def explain(self) -> str:
        """The Spark stages each plan node became, then the measured phases."""
        lines = ["spark stages:", *("  " + s for s in self.stages), "phases:"]
        lines += ["  " + s.line() for s in self.supersteps]
        return "\n".join(lines)


def run_on_spark(
    spark: SparkSession,
    flow: Dataflow,
    inputs: Mapping[InputSession, DataFrame],
    outputs: Sequence[Collection | Capture],
    *,
    partitions: int | None = None,
    checkpoint: str = "local",
    progress: bool | Callable[[str], None] = False,
    reduce_state: str = "store",
    state_dir: str | None = None,
    errors: str = "raise",
    state: str | None = None,
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
    Spark's checkpoint directory) at every superstep; ``progress``: print (or call
    the function with) one line per superstep; ``reduce_state``: where a reduce inside an
    iterate keeps its accumulated input and output between supersteps, ``"store"`` (Arrow
    files under ``state_dir``, read and written by the reduce's tasks; only new input is
    shuffled) or ``"shuffle"`` (a checkpointed DataFrame shuffled with the new input every
    superstep); ``state_dir``: a directory every executor can read and write (a local path
    or a file system URI such as ``hdfs://...``; default: the temporary directory in local
    mode, ``spark.checkpoint.dir`` on a cluster). The store is deleted when
    the run returns.

    ``errors``: what a record that makes an operator fail (an expression's division by zero
    or overflow, a user function's exception, an aggregate's overflow) does. ``"raise"``: the
    job fails with a ``DataError`` naming the operator, message, values and time.
    ``"collect"``: it becomes an error update, as on the embedded engine; the outputs hold
    the updates of every record that succeeded and ``result.errors(c)`` the error updates
    upstream of ``c`` (a bad record never stops the run; retracting it retracts its error).
    Inside an iterate, a fused loop that meets a data error runs again operator by
    operator, and a reduce there runs twice on the keys with new input (new and previous
    accumulated input) to find its new error updates.

    ``state``: a directory (local path or Hadoop-compatible URI every executor can reach)
    that makes runs incremental. The first run stores there the update histories later runs
    need, and the frontier (one past its greatest input time); a later run is given only
    updates at times at or after that frontier, continues from the stored state and returns
    only the new output updates, so the concatenation of every run's outputs equals one run
    over the whole history. A different plan, an update before the frontier, or another run
    that committed first raise ``ddflow.spark.StateError`` (``StateConflictError``); the
    state is left as it was. One time coordinate and ``errors="raise"`` only, for now.

    Schema problems and unsupported operators raise before any Spark job runs; then one
    small job checks that the executors import the driver's ddflow version
    (``ExecutorVersionError`` names each interpreter that does not).
    """
    check_session(spark, inputs, "run_on_spark")
    log: Callable[[str], None] | None
    if progress is True:
        log = functools.partial(print, flush=True)
    elif callable(progress):
        log = progress
    else:
        log = None
    if state is not None:
        inc, by_node, inc_meter = run_continuation(
            spark, flow, inputs, outputs, state,
            partitions=partitions, checkpoint=checkpoint, log=log, errors=errors,
        )  # fmt: skip
        named = {n: inc.named(n, df) for n, df in by_node.items()}
        by_output = {id(out): n for out, n in zip(outputs, inc.out_nodes, strict=True)}
        return SparkResult(named, by_output, inc_meter.phases, inc.ctx.stages)
    meter = Meter(spark, log)
    compiler = Compiler(
        spark,
        flow,
        inputs,
        outputs,
        partitions,
        checkpoint,
        meter,
        reduce_state,
        state_dir,
        errors,
    )
    frames: dict[int, DataFrame] = {}
    keys: dict[int, int] = {}
    try:
        check_executors(spark, compiler.ctx.partitions)
        for out, n in zip(outputs, compiler.out_nodes, strict=True):
            if n not in frames:
                frames[n] = compiler.output(n)
            keys[id(out)] = n
    finally:
        compiler.close()
    ctx = compiler.ctx
    if ctx.collect:
        return SparkResult(frames, keys, meter.phases, ctx.stages, ctx.errors, flow.upstream)
    return SparkResult(frames, keys, meter.phases, ctx.stages)


def warm_up(spark: SparkSession) -> float:
    """Runs one trivial ``mapInArrow`` job: starts the executors' Python workers with pyarrow
    and ddflow imported, and the JVM's Arrow path. The first Arrow stage of a Spark session
    costs about 1.4 s more than later ones (local[2], this project's 2-core machine); a
    long-lived session pays it once, and a benchmark can keep it out of the figures it
    compares. Returns the seconds it took."""
    start = _time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "distutils Version classes", DeprecationWarning)
        n = key_partitions(spark, None)
        spark.range(0, 1000, 1, n).mapInArrow(warm_up_batches, "id long").count()
    return _time.perf_counter() - start


def _fusable(compiler: Compiler, scope: int) -> fused.Shape | None:
    """The fused shape of iterate ``scope``, as the iterate driver would find it."""
    ctx = compiler.ctx
    nodes = ctx.nodes
    members = sorted(n for n in ctx.needed if nodes[n]["scope"] == scope)
    variables = [n for n in members if nodes[n]["op"] == VariableOp.OP]
    if len(variables) != 1:
        return None
    variant: set[int] = set()
    for n in members:
        if n == variables[0] or any(i in variant for i in nodes[n]["inputs"]):
            variant.add(n)
    return fused.detect(ctx, members, variant, variables[0])


def explain_spark(
    spark: SparkSession,
    flow: Dataflow,
    inputs: Mapping[InputSession, DataFrame],
    outputs: Sequence[Collection | Capture],
) -> str:
    """How each plan node runs on Spark, without running anything (validates like
    ``run_on_spark``)."""
    check_session(spark, inputs, "explain_spark")
    compiler = Compiler(spark, flow, inputs, outputs, None, "local", None)
    try:
        return "\n".join(_explain_lines(compiler))
    finally:
        compiler.close()


def _explain_lines(compiler: Compiler) -> list[str]:
    ctx = compiler.ctx
    lines = [
        f"ddflow on Spark: {len(ctx.needed)} plan nodes, time_dims {ctx.dims}, "
        f"{ctx.partitions} key partitions"
    ]
    fused_nodes: dict[int, str] = {}
    for scope in {ctx.nodes[n]["scope"] for n in ctx.needed} - {0}:
        shape = _fusable(compiler, scope)
        if shape is None:
            continue
        body = {shape.var_arr, shape.join, shape.reduce_arr, *shape.chain}
        for m in body:
            fused_nodes[m] = "in the fused superstep's task"
        fused_nodes[shape.reduce] = (
            "fused superstep: one mapInArrow per superstep runs the engine's reduce (state in "
            "the store), the join with the invariant side's bucket and the expressions; only "
            "the reduce's new input is shuffled"
        )
        fused_nodes[shape.invariant] = "loop-invariant: written once into the store by bucket"
        for m in ctx.needed:
            node = ctx.nodes[m]
            if node["op"] == LeaveOp.OP and ctx.nodes[node["inputs"][0]]["scope"] == scope:
                fused_nodes[m] = "the reduce's accumulated output in the store, read once"
    for n in sorted(ctx.needed):
        node = ctx.nodes[n]
        op = node["op"]
        indent = "  " * (1 + ctx.plan.depth(node["scope"]))
        how = fused_nodes.get(n) or SPARK_OPS[op].how(in_iterate=node["scope"] != 0)
        lines.append(f"{indent}#{n} {op}: {how}  [{node['label']}]")
    return lines
