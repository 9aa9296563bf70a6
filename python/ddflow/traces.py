"""Arrangements shared across dataflows: trace handles and attached dataflows.

``arrangement.trace()`` gives a :class:`TraceHandle` on a top-level arrangement. While the
handle is open the engine does not compact the trace past the handle's frontier
(``set_frontier`` moves it forward; ``close()``, or dropping the handle, releases it). A
dataflow created later imports it with ``flow2.import_trace(trace)``: ``flow2`` then runs in
the *same* engine as the dataflow that owns the trace (its nodes are attached to the running
engine when ``flow2`` starts), its consumers of the import first see the trace's current
contents and then each new batch, and stepping or running either dataflow drives both.

:class:`AttachedEngine` is what an attached dataflow talks to: the host's engine with the
attached dataflow's node ids shifted by the offset the engine assigned.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ddflow.errors import PlanError
from ddflow.times import Time

if TYPE_CHECKING:
    from ddflow.arrangement import Arrangement
    from ddflow.dataflow import Dataflow
    from ddflow.engine import EngineLike

__all__ = ["TraceHandle", "AttachedEngine"]


def _release(released: list[int], ids: list[int]) -> None:
    """Finalizer of a dropped handle: queues its engine handle id for release (the engine
    is not called from a finalizer, which may run while the engine is busy)."""
    released.extend(ids)


class TraceHandle:
    """A handle on the trace of a top-level arrangement, usable from other dataflows."""

    def __init__(self, arrangement: Arrangement) -> None:
        """A handle on ``arrangement`` (see ``Arrangement.trace``)."""
        self.flow: Dataflow = arrangement.flow
        self.node = arrangement.node
        self.key = arrangement.key
        self.columns = arrangement.columns
        self.label = str(self.flow._plan.nodes[self.node]["label"])
        self._frontier: tuple[int, ...] | None = None
        self._ids: list[int] = []
        """The engine's handle id (empty until the engine exists)."""
        self._closed = False
        self._finalizer = weakref.finalize(self, _release, self.flow._released_handles, self._ids)
        self.flow._trace_handles.append(weakref.ref(self))
        engine = self.flow._engine_obj
        if engine is not None:
            self._register(engine)

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"frontier {self._frontier}"
        return f"TraceHandle({self.label}, key=({', '.join(self.key)}), {state})"

    def __enter__(self) -> TraceHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """Whether the handle was released."""
        return self._closed

    def _register(self, engine: EngineLike) -> None:
        """Creates the engine-side handle (when the owning dataflow's engine starts)."""
        if self._closed or self._ids:
            return
        self._ids.append(engine.trace_handle(self.node))  # type: ignore[attr-defined]
        if self._frontier is not None:
            engine.set_handle_frontier(self._ids[0], list(self._frontier))  # type: ignore[attr-defined]

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise PlanError(f"{what}: the trace handle on {self.label} is closed")

    def set_frontier(self, time: Time) -> None:
        """Lets the trace compact up to ``time``: accumulations at times in its future stay
        exact for this handle's readers. The frontier only moves forward."""
        self._check_open("set_frontier")
        coords = self.flow._times.normalize(time, "TraceHandle.set_frontier")
        if self._frontier is not None and not all(
            a <= b for a, b in zip(self._frontier, coords, strict=True)
        ):
            raise PlanError(
                f"set_frontier: cannot move the trace handle on {self.label} back from "
                f"{self._frontier} to {tuple(coords)}"
            )
        self._frontier = tuple(coords)
        engine = self.flow._engine_started()
        if engine is not None and self._ids:
            engine.set_handle_frontier(self._ids[0], list(coords))  # type: ignore[attr-defined]

    def close(self) -> None:
        """Releases the handle: compaction no longer waits for it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        engine = self.flow._engine_started()
        if engine is not None and self._ids:
            engine.close_handle(self._ids[0])  # type: ignore[attr-defined]

    def stored_updates(self) -> int:
        """Updates the trace stores now (all workers): falls as compaction proceeds."""
        engine = self.flow._engine_started()
        if engine is None:
            return 0
        return int(engine.trace_len(self.node))  # type: ignore[attr-defined]


class SharedState:
    """What the dataflows sharing one engine share besides it: error updates taken from the
    engine that belong to another of them (each takes its own)."""

    def __init__(self) -> None:
        """Nothing pending."""
        self.errors: list[Any] = []


class AttachedEngine:
    """A shared engine as seen by one of the dataflows running in it (node ids shifted)."""

    def __init__(self, engine: Any, offset: int, nodes: int, shared: SharedState) -> None:
        """Wraps ``engine``; the dataflow's node ``i`` is engine node ``offset + i``."""
        self.engine = engine
        self.offset = offset
        self.nodes = nodes
        self.shared = shared

    def errors_take(self) -> list[Any]:
        """This dataflow's error updates since the last take (node ids its own); those of
        the other dataflows stay pending for them."""
        pending = self.shared.errors
        pending.extend(self.engine.errors_take())
        mine = [e for e in pending if self.offset <= int(e[0]) < self.offset + self.nodes]
        self.shared.errors = [
            e for e in pending if not self.offset <= int(e[0]) < self.offset + self.nodes
        ]
        return [(int(e[0]) - self.offset, *e[1:]) for e in mine]

    def push(
        self, input_node: int, columns: list[np.ndarray], times: np.ndarray, diffs: np.ndarray
    ) -> None:
        """Adds updates to one of the attached dataflow's inputs."""
        self.engine.push(input_node + self.offset, columns, times, diffs)

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

    def capture_take(self, node: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Takes one of the attached dataflow's captures."""
        cols, times, diffs = self.engine.capture_take(node + self.offset)
        return list(cols), times, diffs

    def capture_poll(self, node: int, state: Any) -> Any:
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
