"""``join(how="left" | "right" | "outer")``: outer joins composed of existing operators.

A left join is the inner join plus the left rows whose key has no match, padded with nulls
in the right's columns; a right join the same the other way round, an outer join both::

    left join  = concat(inner join,  select(left  antijoin right, nulls for the right's columns))
    right join = concat(inner join,  select(right antijoin left,  nulls for the left's columns))
    outer join = concat(inner join, both padded parts)

The antijoins have set semantics (:mod:`ddflow.joins`), so an unmatched left row is emitted
once with its own count, retracted when its key's first match arrives and emitted again
when the last match goes. Null keys never match unless ``nulls_equal``: a left row with a
null key is padded (the antijoin keeps it), as in SQL. All the nodes are built in one atomic
block, labelled with the user's call; the two sides' arrangements are shared with the inner
join and with any other join on the same collection and key.

**Key columns.** When both sides' key columns have the same names (``on=``), the output has
one key column per key, named as on the left, holding the key of whichever side has the row
(SQL's ``USING``: the coalesce of the two keys). When they differ (``left_on=`` /
``right_on=``), both sets are kept, as SQL's ``ON`` does: left keys, left values, right keys,
right values, with the side that has no row null (right keys named as on the right, with the
right's suffix if a name clashes).

**Null dtypes.** Column dtypes are not in the plan: ddflow learns them from data. A padding
column is a null *without* a dtype (:func:`ddflow.expr.null_column`, JSON
``{"op": "lit", "value": null}``), which the engine types when the ``select`` runs: the plan
links it (through the ``concat``) with the matched rows' column, that is with the other side's
column, and the engine knows that class's dtype once an input fixed it or an arrangement of
it has seen data (``rust/ddflow-core/src/engine/dtype_links.rs``). So padding works for
computed columns too, and with several workers. While the other side has never carried any
data its dtypes are unknown: unmatched rows are then error updates naming the column
(push that side's first update, at any time, before running). Declared input dtypes
(``new_input({name: dtype})``) do not reach the engine before a first update, so they do
not help yet. A typed null a user writes is ``dd.lit(None, dtype)``.
"""

from __future__ import annotations

from typing import Literal

from ddflow.builder import Node, PlanBuilder
from ddflow.errors import PlanError
from ddflow.expr import Expr, col, null_column
from ddflow.joins import Keys, Side, arranged, join_columns, positive_keys, resolve_keys
from ddflow.plan import ConcatOp, JoinOp, SelectOp

__all__ = ["HOWS", "JoinHow", "OuterHow", "check_how", "outer_join"]

OuterHow = Literal["left", "right", "outer"]
JoinHow = Literal["inner", "left", "right", "outer", "semi", "anti"]


def _names(
    lkeys: list[str],
    rkeys: list[str],
    lvals: list[str],
    rvals: list[str],
    both: bool,
    suffixes: tuple[str, str] | None,
    label: str,
) -> tuple[list[str], list[str], list[str], list[str]]:
    """Output names of the left keys, left values, right keys (empty unless ``both``) and
    right values."""
    right = [*rkeys, *rvals] if both else rvals
    names = join_columns(lkeys, lvals, right, suffixes, label)
    nl, nv = len(lkeys), len(lvals)
    out_l, out_r = names[nl : nl + nv], names[nl + nv :]
    nrk = len(rkeys) if both else 0
    return names[:nl], out_l, out_r[:nrk], out_r[nrk:]


def _select(
    builder: PlanBuilder, node: Node, exprs: list[Expr], names: list[str], label: str
) -> Node:
    return builder.add(
        SelectOp([e.to_json() for e in exprs]), [node], names, label, [", ".join(names)]
    )


def outer_join(
    builder: PlanBuilder,
    how: OuterHow,
    left: Side,
    right: Side,
    on: Keys,
    left_on: Keys,
    right_on: Keys,
    suffixes: tuple[str, str] | None,
    label: str,
    nulls_equal: bool = False,
) -> Node:
    """The ``how`` outer join of ``left`` and ``right`` (see the module docs)."""
    lkeys, rkeys = resolve_keys(left, right, on, left_on, right_on, label)
    lvals = [c for c in left.columns if c not in lkeys]
    rvals = [c for c in right.columns if c not in rkeys]
    both = lkeys != rkeys
    out_k, out_lv, out_rk, out_rv = _names(lkeys, rkeys, lvals, rvals, both, suffixes, label)
    columns = [*out_k, *out_lv, *out_rk, *out_rv]
    scope = builder.common_scope(label, left.scope, right.scope)
    notes = [f"{', '.join(lkeys)} = {', '.join(rkeys)}", f"how={how}"]
    if nulls_equal:
        notes.append("nulls equal")
    nulls = null_column
    with builder.atomic(label):
        la = arranged(builder, left, lkeys, scope, label, keys_only=False)
        ra = arranged(builder, right, rkeys, scope, label, keys_only=False)
        inner_names = [*out_k, *out_lv, *out_rv]
        inner = builder.add(
            JoinOp("join", nulls_equal=nulls_equal), [la, ra], inner_names, label, notes, scope
        )
        # Matched rows: the right keys equal the left ones (null with null under nulls_equal).
        parts = [
            _select(
                builder,
                inner,
                [
                    *map(col, out_k),
                    *map(col, out_lv),
                    *map(col, out_k[: len(out_rk)]),
                    *map(col, out_rv),
                ],
                columns,
                f"{label} (matched)",
            )
        ]
        if how in ("left", "outer"):
            keys = positive_keys(builder, right, rkeys, label)
            rk = arranged(builder, keys, rkeys, scope, label, keys_only=True)
            unmatched = builder.add(
                JoinOp("antijoin", nulls_equal=nulls_equal),
                [la, rk],
                [*lkeys, *lvals],
                f"{label} (unmatched left)",
                notes,
                scope,
            )
            exprs = [*map(col, lkeys), *map(col, lvals)]
            exprs += [nulls() for _ in out_rk] + [nulls() for _ in out_rv]
            parts.append(_select(builder, unmatched, exprs, columns, f"{label} (left padded)"))
        if how in ("right", "outer"):
            keys = positive_keys(builder, left, lkeys, label)
            lk = arranged(builder, keys, lkeys, scope, label, keys_only=True)
            unmatched = builder.add(
                JoinOp("antijoin", nulls_equal=nulls_equal),
                [ra, lk],
                [*rkeys, *rvals],
                f"{label} (unmatched right)",
                notes,
                scope,
            )
            key_exprs = [nulls() for _ in lkeys] if both else list(map(col, rkeys))
            exprs = [*key_exprs, *(nulls() for _ in lvals)]
            exprs += [*map(col, rkeys[: len(out_rk)]), *map(col, rvals)]
            parts.append(_select(builder, unmatched, exprs, columns, f"{label} (right padded)"))
        return builder.add(ConcatOp(), parts, columns, f"{label} (union)", scope=scope)


def check_how(how: object, label: str) -> None:
    """Raises ``PlanError`` unless ``how`` is one of the join kinds."""
    if how not in HOWS:
        raise PlanError(f"{label}: how must be one of {', '.join(map(repr, HOWS))}, got {how!r}")


HOWS: tuple[str, ...] = ("inner", "left", "right", "outer", "semi", "anti")
"""The values of ``join(how=...)``."""
