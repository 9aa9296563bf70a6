"""Hostile use of a dataflow from several threads, and Ctrl-C in the middle of a hand-off.

A thread feeding an input (``update_at``, ``update_batch``) or reading a capture while another
thread runs the dataflow waits for that run to end; every update arrives exactly once, and
nothing fails with PyO3's "Already borrowed" or a torn buffer's ``ShapeError``. A user function
that calls back into the dataflow running it gets ``ReentrancyError`` whatever thread the
engine runs it on. A ``KeyboardInterrupt`` that arrives while an input's buffer is handed to
the engine is raised once the hand-off is over: the batch is pushed once, never twice.
"""

from __future__ import annotations

import collections
import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pytest

import ddflow as dd
from ddflow.gate import interrupts_deferred

pytestmark = pytest.mark.timeout(60)


def _counts(cap: dd.Capture, t: int) -> dict[Any, int]:
    return {r["x"]: r["count"] for r in cap.at(t).to_pylist()}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_thread_calling_update_at_while_another_steps_loses_nothing(workers: int) -> None:
    flow = dd.Dataflow(workers=workers)
    inp, c = flow.new_input(("x",))
    cap = c.count(by="x").capture()
    inp.update_at((0,), 0)  # fixes the dtypes: the writer takes the fast path
    n = 30_000
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for k in range(n):
                inp.update_at((k % 7,), 1 + k // 1_000)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():
        flow.step()
    thread.join()
    inp.advance_to(100)
    flow.run_until(100)
    assert errors == []
    oracle = collections.Counter([0] + [k % 7 for k in range(n)])
    assert _counts(cap, 99) == dict(oracle)


def test_threads_feeding_and_reading_while_a_slow_run_runs_wait_for_it() -> None:
    """update_batch, update_at, advance_to and a capture read from a second thread while the
    first thread is inside run_until (a slow user function): they wait, then take effect
    exactly once."""
    flow = dd.Dataflow()
    inp, c = flow.new_input(("x",))
    running = threading.Event()

    def slow(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        running.set()
        time.sleep(0.3)
        return cols

    cap = c.map(slow, columns=("x",)).count(by="x").capture()
    inp.update_at((1,), 0)
    inp.advance_to(1)
    seen: list[Any] = []
    errors: list[BaseException] = []

    def other() -> None:
        try:
            running.wait(10)
            inp.update_batch({"x": np.array([2, 2, 3])}, times=1)
            inp.update_at((3,), 1)
            seen.append(cap.updates().num_rows)
            inp.advance_to(2)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=other)
    thread.start()
    flow.run_until(1)
    thread.join()
    assert errors == []
    assert seen == [1]  # read after the run: the count of time 0
    flow.run_until(2)
    assert _counts(cap, 1) == {1: 1, 2: 2, 3: 2}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("call", ["update_at", "update_batch", "flush", "capture"])
def test_a_user_function_calling_into_its_running_dataflow_is_a_reentrancy_error(
    workers: int, call: str
) -> None:
    """Whether the engine runs the function on the caller's thread (one worker) or its own."""
    flow = dd.Dataflow(workers=workers)
    inp, c = flow.new_input(("x",))
    holder: dict[str, dd.Capture] = {}
    calls = {"n": 0}

    def fn(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        calls["n"] += 1
        if calls["n"] == 1:
            if call == "update_at":
                inp.update_at((9,), 3)
            elif call == "update_batch":
                inp.update_batch({"x": [9]}, times=3)
            elif call == "flush":
                inp.flush()
            else:
                holder["cap"].updates()
        return cols

    holder["cap"] = cap = c.map(fn, columns=("x",)).capture()
    inp.update_at((1,), 0)
    inp.advance_to(1)
    with pytest.raises(dd.ReentrancyError, match=r"running \(run_until\(1\)\)"):
        flow.run_until(1)
    flow.run_until(1)
    assert cap.at(0).to_pylist() == [{"x": 1, "diff": 1}]


class _InterruptAfterPush:
    """The native engine, but a Ctrl-C arrives right after its first non-empty push."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.pushes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def push(self, node: int, columns: Any, times: Any, diffs: Any) -> None:
        self._engine.push(node, columns, times, diffs)
        self._pushed(len(diffs))

    def push_int_rows(self, node: int, width: int, rows: Any, times: Any, diffs: Any) -> bool:
        pushed = bool(self._engine.push_int_rows(node, width, rows, times, diffs))
        if pushed:
            self._pushed(len(diffs))
        return pushed

    def _pushed(self, n: int) -> None:
        if n:
            self.pushes += 1
            if self.pushes == 1:
                os.kill(os.getpid(), signal.SIGINT)


def _interrupting(monkeypatch: pytest.MonkeyPatch) -> None:
    native = dd.Dataflow.engine_factory

    def factory(plan: str, workers: int, callback: Any) -> Any:
        return _InterruptAfterPush(native(plan, workers, callback))

    monkeypatch.setattr(dd.Dataflow, "engine_factory", staticmethod(factory))


def test_ctrl_c_while_the_buffer_is_handed_over_pushes_it_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _interrupting(monkeypatch)
    flow = dd.Dataflow()
    inp, c = flow.new_input(("x",))
    cap = c.capture()
    for x in (1, 2, 3):
        inp.update_at((x,), 0)
    with pytest.raises(KeyboardInterrupt):
        inp.advance_to(1)  # flushes: the interrupt arrives once the engine has the batch
    inp.advance_to(1)  # the user retries
    flow.run_until(1)
    inp.update_at((4,), 1)
    inp.advance_to(2)
    flow.run_until(2)
    assert cap.updates().to_pylist() == [
        {"x": 1, "time": 0, "diff": 1},
        {"x": 2, "time": 0, "diff": 1},
        {"x": 3, "time": 0, "diff": 1},
        {"x": 4, "time": 1, "diff": 1},
    ]


def test_ctrl_c_after_update_batch_hands_over_leaves_it_accepted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _interrupting(monkeypatch)
    flow = dd.Dataflow()
    inp, c = flow.new_input(("x",))
    cap = c.capture()
    with pytest.raises(KeyboardInterrupt):
        inp.update_batch({"x": np.array([5, 6])}, times=0)
    assert inp.dtypes == {"x": "int64"}  # the accepted batch fixed the dtype
    inp.advance_to(1)
    flow.run_until(1)
    assert cap.updates().to_pylist() == [
        {"x": 5, "time": 0, "diff": 1},
        {"x": 6, "time": 0, "diff": 1},
    ]


def test_interrupts_deferred_raises_after_the_block() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)  # a signal check point inside the block
            done.append(1)
    assert done == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize(
    ("method", "call"),
    [
        ("step", "step"),
        ("run_until", "run_until"),
        ("advance_input", "advance_to"),
        ("push_int_rows", "advance_to"),
    ],
)
def test_pyo3_already_borrowed_becomes_a_reentrancy_error(
    monkeypatch: pytest.MonkeyPatch, method: str, call: str
) -> None:
    """Every engine call holds the gate, so the native engine is never entered twice; were it
    (a call the gate does not know of), PyO3's bare "Already borrowed" is a ddflow error,
    also from the calls that skip the gated wrapper because they hold the gate already
    (``run_until``, and ``advance_to``'s hand-off and advance on int times)."""
    native = dd.Dataflow.engine_factory
    armed = {"on": False}

    class Busy:
        def __init__(self, engine: Any) -> None:
            self._engine = engine

        def __getattr__(self, name: str) -> Any:
            attr = getattr(self._engine, name)
            if name != method:
                return attr

            def busy(*args: Any) -> Any:
                if armed["on"]:
                    raise RuntimeError("Already borrowed")
                return attr(*args)

            return busy

    monkeypatch.setattr(dd.Dataflow, "engine_factory", staticmethod(lambda *a: Busy(native(*a))))
    flow = dd.Dataflow()
    inp, c = flow.new_input(("x",))
    cap = c.capture()
    inp.update_at((1,), 0)
    inp.advance_to(1)  # the input is started: advance_to takes its fast path from now on
    flow.run_until(1)
    inp.update_at((2,), 1)
    armed["on"] = True
    with pytest.raises(dd.ReentrancyError, match=rf"engine.{method}: the engine is busy") as info:
        if call == "step":
            flow.step()
        elif call == "run_until":
            inp.advance_to(2)
            flow.run_until(2)
        else:
            inp.advance_to(2)
    assert isinstance(info.value.__cause__, RuntimeError)
    armed["on"] = False
    inp.advance_to(2)
    flow.run_until(2)
    assert cap.updates().to_pylist() == [
        {"x": 1, "time": 0, "diff": 1},
        {"x": 2, "time": 1, "diff": 1},
    ]


def test_two_dataflows_sharing_an_engine_take_turns_across_threads() -> None:
    """A dataflow attached to another's engine (import_trace) shares its gate: one thread
    running each of them never enters the engine twice at once."""
    live = dd.Dataflow()
    edges_in, e = live.new_input(("src", "dst"))
    arr = e.arrange_by_key(on="src")
    mine = arr.count().capture()
    other = dd.Dataflow()
    theirs = other.import_trace(arr.trace()).count().capture()
    assert other.gate is live.gate
    errors: list[BaseException] = []
    stop = threading.Event()

    def drive_other() -> None:
        try:
            while not stop.is_set():
                other.step()
                theirs.updates()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    edges_in.update_at((0, 0), 0)
    edges_in.advance_to(1)
    live.run_until(1)  # starts both (the attached one joins the live engine)
    thread = threading.Thread(target=drive_other)
    thread.start()
    n = 200
    for t in range(1, n):
        edges_in.update_at((t % 5, t), t)
        edges_in.advance_to(t + 1)
        live.run_until(t + 1)
    stop.set()
    thread.join()
    other.run_until(n)
    assert errors == []
    oracle = collections.Counter([0] + [t % 5 for t in range(1, n)])
    expected = [{"src": k, "count": v, "diff": 1} for k, v in sorted(oracle.items())]
    assert sorted(mine.at(n - 1).to_pylist(), key=lambda r: r["src"]) == expected
    assert sorted(theirs.at(n - 1).to_pylist(), key=lambda r: r["src"]) == expected
