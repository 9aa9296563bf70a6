"""The engine as Python sees it: the interface of ``ddflow._core.Engine`` and its loader.

:class:`EngineLike` is the protocol the user API programs against; :func:`native_engine`
instantiates the Rust engine. Tests of the pure-Python layer substitute a fake that follows
the same protocol (``Dataflow.engine_factory``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

__all__ = ["EngineLike", "EngineFactory", "Callback", "native_engine"]

Callback = Callable[[int, str, Any], Any]
"""The dispatcher the engine calls: ``callback(fn_id, kind, payload)``."""


class EngineLike(Protocol):
    """The engine binding (``ddflow._core.Engine``); see PLAN.md for the semantics."""

    def push(
        self, input_node: int, columns: list[np.ndarray], times: np.ndarray, diffs: np.ndarray
    ) -> None:
        """Adds updates to an input (all or nothing)."""

    def advance_input(self, input_node: int, time: list[int]) -> None:
        """Advances an input's frontier to ``time``."""

    def close_input(self, input_node: int) -> None:
        """Closes an input: its frontier becomes empty."""

    def step(self) -> bool:
        """One scheduling pass; True while work remains."""
        ...

    def run_until(self, time: list[int]) -> None:
        """Runs until no probe/capture frontier holds a time strictly less than ``time``."""

    def run(self) -> None:
        """Runs until all inputs are closed and all work is done."""

    def frontier(self, node: int) -> list[list[int]]:
        """The output frontier of a top-level node ([] when complete)."""
        ...

    def capture_take(self, node: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        """Updates captured since the last take: (columns, times (n, dims), diffs)."""
        ...

    def capture_poll(self, node: int, state: Any) -> Any:
        """Takes a capture's new updates into ``state`` (a ``ddflow._core.CaptureState``);
        returns those its frontier completes, consolidated: ``(columns, times, diffs)``, or
        ``None``."""
        ...

    def errors_take(self) -> list[tuple[int, str, str, str, list[int], int]]:
        """Error updates since the last take: ``(node, label, message, values, time, diff)``
        with ``time`` the outer coordinates."""
        ...

    def log(self) -> list[dict[str, Any]]:
        """One dict per operator invocation."""
        ...

    def set_logging(self, on: bool) -> None:
        """Turns the operator log on or off."""
        ...


EngineFactory = Callable[[str, int, Callback], EngineLike]
"""Builds an engine from plan JSON text, a worker count and the callback dispatcher."""


def native_engine(plan_json: str, workers: int, callback: Callback) -> EngineLike:
    """Instantiates the Rust engine ``ddflow._core.Engine``."""
    from ddflow import _core

    engine: EngineLike = _core.Engine(plan_json, workers, callback)
    return engine
