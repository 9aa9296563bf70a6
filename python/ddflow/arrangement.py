"""``Arrangement``: a collection indexed by key, whose one trace many operators share.

``Collection.arrange_by_key(on=...)`` and ``arrange_by_self()`` return an Arrangement. Joins and
reduces given an Arrangement read its trace instead of building their own, also inside
``iterate`` (through ``enter_arrangement``, without a copy). Its columns are the key columns,
then the other columns in the source collection's order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ddflow.aggregates import Aggregate
    from ddflow.collection import Collection
    from ddflow.dataflow import Dataflow
    from ddflow.traces import TraceHandle

__all__ = ["Arrangement"]


class Arrangement:
    """A keyed, shared index of a collection (an ``arrange`` node of the plan)."""

    __slots__ = ("flow", "node", "key", "columns", "scope", "source")

    def __init__(
        self,
        flow: Dataflow,
        node: int,
        key: tuple[str, ...],
        columns: tuple[str, ...],
        scope: int,
        source: Collection | None,
    ) -> None:
        """Wraps plan node ``node``; built by ``Collection.arrange_by_key``."""
        self.flow = flow
        self.node = node
        self.key = key
        """The key column names."""
        self.columns = columns
        """Key columns, then value columns."""
        self.scope = scope
        self.source = source
        """The collection that was arranged (in its own scope); None for an arrangement
        imported from another dataflow (``Dataflow.import_trace``)."""

    @property
    def vals(self) -> tuple[str, ...]:
        """The value (non-key) column names."""
        return self.columns[len(self.key) :]

    def __repr__(self) -> str:
        return (
            f"Arrangement(#{self.node}, key=({', '.join(self.key)}), "
            f"vals=({', '.join(self.vals)}), scope {self.scope})"
        )

    def as_collection(self) -> Collection:
        """The arranged collection itself, in this arrangement's scope."""
        from ddflow.errors import PlanError
        from ddflow.wiring import enter_collection

        if self.source is None:
            raise PlanError(
                f"{self!r} was imported from another dataflow; join or reduce it instead"
            )
        return enter_collection(self.source, self.scope, self.flow._plan.nodes[self.node]["label"])

    def trace(self) -> TraceHandle:
        """A handle on this (top-level) arrangement's trace that other dataflows can import
        (``Dataflow.import_trace``). Until ``close()`` (or until it is dropped) the trace is
        not compacted past the handle's frontier (``set_frontier``)."""
        from ddflow.errors import PlanError
        from ddflow.traces import TraceHandle

        op = self.flow._plan.nodes[self.node]["op"]
        if self.scope != 0 or op != "arrange":
            raise PlanError(
                f"{self!r}: only top-level arrangements built in this dataflow have trace "
                f"handles (this one is {op!r} in scope {self.scope})"
            )
        return TraceHandle(self)

    def join(
        self,
        other: Collection | Arrangement,
        on: str | Sequence[str] | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
        suffixes: tuple[str, str] | None = None,
    ) -> Collection:
        """Joins on this arrangement's key (see ``Collection.join``)."""
        from ddflow.joins import join

        return join("join", self, other, on, left_on, right_on, suffixes)

    def semijoin(
        self,
        other: Collection | Arrangement,
        on: str | Sequence[str] | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
    ) -> Collection:
        """Rows whose key occurs in ``other`` (see ``Collection.semijoin``)."""
        from ddflow.joins import join

        return join("semijoin", self, other, on, left_on, right_on, None)

    def antijoin(
        self,
        other: Collection | Arrangement,
        on: str | Sequence[str] | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
    ) -> Collection:
        """Rows whose key does not occur in ``other`` (see ``Collection.antijoin``)."""
        from ddflow.joins import join

        return join("antijoin", self, other, on, left_on, right_on, None)

    def reduce(
        self,
        agg: Aggregate | Callable[[Any], Any],
        *,
        columns: Sequence[str] | None = None,
    ) -> Collection:
        """Reduces each key's values with ``agg`` (see ``Collection.reduce``)."""
        from ddflow.reducing import reduce_arrangement

        return reduce_arrangement(self, agg, columns, "reduce")

    def count(self) -> Collection:
        """``(key..., count)``: the signed sum of counts per key, absent when zero."""
        from ddflow.aggregates import count
        from ddflow.reducing import reduce_arrangement

        return reduce_arrangement(self, count(), None, "count")

    def distinct(self) -> Collection:
        """Each (key, value) row with positive count, once."""
        from ddflow.aggregates import distinct
        from ddflow.reducing import reduce_arrangement

        return reduce_arrangement(self, distinct(), None, "distinct")
