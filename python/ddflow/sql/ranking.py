"""Ranked rows: the engine's ``rank`` aggregate (PLAN.md) over a collection, for SQL's
``ORDER BY ... LIMIT / OFFSET`` (a maintained top-k) and ``ROW_NUMBER`` / ``RANK`` /
``DENSE_RANK`` ``OVER (PARTITION BY ... ORDER BY ...)``.

Rows are ranked per partition (all rows when there is none) by the order keys, then by every
column ascending with nulls last, so that ``ROW_NUMBER`` and ``LIMIT`` keep, among rows tied
in the order keys, those least by the whole row. A row present ``n`` times counts ``n`` times
(SQL's bags). Only the rows whose rank is within the bounds are kept, so a top-k changes by
a few rows when a row enters or leaves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import ddflow.expr as E
from ddflow.aggregates import Aggregate, Register
from ddflow.collection import Collection
from ddflow.errors import PlanError
from ddflow.plan import AggJson, RankAgg, RankSortKey

__all__ = ["SortKey", "RankFunction", "RankAggregate", "ranked"]

RankFunction = Literal["row_number", "rank", "dense_rank"]


@dataclass(frozen=True)
class SortKey:
    """One order key: a column, its direction and where its nulls go."""

    column: str
    descending: bool = False
    nulls_first: bool = False


@dataclass(frozen=True)
class RankAggregate(Aggregate):
    """The ``rank`` aggregate: the value rows ranked ``min_rank..max_rank`` by ``order``,
    keeping the value columns, then the rank as column ``rank_column`` when it is set."""

    order: tuple[SortKey, ...]
    function: RankFunction = "row_number"
    min_rank: int = 1
    max_rank: int | None = None
    rank_column: str | None = None

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": "rank", ...}``; an order key that is a key column is left out (it is
        the same on every row of a key)."""
        del register
        order: list[RankSortKey] = []
        for k in self.order:
            if k.column in key:
                continue
            if k.column not in vals:
                raise PlanError(f"{label}: rank order column {k.column!r} is not a column")
            order.append(
                RankSortKey(
                    column=list(vals).index(k.column),
                    descending=k.descending,
                    nulls_first=k.nulls_first,
                )
            )
        spec = RankAgg(
            kind="rank",
            order=order,
            function=self.function,
            min_rank=self.min_rank,
            emit=self.rank_column is not None,
        )
        if self.max_rank is not None:
            spec["max_rank"] = self.max_rank
        out = tuple(vals) if self.rank_column is None else (*vals, self.rank_column)
        return spec, out

    def describe(self) -> str:
        """``row_number by a desc nulls first, b in 1..3``."""
        keys = ", ".join(
            f"{k.column}{' desc' if k.descending else ''}{' nulls first' if k.nulls_first else ''}"
            for k in self.order
        )
        upper = "" if self.max_rank is None else str(self.max_rank)
        return f"{self.function} by {keys or '()'} in {self.min_rank}..{upper}"


def ranked(
    coll: Collection,
    partition: Sequence[str],
    aggregate: RankAggregate,
    constant_key: str,
) -> Collection:
    """``coll``'s rows ranked per ``partition`` (a constant key ``constant_key`` when there
    is none), with the columns of ``coll`` in their order, then the rank column if any."""
    keyed = coll
    by = list(partition)
    if not by:
        keyed = coll.with_columns(**{constant_key: E.lit(0)})
        by = [constant_key]
    out = keyed.reduce(by=by, agg=aggregate)
    columns = [*coll.columns]
    if aggregate.rank_column is not None:
        columns.append(aggregate.rank_column)
    if list(out.columns) == columns:
        return out
    return out.select(*columns)
