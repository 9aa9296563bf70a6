"""Helpers for the pure-Python API tests: a fake engine that records what Python hands it.

These tests check plan building, ``explain()``, validation errors, time normalisation,
input buffering and capture consolidation without running the Rust engine: the fake has the
methods of ``ddflow._core.Engine`` (typed in ``_core.pyi``) that they use, records every call,
and returns scripted captures and frontiers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ddflow as dd


class FakeEngine:
    """Records calls; ``captures[node]`` and ``frontiers[node]`` are scripted by tests."""

    def __init__(self, plan_json: str, workers: int, callback: Any) -> None:
        self.plan = json.loads(plan_json)
        self.workers = workers
        self.callback = callback
        self.calls: list[tuple[Any, ...]] = []
        self.pushes: list[tuple[int, list[np.ndarray], np.ndarray, np.ndarray]] = []
        self.captures: dict[int, list[tuple[list[np.ndarray], np.ndarray, np.ndarray]]] = {}
        self.frontiers: dict[int, list[list[int]]] = {}

    def push(
        self, input_node: int, columns: list[np.ndarray], times: np.ndarray, diffs: np.ndarray
    ) -> None:
        self.calls.append(("push", input_node))
        self.pushes.append((input_node, columns, times, diffs))

    def push_int_rows(
        self, input_node: int, width: int, rows: list[Any], times: list[Any], diffs: list[int]
    ) -> bool:
        return False  # declined: every batch reaches ``push`` as arrays, recorded there

    def advance_input(self, input_node: int, time: list[int]) -> None:
        self.calls.append(("advance_input", input_node, list(time)))

    def close_input(self, input_node: int) -> None:
        self.calls.append(("close_input", input_node))

    def step(self) -> bool:
        self.calls.append(("step",))
        return False

    def run_until(self, time: list[int]) -> None:
        self.calls.append(("run_until", list(time)))

    def run(self) -> None:
        self.calls.append(("run",))

    def frontier(self, node: int) -> list[list[int]]:
        return self.frontiers.get(node, [[0]])

    def capture_take(self, node: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
        queue = self.captures.get(node, [])
        if queue:
            return queue.pop(0)
        return [], np.zeros((0, 1), dtype=np.int64), np.zeros(0, dtype=np.int64)

    def capture_poll(self, node: int, state: Any) -> Any:
        cols, times, diffs = self.capture_take(node)
        return state.absorb(cols, times, diffs, self.frontier(node))

    def log(self) -> list[dict[str, Any]]:
        return [{"node": 0, "label": "x", "op": "input", "python": False}]

    def errors_take(self) -> list[tuple[int, str, str, str, list[int], int]]:
        return []


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[FakeEngine]]:
    """Makes every ``Dataflow`` use a :class:`FakeEngine`; yields the engines created."""
    created: list[FakeEngine] = []

    def factory(plan_json: str, workers: int, callback: Any) -> FakeEngine:
        engine = FakeEngine(plan_json, workers, callback)
        created.append(engine)
        return engine

    monkeypatch.setattr(dd.Dataflow, "engine_factory", staticmethod(factory))
    yield created


def ops(flow: dd.Dataflow) -> list[str]:
    """The ``op`` of every plan node, in order."""
    return [n["op"] for n in flow.plan()["nodes"]]


def node(flow: dd.Dataflow, node_id: int) -> dict[str, Any]:
    """One plan node."""
    return flow.plan()["nodes"][node_id]


def check_plan_invariants(plan: dict[str, Any]) -> None:
    """What PLAN.md promises the engine about every plan."""
    scopes = {s["id"]: s for s in plan["scopes"]}
    for i, n in enumerate(plan["nodes"]):
        assert n["id"] == i
        assert all(j < i for j in n["inputs"]), n
        assert n["label"]
        assert len(set(n["columns"])) == len(n["columns"]), n
        arranged = {"arrange", "enter_arrangement"}
        needs = n["op"] in ("join", "reduce", "enter_arrangement")
        for j in n["inputs"]:
            inp = plan["nodes"][j]
            assert (inp["op"] in arranged) == needs, (n, inp)
            if n["op"] in ("enter", "enter_arrangement"):
                assert scopes[n["scope"]]["parent"] == inp["scope"], (n, inp)
            elif n["op"] == "leave":
                assert scopes[inp["scope"]]["parent"] == n["scope"], (n, inp)
            else:
                assert inp["scope"] == n["scope"], (n, inp)
        if n["op"] == "variable":
            r = plan["nodes"][n["result"]]
            assert n["result"] > i and r["scope"] == n["scope"]
            assert r["columns"] == n["columns"]
    json.dumps(plan)
