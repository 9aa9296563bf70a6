"""Key-local regions of a top-level plan: where several keyed operators (reduces, joins) all
group by the same columns of one source node, the source is hash-partitioned by those columns
once and the whole region runs as ONE ``mapInArrow`` stage, the embedded engine on each
partition's whole history (``tasks/local_plan.py``).

Why: a Spark equi-join of two update histories emits, per key, every pair of updates (their
product at the later time). A TPC-H Q1-shaped plan (eight aggregates by separate reduces of
one input, joined back by seven chained joins on the group key) has a few groups whose
aggregates change at nearly every time, so each join of two reduce outputs pairs
``(2 T)^2`` updates per group for ``T`` times, even with each join's output consolidated. The
engine's join walks both histories in time order with the other side compacted, linear in the
updates; and one stage instead of eight reduce stages shuffles the source once.

A keyed operator's *origin* is the source node and columns its key columns come from, traced
up through operators that pass a column unchanged (a ``select`` of plain column references,
``filter``, ``negate``, ``scale``, ``consolidate``, ``delay``, ``arrange``) and through reduces
and joins whose keys hold them. Operators with the same origin form a region with the nodes
between them and the source; hash-partitioning the source by the origin columns puts every
key of every keyed operator of the region in one partition. A region runs fused when it has
at least two keyed operators and one exit (the one node read outside it, or an output; a
collection: Spark would run the stage once per exit read), and errors are not collected
(``errors="collect"`` takes the operator-by-operator path).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ddflow.errors import PlanError
from ddflow.logical_types import arrow_type
from ddflow.plan import (
    ArrangeOp,
    CaptureOp,
    ConcatOp,
    ConsolidateOp,
    DelayOp,
    FilterOp,
    FilterPyOp,
    InputOp,
    JoinOp,
    NegateOp,
    ReduceOp,
    ScaleOp,
    SelectOp,
)
from ddflow.plan_dtypes import PlanDtypes
from ddflow.spark.driver.context import RunContext
from ddflow.spark.driver.schemas import dtype_of_spark, map_in_arrow, spark_of_arrow, time_fields
from ddflow.spark.tasks.batches import ccol
from ddflow.spark.tasks.local_plan import LocalPlanSpec, run_local_plan

__all__ = ["Region", "KeyRegions"]

_PASS_COLUMNS = {
    FilterOp.OP,
    FilterPyOp.OP,
    NegateOp.OP,
    ScaleOp.OP,
    ConsolidateOp.OP,
    DelayOp.OP,
    ArrangeOp.OP,
}
"""Operators whose output rows are input rows, columns unchanged."""
_ROW_LOCAL = _PASS_COLUMNS | {SelectOp.OP, ConcatOp.OP}
"""Operators that keep every output row in its input row's partition (Python map functions
are left out: they may make nulls of rows without, which the stage's fast output path does
not read)."""

Origin = tuple[int, tuple[int, ...]]
"""A source node and its columns."""


def _null_literal(node: Any) -> bool:
    """Whether plan JSON ``node`` holds a null literal anywhere (a region's stage reads the
    engine's output by the fast path when its input has no nulls)."""
    if isinstance(node, dict):
        if node.get("op") == "lit" and node.get("value") is None:
            return True
        return any(_null_literal(v) for v in node.values())
    if isinstance(node, list):
        return any(_null_literal(v) for v in node)
    return False


@dataclass
class Region:
    """A key-local region: its source, partition columns, nodes and exit."""

    source: int
    columns: tuple[int, ...]
    """The source's columns the region partitions by."""
    nodes: list[int]
    """The region's nodes, in plan order (inputs first)."""
    exit: int
    """The one node of the region read outside it (or an output)."""


class KeyRegions:
    """Finds a run's key-local regions and builds their stages."""

    def __init__(self, ctx: RunContext, outputs: list[int], enabled: bool = True) -> None:
        self.ctx = ctx
        self._by_exit: dict[int, Region] = {}
        if enabled and not ctx.collect:
            for region in self._find(outputs):
                self._by_exit[region.exit] = region

    # -- detection -----------------------------------------------------------------------------

    def _top_level(self, n: int) -> bool:
        return self.ctx.plan.scopes[self.ctx.nodes[n]["scope"]].parent is None

    def _trace(self, n: int, cols: tuple[int, ...]) -> Origin:
        """The topmost node and columns that node ``n``'s columns ``cols`` come from unchanged
        (``n`` and ``cols`` themselves when they come from nowhere further)."""
        ctx = self.ctx
        node = ctx.nodes[n]
        op = node["op"]
        if not self._top_level(n):
            return n, cols
        if op in _PASS_COLUMNS:
            return self._trace(node["inputs"][0], cols)
        if op == SelectOp.OP:
            src = node["inputs"][0]
            names = ctx.columns(src)
            picked = []
            for c in cols:
                e = node["exprs"][c]
                if e.get("op") != "col" or e.get("name") not in names:
                    return n, cols
                picked.append(names.index(e["name"]))
            return self._trace(src, tuple(picked))
        keyed = self._keyed_origin(n)
        if keyed is not None and all(c < len(keyed[1]) for c in cols):
            return keyed[0], tuple(keyed[1][c] for c in cols)
        return n, cols

    def _arranged_origin(self, arr: int) -> Origin | None:
        node = self.ctx.nodes[arr]
        if node["op"] != ArrangeOp.OP or not self._top_level(arr):
            return None
        return self._trace(node["inputs"][0], tuple(int(k) for k in node["key"]))

    @functools.cache  # noqa: B019 -- one KeyRegions per run
    def _keyed_origin(self, n: int) -> Origin | None:
        """The origin of keyed node ``n``'s key columns (None: not a keyed node, or a join
        whose two sides' keys come from different places)."""
        node = self.ctx.nodes[n]
        if not self._top_level(n):
            return None
        if node["op"] == ReduceOp.OP:
            return self._arranged_origin(node["inputs"][0])
        if node["op"] == JoinOp.OP and node.get("kind", "join") == "join":
            left, right = (self._arranged_origin(i) for i in node["inputs"])
            return left if left is not None and left == right else None
        return None

    def _find(self, outputs: list[int]) -> list[Region]:
        ctx = self.ctx
        needed = sorted(ctx.needed)
        groups: dict[Origin, list[int]] = {}
        for n in needed:
            origin = self._keyed_origin(n)
            if origin is not None and len(set(origin[1])) == len(origin[1]):
                src, cols = origin
                groups.setdefault((src, tuple(sorted(cols))), []).append(n)
        consumers: dict[int, list[int]] = {}
        for n in needed:
            for i in ctx.inputs(n):
                consumers.setdefault(i, []).append(n)
        regions = []
        for (src, cols), keyed in groups.items():
            region = self._region(src, cols, keyed, consumers, set(outputs))
            if region is not None:
                regions.append(region)
        return regions

    def _region(
        self,
        src: int,
        cols: tuple[int, ...],
        keyed: list[int],
        consumers: dict[int, list[int]],
        outputs: set[int],
    ) -> Region | None:
        ctx = self.ctx
        memo: dict[int, bool] = {}

        def local(n: int) -> bool:
            """Whether node ``n`` can run inside the region partitioned by ``cols`` of src."""
            if n == src:
                return True
            if n in memo:
                return memo[n]
            memo[n] = False
            node = ctx.nodes[n]
            ok = self._top_level(n) and node["op"] in _ROW_LOCAL
            if node["op"] in (ReduceOp.OP, JoinOp.OP):
                origin = self._keyed_origin(n)
                ok = origin is not None and origin[0] == src and set(cols) <= set(origin[1])
            ok = ok and all(local(i) for i in ctx.inputs(n))
            memo[n] = ok
            return ok

        members: set[int] = set()

        def collect(n: int) -> None:
            if n == src or n in members:
                return
            members.add(n)
            for i in ctx.inputs(n):
                collect(i)

        kept = [n for n in keyed if local(n)]
        for n in kept:
            collect(n)
        keyed_members = [
            n for n in sorted(members) if ctx.nodes[n]["op"] in (ReduceOp.OP, JoinOp.OP)
        ]
        if len(keyed_members) < 2:
            return None
        exits = [
            n
            for n in sorted(members)
            if n in outputs or any(c not in members for c in consumers.get(n, []))
        ]
        if len(exits) != 1 or ctx.nodes[exits[0]]["op"] == ArrangeOp.OP:
            return None
        if any(_null_literal(ctx.nodes[n]) for n in members):
            return None
        return Region(src, cols, sorted(members), exits[0])

    # -- stages --------------------------------------------------------------------------------

    def region_of(self, n: int) -> Region | None:
        """The fused region whose exit ``n`` is (None: ``n`` runs on its own)."""
        return self._by_exit.get(n)

    def frame(
        self,
        n: int,
        top: Callable[[int], DataFrame],
        general_schema: Callable[[int], T.StructType],
    ) -> DataFrame:
        """Exit ``n`` of its region as an update DataFrame: the region's one stage.
        ``top``: a node's DataFrame (for the source); ``general_schema``: a node's schema on
        the operator-by-operator path (for exit column types the plan does not give,
        ``plan_dtypes.py``)."""
        ctx = self.ctx
        region = self._by_exit[n]
        source = top(region.source)
        in_names = tuple(ccol(i) for i in range(len(ctx.columns(region.source))))
        known = {region.source: [dtype_of_spark(source.schema[c].dataType) for c in in_names]}

        def compiled(x: int) -> list[str]:
            schema = general_schema(x)
            return [dtype_of_spark(schema[ccol(j)].dataType) for j in range(len(ctx.columns(x)))]

        typed = PlanDtypes(ctx.nodes, lambda x: known.get(x, []), compiled).of(n)
        untyped = [j for j, t in enumerate(typed) if t is None]
        if untyped:
            raise PlanError(f"{ctx.label(n)}: no dtype for output columns {untyped}")
        out_types = tuple(arrow_type(t) for t in typed if t is not None)
        fields = [
            T.StructField(ccol(j), spark_of_arrow(t, f"{ctx.label(n)}, column {j}"), True)
            for j, t in enumerate(out_types)
        ]
        label = f"key-local region of {len(region.nodes)} nodes over #{region.source}"
        spec = LocalPlanSpec(
            label=label,
            plan_json=self._sub_plan(region),
            in_names=in_names,
            out_names=tuple(ctx.columns(n)),
            capture=len(region.nodes) + 1,
            out_types=out_types,
            dims=ctx.dims,
        )
        keys = [ccol(c) for c in region.columns]
        for m in region.nodes:
            ctx.note(
                m,
                f"{label} (partitioned by its columns {list(region.columns)}, exit #{n}): "
                f"the engine's operators in one mapInArrow stage",
            )
        fn = functools.partial(run_local_plan, spec, ctx.fns)
        partitioned = source.repartition(ctx.partitions, *keys)
        return map_in_arrow(partitioned, fn, T.StructType(fields + time_fields(ctx.dims)))

    def _sub_plan(self, region: Region) -> str:
        """The region as a plan: input node 0 for the source, its nodes, a capture of its
        exit (the last node)."""
        ctx = self.ctx
        ids = {region.source: 0}
        nodes: list[dict[str, Any]] = [
            {
                "id": 0,
                "op": InputOp.OP,
                "scope": 0,
                "inputs": [],
                "columns": ctx.columns(region.source),
                "label": f"{ctx.label(region.source)} (Spark partition input)",
                "name": "partition",
            }
        ]
        for n in region.nodes:
            ids[n] = len(nodes)
            node = dict(ctx.nodes[n])
            node.update(id=ids[n], scope=0, inputs=[ids[i] for i in ctx.inputs(n)])
            nodes.append(node)
        x = region.exit
        nodes.append(
            {
                "id": len(nodes),
                "op": CaptureOp.OP,
                "scope": 0,
                "inputs": [ids[x]],
                "columns": ctx.columns(x),
                "label": f"{ctx.label(x)} (capture)",
            }
        )
        plan = {
            "version": 1,
            "time_dims": ctx.dims,
            "scopes": [{"id": 0, "parent": None}],
            "nodes": nodes,
        }
        return json.dumps(plan, separators=(",", ":"))
