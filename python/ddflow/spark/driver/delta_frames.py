"""Small operations on update DataFrames that incremental Spark runs (``incremental.py``,
``incremental_iterate.py``) share: unions of optional frames, null-safe semi-joins on key
columns, and the iteration ranges of stored histories."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ddflow.spark.tasks.batches import ccol

__all__ = ["Iterations", "union_all", "semi_on_keys"]


def union_all(frames: Sequence[DataFrame | None]) -> DataFrame | None:
    """The union (by name) of the frames that are not None; None when all are."""
    present = [f for f in frames if f is not None]
    if not present:
        return None
    return functools.reduce(lambda a, b: a.unionByName(b), present)


def semi_on_keys(df: DataFrame, keys: DataFrame, k: int) -> DataFrame:
    """The rows of ``df`` whose first ``k`` record columns are a row of ``keys`` (null-safe:
    a null key is a key like any other, as in a reduce)."""
    renamed = keys.select(*[F.col(ccol(i)).alias(f"_k{i}") for i in range(k)])
    cond = functools.reduce(
        lambda a, b: a & b, [F.col(ccol(i)).eqNullSafe(F.col(f"_k{i}")) for i in range(k)]
    )
    return df.join(renamed, on=cond, how="left_semi")


@dataclass(frozen=True)
class Iterations:
    """The iterations ``i`` (``upto=False``) or ``0..i`` (``upto=True``) of a stored history."""

    i: int
    upto: bool

    def where(self, column: Column) -> Column:
        """The predicate on the iteration column."""
        return column <= F.lit(self.i) if self.upto else column == F.lit(self.i)

    @property
    def has_zero(self) -> bool:
        """Whether iteration 0 is among them (a loop-invariant node has only iteration 0)."""
        return self.upto or self.i == 0
