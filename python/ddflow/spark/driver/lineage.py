"""Lineage and consolidation of update DataFrames on the Spark backend: summing diffs per
record and time (overflow checked), and cutting a DataFrame's lineage at a superstep
(``localCheckpoint`` or a reliable ``checkpoint``), optionally hash-partitioned by key once so
that later joins shuffle only their other side.

Without a cut per superstep the plan grows with every superstep (DESIGN.md: 45 s per step by
the eighth and a driver out of memory).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ddflow.errors import PlanError
from ddflow.spark.tasks.batches import DIFF, ccol

__all__ = ["CHECKPOINT_MODES", "Checkpoints", "consolidated"]

CHECKPOINT_MODES = ("local", "reliable")
"""``run_on_spark(checkpoint=...)``: ``localCheckpoint`` or ``checkpoint()``."""


def consolidated(df: DataFrame) -> DataFrame:
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


class Checkpoints:
    """Cuts lineage in one of ``CHECKPOINT_MODES``; remembers the DataFrames it partitioned by
    key (a join with one of them shuffles only its other side)."""

    def __init__(self, mode: str) -> None:
        if mode not in CHECKPOINT_MODES:
            raise PlanError(f"run_on_spark: checkpoint must be 'local' or 'reliable', got {mode!r}")
        self.mode = mode
        self._partitioned: set[int] = set()

    def cut(self, df: DataFrame) -> DataFrame:
        """Materializes ``df`` and cuts its lineage (one Spark job)."""
        if self.mode == "reliable":
            return df.checkpoint(eager=True)
        return df.localCheckpoint(eager=True)

    def cut_lazy(self, df: DataFrame) -> DataFrame:
        """``df`` with its lineage cut when a job first computes it (no job now): a
        superstep whose frames are all cut this way runs as the one job that needs them."""
        if self.mode == "reliable":
            return df.checkpoint(eager=False)
        return df.localCheckpoint(eager=False)

    def cut_measured(self, df: DataFrame, measure: Column) -> tuple[DataFrame, int]:
        """``df`` materialized with its lineage cut, and the aggregate ``measure`` over its
        rows (0 when null), read from the job's result: the driver's counts come from
        DataFrames, which classic and Spark Connect sessions both run (no accumulators).
        With local checkpoints this is one job: the checkpoint is lazy and the job computing
        the measure materializes every partition of it."""
        if self.mode == "reliable":
            cut = self.cut(df)
        else:
            cut = df.localCheckpoint(eager=False)
        value = cut.agg(measure).collect()[0][0]
        return cut, int(value or 0)

    def partitioned(self, df: DataFrame, key_len: int, partitions: int) -> DataFrame:
        """``df`` hash-partitioned by its first ``key_len`` columns into ``partitions``, cut."""
        keys = [ccol(i) for i in range(key_len)]
        cut = self.cut(df.repartition(partitions, *keys))
        self._partitioned.add(id(cut))
        return cut

    def is_partitioned(self, df: DataFrame) -> bool:
        """Whether ``df`` came from ``partitioned``."""
        return id(df) in self._partitioned
