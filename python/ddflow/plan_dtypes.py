"""Column dtypes read off a plan, before any data: the one static typing of plan nodes.

Constants are typed by their declared dtypes, expressions by the engine's binder
(``_core.expr_dtype``), reduces by their aggregate (:func:`aggregate_dtypes`: the engine's
rules), joins as their two sides, and the operators that pass their input on as that input.
What the plan alone does not type (an input's undeclared columns, a Python function's
output, a Python reducer's) comes from
``known``: the dtypes data has fixed so far (an input's), and for the Spark backend from
``fallback``, which compiles the node to read its types.

Used by captures with no update yet (an empty result still has its Arrow types) and by the
Spark driver for the output schema of a key-local region's stage.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ddflow import _core
from ddflow.errors import DdflowError

__all__ = ["PlanDtypes", "aggregate_dtypes"]

_SAME = {
    "arrange",
    "concat",
    "consolidate",
    "delay",
    "filter",
    "filter_py",
    "negate",
    "scale",
    "enter",
    "enter_arrangement",
    "leave",
    "variable",
    "advance_iteration",
    "inspect_py",
    "capture",
    "probe",
}
"""Operators whose columns are their (first) input's, in the same order (an ``arrange``
node's columns are written key first in the plan, and so are its dtypes here)."""

Dtypes = list[str | None]
"""One dtype name per column; ``None`` where it is not known."""


class PlanDtypes:
    """Column dtypes of the nodes of plan JSON ``nodes`` (memoized). ``known(n)``: the dtypes
    of node ``n`` known without the plan (``None`` where not; cheap, asked first);
    ``fallback(n)``: the dtypes of a node the plan leaves untyped (asked last)."""

    def __init__(
        self,
        nodes: Sequence[dict[str, Any]],
        known: Callable[[int], Sequence[str | None]],
        fallback: Callable[[int], Sequence[str | None]] | None = None,
    ) -> None:
        self.nodes = nodes
        self.known = known
        self.fallback = fallback
        self.memo: dict[int, Dtypes] = {}

    def of(self, n: int) -> Dtypes:
        """Node ``n``'s column dtypes, in its column order."""
        if n not in self.memo:
            width = len(self.nodes[n]["columns"])
            self.memo[n] = [None] * width  # a loop variable reads itself: unknown meanwhile
            types = _fill(list(self.known(n)), width)
            if None in types:
                types = _merge(types, self._infer(n))
            if None in types and self.fallback is not None:
                types = _merge(types, _fill(list(self.fallback(n)), width))
            self.memo[n] = types
        return self.memo[n]

    def _infer(self, n: int) -> Dtypes:
        node = self.nodes[n]
        op = node["op"]
        inputs = list(node["inputs"])
        width = len(node["columns"])
        unknown: Dtypes = [None] * width
        if op == "constant":
            return _fill(list(node["dtypes"]), width)
        if op == "arrange" and inputs:
            types = self.of(inputs[0])
            key = list(node["key"])
            return [types[k] for k in key] + [t for i, t in enumerate(types) if i not in key]
        if op in _SAME and inputs:
            return self.of(inputs[0])[:width]
        if op == "watermark" and inputs:
            port = 1 if node["emit"] in ("closed", "expire") else 0
            return self.of(inputs[port])[:width]
        if op == "select" and inputs:
            schema = list(zip(self.nodes[inputs[0]]["columns"], self.of(inputs[0]), strict=True))
            known = [(c, t) for c, t in schema if t is not None]
            return [_expr_dtype(e, known) for e in node["exprs"]]
        if op == "join" and len(inputs) == 2:
            left, right = self.of(inputs[0]), self.of(inputs[1])
            if node.get("kind", "join") != "join":
                return left
            kw = len(self.nodes[inputs[0]].get("key", []))
            return left + right[kw:]
        if op == "reduce" and inputs:
            arr = self.nodes[inputs[0]]
            types = self.of(inputs[0])
            kw = len(arr.get("key", []))
            return aggregate_dtypes(node["agg"], types[:kw], types[kw:]) or unknown
        return unknown


def _fill(types: Dtypes, width: int) -> Dtypes:
    """``types`` cut or padded with ``None`` to ``width``."""
    return (types + [None] * width)[:width]


def _merge(first: Dtypes, then: Dtypes) -> Dtypes:
    """Per column the dtype of ``first``, else of ``then``."""
    return [a if a is not None else b for a, b in zip(first, then, strict=False)]


def _expr_dtype(expr: Any, schema: list[tuple[str, str]]) -> str | None:
    """The dtype of expression JSON ``expr`` over the typed columns ``schema``, or None when
    it reads a column of unknown dtype (or does not bind)."""
    try:
        return str(_core.expr_dtype(json.dumps(expr, separators=(",", ":")), schema))
    except DdflowError:
        return None


def _sum_dtype(dtype: str | None) -> str | None:
    """The dtype of a ``sum``: int64 of any integer, float64 of a float, decimal128(38, s)
    of a decimal (the engine's rule)."""
    if dtype is None:
        return None
    if dtype.startswith("decimal128("):
        return f"decimal128(38, {int(dtype[:-1].split(',')[1])})"
    if dtype.startswith("float"):
        return "float64"
    return "int64" if dtype.startswith(("int", "uint")) else dtype


def _mean_dtype(dtype: str | None) -> str | None:
    """The dtype of a ``mean``: decimal128(38, s + 4) of a decimal, else float64."""
    if dtype is None:
        return None
    if dtype.startswith("decimal128("):
        return f"decimal128(38, {int(dtype[:-1].split(',')[1]) + 4})"
    return "float64"


def aggregate_dtypes(agg: dict[str, Any], keys: Dtypes, vals: Dtypes) -> Dtypes | None:
    """A reduce's output dtypes (``keys``, then the aggregate's) for aggregate JSON ``agg``
    over value columns of dtypes ``vals``; None for a Python reducer (not typed by the plan)."""
    kind = agg["kind"]
    if kind == "count":
        return [*keys, "int64"]
    if kind in ("min", "max"):
        return [*keys, vals[int(agg["column"])]]
    if kind == "sum":
        return [*keys, _sum_dtype(vals[int(agg["column"])])]
    if kind in ("distinct", "top_k", "threshold_py"):
        return keys + vals
    if kind == "rank":
        return keys + vals + (["int64"] if agg.get("emit") else [])
    if kind == "group":
        out: Dtypes = []
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
