"""Building a dataflow's plan: the plan, its registered user functions, its time shape, and the
node-level plumbing that operators share.

A :class:`PlanBuilder` belongs to one dataflow. Operators see their inputs as :class:`Node`
(a node id, its columns and scope) or :class:`ArrangedNode` (an arrangement: also its key and
the collection it arranges) and get the nodes they add back in the same form; the handles users
hold (``Collection``, ``Arrangement``) wrap them. An operator that adds several nodes does so
inside :meth:`PlanBuilder.atomic`, which drops them all (and the functions they registered)
when it fails.

Operators that combine inputs (``concat``, joins) run in the innermost scope among their
inputs; an input from an enclosing scope is brought in with ``enter`` nodes (collections) or
``enter_arrangement`` nodes (arrangements, no copy). ``arrange`` and ``enter`` nodes are cached
in the plan, so two joins on the same collection and key share one trace.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ddflow.callbacks import Dispatcher, Registered
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.expr import col
from ddflow.plan import ArrangeOp, EnterArrangementOp, EnterOp, OpSpec, Plan, SelectOp
from ddflow.times import TimeShape

__all__ = ["Node", "ArrangedNode", "PlanBuilder", "resolve_names"]


@dataclass(frozen=True)
class Node:
    """A collection's node as operators see it."""

    node: int
    columns: tuple[str, ...]
    scope: int


@dataclass(frozen=True)
class ArrangedNode:
    """An arrangement's node as operators see it."""

    node: int
    key: tuple[str, ...]
    """The key columns."""
    columns: tuple[str, ...]
    """Key columns, then value columns."""
    scope: int
    source: Node | None
    """The collection that was arranged (in its own scope); None for an imported trace."""

    @property
    def vals(self) -> tuple[str, ...]:
        """The value (non-key) column names."""
        return self.columns[len(self.key) :]


def resolve_names(names: str | Sequence[str], columns: Sequence[str], label: str) -> list[str]:
    """A column name or list of names, checked against ``columns``."""
    out = [names] if isinstance(names, str) else list(names)
    if not out:
        raise PlanError(f"{label}: no key columns given")
    for name in out:
        if not isinstance(name, str):
            raise PlanError(f"{label}: column names must be str, got {name!r}")
        if name not in columns:
            raise ColumnNotFoundError(
                f"{label}: column {name!r} not found; available columns are {list(columns)}"
            )
    if len(set(out)) != len(out):
        raise PlanError(f"{label}: key columns {out} repeat a column")
    return out


class PlanBuilder:
    """One dataflow's plan under construction, with its user functions and time shape."""

    def __init__(self, times: TimeShape) -> None:
        """An empty plan."""
        self.plan = Plan()
        self.functions = Dispatcher()
        """The user functions the plan's nodes refer to by id (the engine's callback)."""
        self.times = times
        self._upstream: dict[int, frozenset[int]] = {}

    # -- nodes and functions ------------------------------------------------------------------

    def check_building(self, label: str) -> None:
        """Raises ``PlanError`` once the dataflow has started."""
        self.plan.check_building(label)

    def register(self, entry: Registered) -> int:
        """Registers a user function; returns the id a node refers to it by."""
        self.check_building(entry.label)
        return self.functions.register(entry)

    def add(
        self,
        spec: OpSpec,
        inputs: Sequence[Node | ArrangedNode],
        columns: Sequence[str],
        label: str,
        notes: Sequence[str] = (),
        scope: int | None = None,
    ) -> Node:
        """Appends a node running ``spec`` on ``inputs`` (in the first input's scope unless
        ``scope`` is given)."""
        if scope is None:
            scope = inputs[0].scope
        node = self.plan.add(spec, scope, [i.node for i in inputs], columns, label, notes)
        return Node(node, tuple(columns), scope)

    @contextmanager
    def atomic(self, label: str) -> Iterator[None]:
        """Nodes, scopes and functions added inside are dropped again if it raises."""
        self.check_building(label)
        nodes = self.plan.mark()
        functions = len(self.functions)
        try:
            yield
        except BaseException:
            self.plan.rollback(nodes)
            self.functions.truncate(functions)
            raise

    # -- scopes -------------------------------------------------------------------------------

    def common_scope(self, label: str, *scopes: int) -> int:
        """The innermost of ``scopes``; every other one must enclose it."""
        target = scopes[0]
        for scope in scopes[1:]:
            if self.plan.is_ancestor(target, scope):
                target = scope
            elif not self.plan.is_ancestor(scope, target):
                raise PlanError(
                    f"{label}: combines collections from unrelated iterate scopes "
                    f"{target} and {scope}"
                )
        return target

    def enter(self, coll: Node, scope: int, label: str) -> Node:
        """``coll`` seen inside ``scope`` (a scope it encloses), through cached ``enter``
        nodes."""
        node = coll.node
        for s in self.plan.path_down(coll.scope, scope):
            key = ("enter", node, s)
            cached = self.plan.cached(key)
            if cached is None:
                cached = self.plan.add(EnterOp(), s, [node], coll.columns, f"{label} (enter)")
                self.plan.remember(key, cached)
            node = cached
        return Node(node, coll.columns, scope)

    def enter_arranged(self, arr: ArrangedNode, scope: int, label: str) -> ArrangedNode:
        """``arr`` seen inside ``scope`` through cached ``enter_arrangement`` nodes (no copy)."""
        node = arr.node
        for s in self.plan.path_down(arr.scope, scope):
            key = ("enter_arrangement", node, s)
            cached = self.plan.cached(key)
            if cached is None:
                cached = self.plan.add(
                    EnterArrangementOp(), s, [node], arr.columns, f"{label} (enter arrangement)"
                )
                self.plan.remember(key, cached)
            node = cached
        return ArrangedNode(node, arr.key, arr.columns, scope, arr.source)

    # -- shared nodes -------------------------------------------------------------------------

    def arrange(self, coll: Node, key: str | Sequence[str], label: str) -> ArrangedNode:
        """``coll`` arranged by ``key`` in its own scope (a cached, shared ``arrange`` node).

        The arrangement's columns are the key columns, then the others in ``coll``'s order.
        """
        names = resolve_names(key, coll.columns, label)
        idx = tuple(coll.columns.index(k) for k in names)
        vals = [c for c in coll.columns if c not in names]
        cache_key = ("arrange", coll.node, idx, coll.scope)
        node = self.plan.cached(cache_key)
        if node is None:
            node = self.plan.add(
                ArrangeOp(list(idx)),
                coll.scope,
                [coll.node],
                [*names, *vals],
                f"{label} (arrange)",
                notes=[f"key=({', '.join(names)})"],
            )
            self.plan.remember(cache_key, node)
        return ArrangedNode(node, tuple(names), (*names, *vals), coll.scope, coll)

    def is_arranged(self, coll: Node, key: Sequence[str]) -> bool:
        """Whether an ``arrange`` of ``coll`` by ``key`` exists already."""
        idx = tuple(coll.columns.index(k) for k in key)
        return self.plan.cached(("arrange", coll.node, idx, coll.scope)) is not None

    def select_columns(self, coll: Node, names: Sequence[str], label: str) -> Node:
        """A ``select`` of column references (projection / reordering)."""
        exprs = [col(n).to_json() for n in names]
        return self.add(SelectOp(exprs), [coll], names, label, [", ".join(names)])

    # -- reading the plan ---------------------------------------------------------------------

    def label(self, node: int) -> str:
        """The label of ``node``."""
        return str(self.plan.nodes[node]["label"])

    def op(self, node: int) -> str:
        """The operator name of ``node``."""
        return str(self.plan.nodes[node]["op"])

    def upstream(self, node: int) -> frozenset[int]:
        """Every node whose output can reach ``node`` (itself included), following inputs
        and the feedback edge of each ``iterate`` variable."""
        cached = self._upstream.get(node)
        if cached is not None:
            return cached
        nodes = self.plan.nodes
        seen = {node}
        stack = [node]
        while stack:
            n = nodes[stack.pop()]
            preds = list(n["inputs"])
            if n["op"] == "variable" and n.get("result") is not None:
                preds.append(n["result"])
            for p in preds:
                if p not in seen:
                    seen.add(p)
                    stack.append(p)
        result = frozenset(seen)
        if self.plan.frozen:
            self._upstream[node] = result
        return result
