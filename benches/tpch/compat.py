"""Stand-ins for ddflow features the TPC-H queries need that are landing now: per-group
aggregates (``group_by(...).agg(...)``) and string predicates (``LIKE``, ``SUBSTRING``).

* :func:`group_agg` is ``c.group_by(*keys).agg(**parts)`` when the installed engine has the
  ``group`` aggregate; otherwise the same result built from one ``reduce`` per aggregate
  joined on the keys (a mean is a sum over a count). Either way the input is first cut down
  to the keys and the aggregates' arguments. :data:`GROUP_BY_NATIVE` says which is used.
* :func:`like` and :func:`substring` are Python batch functions (``filter(fn)`` /
  ``map(fn)``) with SQL semantics (``pyarrow.compute.match_like``), until string
  expressions replace them.

Delete this module once both have landed: the queries then call ``group_by().agg()`` and
the string expressions directly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import ddflow as dd

__all__ = [
    "Agg",
    "agg_count",
    "agg_max",
    "agg_mean",
    "agg_min",
    "agg_sum",
    "group_agg",
    "group_by_native",
    "like",
    "like_flag",
    "substring",
]

Kind = Literal["sum", "count", "mean", "min", "max"]


@dataclass(frozen=True)
class Agg:
    """One aggregate of a group: its kind and argument (``None`` for ``count``)."""

    kind: Kind
    arg: dd.Expr | None


def agg_sum(arg: dd.Expr | str) -> Agg:
    """The signed sum of ``arg``."""
    return Agg("sum", _expr(arg))


def agg_mean(arg: dd.Expr | str) -> Agg:
    """The mean of ``arg`` (float64)."""
    return Agg("mean", _expr(arg))


def agg_min(arg: dd.Expr | str) -> Agg:
    """The least value of ``arg``."""
    return Agg("min", _expr(arg))


def agg_max(arg: dd.Expr | str) -> Agg:
    """The greatest value of ``arg``."""
    return Agg("max", _expr(arg))


def agg_count() -> Agg:
    """The number of rows (``count(*)``)."""
    return Agg("count", None)


def _expr(arg: dd.Expr | str) -> dd.Expr:
    return dd.col(arg) if isinstance(arg, str) else arg


@cache
def group_by_native() -> bool:
    """Whether the installed engine runs ``group_by(...).agg(...)`` (tried on a tiny flow)."""
    if not hasattr(dd.Collection, "group_by") or not hasattr(dd, "mean"):
        return False
    try:
        flow = dd.Dataflow(workers=1)
        session, rows = flow.new_input({"k": "int64", "x": "int64"})
        out = rows.group_by("k").agg(n=dd.count(), s=dd.sum("x")).capture()
        session.update_batch({"k": [1, 1], "x": [2, 3]}, times=0)
        session.advance_to(1)
        flow.run_until(1)
        return bool(out.at(0).to_pylist() == [{"k": 1, "n": 2, "s": 5, "diff": 1}])
    except dd.DdflowError:
        return False


def group_agg(c: dd.Collection, keys: Sequence[str], **parts: Agg) -> dd.Collection:
    """Per group of ``keys`` (none: one global group, absent over an empty collection): the
    key columns, then one column per named aggregate, in order."""
    hidden = {f"_a{i}": p.arg for i, p in enumerate(parts.values()) if p.arg is not None}
    narrow = c.select(*keys, **hidden) if keys or hidden else c.select(_g=0)
    names = {name: f"_a{i}" for i, name in enumerate(parts)}
    if group_by_native():
        native: dict[str, Any] = {
            name: dd.count() if p.kind == "count" else getattr(dd, p.kind)(names[name])
            for name, p in parts.items()
        }
        return narrow.group_by(*keys).agg(**native)
    return _group_by_reduces(narrow, list(keys), parts, names)


def _group_by_reduces(
    narrow: dd.Collection, keys: list[str], parts: dict[str, Agg], names: dict[str, str]
) -> dd.Collection:
    """:func:`group_agg` from ``reduce``: one per aggregate, joined on the keys."""
    if not keys:
        narrow = narrow.with_columns(_g=0)
        by = ["_g"]
    else:
        by = keys
    counts = narrow.select(*by).count(by=by)  # by, count
    pieces: dict[tuple[Kind, str], dd.Collection] = {}

    def piece(kind: Kind, column: str) -> dd.Collection:
        if (kind, column) not in pieces:
            agg = {"sum": dd.sum, "min": dd.min, "max": dd.max}[kind]
            pieces[(kind, column)] = narrow.select(*by, column).reduce(by, agg(column))
        return pieces[(kind, column)]

    out = counts
    exprs: dict[str, dd.Expr] = {}
    for name, p in parts.items():
        hidden = names[name]
        if p.kind == "count":
            exprs[name] = dd.col("count")
            continue
        kind: Kind = "sum" if p.kind == "mean" else p.kind
        column = f"{kind}{hidden}"
        if column not in out.columns:
            out = out.join(piece(kind, hidden).rename({hidden: column}), on=by)
        exprs[name] = dd.col(column) / dd.col("count") if p.kind == "mean" else dd.col(column)
    return out.select(*keys, **exprs)


def like(
    column: str, pattern: str, *, negate: bool = False
) -> Callable[[dict[str, Any]], np.ndarray]:
    """A batch predicate: ``column LIKE pattern`` (``NOT LIKE`` when ``negate``), as SQL."""

    def predicate(batch: dict[str, Any]) -> np.ndarray:
        values = pa.array(batch[column], type=pa.string())
        hit = pc.match_like(values, pattern)
        if negate:
            hit = pc.invert(hit)
        return np.asarray(hit.to_numpy(zero_copy_only=False), dtype=bool)

    predicate.__name__ = f"{column} {'NOT ' if negate else ''}LIKE {pattern!r}"
    return predicate


def substring(
    column: str, start: int, length: int, name: str, keep: Sequence[str]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A batch map: the ``keep`` columns and ``name = SUBSTRING(column FROM start FOR
    length)`` (1-based, as SQL)."""

    def mapper(batch: dict[str, Any]) -> dict[str, Any]:
        values = pa.array(batch[column], type=pa.string())
        cut = pc.utf8_slice_codeunits(values, start - 1, start - 1 + length)
        out = {k: batch[k] for k in keep}
        out[name] = np.asarray(cut.to_numpy(zero_copy_only=False), dtype=object)
        return out

    mapper.__name__ = f"{name} = SUBSTRING({column} FROM {start} FOR {length})"
    return mapper


def like_flag(
    column: str, pattern: str, name: str, keep: Sequence[str]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A batch map: the ``keep`` columns and ``name`` = 1 where ``column LIKE pattern``,
    else 0 (int64), for ``CASE WHEN column LIKE pattern THEN ... END``."""
    test = like(column, pattern)

    def mapper(batch: dict[str, Any]) -> dict[str, Any]:
        out = {k: batch[k] for k in keep}
        out[name] = test(batch).astype(np.int64)
        return out

    mapper.__name__ = f"{name} = {column} LIKE {pattern!r}"
    return mapper
