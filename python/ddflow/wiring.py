"""Plumbing shared by operators: moving collections and arrangements between scopes and
building the shared ``arrange`` nodes.

Operators that combine inputs (``concat``, joins) run in the innermost scope among their
inputs; an input from an enclosing scope is brought in with ``enter`` nodes (collections) or
``enter_arrangement`` nodes (arrangements, no copy). ``arrange`` and ``enter`` nodes are cached
in the plan, so two joins on the same collection and key share one trace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ddflow.arrangement import Arrangement
from ddflow.errors import ColumnNotFoundError, PlanError
from ddflow.plan import ArrangeOp, EnterArrangementOp, EnterOp

if TYPE_CHECKING:
    from ddflow.collection import Collection
    from ddflow.dataflow import Dataflow

__all__ = [
    "common_scope",
    "enter_collection",
    "enter_arrangement",
    "arrange",
    "resolve_names",
    "same_flow",
]


def same_flow(label: str, *items: Collection | Arrangement) -> Dataflow:
    """The one dataflow all ``items`` belong to, or ``PlanError``."""
    flow = items[0].flow
    for item in items[1:]:
        if item.flow is not flow:
            raise PlanError(f"{label}: combines collections of different dataflows")
    return flow


def common_scope(label: str, *items: Collection | Arrangement) -> int:
    """The innermost scope among ``items``; every other item's scope must enclose it."""
    plan = same_flow(label, *items)._plan
    target = items[0].scope
    for item in items[1:]:
        if plan.is_ancestor(target, item.scope):
            target = item.scope
        elif not plan.is_ancestor(item.scope, target):
            raise PlanError(
                f"{label}: combines collections from unrelated iterate scopes "
                f"{target} and {item.scope}"
            )
    return target


def enter_collection(coll: Collection, scope: int, label: str) -> Collection:
    """``coll`` seen inside ``scope`` (a scope it encloses), through cached ``enter`` nodes."""
    if coll.scope == scope:
        return coll
    plan = coll.flow._plan
    node = coll.node
    for s in plan.path_down(coll.scope, scope):
        key = ("enter", node, s)
        cached = plan.cached(key)
        if cached is None:
            cached = plan.add(EnterOp(), s, [node], coll.columns, f"{label} (enter)")
            plan.remember(key, cached)
        node = cached
    return coll.derive_node(node, coll.columns, scope)


def enter_arrangement(arr: Arrangement, scope: int, label: str) -> Arrangement:
    """``arr`` seen inside ``scope`` through cached ``enter_arrangement`` nodes (no copy)."""
    if arr.scope == scope:
        return arr
    plan = arr.flow._plan
    node = arr.node
    for s in plan.path_down(arr.scope, scope):
        key = ("enter_arrangement", node, s)
        cached = plan.cached(key)
        if cached is None:
            cached = plan.add(
                EnterArrangementOp(), s, [node], arr.columns, f"{label} (enter arrangement)"
            )
            plan.remember(key, cached)
        node = cached
    return Arrangement(arr.flow, node, arr.key, arr.columns, scope, arr.source)


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


def arrange(coll: Collection, key: Sequence[str], label: str) -> Arrangement:
    """``coll`` arranged by ``key`` in its own scope (a cached, shared ``arrange`` node).

    The arrangement's columns are the key columns, then the others in ``coll``'s order.
    """
    plan = coll.flow._plan
    key = resolve_names(key, coll.columns, label)
    idx = tuple(coll.columns.index(k) for k in key)
    vals = [c for c in coll.columns if c not in key]
    cache_key = ("arrange", coll.node, idx, coll.scope)
    node = plan.cached(cache_key)
    if node is None:
        node = plan.add(
            ArrangeOp(list(idx)),
            coll.scope,
            [coll.node],
            [*key, *vals],
            f"{label} (arrange)",
            notes=[f"key=({', '.join(key)})"],
        )
        plan.remember(cache_key, node)
    return Arrangement(coll.flow, node, tuple(key), (*key, *vals), coll.scope, coll)
