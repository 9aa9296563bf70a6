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
from ddflow.spark.store import StateStore

if TYPE_CHECKING:
    from ddflow.spark.compiler import Compiler

__all__ = ["State", "consolidate"]


def consolidate(df: DataFrame) -> DataFrame:
    """Sums ``diff`` per distinct record and time, dropping zeros. A sum outside int64 fails
    the job (Spark's ``sum`` of longs would wrap silently; ``try_sum`` gives null instead,
    turned into an error naming the problem; the embedded engine sums exactly and raises
    ``OverflowError`` where such a total is read)."""
    keys = [c for c in df.columns if c != DIFF]
    total = F.try_sum(DIFF)
    overflow = F.raise_error(F.lit("ddflow: a consolidated diff leaves int64 on Spark"))
    summed = df.groupBy(*keys).agg(total.alias(DIFF))
    checked = F.when(F.col(DIFF).isNull(), overflow).otherwise(F.col(DIFF)).alias(DIFF)
    return summed.select(*keys, checked).where(F.col(DIFF) != 0)


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
        self.stored: set[int] = set()
        """Reduces whose state is in the state store (``Compiler.store``)."""
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

    def reduce_step(self, n: int, delta: DataFrame | None, i: int) -> DataFrame | None:
        """One superstep of reduce ``n`` on its input's delta: the output delta, and the
        state advanced (compacted to this iteration). The delta and the state are shuffled
        together by key to the reduce's partition function, which recomputes only the keys
        with new input; the new state and the output are one cut DataFrame (one Spark job),
        the output's size counted by the tasks.

        Measured alternative, not kept: picking the touched keys' state out with a broadcast
        semi-join (and keeping the rest by an anti-join, without a shuffle) costs two more
        jobs per superstep, and in BFS the keys touched by a busy superstep are nearly all
        keys, so it shuffled more, not less (``benches/results/spark_bfs.md``)."""
        if delta is None:
            return None
        c = self.c
        spec = self.reduce_specs.get(n)
        if spec is None:
            spec = self.reduce_specs[n] = c.reduce_spec(n, delta, collect=c.collect)
        tagged = c.reduce_input(delta, spec)
        if c.reduce_state == "store":
            return self._reduce_step_stored(n, spec, tagged, i)
        if n in self.reduce_state:
            tagged = tagged.unionByName(self.reduce_state[n])
        counter = c.spark.sparkContext.accumulator(0)
        self.reduce_counts[n] = counter
        raw = self.cut(c.reduce_run(spec, tagged, stateful=True, counter=counter))
        self.reduce_state[n] = raw.where(F.col(TAG).isin(ex.TAG_IN_ACC, ex.TAG_OUT_ACC)).select(
            *spec.schema.names
        )
        self._split_errors(n, spec, raw, i)
        return c.reduce_output(raw, spec)

    def _split_errors(self, n: int, spec: ex.ReduceSpec, raw: DataFrame, i: int) -> None:
        """Collect mode: keeps the error rows of reduce ``n``'s superstep ``i`` (``raw`` is
        cut already, so they are read from the checkpoint, not recomputed)."""
        if spec.collect:
            self.c.errors.split(n, raw, raw.columns, i, materialized=True)

    def _reduce_step_stored(
        self, n: int, spec: ex.ReduceSpec, tagged: DataFrame, i: int
    ) -> DataFrame:
        """``reduce_step`` with the state in the state store: only the new input is shuffled;
        the output delta is cut (one Spark job), so its tasks run once per superstep (a
        retried task reads the same stored version and writes the same file)."""
        c = self.c
        self.ensure_store()
        self.stored.add(n)
        counter = c.spark.sparkContext.accumulator(0)
        self.reduce_counts[n] = counter
        raw = self.cut(c.reduce_run_stored(n, spec, tagged, i, counter))
        self._split_errors(n, spec, raw, i)
        return c.reduce_output(raw, spec)

    def ensure_store(self) -> StateStore:
        """The run's state store, created on first use."""
        c = self.c
        if c.store is None:
            assert c.state_parent is not None
            c.store = StateStore.create(c.state_parent)
        return c.store

    def after_superstep(self, i: int) -> None:
        """Superstep ``i`` is complete: prunes the stored state versions no task can read."""
        store = self.c.store
        if store is not None:
            for n in self.stored:
                store.prune(n, i)

    def drop_scope(self, members: list[int]) -> None:
        """An iterate scope has finished: its reduces' stored state is no longer needed."""
        store = self.c.store
        for n in members:
            if n in self.stored and store is not None:
                store.drop(n)
                self.stored.discard(n)

    def close(self) -> None:
        """Deletes the run's state store."""
        if self.c.store is not None:
            self.c.store.drop()
            self.c.store = None
