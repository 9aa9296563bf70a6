"""State management of the Spark backend: cutting lineage (local or reliable checkpoints),
consolidation, the loop-invariant arrangements (partitioned, sorted and cut once), and the
per-superstep state of joins and reduces, kept compacted to the current iteration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark import Accumulator
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ddflow.spark import executor as ex
from ddflow.spark.schemas import DIFF, TAG, ccol

if TYPE_CHECKING:
    from ddflow.spark.compiler import Compiler

__all__ = ["State", "consolidate"]


def consolidate(df: DataFrame) -> DataFrame:
    """Sums ``diff`` per distinct record and time, dropping zeros."""
    keys = [c for c in df.columns if c != DIFF]
    return df.groupBy(*keys).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) != 0)


class State:
    """The persisted DataFrames of a run: invariant arrangements, join accumulations and
    reduce state, each replaced (never grown in lineage) at every superstep."""

    def __init__(self, compiler: Compiler, checkpoint: str) -> None:
        self.c = compiler
        self.checkpoint_mode = checkpoint
        self.invariant: dict[int, DataFrame] = {}
        self.fixed: set[int] = set()
        """ids of the loop-invariant arrangements, partitioned and sorted by key once."""
        self.join_acc: dict[int, DataFrame] = {}
        """Per variant arrangement read by a join: its updates of iterations ``< i``,
        compacted (iteration coordinate dropped)."""
        self.reduce_state: dict[int, DataFrame] = {}
        """Per reduce: accumulated input and output of iterations ``< i``, tagged."""
        self.reduce_specs: dict[int, ex.ReduceSpec] = {}
        self.reduce_counts: dict[int, Accumulator[int]] = {}
        """Per reduce: the output updates its last superstep produced (counted by its
        tasks)."""

    def cut(self, df: DataFrame) -> DataFrame:
        """Materializes ``df`` and cuts its lineage (one Spark job)."""
        if self.checkpoint_mode == "reliable":
            return df.checkpoint(eager=True)
        return df.localCheckpoint(eager=True)

    def partitioned(self, df: DataFrame, n: int) -> DataFrame:
        """``df`` (arrangement ``n``) hash-partitioned by key, cut; joins with it shuffle only
        their other side."""
        keys = [ccol(i) for i in range(self.c.key_len(n))]
        cut = self.cut(df.repartition(self.c.partitions, *keys))
        self.fixed.add(id(cut))
        return cut

    def invariant_arrangement(self, n: int) -> DataFrame:
        """A top-level arrangement entered into a loop: partitioned by key and cut once."""
        if n not in self.invariant:
            self.invariant[n] = self.partitioned(self.c.top(n), n)
            self.c.note(
                n,
                f"loop-invariant: hash-partitioned by key into {self.c.partitions} and "
                f"checkpointed once",
            )
        return self.invariant[n]

    def accumulate(self, n: int, delta: DataFrame) -> None:
        """Adds a variant arrangement's delta to its accumulation (consolidated, cut)."""
        prev = self.join_acc.get(n)
        merged = delta if prev is None else consolidate(prev.unionByName(delta))
        self.join_acc[n] = self.cut(merged)

    def reduce_step(self, n: int, delta: DataFrame | None) -> DataFrame | None:
        """One superstep of reduce ``n`` on its input's delta: the output delta, and the
        state advanced (compacted to this iteration).

        Only the keys with new input move: their state rows are picked out of the persisted
        state by a broadcast semi-join with the delta's keys and shuffled with the delta to
        the reduce's partition function; the other keys' state is kept by the matching
        anti-join, in the JVM, without a shuffle or a Python worker. The new state and the
        output are one cut DataFrame; the output's size is counted by the tasks."""
        if delta is None:
            return None
        c = self.c
        spec = self.reduce_specs.get(n)
        if spec is None:
            spec = self.reduce_specs[n] = c.reduce_spec(n, delta)
        tagged = c.reduce_input(delta, spec)
        counter = c.spark.sparkContext.accumulator(0)
        self.reduce_counts[n] = counter
        prev = self.reduce_state.get(n)
        if prev is None:
            merged = c.reduce_run(spec, tagged, stateful=True, counter=counter)
        else:
            keys = [ccol(i) for i in range(spec.n_keys)]
            touched = F.broadcast(tagged.select(*keys).distinct())
            hit = prev.join(touched, keys, "left_semi")
            kept = prev.join(touched, keys, "left_anti")
            fresh = c.reduce_run(spec, tagged.unionByName(hit), stateful=True, counter=counter)
            merged = kept.unionByName(fresh)
        raw = self.cut(merged)
        self.reduce_state[n] = raw.where(F.col(TAG).isin(ex.TAG_IN_ACC, ex.TAG_OUT_ACC))
        return c.reduce_output(raw, spec)
