"""The ddflow dtypes (the physical ``int64``, ``float64``, ``bool``, ``str`` and the logical
ones: ``date32``, ``decimal128(p, s)``...) of a top-level node's columns,
read off the plan: expressions typed by the engine's binder (``_core.expr_dtype``), reduces by
their aggregate, joins as their two sides; a node the plan alone does not type (a Python
function's output, a Python reducer's) asks a fallback, which compiles it.

Used for the output schema of a key-local region's stage (``key_regions.py``), which would
otherwise compile every node of the region operator by operator just to read their types.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ddflow import _core
from ddflow.plan import (
    ArrangeOp,
    ConcatOp,
    ConsolidateOp,
    DelayOp,
    FilterOp,
    FilterPyOp,
    JoinOp,
    NegateOp,
    ReduceOp,
    ScaleOp,
    SelectOp,
)
from ddflow.spark.driver.context import RunContext

__all__ = ["PlanDtypes", "aggregate_dtypes"]

_SAME = {
    ArrangeOp.OP,
    ConcatOp.OP,
    ConsolidateOp.OP,
    DelayOp.OP,
    FilterOp.OP,
    FilterPyOp.OP,
    NegateOp.OP,
    ScaleOp.OP,
}
"""Operators whose columns are their (first) input's."""


class PlanDtypes:
    """Column dtypes of plan nodes (memoized). ``known``: dtypes given for some nodes (the
    source of a region, from its DataFrame); ``fallback``: the dtypes of a node the plan
    does not type."""

    def __init__(
        self,
        ctx: RunContext,
        known: dict[int, list[str]],
        fallback: Callable[[int], list[str]],
    ) -> None:
        self.ctx = ctx
        self.memo = dict(known)
        self.fallback = fallback

    def of(self, n: int) -> list[str]:
        """Node ``n``'s column dtypes, in its column order."""
        if n not in self.memo:
            self.memo[n] = self._infer(n)
        return self.memo[n]

    def _infer(self, n: int) -> list[str]:
        ctx = self.ctx
        node = ctx.nodes[n]
        op = node["op"]
        inputs = ctx.inputs(n)
        if op in _SAME:
            return self.of(inputs[0])
        if op == SelectOp.OP:
            schema = list(zip(ctx.columns(inputs[0]), self.of(inputs[0]), strict=True))
            return [
                str(_core.expr_dtype(json.dumps(e, separators=(",", ":")), schema))
                for e in node["exprs"]
            ]
        if op == JoinOp.OP and node.get("kind", "join") == "join":
            left, right = (ctx.nodes[i] for i in inputs)
            lt, rt = self.of(inputs[0]), self.of(inputs[1])
            lkey, rkey = list(left["key"]), list(right["key"])
            return (
                [lt[k] for k in lkey]
                + [t for i, t in enumerate(lt) if i not in lkey]
                + [t for i, t in enumerate(rt) if i not in rkey]
            )
        if op == ReduceOp.OP:
            return self._reduce(n) or self.fallback(n)
        return self.fallback(n)

    def _reduce(self, n: int) -> list[str] | None:
        ctx = self.ctx
        arr = ctx.nodes[ctx.inputs(n)[0]]
        types = self.of(ctx.inputs(n)[0])
        key = list(arr["key"])
        keys = [types[k] for k in key]
        vals = [t for i, t in enumerate(types) if i not in key]
        return aggregate_dtypes(ctx.nodes[n]["agg"], keys, vals)


def _sum_dtype(dtype: str) -> str:
    """The dtype of a ``sum``: int64 of any integer, float64 of a float, decimal128(38, s)
    of a decimal (the engine's rule)."""
    if dtype.startswith("decimal128("):
        return f"decimal128(38, {int(dtype[:-1].split(',')[1])})"
    if dtype.startswith("float"):
        return "float64"
    return "int64" if dtype.startswith(("int", "uint")) else dtype


def _mean_dtype(dtype: str) -> str:
    """The dtype of a ``mean``: decimal128(38, s + 4) of a decimal, else float64."""
    if dtype.startswith("decimal128("):
        return f"decimal128(38, {int(dtype[:-1].split(',')[1]) + 4})"
    return "float64"


def aggregate_dtypes(agg: dict[str, Any], keys: list[str], vals: list[str]) -> list[str] | None:
    """A reduce's output dtypes (``keys``, then the aggregate's) for aggregate JSON ``agg``
    over value columns of dtypes ``vals``; None for a Python reducer (not typed by the plan)."""
    kind = agg["kind"]
    if kind == "count":
        return keys + ["int64"]
    if kind in ("min", "max"):
        return keys + [vals[int(agg["column"])]]
    if kind == "sum":
        return keys + [_sum_dtype(vals[int(agg["column"])])]
    if kind in ("distinct", "top_k", "threshold_py"):
        return keys + vals
    if kind == "group":
        out = []
        for part in agg["aggs"]:
            what = part["kind"]
            if what in ("count", "count_distinct"):
                out.append("int64")
            elif what == "mean":
                out.append(_mean_dtype(vals[int(part["column"])]))
            elif what == "sum":
                out.append(_sum_dtype(vals[int(part["column"])]))
            else:
                out.append(vals[int(part["column"])])
        return keys + out
    return None
