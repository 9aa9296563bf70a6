"""``advance_iteration`` on the Spark backend: updates held for a later superstep.

Inside an iterate, ``advance_iteration(value)`` moves an update at iteration ``i`` to
iteration ``max(i, value(record))``. Supersteps compute one iteration for all outer times,
so an update whose value is beyond the current superstep is *held*: kept, with its target
iteration in a column ``_it``, in a checkpointed DataFrame per operator, and released into
the operator's output at the superstep of that iteration. The iterate driver keeps going
while anything is held, jumping over iterations where nothing changes (prioritized SSSP
holds proposals for iterations up to the largest distance).

``delay`` (bundling updates by time) needs nothing on Spark: a superstep already handles
each iteration's updates together, so it is the identity.

A null value, a value below zero or at or past ``max_iterations`` fails the job with a ``DataError``
naming the operator and the value (the embedded engine makes it an error update; in
``errors="collect"`` mode Spark still fails the job here).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ddflow.spark.driver.columns import NotCompilable, compile_expr
from ddflow.spark.driver.context import RunContext
from ddflow.spark.driver.lineage import Checkpoints
from ddflow.spark.driver.operators import Operators
from ddflow.spark.driver.schemas import dtype_of_spark
from ddflow.spark.tasks.batches import ccol
from ddflow.spark.tasks.error_rows import DATA_ERROR

__all__ = ["Held", "TARGET"]

TARGET = "_it"
"""The iteration a held update is released at."""

_VALUE = "_iv"


class Held:
    """The held updates of every ``advance_iteration`` node of one iterate scope."""

    def __init__(
        self, ctx: RunContext, ops: Operators, cuts: Checkpoints, max_iterations: int | None
    ) -> None:
        self.ctx = ctx
        self.ops = ops
        self.cuts = cuts
        self.max_iterations = max_iterations
        self.frames: dict[int, DataFrame] = {}
        """Per node: updates released at a later superstep (column ``_it``), cut."""

    def _with_value(self, n: int, df: DataFrame) -> DataFrame:
        """``df`` with the node's value column ``_iv`` (a Spark Column expression where one
        is exact, else the Rust evaluator)."""
        node = self.ctx.nodes[n]
        names = self.ctx.columns(node["inputs"][0])
        typed = {
            name: (F.col(ccol(i)), dtype_of_spark(df.schema[ccol(i)].dataType))
            for i, name in enumerate(names)
        }
        try:
            value, dtype = compile_expr(node["expr"], typed, node["label"])
            if dtype != "int64":
                raise NotCompilable(f"value of dtype {dtype}")
            return df.withColumn(_VALUE, value)
        except NotCompilable:
            return self.ops.native_value(n, df, names, node["expr"], _VALUE)

    def step(self, n: int, delta: DataFrame | None, i: int) -> DataFrame | None:
        """Node ``n``'s output at superstep ``i``: the updates of ``delta`` whose value is at
        most ``i``, and those held for ``i``; holds the others."""
        label = self.ctx.label(n)
        parts: list[DataFrame] = []
        future: list[DataFrame] = []
        held = self.frames.pop(n, None)
        if held is not None:
            parts.append(held.where(F.col(TARGET) == i).drop(TARGET))
            future.append(held.where(F.col(TARGET) > i))
        if delta is not None:
            cols = delta.columns
            valued = self._with_value(n, delta)
            v = F.col(_VALUE)
            bad = F.concat(
                F.lit(f"{DATA_ERROR}:\n  operator {label}: advance_iteration value "),
                v.cast("string"),
            )
            # A null value fails as on the engine (its null word reads as negative there);
            # unchecked, Spark's greatest would skip it and keep the update at iteration i.
            null = F.lit(f"{DATA_ERROR}:\n  operator {label}: advance_iteration value is null")
            checked = F.when(v.isNull(), F.raise_error(null))
            checked = checked.when(v < 0, F.raise_error(F.concat(bad, F.lit(" is negative"))))
            if self.max_iterations is not None:
                beyond = F.lit(f" is beyond the iterate's last iteration {self.max_iterations - 1}")
                checked = checked.when(
                    v >= self.max_iterations, F.raise_error(F.concat(bad, beyond))
                )
            target = checked.otherwise(F.greatest(v, F.lit(i))).alias(TARGET)
            targeted = valued.select(*cols, target)
            parts.append(targeted.where(F.col(TARGET) == i).drop(TARGET))
            future.append(targeted.where(F.col(TARGET) > i))
        if future:
            rest = future[0] if len(future) == 1 else future[0].unionByName(future[1])
            self.frames[n] = self.cuts.cut(rest)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])

    def next_release(self) -> int | None:
        """The least iteration some held update is released at, or None (one Spark job per
        node holding updates)."""
        least: int | None = None
        for df in self.frames.values():
            row = df.agg(F.min(TARGET)).collect()[0][0]
            if row is not None:
                least = int(row) if least is None else min(least, int(row))
        return least
