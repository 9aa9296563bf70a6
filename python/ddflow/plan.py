"""The dataflow plan as plain data: nodes, scopes, validation and the ``explain()`` text.

The plan is the contract with the engine (``rust/ddflow-core/src/engine/PLAN.md``): a list of
scopes and a list of operator nodes, each a JSON-able dict with ``id``, ``op``, ``scope``,
``inputs``, ``columns``, ``label`` and its own fields. Each operator kind's own fields are one
frozen dataclass below (:class:`SelectOp`, :class:`JoinOp`, ...), mirroring the engine's
``plan::Op``; :meth:`Plan.add` takes one of them. :class:`Plan` appends nodes, keeps the caches
that let operators share arrangements and ``enter`` nodes, checks structure, and prints itself
readably. It knows nothing about the engine.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from typing import Any, ClassVar, Literal, NotRequired, TypedDict

from ddflow.errors import PlanError

__all__ = [
    "Plan",
    "Scope",
    "PlanText",
    "user_location",
    "ARRANGEMENT_OPS",
    "PLAN_VERSION",
    "OpSpec",
    "InputOp",
    "ConstantOp",
    "SelectOp",
    "FilterOp",
    "MapPyOp",
    "FlatMapPyOp",
    "FilterPyOp",
    "ConcatOp",
    "NegateOp",
    "ScaleOp",
    "ConsolidateOp",
    "AdvanceIterationOp",
    "DelayOp",
    "ArrangeOp",
    "JoinOp",
    "ReduceOp",
    "EnterOp",
    "EnterArrangementOp",
    "ImportTraceOp",
    "VariableOp",
    "LeaveOp",
    "InspectPyOp",
    "CaptureOp",
    "ProbeOp",
    "WatermarkOp",
    "TemporalFilterOp",
    "TimeBoundJson",
    "python_op",
]

PLAN_VERSION = 1
"""The plan format version written into every plan."""

ARRANGEMENT_OPS = frozenset({"arrange", "enter_arrangement", "import_trace"})
"""Operators whose output is an arrangement (valid inputs of join / reduce only)."""

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_USER_SUBPACKAGES = tuple(
    os.path.join(_PACKAGE_DIR, sub) + os.sep for sub in ("algorithms", "examples")
)


def user_location() -> str:
    """``file.py:line`` of the innermost caller outside ddflow's own API modules.

    Frames in ``ddflow.algorithms`` and ``ddflow.examples`` count as user code, so their
    operators are labelled with the algorithm's own line.
    """
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        inside = path.startswith(_PACKAGE_DIR + os.sep) and not path.startswith(_USER_SUBPACKAGES)
        if not inside:
            return f"{os.path.basename(path)}:{frame.f_lineno}"
        frame = frame.f_back  # type: ignore[assignment]
    return "<unknown>"


# -- operator kinds: one class per ``op`` of PLAN.md, holding that operator's own fields --------

ExprJson = dict[str, Any]
"""An expression as plan JSON (``Expr.to_json()``)."""

JoinKind = Literal["join", "semijoin", "antijoin"]
"""The flavours of ``join``."""

# -- reduce aggregates: one TypedDict per ``kind`` of PLAN.md (``engine::plan::Agg``) --------


class ColumnAgg(TypedDict):
    """``min`` / ``max`` / ``sum`` of value column ``column`` (an index among the values)."""

    kind: Literal["min", "max", "sum"]
    column: int


class CountAgg(TypedDict):
    """The signed sum of counts."""

    kind: Literal["count"]


class DistinctAgg(TypedDict):
    """Each distinct value row with positive count, once."""

    kind: Literal["distinct"]


class TopKAgg(TypedDict):
    """The ``k`` least (greatest when ``descending``) value rows by value column ``column``."""

    kind: Literal["top_k"]
    k: int
    column: int
    descending: bool


class RankSortKey(TypedDict):
    """One key of a ``rank`` aggregate's order: a value column index."""

    column: int
    descending: bool
    nulls_first: bool


class RankAgg(TypedDict):
    """SQL's ``ROW_NUMBER`` / ``RANK`` / ``DENSE_RANK`` of the value rows by ``order``, the
    rows ranked ``min_rank``..``max_rank`` kept (with the rank as a last column when
    ``emit``)."""

    kind: Literal["rank"]
    order: list[RankSortKey]
    function: Literal["row_number", "rank", "dense_rank"]
    min_rank: int
    max_rank: NotRequired[int]
    emit: bool


class ThresholdAgg(TypedDict):
    """Output count ``fn(count)`` per value row (a registered Python function)."""

    kind: Literal["threshold_py"]
    fn: int


class PythonAgg(TypedDict):
    """A registered Python reducer writing ``columns`` columns, called per batch of keys."""

    kind: Literal["python"]
    fn: int
    columns: int


class GroupColumnPart(TypedDict):
    """A part of a ``group`` aggregate reading value column ``column``; ``name`` is its
    output column (for messages)."""

    kind: Literal["sum", "mean", "min", "max", "count_distinct"]
    column: int
    name: str


class _GroupCountRequired(TypedDict):
    """The required keys of :class:`GroupCountPart`."""

    kind: Literal["count"]
    name: str


class GroupCountPart(_GroupCountRequired, total=False):
    """The ``count`` part of a ``group`` aggregate; ``name`` is its output column; with
    ``column`` (a value column index) it counts the rows where that column is not null."""

    column: int


class GroupAgg(TypedDict):
    """Several one-row aggregates per key, one output column each, in one row."""

    kind: Literal["group"]
    aggs: list[GroupColumnPart | GroupCountPart]


AggJson = (
    ColumnAgg | CountAgg | DistinctAgg | TopKAgg | RankAgg | ThresholdAgg | PythonAgg | GroupAgg
)
"""A ``reduce`` aggregate as plan JSON (``{"kind": ..., ...}``, see PLAN.md)."""

AGG_KINDS: dict[str, type] = {
    "min": ColumnAgg,
    "max": ColumnAgg,
    "sum": ColumnAgg,
    "count": CountAgg,
    "distinct": DistinctAgg,
    "top_k": TopKAgg,
    "rank": RankAgg,
    "threshold_py": ThresholdAgg,
    "python": PythonAgg,
    "group": GroupAgg,
}
"""The TypedDict of each aggregate ``kind``."""


@dataclass(frozen=True)
class OpSpec:
    """An operator kind and its own fields; ``OP`` is its ``op`` in the plan JSON."""

    OP: ClassVar[str]

    def fields(self) -> dict[str, Any]:
        """The operator's own fields as plan JSON."""
        return {f.name: getattr(self, f.name) for f in dataclass_fields(self)}


@dataclass(frozen=True)
class InputOp(OpSpec):
    """An input (``Dataflow.new_input``)."""

    OP: ClassVar[str] = "input"
    name: str


@dataclass(frozen=True)
class ConstantOp(OpSpec):
    """A constant collection (``Dataflow.constant``): ``rows`` of JSON values typed by
    ``dtypes`` (as literals are), each at the least time with diff +1."""

    OP: ClassVar[str] = "constant"
    rows: list[list[Any]]
    dtypes: list[str]


@dataclass(frozen=True)
class SelectOp(OpSpec):
    """One expression per output column."""

    OP: ClassVar[str] = "select"
    exprs: list[ExprJson]


@dataclass(frozen=True)
class FilterOp(OpSpec):
    """Rows where a bool expression holds."""

    OP: ClassVar[str] = "filter"
    predicate: ExprJson


@dataclass(frozen=True)
class MapPyOp(OpSpec):
    """A Python function from columns to columns (callback id ``fn``)."""

    OP: ClassVar[str] = "map_py"
    fn: int


@dataclass(frozen=True)
class FlatMapPyOp(OpSpec):
    """A Python function returning any number of rows per input row."""

    OP: ClassVar[str] = "flat_map_py"
    fn: int


@dataclass(frozen=True)
class FilterPyOp(OpSpec):
    """A Python function returning a mask of rows to keep."""

    OP: ClassVar[str] = "filter_py"
    fn: int


@dataclass(frozen=True)
class ConcatOp(OpSpec):
    """The union of the inputs."""

    OP: ClassVar[str] = "concat"


@dataclass(frozen=True)
class NegateOp(OpSpec):
    """Every diff negated."""

    OP: ClassVar[str] = "negate"


@dataclass(frozen=True)
class ScaleOp(OpSpec):
    """Every diff multiplied by ``factor``."""

    OP: ClassVar[str] = "scale"
    factor: int


@dataclass(frozen=True)
class ConsolidateOp(OpSpec):
    """Updates summed per (row, time) once their times complete."""

    OP: ClassVar[str] = "consolidate"


@dataclass(frozen=True)
class AdvanceIterationOp(OpSpec):
    """The iteration coordinate moved to ``max(current, expr(row))``."""

    OP: ClassVar[str] = "advance_iteration"
    expr: ExprJson


@dataclass(frozen=True)
class DelayOp(OpSpec):
    """Updates held per distinct time until complete."""

    OP: ClassVar[str] = "delay"


@dataclass(frozen=True)
class ArrangeOp(OpSpec):
    """An arrangement by the input columns ``key`` (indices)."""

    OP: ClassVar[str] = "arrange"
    key: list[int]


@dataclass(frozen=True)
class JoinOp(OpSpec):
    """A join of two arrangements."""

    OP: ClassVar[str] = "join"
    kind: JoinKind = "join"
    nulls_equal: bool = False
    """Whether null keys match each other (SQL, the default: a null key never matches)."""

    def fields(self) -> dict[str, Any]:
        """``kind``, and ``nulls_equal`` only when set."""
        out = super().fields()
        if not self.nulls_equal:
            del out["nulls_equal"]
        return out


@dataclass(frozen=True)
class ReduceOp(OpSpec):
    """An aggregate per key of an arrangement."""

    OP: ClassVar[str] = "reduce"
    agg: AggJson


@dataclass(frozen=True)
class EnterOp(OpSpec):
    """A collection of the enclosing scope, entered at iteration 0."""

    OP: ClassVar[str] = "enter"


@dataclass(frozen=True)
class EnterArrangementOp(OpSpec):
    """An arrangement of the enclosing scope, entered without a copy."""

    OP: ClassVar[str] = "enter_arrangement"


@dataclass(frozen=True)
class ImportTraceOp(OpSpec):
    """Another dataflow's top-level arrangement (node ``source`` of its engine)."""

    OP: ClassVar[str] = "import_trace"
    source: int


@dataclass(frozen=True)
class VariableOp(OpSpec):
    """An iterate's loop variable; ``result`` is set once the body is built."""

    OP: ClassVar[str] = "variable"
    result: int | None = None


@dataclass(frozen=True)
class LeaveOp(OpSpec):
    """An iterate's result seen outside it."""

    OP: ClassVar[str] = "leave"


@dataclass(frozen=True)
class WatermarkOp(OpSpec):
    """Event time (``ddflow.event_time``): input 0 split by a watermark (its greatest
    inserted int64 ``column`` minus ``lateness``) into its on-time (``emit="on_time"``) or
    late (``"late"``) updates, or input 1's updates released once the watermark passes their
    ``probe_column`` (``"closed"``; ``"expire"``: negated, one time later)."""

    OP: ClassVar[str] = "watermark"
    column: int
    lateness: int
    emit: str
    probe_column: int


class TimeBoundJson(TypedDict):
    """One comparison with ``now()`` of a temporal filter: ``expr`` over the record's columns,
    and whether the comparison is strict (``now > expr`` / ``now < expr``)."""

    expr: ExprJson
    strict: bool


@dataclass(frozen=True)
class TemporalFilterOp(OpSpec):
    """``dd.now()`` in a filter (``ddflow.temporal``): each record kept while the logical
    time lies between its ``lower`` bounds (``now >= x``, strict ``now > x``) and its
    ``upper`` bounds (``now < x`` strict, ``now <= x``); the engine inserts it at the start of
    that interval and retracts it at the end."""

    OP: ClassVar[str] = "temporal_filter"
    lower: list[TimeBoundJson]
    upper: list[TimeBoundJson]


@dataclass(frozen=True)
class InspectPyOp(OpSpec):
    """A Python function called with each batch; the data passes through."""

    OP: ClassVar[str] = "inspect_py"
    fn: int
    batch: bool = True


@dataclass(frozen=True)
class CaptureOp(OpSpec):
    """Output kept for ``updates()`` / ``at()`` / subscribers."""

    OP: ClassVar[str] = "capture"


@dataclass(frozen=True)
class ProbeOp(OpSpec):
    """No output; its frontier answers ``probe.done(t)``."""

    OP: ClassVar[str] = "probe"


def python_op(kind: str, fn: int) -> OpSpec:
    """The operator of a Python callback kind (``map_py``, ``flat_map_py``, ``filter_py``)."""
    kinds: dict[str, type[MapPyOp] | type[FlatMapPyOp] | type[FilterPyOp]] = {
        "map_py": MapPyOp,
        "flat_map_py": FlatMapPyOp,
        "filter_py": FilterPyOp,
    }
    return kinds[kind](fn)


class PlanText(str):
    """The text of ``explain()``: a ``str`` that shows itself unquoted in a REPL."""

    def __repr__(self) -> str:
        return str(self)


@dataclass
class Scope:
    """A scope: the top level (id 0) or the body of one ``iterate``."""

    id: int
    parent: int | None
    max_iterations: int | None = None
    label: str = ""
    open: bool = True

    def to_json(self) -> dict[str, Any]:
        """The scope as plan JSON."""
        out: dict[str, Any] = {"id": self.id, "parent": self.parent}
        if self.parent is not None:
            out["max_iterations"] = self.max_iterations
        return out


class Plan:
    """A growing dataflow plan: scopes, nodes and the caches that let operators share nodes."""

    def __init__(self) -> None:
        """An empty plan with only the top-level scope."""
        self.nodes: list[dict[str, Any]] = []
        self.scopes: list[Scope] = [Scope(0, None, label="top level")]
        self.notes: dict[int, list[str]] = {}
        """Per node, human-readable argument texts for ``explain()`` (not part of the JSON)."""
        self._cache: dict[tuple[Any, ...], int] = {}
        self.frozen = False
        """Set when the dataflow starts (first data or run): no more nodes may be added."""

    # -- building ---------------------------------------------------------------------------

    def add(
        self,
        spec: OpSpec,
        scope: int,
        inputs: Sequence[int],
        columns: Sequence[str],
        label: str,
        notes: Sequence[str] = (),
    ) -> int:
        """Appends a node running ``spec`` and returns its id. Checks scope openness, inputs
        and columns."""
        self.check_building(label)
        if not self.scopes[scope].open:
            raise PlanError(
                f"{label}: uses a collection from inside a finished iterate body "
                f"({self.scopes[scope].label}); use the collection that iterate() returns"
            )
        for i in inputs:
            if not 0 <= i < len(self.nodes):
                raise PlanError(f"{label}: input node {i} does not exist")
        if len(set(columns)) != len(columns):
            dup = sorted({c for c in columns if list(columns).count(c) > 1})
            raise PlanError(f"{label}: duplicate output column names {dup}")
        node_id = len(self.nodes)
        node: dict[str, Any] = {
            "id": node_id,
            "op": spec.OP,
            "scope": scope,
            "inputs": list(inputs),
            "columns": list(columns),
            "label": label,
        }
        node.update(spec.fields())
        self.nodes.append(node)
        if notes:
            self.notes[node_id] = list(notes)
        return node_id

    def check_building(self, label: str) -> None:
        """Raises ``PlanError`` once the dataflow has started."""
        if self.frozen:
            raise PlanError(
                f"{label}: the dataflow has already received data or run; add every operator "
                f"before feeding inputs or running"
            )

    def new_scope(self, parent: int, max_iterations: int | None, label: str) -> int:
        """Opens a child scope of ``parent`` (an ``iterate`` body) and returns its id."""
        if not self.scopes[parent].open:
            raise PlanError(f"{label}: the enclosing iterate body has finished")
        scope_id = len(self.scopes)
        self.scopes.append(Scope(scope_id, parent, max_iterations, label=label))
        return scope_id

    def close_scope(self, scope: int) -> None:
        """Marks an iterate body finished: no more nodes may be added to it."""
        self.scopes[scope].open = False

    def cached(self, key: tuple[Any, ...]) -> int | None:
        """A node built earlier for the same purpose (an arrange or enter), if any."""
        return self._cache.get(key)

    def remember(self, key: tuple[Any, ...], node: int) -> None:
        """Records a node for reuse by later operators asking for the same ``key``."""
        self._cache[key] = node

    def mark(self) -> tuple[int, int]:
        """A rollback point: the current numbers of nodes and scopes."""
        return len(self.nodes), len(self.scopes)

    def rollback(self, mark: tuple[int, int]) -> None:
        """Drops every node and scope added after ``mark`` (a failed multi-node operator)."""
        n_nodes, n_scopes = mark
        del self.nodes[n_nodes:]
        del self.scopes[n_scopes:]
        self.notes = {k: v for k, v in self.notes.items() if k < n_nodes}
        self._cache = {
            k: v for k, v in self._cache.items() if v < n_nodes and _scopes_of(k) < n_scopes
        }

    # -- scopes -----------------------------------------------------------------------------

    def depth(self, scope: int) -> int:
        """Nesting depth of a scope (0 for the top level)."""
        d = 0
        parent = self.scopes[scope].parent
        while parent is not None:
            d += 1
            parent = self.scopes[parent].parent
        return d

    def is_ancestor(self, outer: int, inner: int) -> bool:
        """Whether ``outer`` is ``inner`` or encloses it."""
        s: int | None = inner
        while s is not None:
            if s == outer:
                return True
            s = self.scopes[s].parent
        return False

    def path_down(self, outer: int, inner: int) -> list[int]:
        """The scopes strictly inside ``outer`` down to and including ``inner``, outermost first."""
        path: list[int] = []
        s: int | None = inner
        while s is not None and s != outer:
            path.append(s)
            s = self.scopes[s].parent
        if s is None:
            raise PlanError(f"scope {outer} does not enclose scope {inner}")
        return path[::-1]

    # -- output -----------------------------------------------------------------------------

    def validate(self) -> None:
        """Structural checks before the engine sees the plan."""
        for node in self.nodes:
            label = node["label"]
            if node["op"] == "variable" and node.get("result") is None:
                raise PlanError(f"{label}: the iterate body never produced its result")
            for i in node["inputs"]:
                if i >= node["id"]:
                    raise PlanError(f"{label}: input {i} is not an earlier node")
            needs_arr = node["op"] in ("join", "reduce", "enter_arrangement")
            for i in node["inputs"]:
                is_arr = self.nodes[i]["op"] in ARRANGEMENT_OPS
                if needs_arr != is_arr:
                    raise PlanError(
                        f"{label}: input {self.nodes[i]['label']} "
                        f"{'must' if needs_arr else 'must not'} be an arrangement"
                    )

    def to_json(self, time_dims: int) -> dict[str, Any]:
        """The plan as a JSON-able dict (see PLAN.md)."""
        return {
            "version": PLAN_VERSION,
            "time_dims": time_dims,
            "scopes": [s.to_json() for s in self.scopes],
            "nodes": [dict(n) for n in self.nodes],
        }

    def dumps(self, time_dims: int) -> str:
        """The plan as JSON text, as handed to the engine."""
        return json.dumps(self.to_json(time_dims), separators=(",", ":"))

    def explain(self, time_dims: int | None) -> PlanText:
        """A readable listing: one line per node, indented by scope, with arguments."""
        dims = "not fixed yet" if time_dims is None else str(time_dims)
        lines = [
            f"dataflow plan: {len(self.nodes)} nodes, {len(self.scopes)} scopes, "
            f"time_dims {dims}"
        ]
        opened: set[int] = {0}
        for node in self.nodes:
            scope = node["scope"]
            if scope not in opened:
                for s in self.path_down(0, scope):
                    if s not in opened:
                        opened.add(s)
                        sc = self.scopes[s]
                        lim = "" if sc.max_iterations is None else f", max {sc.max_iterations}"
                        coord = (
                            ""
                            if time_dims is None
                            else f", iteration = time coordinate {time_dims + self.depth(s) - 1}"
                        )
                        lines.append(
                            "  " * self.depth(s)
                            + f"scope {s}: {sc.label} (in scope {sc.parent}{lim}{coord})"
                        )
            lines.append("  " * (self.depth(scope) + 1) + self._describe(node))
        return PlanText("\n".join(lines))

    def _describe(self, node: dict[str, Any]) -> str:
        """One node as text: ``#id op <- inputs -> (columns)  [args]  label``."""
        parts = [f"#{node['id']} {node['op']}"]
        if node["inputs"]:
            parts.append("<- " + ", ".join(f"#{i}" for i in node["inputs"]))
        parts.append("-> (" + ", ".join(node["columns"]) + ")")
        args = self.notes.get(node["id"])
        if args is None:
            args = [
                f"{k}={json.dumps(v)}"
                for k, v in node.items()
                if k not in ("id", "op", "scope", "inputs", "columns", "label")
            ]
        if args:
            parts.append("[" + "; ".join(args) + "]")
        parts.append(f"  {node['label']}")
        return " ".join(parts)


def _scopes_of(key: tuple[Any, ...]) -> int:
    """The largest scope id a cache key mentions (keys end with a scope id)."""
    return int(key[-1]) if key and isinstance(key[-1], int) else 0
