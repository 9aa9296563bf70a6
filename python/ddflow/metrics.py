"""``flow.metrics()``: per operator (plan node), what it did and what it holds, from what the
engine already reports.

* **records in and out, invocations, time spent, whether Python was entered**: summed over
  the engine's operator log (``flow.log()``), so they are there while the dataflow keeps
  its log (``Dataflow(log=True)``, the default) and ``None`` otherwise. Each call reads the
  whole log, so its cost grows with the number of operator invocations so far.
* **arrangement records**: the updates an ``arrange`` node's trace holds, summed over
  workers (``None`` for other nodes: the engine reports trace sizes for arrangements only).
  Bytes are reported for the engine as a whole (:attr:`Metrics.heap_bytes`: every trace,
  arrangements and reduce outputs) and per node (**heap bytes**: its trace and operator
  state, such as a watermark's pending rows; **queued bytes**: updates waiting at its inputs).
* **frontier** and **frontier lag**: the frontier at the node's inputs (times it may still
  see), and, for int times, how far it trails the inputs' frontier (``input_frontier``
  minus the node's least frontier time; 0 once the node has caught up or is complete).
  Under ``flow.run()`` times are milliseconds, so the lag is in milliseconds.

:func:`ddflow.serve_metrics` (:mod:`ddflow.metrics_http`) serves these in Prometheus' text
format.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ddflow.engine import Engine

if TYPE_CHECKING:
    from ddflow.builder import PlanBuilder
    from ddflow.input import InputSession

__all__ = ["Metrics", "OperatorMetrics", "collect"]


@dataclass(frozen=True)
class OperatorMetrics:
    """One plan node's metrics."""

    node: int
    """The node's id (``#id`` in ``flow.explain()``)."""
    op: str
    """The operator (``input``, ``map``, ``arrange``, ``join``, ``reduce``, ``capture``...)."""
    label: str
    """The node's label: what built it, with the user's file and line."""
    invocations: int | None
    """Times the engine ran the operator (summed over workers; ``None`` without the log)."""
    records_in: int | None
    """Updates the operator took in."""
    records_out: int | None
    """Updates the operator produced."""
    seconds: float | None
    """Time spent in the operator, in seconds."""
    python: bool
    """Whether the operator entered Python (a user function)."""
    arrangement_records: int | None
    """Updates held by the node's trace (``arrange`` nodes; ``None`` for others)."""
    frontier: list[tuple[int, ...]] = field(default_factory=list)
    """The frontier at the node's inputs: the least times it may still see (``[]`` once
    complete; inside ``iterate``, times carry the iteration coordinate)."""
    frontier_lag: int | None = None
    """How far the node trails the inputs' frontier, for int times: ``input_frontier``
    minus the node's least outer time (0 when caught up or complete)."""
    heap_bytes: int = 0
    """Heap bytes the node holds between activations: its trace (``arrange``, a reduce's
    output) and its operator state (pending rows, caches, a reduce's buffers kept for its
    next activation), summed over workers."""
    queued_bytes: int = 0
    """Heap bytes of the updates waiting at the node's inputs."""


@dataclass(frozen=True)
class Metrics:
    """A dataflow's metrics at one moment: per operator, and for the engine."""

    operators: list[OperatorMetrics]
    """One entry per plan node, in node order."""
    input_frontier: int | None
    """For int times, the least frontier of the open inputs (``None`` when every input is
    closed, or before the engine starts)."""
    heap_bytes: int
    """Heap bytes held by the engine's traces (arrangements and reduce outputs)."""
    passes: int
    """Scheduling passes the engine has run."""
    logging: bool
    """Whether the operator log (records, invocations, time) was on."""

    def operator(self, node: int) -> OperatorMetrics:
        """The metrics of node ``node``."""
        return self.operators[node]

    def table(self) -> pa.Table:
        """The per-operator metrics as a ``pyarrow.Table``, one row per node."""
        rows: list[dict[str, Any]] = []
        for m in self.operators:
            row = asdict(m)
            row["frontier"] = [list(t) for t in m.frontier]
            rows.append(row)
        return pa.Table.from_pylist(rows, schema=_SCHEMA)


_SCHEMA = pa.schema(
    [
        pa.field("node", pa.int64()),
        pa.field("op", pa.string()),
        pa.field("label", pa.string()),
        pa.field("invocations", pa.int64()),
        pa.field("records_in", pa.int64()),
        pa.field("records_out", pa.int64()),
        pa.field("seconds", pa.float64()),
        pa.field("python", pa.bool_()),
        pa.field("arrangement_records", pa.int64()),
        pa.field("frontier", pa.list_(pa.list_(pa.int64()))),
        pa.field("frontier_lag", pa.int64()),
        pa.field("heap_bytes", pa.int64()),
        pa.field("queued_bytes", pa.int64()),
    ]
)


def collect(
    builder: PlanBuilder,
    sessions: Sequence[InputSession],
    dims: int | None,
    engine: Engine | None,
    logging: bool,
) -> Metrics:
    """The metrics of the dataflow of plan ``builder``, input ``sessions`` and ``dims`` time
    coordinates, read from ``engine`` (``None``: not started, all zero)."""
    plan = builder.plan.nodes
    n = len(plan)
    totals: list[list[int]] = [[0, 0, 0, 0] for _ in range(n)]
    python = [False] * n
    if engine is not None and logging:
        for entry in engine.log():
            node = int(entry["node"])
            if 0 <= node < n:
                t = totals[node]
                t[0] += 1
                t[1] += int(entry["updates_in"])
                t[2] += int(entry["updates_out"])
                t[3] += int(entry["nanos"])
                python[node] = python[node] or bool(entry["python"])
    int_times = dims == 1
    inputs = [s for s in sessions if not s.closed] if engine is not None else []
    input_frontier = min(int(s._current()[0]) for s in inputs) if int_times and inputs else None
    node_bytes = engine.node_heap_bytes() if engine is not None else [(0, 0)] * n
    operators = []
    for node in range(n):
        spec = plan[node]
        op = str(spec["op"])
        frontier: list[tuple[int, ...]] = []
        records = None
        if engine is not None:
            frontier = _frontier(sessions, engine, node, op)
            if op == "arrange":
                records = engine.trace_len(node)
        known = engine is not None and logging
        t = totals[node]
        operators.append(
            OperatorMetrics(
                node=node,
                op=op,
                label=builder.label(node),
                invocations=t[0] if known else None,
                records_in=t[1] if known else None,
                records_out=t[2] if known else None,
                seconds=t[3] / 1e9 if known else None,
                python=python[node],
                arrangement_records=records,
                frontier=frontier,
                frontier_lag=_lag(input_frontier, frontier),
                heap_bytes=node_bytes[node][0],
                queued_bytes=node_bytes[node][1],
            )
        )
    return Metrics(
        operators=operators,
        input_frontier=input_frontier,
        heap_bytes=engine.heap_bytes() if engine is not None else 0,
        passes=engine.passes() if engine is not None else 0,
        logging=logging,
    )


def _frontier(
    sessions: Sequence[InputSession], engine: Engine, node: int, op: str
) -> list[tuple[int, ...]]:
    """The frontier at a node's inputs (an input node's own frontier: it has no inputs)."""
    if op == "input":
        for session in sessions:
            if session.node == node:
                return [] if session.closed else [tuple(int(c) for c in session._current())]
    return [tuple(int(c) for c in t) for t in engine.frontier(node)]


def _lag(input_frontier: int | None, frontier: Sequence[tuple[int, ...]]) -> int | None:
    """How far ``frontier`` trails ``input_frontier`` (first time coordinates)."""
    if input_frontier is None:
        return None if frontier else 0
    if not frontier:
        return 0
    least = min(t[0] for t in frontier)
    return max(0, input_frontier - least)
