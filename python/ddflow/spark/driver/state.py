"""The per-superstep state of an iterate on the Spark backend: the loop-invariant
arrangements (partitioned by key and cut once), the accumulations of variant arrangements a
join reads, and the reduces' state (in the reduce state store, or as a checkpointed
DataFrame shuffled beside the new input), each kept compacted to the current iteration and
replaced, never grown in lineage, at every superstep.

The driver's use of the reduce state store (``tasks/store.py``) is here too (``StoreUse``):
where it goes, creating it on first use, pruning the versions no task can read after each
superstep, and deleting a finished scope's state and the whole store when the run returns.
Where: ``state_dir`` when given; in local mode by default the temporary directory
(``spark.local.dir`` when set); on a cluster by default ``spark.checkpoint.dir``. A cluster
with neither fails before any job, naming the options.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ddflow.errors import PlanError
from ddflow.spark.driver.context import RunContext
from ddflow.spark.driver.lineage import Checkpoints, consolidated
from ddflow.spark.driver.reduce_stages import ReduceStages
from ddflow.spark.tasks.batches import TAG, TAG_DELTA_OUT, TAG_IN_ACC, TAG_OUT_ACC
from ddflow.spark.tasks.reduce import ReduceSpec
from ddflow.spark.tasks.store import StateStore

__all__ = ["REDUCE_STATE_MODES", "State", "StoreUse", "state_parent"]

REDUCE_STATE_MODES = ("store", "shuffle")
"""``run_on_spark(reduce_state=...)``: the state store, or DataFrames shuffled each superstep."""


def state_parent(spark: SparkSession, state_dir: str | None) -> str:
    """The directory the run's store is created in (see the module doc). Read from the
    session's configuration only (``spark.master``, ``spark.local.dir``,
    ``spark.checkpoint.dir``), which classic and Spark Connect sessions both answer."""
    if state_dir:
        return state_dir
    master = spark.conf.get("spark.master", None) or ""
    if master.startswith("local"):
        local = spark.conf.get("spark.local.dir", None)
        return local.split(",")[0] if local else tempfile.gettempdir()
    checkpoint_dir = spark.conf.get("spark.checkpoint.dir", None)
    if checkpoint_dir:
        return checkpoint_dir
    raise PlanError(
        f"run_on_spark on master {master!r}: the reduce state store needs a directory "
        "every executor (and the driver) can read and write; pass state_dir='hdfs://...' "
        "(or a shared path), set spark.checkpoint.dir, or pass reduce_state='shuffle' to "
        "keep the state in DataFrames"
    )


class StoreUse:
    """One run's state store: created by the first reduce that keeps its state there."""

    def __init__(self, parent: str | None) -> None:
        """``parent``: where to create the store (None: the run keeps no state there)."""
        self.parent = parent
        self.store: StateStore | None = None
        self.stored: set[int] = set()
        """Reduces whose state is in the store."""

    def ensure(self, node: int) -> StateStore:
        """The run's store (created on first use), with reduce ``node`` keeping state there."""
        if self.store is None:
            if self.parent is None:
                raise PlanError("run_on_spark: reduce_state='shuffle' keeps no state store")
            self.store = StateStore.create(self.parent)
        self.stored.add(node)
        return self.store

    def after_superstep(self, i: int) -> None:
        """Superstep ``i`` is complete: prunes the stored versions no task can read."""
        if self.store is not None:
            for n in self.stored:
                self.store.prune(n, i)

    def drop_scope(self, members: Iterable[int]) -> None:
        """An iterate scope has finished: its reduces' stored state is no longer needed."""
        for n in members:
            if n in self.stored and self.store is not None:
                self.store.drop(n)
                self.stored.discard(n)

    def close(self) -> None:
        """Deletes the run's store."""
        if self.store is not None:
            self.store.drop()
            self.store = None


class State:
    """The persisted DataFrames and stored state of the run's iterates."""

    def __init__(
        self, ctx: RunContext, cuts: Checkpoints, reduces: ReduceStages, store: StoreUse
    ) -> None:
        self.ctx = ctx
        self.cuts = cuts
        self.reduces = reduces
        self.store = store
        self.invariant: dict[int, DataFrame] = {}
        self.join_acc: dict[int, DataFrame] = {}
        """Per arrangement read by a join: its updates of iterations ``< i``, compacted
        (iteration coordinate dropped); a loop-invariant one's whole history."""
        self.reduce_state: dict[int, DataFrame] = {}
        """Per reduce (``reduce_state="shuffle"``): accumulated input and output of
        iterations ``< i``, tagged."""
        self.reduce_specs: dict[int, ReduceSpec] = {}
        self.reduce_counts: dict[int, int] = {}
        """Per reduce: the output updates its last superstep produced (counted by the job
        that cut its output)."""

    def partitioned(self, df: DataFrame, n: int) -> DataFrame:
        """``df`` (arrangement ``n``) hash-partitioned by key, cut; joins with it shuffle only
        their other side."""
        return self.cuts.partitioned(df, self.ctx.key_len(n), self.ctx.partitions)

    def invariant_arrangement(self, n: int, top: Callable[[int], DataFrame]) -> DataFrame:
        """Top-level arrangement ``n`` (``top(n)``) entered into a loop: partitioned by key
        and cut once."""
        if n not in self.invariant:
            self.invariant[n] = self.partitioned(top(n), n)
            self.ctx.note(
                n,
                f"loop-invariant: hash-partitioned by key into {self.ctx.partitions} and "
                f"checkpointed once",
            )
        return self.invariant[n]

    def accumulate(self, n: int, delta: DataFrame) -> None:
        """Adds a variant arrangement's delta to its accumulation (consolidated, cut)."""
        prev = self.join_acc.get(n)
        merged = delta if prev is None else consolidated(prev.unionByName(delta))
        self.join_acc[n] = self.cuts.cut(merged)

    def reduce_step(self, n: int, delta: DataFrame | None, i: int) -> DataFrame | None:
        """One superstep of reduce ``n`` on its input's delta: the output delta, and the
        state advanced (compacted to this iteration). The delta (and with
        ``reduce_state="shuffle"`` the state) is shuffled by key to the reduce's partition
        function, which recomputes only the keys with new input; the output is cut (one Spark
        job, which also counts its output updates).

        Measured alternative, not kept: picking the touched keys' state out with a broadcast
        semi-join (and keeping the rest by an anti-join, without a shuffle) costs two more
        jobs per superstep, and in BFS the keys touched by a busy superstep are nearly all
        keys, so it shuffled more, not less (``benches/results/spark_bfs.md``)."""
        if delta is None:
            return None
        ctx, reduces = self.ctx, self.reduces
        spec = self.reduce_specs.get(n)
        if spec is None:
            spec = self.reduce_specs[n] = reduces.spec(n, delta, collect=ctx.collect)
        tagged = reduces.tagged_input(delta, spec)
        outputs = F.count(F.when(F.col(TAG) == TAG_DELTA_OUT, 1))
        if ctx.reduce_state == "store":
            # A retried task reads the same stored version and writes the same file.
            store = self.store.ensure(n)
            stage = reduces.run_stored(n, spec, tagged, store, i)
        else:
            if n in self.reduce_state:
                tagged = tagged.unionByName(self.reduce_state[n])
            stage = reduces.run(spec, tagged, stateful=True)
        raw, self.reduce_counts[n] = self.cuts.cut_measured(stage, outputs)
        if ctx.reduce_state != "store":
            kept = raw.where(F.col(TAG).isin(TAG_IN_ACC, TAG_OUT_ACC))
            self.reduce_state[n] = kept.select(*spec.schema.names)
        if spec.collect:
            # ``raw`` is cut already: the error rows are read from the checkpoint.
            ctx.errors.split(n, raw, raw.columns, i, materialized=True)
        return reduces.output(raw, spec)
