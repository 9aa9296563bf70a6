"""``join``, ``semijoin`` and ``antijoin``: key resolution, output column names, arrangements.

A join node reads two arrangements in the same scope. Each side is arranged by its key columns
(reusing a given :class:`Arrangement` or a cached ``arrange`` of the same collection and key)
in its own scope and entered into the join's scope when it comes from an enclosing one.

Output columns: ``join`` gives the key columns (named as on the left), the left's other columns,
then the right's other columns (names on both sides need ``suffixes=``); ``semijoin`` and
``antijoin`` keep the left's columns in the left's order.

``semijoin`` and ``antijoin`` have set semantics: a left row keeps its own count while its
key's accumulated count on the right is positive (semijoin), or while it is not (antijoin).
The right side is first reduced to its keys with positive count (a ``count`` per key, kept
where positive, each key once), so a key present twice on the right does not double the
left row, and ``antijoin`` (left minus semijoin) never goes negative.

Null keys (SQL): a key with a null column never matches. The join operator itself skips
batch rows whose key has a null (``rust/ddflow-core/src/engine/operators/join.rs``), so no
plan node is added and shared arrangements stay shared; a left row with a null key is thus
never in a ``semijoin`` and always in an ``antijoin`` (SQL's ``NOT EXISTS``).
``join(..., nulls_equal=True)`` matches null keys with each other instead.

Left, right and outer joins (``join(how=...)``) are built from these in
:mod:`ddflow.outer_joins`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ddflow.aggregates import count
from ddflow.builder import ArrangedNode, Node, PlanBuilder, resolve_names
from ddflow.errors import PlanError
from ddflow.expr import col, expr_text
from ddflow.plan import FilterOp, JoinKind, JoinOp, user_location
from ddflow.reducing import reduce_arranged, reduce_collection

__all__ = ["join", "join_columns", "resolve_keys", "arranged", "positive_keys", "Side"]

Keys = str | Sequence[str] | None

Side = Node | ArrangedNode
"""One input of a join: a collection or an arrangement."""


def resolve_keys(
    left: Side,
    right: Side,
    on: Keys,
    left_on: Keys,
    right_on: Keys,
    label: str,
) -> tuple[list[str], list[str]]:
    """The left and right key column names."""
    if on is not None:
        if left_on is not None or right_on is not None:
            raise PlanError(f"{label}: give either on= or left_on=/right_on=, not both")
        lk: Keys = on
        rk: Keys = on
    else:
        lk = (
            left_on
            if left_on is not None
            else (left.key if isinstance(left, ArrangedNode) else None)
        )
        rk = (
            right_on
            if right_on is not None
            else (right.key if isinstance(right, ArrangedNode) else None)
        )
        if lk is None or rk is None:
            raise PlanError(f"{label}: give the key columns with on= or left_on= and right_on=")
    assert lk is not None and rk is not None
    lkeys = resolve_names(lk, left.columns, f"{label} (left)")
    rkeys = resolve_names(rk, right.columns, f"{label} (right)")
    if len(lkeys) != len(rkeys):
        raise PlanError(
            f"{label}: {len(lkeys)} left key columns {lkeys} but {len(rkeys)} "
            f"right key columns {rkeys}"
        )
    return lkeys, rkeys


def join_columns(
    lkeys: Sequence[str],
    lvals: Sequence[str],
    rvals: Sequence[str],
    suffixes: tuple[str, str] | None,
    label: str,
) -> list[str]:
    """Output names of a join: left keys, left values, right values (suffixed on clashes)."""
    left_names = set(lkeys) | set(lvals)
    clashes = [c for c in rvals if c in left_names]
    if not clashes:
        return [*lkeys, *lvals, *rvals]
    if suffixes is None:
        raise PlanError(
            f'{label}: columns {clashes} appear on both sides; pass suffixes=("_l", "_r") '
            f"or rename them first"
        )
    if len(suffixes) != 2 or not all(isinstance(s, str) for s in suffixes):
        raise PlanError(f"{label}: suffixes must be a pair of str, got {suffixes!r}")
    ls, rs = suffixes
    out_l = [c + ls if c in clashes else c for c in lvals]
    out_r = [c + rs if c in clashes else c for c in rvals]
    names = [*lkeys, *out_l, *out_r]
    dup = sorted({c for c in names if names.count(c) > 1})
    if dup:
        raise PlanError(f"{label}: suffixes {suffixes!r} still leave duplicate columns {dup}")
    return names


def arranged(
    builder: PlanBuilder, side: Side, keys: list[str], scope: int, label: str, keys_only: bool
) -> ArrangedNode:
    """``side`` arranged by ``keys`` and entered into ``scope``.

    With ``keys_only`` (the right side of semijoin / antijoin) a collection is first projected
    to its key columns, unless an arrangement of it by those keys already exists.
    """
    if isinstance(side, ArrangedNode):
        if list(side.key) == keys:
            arr = side
        elif side.source is None:
            raise _imported_key_error(side, keys, label)
        else:
            arr = builder.arrange(side.source, keys, label)
    else:
        shared = builder.is_arranged(side, keys)
        if keys_only and list(side.columns) != keys and not shared:
            side = builder.select_columns(side, keys, f"{label} (keys)")
        arr = builder.arrange(side, keys, label)
    return builder.enter_arranged(arr, scope, label)


def _imported_key_error(side: ArrangedNode, keys: list[str], label: str) -> PlanError:
    return PlanError(
        f"{label}: the imported arrangement is keyed by {list(side.key)}; join it on "
        f"that key (it cannot be re-arranged by {keys})"
    )


def positive_keys(builder: PlanBuilder, side: Side, keys: list[str], label: str) -> Node:
    """The keys whose accumulated count in ``side`` is positive, each with count 1."""
    count_label = f"count@{user_location()}"
    source: Side
    if isinstance(side, ArrangedNode):
        if list(side.key) == keys:
            source = side
        elif side.source is not None:
            source = side.source
        else:
            raise _imported_key_error(side, keys, label)
    else:
        source = side
    if isinstance(source, ArrangedNode):
        counted = reduce_arranged(builder, source, count(), None, count_label)
    elif builder.is_arranged(source, keys):
        # Count over the existing arrangement by these keys rather than arranging again.
        shared = builder.arrange(source, keys, label)
        counted = reduce_arranged(builder, shared, count(), None, count_label)
    else:
        counted = reduce_collection(builder, source, keys, count(), None, count_label, project=True)
    positive = col(counted.columns[-1]) > 0
    filtered = builder.add(
        FilterOp(positive.to_json()),
        [counted],
        counted.columns,
        f"filter@{user_location()}",
        [expr_text(positive)],
    )
    return builder.select_columns(filtered, keys, f"{label} (keys with positive count)")


def join(
    builder: PlanBuilder,
    kind: JoinKind,
    left: Side,
    right: Side,
    on: Keys,
    left_on: Keys,
    right_on: Keys,
    suffixes: tuple[str, str] | None,
    label: str,
    nulls_equal: bool = False,
) -> Node:
    """A ``join`` node of ``kind`` ``"join"``, ``"semijoin"`` or ``"antijoin"``; null keys
    never match unless ``nulls_equal``."""
    lkeys, rkeys = resolve_keys(left, right, on, left_on, right_on, label)
    lvals = [c for c in left.columns if c not in lkeys]
    rvals = [c for c in right.columns if c not in rkeys]
    if kind == "join":
        columns = join_columns(lkeys, lvals, rvals, suffixes, label)
    else:
        columns = [*lkeys, *lvals]
    scope = builder.common_scope(label, left.scope, right.scope)
    with builder.atomic(label):
        la = arranged(builder, left, lkeys, scope, label, keys_only=False)
        if kind == "join":
            ra = arranged(builder, right, rkeys, scope, label, keys_only=False)
        else:
            keys = positive_keys(builder, right, rkeys, label)
            ra = arranged(builder, keys, rkeys, scope, label, keys_only=True)
        notes = [f"{', '.join(lkeys)} = {', '.join(rkeys)}"]
        if nulls_equal:
            notes.append("nulls equal")
        op = JoinOp(kind, nulls_equal=nulls_equal)
        result = builder.add(op, [la, ra], columns, label, notes, scope=scope)
        if kind != "join" and isinstance(left, Node) and result.columns != left.columns:
            result = builder.select_columns(result, left.columns, f"{label} (column order)")
        return result
