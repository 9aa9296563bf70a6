"""Aggregates for ``reduce``: ``dd.min``, ``dd.max``, ``dd.sum``, ``dd.mean``, ``dd.count``,
``dd.distinct``, ``dd.top_k`` (run in Rust) and :func:`reducer`, a Python function called once
per batch of keys. ``min``, ``max``, ``sum``, ``mean`` and ``count`` are also the parts of
``group_by(...).agg(...)`` (:mod:`ddflow.grouping`), where their argument may be an expression.

An aggregate turns into the ``agg`` field of a ``reduce`` node (PLAN.md) given the key and
value columns of the arrangement it reads, and names its output columns: ``dd.min("dist")``
reads and writes ``dist``, ``dd.count()`` writes ``count``, ``dd.distinct()`` and ``dd.top_k``
keep the value columns; ``.alias(name)`` renames a one-column result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from ddflow.callbacks import ReduceBatch, Registered
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.expr import Expr, expr_text
from ddflow.plan import (
    AggJson,
    ColumnAgg,
    CountAgg,
    DistinctAgg,
    GroupAgg,
    GroupColumnPart,
    PythonAgg,
    ThresholdAgg,
    TopKAgg,
)

__all__ = [
    "Aggregate",
    "min",
    "max",
    "sum",
    "mean",
    "count",
    "count_distinct",
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
    """``min`` / ``max`` / ``sum`` / ``mean`` of one value column (``mean`` is a one-part
    ``group`` aggregate). With ``expr`` (an expression argument, ``column`` its text) it is
    only a part of ``group_by(...).agg(...)``, which computes the expression first."""

    kind: Literal["min", "max", "sum", "mean", "count_distinct"]
    column: str
    name: str | None = None
    expr: Expr | None = field(default=None, compare=False, repr=False)

    def alias(self, name: str) -> ColumnAggregate:
        """The same aggregate writing column ``name``."""
        return replace(self, name=name)

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": kind, "column": i}`` writing one column."""
        if self.expr is not None:
            raise PlanError(
                f"{label}: {self.describe()}: an expression argument needs "
                f"group_by(...).agg(...); here compute it first with with_columns(...)"
            )
        index = _val_index(self.column, key, vals, label)
        name = self.name or self.column
        if self.kind == "mean" or self.kind == "count_distinct":
            part = GroupColumnPart(kind=self.kind, column=index, name=name)
            return GroupAgg(kind="group", aggs=[part]), (name,)
        return ColumnAgg(kind=self.kind, column=index), (name,)

    def describe(self) -> str:
        """``min(dist)``."""
        alias = f" as {self.name}" if self.name else ""
        return f"{self.kind}({self.column}){alias}"


@dataclass(frozen=True)
class CountAggregate(Aggregate):
    """The signed sum of counts per key; with ``column`` (only as a part of
    ``group_by(...).agg``) of the rows whose ``column`` is not null."""

    name: str = "count"
    column: str | None = None
    expr: Expr | None = field(default=None, compare=False, repr=False)

    def alias(self, name: str) -> CountAggregate:
        """The same aggregate writing column ``name``."""
        return replace(self, name=name)

    def plan(
        self, key: Sequence[str], vals: Sequence[str], label: str, register: Register
    ) -> tuple[AggJson, tuple[str, ...]]:
        """``{"kind": "count"}``."""
        if self.column is not None:
            raise PlanError(
                f"{label}: count({self.column!r}) (non-null values) is a part of "
                "group_by(...).agg(...), not of reduce; or use dd.count()"
            )
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


def min(column: str | Expr) -> ColumnAggregate:  # noqa: A001
    """The least value of ``column`` among values with positive count; writes ``column``."""
    return _column_aggregate("min", column)


def max(column: str | Expr) -> ColumnAggregate:  # noqa: A001
    """The greatest value of ``column`` among values with positive count; writes ``column``."""
    return _column_aggregate("max", column)


def sum(column: str | Expr) -> ColumnAggregate:  # noqa: A001
    """The signed sum of ``column`` weighted by counts; writes ``column``."""
    return _column_aggregate("sum", column)


def mean(column: str | Expr) -> ColumnAggregate:
    """The signed weighted sum of ``column`` over the signed sum of counts, as float64; writes
    ``column``. A key is present while its count (the signed sum of counts) is non-zero."""
    return _column_aggregate("mean", column)


def count_distinct(column: str | Expr) -> ColumnAggregate:
    """The number of distinct non-null values of ``column`` with positive count (SQL
    ``count(DISTINCT column)``), int64; writes ``column``."""
    return _column_aggregate("count_distinct", column)


def count(column: str | Expr | None = None) -> CountAggregate:
    """The signed sum of counts per key (absent when zero in ``reduce``); writes ``count``.

    ``count("col")`` (SQL ``count(col)``: the signed count of the rows where ``col`` is not
    null) is a part of ``group_by(...).agg(...)``; it writes ``count``."""
    if column is None:
        return CountAggregate()
    if isinstance(column, Expr):
        if column.op == "col":
            return CountAggregate(column=column.output_name())
        return CountAggregate(column=expr_text(column), expr=column)
    return CountAggregate(column=_name(column))


def _column_aggregate(
    kind: Literal["min", "max", "sum", "mean", "count_distinct"], column: str | Expr
) -> ColumnAggregate:
    """A column aggregate of a column name, ``dd.col(name)`` or another expression."""
    if isinstance(column, Expr):
        if column.op == "col":
            return ColumnAggregate(kind, column.output_name())
        return ColumnAggregate(kind, expr_text(column), expr=column)
    return ColumnAggregate(kind, _name(column))


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
