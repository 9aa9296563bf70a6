"""Fused supersteps: an iterate whose body is "reduce -> variable -> join with a
loop-invariant arrangement -> expressions -> the reduce" (BFS, SSSP, reachability, label
propagation) runs as ONE ``mapInArrow`` stage per superstep, with Spark doing only the
exchange of the reduce's new input by key.

The general superstep (``supersteps.py``) runs three stages: the variable's delta shuffled to
the invariant side's partitioning, a Spark join scanning the whole invariant side, and the
reduce. Here the reduce's output at iteration ``i`` is already partitioned by the reduce's
key; when the variable is arranged by the same key, the join with the invariant arrangement
can happen in the same task, against that bucket's rows of the invariant arrangement (written
once into the state store before the loop, read once per Python worker), and so can the
expressions up to the reduce's input (the Rust evaluator). Superstep ``i``'s task emits the
reduce's input for ``i + 1``; the driver shuffles that by key into superstep ``i + 1``. The
loop's result is the reduce's accumulated output in the store, read once at the end.
Iteration 0's input (the join of the variable's source with the whole invariant side, plus the
body's other inputs) is built by the general path's DataFrames.

``detect`` decides from the plan alone; ``run`` falls back (returns None, no job run) when
the key types of the two sides differ (Spark's hash buckets would not match). Fusing needs
``reduce_state="store"``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow.plan import (
    ArrangeOp,
    ConcatOp,
    EnterArrangementOp,
    FilterOp,
    JoinOp,
    LeaveOp,
    ReduceOp,
    SelectOp,
)
from ddflow.spark.driver.context import RunContext
from ddflow.spark.driver.lineage import Checkpoints
from ddflow.spark.driver.operators import Operators
from ddflow.spark.driver.progress import is_connect
from ddflow.spark.driver.reduce_stages import ReduceStages
from ddflow.spark.driver.schemas import map_in_arrow, spark_schema
from ddflow.spark.driver.state import StoreUse
from ddflow.spark.tasks import fused as ft
from ddflow.spark.tasks.batches import BUCKET, DIFF, PART, TAG, ccol

__all__ = ["Shape", "detect", "run"]


@dataclass(frozen=True)
class Shape:
    """The plan nodes of a fusable iterate body."""

    var: int
    source: int
    reduce: int
    reduce_arr: int
    """The reduce's input arrangement."""
    var_arr: int
    """The variable's arrangement, joined."""
    join: int
    invariant: int
    """The ``enter_arrangement`` joined with."""
    invariant_top: int
    """The top-level arrangement it enters."""
    chain: tuple[int, ...]
    """Nodes from the join's consumer to the reduce's arrangement (select, filter, concat)."""


def _consumers(c: RunContext, members: list[int]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {n: [] for n in members}
    for n in members:
        if c.nodes[n]["op"] == LeaveOp.OP:
            continue
        for i in c.nodes[n]["inputs"]:
            if i in out:
                out[i].append(n)
    return out


def detect(c: RunContext, members: list[int], variant: set[int], var: int) -> Shape | None:
    """The fusable shape of an iterate body, or None (see the module doc). Not on Spark
    Connect: fused supersteps gave wrong outputs there (fewer updates than the embedded
    engine, with pyspark 4.0.1 against a local[2] Connect server, while the same code on a
    classic pyspark 4.0.1 session is right; the cause is open, ``README.md``), so a
    Connect session takes the general path, whose outputs are the engine's."""
    if c.reduce_state != "store" or is_connect(c.spark):
        return None
    nodes = c.nodes
    result = int(nodes[var]["result"])
    if nodes[result]["op"] != ReduceOp.OP:
        return None
    reduce_arr = nodes[result]["inputs"][0]
    k = c.key_len(reduce_arr)
    cons = _consumers(c, members)
    if len(cons[var]) != 1:
        return None
    var_arr = cons[var][0]
    if nodes[var_arr]["op"] != ArrangeOp.OP or list(nodes[var_arr]["key"]) != list(range(k)):
        return None
    if len(cons[var_arr]) != 1:
        return None
    join = cons[var_arr][0]
    jn = nodes[join]
    if jn["op"] != JoinOp.OP or jn["kind"] in ("semijoin", "antijoin"):
        return None
    if jn.get("nulls_equal", False):
        return None  # the task's Arrow join never matches null keys
    if jn["inputs"][0] != var_arr:
        return None
    invariant = jn["inputs"][1]
    if nodes[invariant]["op"] != EnterArrangementOp.OP or invariant in variant:
        return None
    if c.key_len(var_arr) != c.key_len(invariant):
        return None
    chain: list[int] = []
    cur = join
    while cur != reduce_arr:
        if len(cons[cur]) != 1:
            return None
        nxt = cons[cur][0]
        op = nodes[nxt]["op"]
        if nxt == reduce_arr:
            if op != ArrangeOp.OP:
                return None
        elif op == ConcatOp.OP:
            if any(i != cur and i in variant for i in nodes[nxt]["inputs"]):
                return None
        elif op not in (SelectOp.OP, FilterOp.OP):
            return None
        chain.append(nxt)
        cur = nxt
    if cons[reduce_arr] != [result]:
        return None
    fused_nodes = {var, var_arr, join, result, *chain}
    body = [n for n in members if nodes[n]["op"] != LeaveOp.OP]
    if any(n in variant and n not in fused_nodes for n in body):
        return None
    return Shape(
        var=var,
        source=int(nodes[var]["inputs"][0]),
        reduce=result,
        reduce_arr=reduce_arr,
        var_arr=var_arr,
        join=join,
        invariant=invariant,
        invariant_top=int(nodes[invariant]["inputs"][0]),
        chain=tuple(chain),
    )


def _chain_steps(
    c: RunContext, ops: Operators, shape: Shape, delta0: dict[int, DataFrame | None]
) -> tuple[ft.ChainStep, ...] | None:
    steps = []
    for n in shape.chain:
        node = c.nodes[n]
        if node["op"] == ConcatOp.OP:
            steps.append(ft.ChainStep())
        elif node["op"] == ArrangeOp.OP:
            names = c.columns(node["inputs"][0])
            key = list(node["key"])
            order = key + [i for i in range(len(names)) if i not in key]
            steps.append(ft.ChainStep(order=tuple(order)))
        else:
            src = node["inputs"][0]
            df = delta0.get(src)
            if df is None:
                return None
            # A fused task fails on a data error (collect mode then reruns the loop
            # operator by operator), so its expressions never emit error rows.
            spec = ops.expr_spec(n, df, c.columns(src), collect=False)
            steps.append(ft.ChainStep(expr=spec))
    return tuple(steps)


def _key_types(df: DataFrame, k: int) -> list[T.DataType]:
    return [df.schema[ccol(i)].dataType for i in range(k)]


def run(
    c: RunContext,
    ops: Operators,
    reduces: ReduceStages,
    cuts: Checkpoints,
    stored: StoreUse,
    shape: Shape,
    delta0: dict[int, DataFrame | None],
    inv_df: DataFrame,
    max_it: int | None,
) -> DataFrame | None:
    """Runs the scope fused; the loop's result (its leave's output, consolidated, cut), or
    None when the body cannot be fused after all (nothing has run then). ``delta0``: the
    body's deltas at iteration 0 (lazy DataFrames); ``inv_df``: the invariant side's
    top-level history."""
    x0 = delta0.get(shape.reduce_arr)
    src0 = delta0.get(shape.source)
    if x0 is None or src0 is None:
        return None
    k = c.key_len(shape.reduce_arr)
    if _key_types(x0, k) != _key_types(inv_df, k) or _key_types(src0, k) != _key_types(x0, k):
        return None
    steps = _chain_steps(c, ops, shape, delta0)
    if steps is None:
        return None
    rspec = reduces.spec(shape.reduce, x0)
    nodes = c.nodes
    fspec = ft.FusedSpec(
        reduce=rspec,
        reduce_node=shape.reduce,
        invariant_node=shape.invariant_top,
        var_order=tuple(range(len(nodes[shape.var]["columns"]))),
        key_len=c.key_len(shape.var_arr),
        n_var=len(nodes[shape.var]["columns"]),
        n_inv=len(nodes[shape.invariant]["columns"]),
        join_label=nodes[shape.join]["label"],
        chain=steps,
        dims=c.dims,
    )
    _notes(c, shape)
    store = stored.ensure(shape.reduce)
    keys = [F.col(ccol(i)) for i in range(k)]
    bucket = F.pmod(F.hash(*keys), F.lit(c.partitions))
    schema = spark_schema(rspec.schema)
    # Iteration 0's input: the reduce's input at 0, and the variable's source (subtracted
    # from what iteration 0 feeds back).
    src_parts = {ccol(i): ccol(i) for i in range(k)}
    src_parts.update({f"_o{i}": ccol(k + i) for i in range(rspec.n_outs)})
    src_parts.update({t: t for t in c.tnames()})
    src_parts[DIFF] = DIFF
    source_rows = reduces.widen(src0, rspec, src_parts, ft.TAG_SOURCE)
    inp = reduces.tagged_input(x0, rspec).unionByName(source_rows)
    i = 0
    while True:
        last = max_it is not None and i + 1 >= max_it
        holder: dict[str, Any] = {}

        def superstep(
            i: int = i, inp: DataFrame = inp, last: bool = last, holder: dict[str, Any] = holder
        ) -> int | None:
            if i == 0:
                # The task names its part file by its partition, the same on a retry.
                placed = inv_df.withColumn(BUCKET, bucket).withColumn(PART, F.spark_partition_id())
                written = map_in_arrow(
                    placed,
                    functools.partial(ft.write_invariant, store, shape.invariant_top),
                    T.StructType([T.StructField("rows", T.LongType(), False)]),
                )
                written.agg(F.sum("rows")).collect()
            fn = functools.partial(ft.fused_superstep, fspec, c.fns, store, i, last)
            rows = inp.where(F.col(TAG) != ft.TAG_COUNT).withColumn(BUCKET, bucket)
            staged = rows.repartition(c.partitions, *keys)
            # The tasks' count rows (tag TAG_COUNT) say how many updates were fed back.
            fed_back = F.sum(F.when(F.col(TAG) == ft.TAG_COUNT, F.col(DIFF)))
            holder["next"], count = cuts.cut_measured(map_in_arrow(staged, fn, schema), fed_back)
            holder["count"] = count
            return None if last else count

        if c.meter is not None:
            c.meter.run(f"superstep {i}", i, superstep)
        else:
            superstep()
        stored.after_superstep(i)
        if last or holder["count"] == 0:
            break
        inp = holder["next"]
        i += 1
    store.drop_invariant(shape.invariant_top)
    # The leave's output: the reduce's accumulated output in the store (the sum of the
    # result's updates over all iterations, compacted), read once and cut.
    result_schema = T.StructType(
        [T.StructField(ccol(j), f.dataType, True) for j, f in enumerate(
            [*schema.fields[:k], *[schema[f"_o{j}"] for j in range(rspec.n_outs)]]
        )]
        + [schema[t] for t in c.tnames()]
        + [schema[DIFF]]
    )  # fmt: skip
    buckets = c.spark.range(0, c.partitions, 1, c.partitions)
    fn = functools.partial(ft.read_result, rspec, store, shape.reduce, i + 1)
    return cuts.cut(map_in_arrow(buckets, fn, result_schema))


def _notes(c: RunContext, shape: Shape) -> None:
    c.note(
        shape.invariant,
        "loop-invariant: written once into the state store by key bucket (no shuffle); "
        "read by the fused superstep's tasks",
    )
    c.note(
        shape.reduce,
        "fused superstep: repartition(key) of the new input only; one mapInArrow runs the "
        "engine's reduce (state in the store), the join with the invariant arrangement's "
        "bucket and the body's expressions (Rust evaluator)",
    )
