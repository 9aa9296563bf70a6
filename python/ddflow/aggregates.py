"""Aggregates for ``reduce``: ``dd.min``, ``dd.max``, ``dd.sum``, ``dd.count``, ``dd.distinct``,
``dd.top_k`` (run in Rust) and :func:`reducer`, a Python function called once per batch of keys.

An aggregate turns into the ``agg`` field of a ``reduce`` node (PLAN.md) given the key and
value columns of the arrangement it reads, and names its output columns: ``dd.min("dist")``
reads and writes ``dist``, ``dd.count()`` writes ``count``, ``dd.distinct()`` and ``dd.top_k``
keep the value columns; ``.alias(name)`` renames a one-column result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ddflow.callbacks import ReduceBatch, Registered
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.plan import (
    AggJson,
    ColumnAgg,
    CountAgg,
    DistinctAgg,
    PythonAgg,
    ThresholdAgg,
    TopKAgg,
)

__all__ = [
    "Aggregate",
    "min",
    "max",
    "sum",
    "count",
    "distinct",
    "top_k",
    "reducer",
    "PythonReducer",
    "ThresholdAggregate",
]

Register = Callable[[Registered], int]
"""Registers a user function with the dataflow's dispatcher and returns its id."""


class Aggregate:
    """What ``reduce`` computes per key from the key's accumulated values."""

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """The ``agg`` JSON and the output columns after the key columns."""
        raise NotImplementedError

    def describe(self) -> str:
        """A short text for ``explain()``."""
        return repr(self)


def _val_index(column: str, key: Sequence[str], vals: Sequence[str], label: str) -> int:
    """Index of ``column`` among the value columns, with clear errors."""
    if column in vals:
        return list(vals).index(column)
    if column in key:
        raise PlanError(f"{label}: column {column!r} is a key column; aggregate a value column")
    raise ColumnNotFoundError(
        f"{label}: column {column!r} not found; value columns are {list(vals)}"
    )


@dataclass(frozen=True)
class ColumnAggregate(Aggregate):
    """``min`` / ``max`` / ``sum`` of one value column."""

    kind: Literal["min", "max", "sum"]
    column: str
    name: str | None = None

    def alias(self, name: str) -> ColumnAggregate:
        """The same aggregate writing column ``name``."""
        return replace(self, name=name)

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": kind, "column": i}`` writing one column."""
        index = _val_index(self.column, key, vals, label)
        return ColumnAgg(kind=self.kind, column=index), (self.name or self.column,)

    def describe(self) -> str:
        """``min(dist)``."""
        alias = f" as {self.name}" if self.name else ""
        return f"{self.kind}({self.column}){alias}"


@dataclass(frozen=True)
class CountAggregate(Aggregate):
    """The signed sum of counts per key."""

    name: str = "count"

    def alias(self, name: str) -> CountAggregate:
        """The same aggregate writing column ``name``."""
        return replace(self, name=name)

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": "count"}``."""
        return CountAgg(kind="count"), (self.name,)

    def describe(self) -> str:
        """``count``."""
        return "count" if self.name == "count" else f"count as {self.name}"


@dataclass(frozen=True)
class DistinctAggregate(Aggregate):
    """Each value row with positive count, once."""

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": "distinct"}``, keeping the value columns."""
        return DistinctAgg(kind="distinct"), tuple(vals)

    def describe(self) -> str:
        """``distinct``."""
        return "distinct"


@dataclass(frozen=True)
class TopKAggregate(Aggregate):
    """The ``k`` value rows with the least (or greatest) ``column``."""

    k: int
    column: str
    descending: bool = False

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": "top_k", ...}``, keeping the value columns."""
        index = _val_index(self.column, key, vals, label)
        agg = TopKAgg(kind="top_k", k=self.k, column=index, descending=self.descending)
        return agg, tuple(vals)

    def describe(self) -> str:
        """``top_k(3, by w desc)``."""
        return f"top_k({self.k}, by {self.column}{' desc' if self.descending else ''})"


@dataclass(frozen=True)
class PythonReducer(Aggregate):
    """A Python reducer: ``fn(batch: ReduceBatch) -> {"offsets": ..., column: ...}``.

    Called once per batch of keys with grouped columns. ``columns`` names the output columns
    (after the key columns); when omitted, ``fn`` is called once on an empty batch while the
    plan is built and the names it returns are used.
    """

    fn: Callable[[ReduceBatch], Any]
    columns: tuple[str, ...] | None = None

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": "python", "fn": id, "columns": n}``."""
        columns = self.columns or self._discover(key, vals, label)
        entry = Registered("reduce_py", self.fn, label, columns=columns, key_columns=tuple(key))
        fn_id = register(entry)
        return PythonAgg(kind="python", fn=fn_id, columns=len(columns)), columns

    def _discover(self, key: Sequence[str], vals: Sequence[str], label: str) -> tuple[str, ...]:
        empty = np.empty(0, dtype=np.int64)
        batch = ReduceBatch(
            keys={k: empty for k in key},
            offsets=np.zeros(1, dtype=np.int64),
            values={v: empty for v in vals},
            counts=empty,
        )
        try:
            result = self.fn(batch)
        except Exception as exc:
            raise PlanError(
                f"{label}: could not find the reducer's output columns by calling it on an "
                f"empty batch ({type(exc).__name__}: {exc}); pass columns=[...] to dd.reducer"
            ) from exc
        if not isinstance(result, dict):
            raise PlanError(
                f"{label}: the reducer must return a dict with 'offsets' and output columns, "
                f"got {type(result).__name__}"
            )
        names = tuple(str(k) for k in result if k not in ("offsets", "count"))
        if not names:
            raise PlanError(f"{label}: the reducer returns no output columns")
        return names

    def describe(self) -> str:
        """``python reducer fn_name``."""
        return f"python reducer {getattr(self.fn, '__qualname__', repr(self.fn))}"


@dataclass(frozen=True)
class ThresholdAggregate(Aggregate):
    """Output count ``fn(c)`` for each row's signed count ``c`` (used by ``threshold``)."""

    fn: Callable[[Any], Any]
    vectorized: bool = False

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": "threshold_py", "fn": id}``."""
        entry = Registered("threshold_py", self.fn, label, vectorized=self.vectorized)
        return ThresholdAgg(kind="threshold_py", fn=register(entry)), tuple(vals)

    def describe(self) -> str:
        """``threshold fn_name``."""
        return f"threshold {getattr(self.fn, '__qualname__', repr(self.fn))}"


def min(column: str) -> ColumnAggregate:  # noqa: A001
    """The least value of ``column`` among values with positive count; writes ``column``."""
    return ColumnAggregate("min", _name(column))


def max(column: str) -> ColumnAggregate:  # noqa: A001
    """The greatest value of ``column`` among values with positive count; writes ``column``."""
    return ColumnAggregate("max", _name(column))


def sum(column: str) -> ColumnAggregate:  # noqa: A001
    """The signed sum of ``column`` weighted by counts; writes ``column``."""
    return ColumnAggregate("sum", _name(column))


def count() -> CountAggregate:
    """The signed sum of counts per key (absent when zero); writes ``count``."""
    return CountAggregate()


def distinct() -> DistinctAggregate:
    """Each value row with positive count, once; keeps the value columns."""
    return DistinctAggregate()


def top_k(column: str, k: int, *, descending: bool = False) -> TopKAggregate:
    """The ``k`` value rows with the least ``column`` (greatest if ``descending``), each once;
    keeps the value columns."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise PlanError(f"top_k: k must be a positive int, got {k!r}")
    return TopKAggregate(k, _name(column), bool(descending))


def reducer(
    fn: Callable[[ReduceBatch], Any], columns: Sequence[str] | None = None
) -> PythonReducer:
    """Wraps a Python reducer (see :class:`PythonReducer`) for ``reduce(agg=...)``."""
    if not callable(fn):
        raise PlanError(f"reducer: expected a function, got {fn!r}")
    return PythonReducer(fn, None if columns is None else tuple(_name(c) for c in columns))


def _name(column: object) -> str:
    """Checks that a column name is a str."""
    if not isinstance(column, str):
        raise PlanError(f"a column name must be a str, got {column!r}")
    return column
