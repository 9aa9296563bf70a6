"""The engine as the runtime sees it: the native engine, its loader, the view of a shared
engine that an attached dataflow talks to, and the interface the runtime's handles use.

:func:`native_engine` instantiates the Rust engine ``ddflow._core.Engine`` (its methods are
typed by the stub ``_core.pyi``; tests of the pure-Python layer substitute a fake with the same
methods through ``Dataflow.engine_factory``). :class:`AttachedEngine` is the engine as seen by
a dataflow that runs in another dataflow's engine (``import_trace``): the host's engine with
the attached dataflow's node ids shifted by the offset the engine assigned.

:class:`Runtime` is what inputs, captures, probes and trace handles need from the dataflow
that drives the engine (the dataflow implements it): the time shape, the engine (created on
first use), the error log and the plan's upstream relation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ddflow import _core
from ddflow.errorlog import ErrorLog
from ddflow.gate import EngineGate
from ddflow.times import TimeShape

__all__ = [
    "Callback",
    "Engine",
    "EngineFactory",
    "AttachedEngine",
    "SharedState",
    "Runtime",
    "EngineSideHandle",
    "native_engine",
    "remap_functions",
]

Callback = Callable[[int, str, Any], Any]
"""The dispatcher the engine calls: ``callback(fn_id, kind, payload)``."""

EngineFactory = Callable[[str, int, Callback], _core.Engine]
"""Builds an engine from plan JSON text, a worker count and the callback dispatcher."""


def native_engine(plan_json: str, workers: int, callback: Callback) -> _core.Engine:
    """Instantiates the Rust engine ``ddflow._core.Engine``."""
    return _core.Engine(plan_json, workers, callback)


class SharedState:
    """What the dataflows sharing one engine share besides it: error updates taken from the
    engine that belong to another of them (each takes its own)."""

    def __init__(self) -> None:
        """Nothing pending."""
        self.errors: list[tuple[int, str, str, str, list[int], int]] = []


class AttachedEngine:
    """A shared engine as seen by one of the dataflows running in it (node ids shifted)."""

    def __init__(self, engine: _core.Engine, offset: int, nodes: int, shared: SharedState) -> None:
        """Wraps ``engine``; the dataflow's node ``i`` is engine node ``offset + i``."""
        self.engine = engine
        self.offset = offset
        self.nodes = nodes
        self.shared = shared

    def _mine(self, node: int) -> bool:
        return self.offset <= node < self.offset + self.nodes

    def errors_take(self) -> list[tuple[int, str, str, str, list[int], int]]:
        """This dataflow's error updates since the last take (node ids its own); those of
        the other dataflows stay pending for them."""
        pending = self.shared.errors
        pending.extend(self.engine.errors_take())
        mine = [e for e in pending if self._mine(int(e[0]))]
        self.shared.errors = [e for e in pending if not self._mine(int(e[0]))]
        return [(int(e[0]) - self.offset, *e[1:]) for e in mine]

    def push(
        self,
        input_node: int,
        columns: list[npt.NDArray[Any]],
        times: npt.NDArray[np.int64],
        diffs: npt.NDArray[np.int64],
    ) -> None:
        """Adds updates to one of the attached dataflow's inputs."""
        self.engine.push(input_node + self.offset, columns, times, diffs)

    def push_int_rows(
        self,
        input_node: int,
        width: int,
        rows: Sequence[Sequence[Any]],
        times: Sequence[tuple[int, ...]],
        diffs: Sequence[int],
    ) -> bool:
        """Adds buffered int64 rows to one of the attached dataflow's inputs (see the
        native engine's ``push_int_rows``)."""
        return bool(self.engine.push_int_rows(input_node + self.offset, width, rows, times, diffs))

    def advance_input(self, input_node: int, time: list[int]) -> None:
        """Advances an input's frontier."""
        self.engine.advance_input(input_node + self.offset, time)

    def close_input(self, input_node: int) -> None:
        """Closes an input."""
        self.engine.close_input(input_node + self.offset)

    def step(self) -> bool:
        """One pass of the shared engine."""
        return bool(self.engine.step())

    def run_until(self, time: list[int]) -> None:
        """Runs the shared engine until every output frontier (of all attached dataflows)
        has reached ``time``."""
        self.engine.run_until(time)

    def run(self) -> None:
        """Runs the shared engine until all its work is done."""
        self.engine.run()

    def frontier(self, node: int) -> list[list[int]]:
        """The input frontier of one of the attached dataflow's nodes."""
        return list(self.engine.frontier(node + self.offset))

    def capture_take(
        self, node: int
    ) -> tuple[list[npt.NDArray[Any]], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Takes one of the attached dataflow's captures."""
        cols, times, diffs = self.engine.capture_take(node + self.offset)
        return list(cols), times, diffs

    def column_dtypes(self, node: int) -> list[str | None]:
        """The dtype names of a node's columns known so far (``None`` where none is)."""
        return list(self.engine.column_dtypes(node + self.offset))

    def capture_poll(self, node: int, state: _core.CaptureState) -> Any:
        """Polls one of the attached dataflow's captures into its native state."""
        return self.engine.capture_poll(node + self.offset, state)

    def log(self) -> list[dict[str, Any]]:
        """The operator log entries of the attached dataflow's nodes (its own node ids)."""
        out = []
        for entry in self.engine.log():
            node = int(entry["node"]) - self.offset
            if 0 <= node < self.nodes:
                e = dict(entry)
                e["node"] = node
                out.append(e)
        return out

    def set_logging(self, on: bool) -> None:
        """The operator log of the shared engine."""
        self.engine.set_logging(on)

    def passes(self) -> int:
        """Passes of the shared engine."""
        return int(self.engine.passes())

    def heap_bytes(self) -> int:
        """Heap bytes of the shared engine's traces."""
        return int(self.engine.heap_bytes())

    def node_heap_bytes(self) -> list[tuple[int, int]]:
        """Heap bytes of each of the attached dataflow's nodes: ``(state, queued)``."""
        mine = self.engine.node_heap_bytes()[self.offset : self.offset + self.nodes]
        return [(int(s), int(q)) for s, q in mine]

    def trace_handle(self, node: int) -> int:
        """A trace handle on one of the attached dataflow's arrangements."""
        return int(self.engine.trace_handle(node + self.offset))

    def set_handle_frontier(self, handle: int, time: list[int]) -> None:
        """Moves a trace handle's frontier."""
        self.engine.set_handle_frontier(handle, time)

    def close_handle(self, handle: int) -> None:
        """Releases a trace handle."""
        self.engine.close_handle(handle)

    def trace_len(self, node: int) -> int:
        """Updates stored in one of the attached dataflow's arrangements."""
        return int(self.engine.trace_len(node + self.offset))

    def attach(self, plan_json: str) -> int:
        """Attaches a further dataflow to the shared engine."""
        return int(self.engine.attach(plan_json))


Engine = _core.Engine | AttachedEngine
"""The engine a dataflow drives: its own, or a view of the one it is attached to."""


def remap_functions(plan: dict[str, Any], remap: Callable[[int], int]) -> dict[str, Any]:
    """``plan`` (JSON dict) with every callback id ``fn`` (of nodes and aggregates) mapped."""
    nodes = []
    for node in plan["nodes"]:
        node = dict(node)
        if "fn" in node:
            node["fn"] = remap(int(node["fn"]))
        agg = node.get("agg")
        if isinstance(agg, dict) and "fn" in agg:
            node["agg"] = {**agg, "fn": remap(int(agg["fn"]))}
        nodes.append(node)
    return {**plan, "nodes": nodes}


class EngineSideHandle(Protocol):
    """A handle with an engine-side counterpart, created once the engine exists."""

    def register(self, engine: Engine) -> None:
        """Creates the engine-side counterpart."""


class Runtime(Protocol):
    """What inputs, captures, probes and trace handles need from the dataflow running them."""

    @property
    def time_shape(self) -> TimeShape:
        """The shape of the dataflow's outer times."""
        ...

    @property
    def gate(self) -> EngineGate:
        """The lock every call into the engine holds (:mod:`ddflow.gate`)."""
        ...

    def freeze(self) -> None:
        """Marks that the dataflow has received data: no more operators may be added."""

    def engine(self) -> Engine:
        """The engine, created (and the plan frozen) on first use."""
        ...

    def started_engine(self) -> Engine | None:
        """The engine if it exists."""
        ...

    def poll_errors(self) -> ErrorLog:
        """The error log, with the error updates the engine has produced since the last poll."""
        ...

    def upstream(self, node: int) -> frozenset[int]:
        """Every node whose output can reach ``node`` (itself included)."""
        ...

    def plan_dtypes(self, node: int) -> list[str | None]:
        """The dtypes of ``node``'s columns as far as the plan and the data so far tell
        (``None`` where neither does)."""
        ...

    def track_handle(self, handle: EngineSideHandle) -> None:
        """Registers ``handle`` with the engine now, or when the engine starts."""

    def release_later(self, ids: list[int]) -> None:
        """Queues engine handle ids for release at the next engine call (safe from a
        finalizer, which may run while the engine is busy)."""
