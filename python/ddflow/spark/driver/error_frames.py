"""Data errors as data on the Spark backend (the driver side of ``errors="collect"``).

A stage that can fail on a record (the Rust expression evaluator, a user's batch function, a
top-level reduce) returns, in collect mode, its data rows and its error rows in one
DataFrame (``tasks/error_rows.py``). ``ErrorFrames.split`` separates them: the data flows on to
the next operator, the error rows are kept per plan node with their iteration (inside an
iterate, the superstep's number). ``SparkResult.errors(c)`` reads the consolidated error
updates of every node upstream of ``c``, the Spark counterpart of the embedded engine's
``capture(errors="collect").errors()``.

Inside an iterate the stage's output is persisted, and the superstep's error rows are
materialized (one cut) before the superstep ends: later supersteps replace the state their
lineage reads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow.spark.driver.lineage import consolidated
from ddflow.spark.tasks.batches import DIFF, tcol
from ddflow.spark.tasks.error_rows import ERR_MSG, ERR_OP, ERR_VALS

__all__ = ["ErrorFrames", "NODE", "ITERATION"]

NODE = "_en"
"""The plan node of an error row."""
ITERATION = "_ei"
"""The iteration coordinates of an error row (empty outside an iterate)."""


class ErrorFrames:
    """The error rows of a run, per plan node (collect mode)."""

    def __init__(self, spark: SparkSession, dims: int) -> None:
        self.spark = spark
        self.dims = dims
        self.frames: list[DataFrame] = []
        """Error rows (node, operator, message, values, times, iteration, diff)."""
        self._pending: list[DataFrame] = []
        """This superstep's error rows, not yet materialized."""
        self._cached: list[DataFrame] = []
        """This superstep's persisted stage outputs."""

    def _tnames(self) -> list[str]:
        return [tcol(j) for j in range(self.dims)]

    def split(
        self,
        n: int,
        tagged: DataFrame,
        data_cols: Sequence[str],
        iteration: int | None,
        materialized: bool = False,
    ) -> DataFrame:
        """The data rows of stage output ``tagged`` (columns ``data_cols``); its error rows
        are kept as node ``n``'s, at ``iteration`` (None: outside an iterate).
        ``materialized``: ``tagged`` is a checkpoint already (nothing to persist or cut)."""
        if iteration is not None and not materialized:
            tagged = tagged.persist()
            self._cached.append(tagged)
        iters = (
            F.array(F.lit(iteration).cast("long"))
            if iteration is not None
            else F.array().cast(T.ArrayType(T.LongType()))
        )
        errors = tagged.where(F.col(ERR_OP).isNotNull()).select(
            F.lit(n).alias(NODE),
            ERR_OP,
            ERR_MSG,
            ERR_VALS,
            *self._tnames(),
            iters.alias(ITERATION),
            DIFF,
        )
        pending = iteration is not None and not materialized
        (self._pending if pending else self.frames).append(errors)
        return tagged.where(F.col(ERR_OP).isNull()).select(*data_cols)

    def end_superstep(self, cut: Callable[[DataFrame], DataFrame]) -> None:
        """Materializes this superstep's error rows (one Spark job when there are stages
        that can fail) and releases the persisted stage outputs."""
        if self._pending:
            union = functools.reduce(lambda a, b: a.unionByName(b), self._pending)
            self.frames.append(cut(union))
        for df in self._cached:
            df.unpersist()
        self._pending = []
        self._cached = []

    def mark(self) -> tuple[int, int, int]:
        """A point to ``rollback`` to."""
        return len(self.frames), len(self._pending), len(self._cached)

    def rollback(self, mark: tuple[int, int, int]) -> None:
        """Forgets the error rows kept since ``mark`` (a fused loop abandoned for the
        operator-by-operator path, which finds them again)."""
        frames, pending, cached = mark
        for df in self._cached[cached:]:
            df.unpersist()
        del self.frames[frames:], self._pending[pending:], self._cached[cached:]

    def of(self, nodes: Collection[int]) -> DataFrame:
        """The consolidated error updates of ``nodes``: ``operator``, ``message``,
        ``values``, ``time`` (or ``time_0..``), ``iteration``, ``diff``, sorted by time."""
        tnames = self._tnames()
        user_t = ["time"] if self.dims == 1 else [f"time_{j}" for j in range(self.dims)]
        if self.frames:
            rows = functools.reduce(lambda a, b: a.unionByName(b), self.frames)
        else:
            schema = T.StructType(
                [
                    T.StructField(NODE, T.IntegerType()),
                    *(T.StructField(c, T.StringType()) for c in (ERR_OP, ERR_MSG, ERR_VALS)),
                    *(T.StructField(t, T.LongType()) for t in tnames),
                    T.StructField(ITERATION, T.ArrayType(T.LongType())),
                    T.StructField(DIFF, T.LongType()),
                ]
            )
            rows = self.spark.createDataFrame([], schema)
        summed = consolidated(rows.where(F.col(NODE).isin(sorted(nodes))).drop(NODE))
        return summed.select(
            F.col(ERR_OP).alias("operator"),
            F.col(ERR_MSG).alias("message"),
            F.col(ERR_VALS).alias("values"),
            *[F.col(t).alias(u) for t, u in zip(tnames, user_t, strict=True)],
            F.col(ITERATION).alias("iteration"),
            F.col(DIFF).cast("long").alias("diff"),
        ).orderBy(*user_t, "operator", "message", "values", "iteration")
