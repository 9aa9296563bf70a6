"""Arrangements shared across dataflows: trace handles and attached dataflows.

``arrangement.trace()`` gives a :class:`TraceHandle` on a top-level arrangement. While the
handle is open the engine does not compact the trace past the handle's frontier
(``set_frontier`` moves it forward; ``close()``, or dropping the handle, releases it). A
dataflow created later imports it with ``flow2.import_trace(trace)``: ``flow2`` then runs in
the *same* engine as the dataflow that owns the trace (its nodes are attached to the running
engine when ``flow2`` starts), its consumers of the import first see the trace's current
contents and then each new batch, and stepping or running either dataflow drives both.
"""

from __future__ import annotations

import weakref

from ddflow.engine import Engine, Runtime
from ddflow.errors import PlanError
from ddflow.times import Time

__all__ = ["TraceHandle"]


class TraceHandle:
    """A handle on the trace of a top-level arrangement, usable from other dataflows."""

    def __init__(
        self,
        flow: Runtime,
        node: int,
        key: tuple[str, ...],
        columns: tuple[str, ...],
        label: str,
    ) -> None:
        """A handle on the arrangement at plan node ``node`` (see ``Arrangement.trace``)."""
        self.flow = flow
        self.node = node
        self.key = key
        self.columns = columns
        self.label = label
        self._frontier: tuple[int, ...] | None = None
        self._ids: list[int] = []
        """The engine's handle id (empty until the engine exists)."""
        self._closed = False
        self._finalizer = weakref.finalize(self, flow.release_later, self._ids)
        flow.track_handle(self)

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

    def register(self, engine: Engine) -> None:
        """Creates the engine-side handle (when the owning dataflow's engine starts)."""
        if self._closed or self._ids:
            return
        self._ids.append(engine.trace_handle(self.node))
        if self._frontier is not None:
            engine.set_handle_frontier(self._ids[0], list(self._frontier))

    def check_open(self, what: str) -> None:
        """Raises ``PlanError`` naming ``what`` if the handle was closed."""
        if self._closed:
            raise PlanError(f"{what}: the trace handle on {self.label} is closed")

    def set_frontier(self, time: Time) -> None:
        """Lets the trace compact up to ``time``: accumulations at times in its future stay
        exact for this handle's readers. The frontier only moves forward."""
        self.check_open("set_frontier")
        coords = self.flow.time_shape.normalize(time, "TraceHandle.set_frontier")
        if self._frontier is not None and not all(
            a <= b for a, b in zip(self._frontier, coords, strict=True)
        ):
            raise PlanError(
                f"set_frontier: cannot move the trace handle on {self.label} back from "
                f"{self._frontier} to {tuple(coords)}"
            )
        self._frontier = tuple(coords)
        engine = self.flow.started_engine()
        if engine is not None and self._ids:
            engine.set_handle_frontier(self._ids[0], list(coords))

    def close(self) -> None:
        """Releases the handle: compaction no longer waits for it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._finalizer.detach()
        engine = self.flow.started_engine()
        if engine is not None and self._ids:
            engine.close_handle(self._ids[0])

    def stored_updates(self) -> int:
        """Updates the trace stores now (all workers): falls as compaction proceeds."""
        engine = self.flow.started_engine()
        if engine is None:
            return 0
        return int(engine.trace_len(self.node))
