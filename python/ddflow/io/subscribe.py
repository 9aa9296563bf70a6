"""``dd.subscribe``: Python callbacks on a collection's completed updates.

A thin layer over :meth:`ddflow.Capture.subscribe` (the capture keeps only the accumulated
state, ``keep="state"``, and collects errors, which stay in ``flow.errors()``) plus a
frontier listener for ``on_time_end``. Callbacks run after the engine call that completed
the updates (``run``, ``run_until``, ``step``, each tick of the run loop), never inside it;
a callback may call ``flow.stop()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import PlanError

__all__ = ["subscribe"]


def subscribe(
    collection: Collection,
    on_change: Callable[[pa.Table], Any],
    on_time_end: Callable[[int | None], Any] | None = None,
) -> Capture:
    """Calls ``on_change(updates)`` with each batch of newly completed updates of
    ``collection`` (a ``pyarrow.Table``: record columns, ``time``, ``diff``, consolidated,
    sorted by time), and ``on_time_end(t)`` each time the collection's frontier advances:
    every update at a time before ``t`` has been passed to ``on_change`` (``t`` is ``None``
    once the collection is complete for ever). Returns the capture behind it (its
    ``state()`` is the collection's current contents)."""
    flow = collection.flow
    if not isinstance(flow, Dataflow):
        raise PlanError(f"subscribe: expected a Collection, got {collection!r}")
    capture = collection.capture(errors="collect", keep="state")
    capture.subscribe(on_change)
    if on_time_end is not None:
        flow.on_progress(_FrontierWatch(capture, on_time_end))
    return capture


class _FrontierWatch:
    """Calls ``on_time_end`` when a capture's frontier moves."""

    def __init__(self, capture: Capture, on_time_end: Callable[[int | None], Any]) -> None:
        self.capture = capture
        self.on_time_end = on_time_end
        self.last: int | None = 0

    def __call__(self, final: bool) -> None:
        frontier = self.capture.frontier()
        time = int(frontier[0]) if frontier else None  # type: ignore[arg-type]
        if time != self.last:
            self.last = time
            self.on_time_end(time)
