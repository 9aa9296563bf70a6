"""The driver's use of the reduce state store (``tasks/store.py``): where it goes, creating it
on first use, pruning the versions no task can read after each superstep, and deleting a
finished scope's state and the whole store when the run returns.

Where: ``state_dir`` when given; in local mode by default the temporary directory
(``spark.local.dir`` when set); on a cluster by default the SparkContext's checkpoint
directory. A cluster with neither fails before any job, naming the options.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable

from pyspark.sql import SparkSession

from ddflow.errors import PlanError
from ddflow.spark.tasks.store import StateStore

__all__ = ["REDUCE_STATE_MODES", "StoreUse", "state_parent"]

REDUCE_STATE_MODES = ("store", "shuffle")
"""``run_on_spark(reduce_state=...)``: the state store, or DataFrames shuffled each superstep."""


def state_parent(spark: SparkSession, state_dir: str | None) -> str:
    """The directory the run's store is created in (see the module doc)."""
    if state_dir:
        return state_dir
    sc = spark.sparkContext
    if (sc.master or "").startswith("local"):
        local = sc.getConf().get("spark.local.dir")
        return local.split(",")[0] if local else tempfile.gettempdir()
    checkpoint_dir = sc._jsc.sc().getCheckpointDir()
    if checkpoint_dir.isDefined():
        return str(checkpoint_dir.get())
    raise PlanError(
        f"run_on_spark on master {sc.master!r}: the reduce state store needs a directory "
        "every executor can read and write; pass state_dir='hdfs://...' (or a shared "
        "path), set sc.setCheckpointDir(...), or pass reduce_state='shuffle' to keep the "
        "state in DataFrames"
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
