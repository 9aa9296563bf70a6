"""Ctrl-C during a long ``run_until`` raises KeyboardInterrupt promptly and leaves the flow
usable: running again completes with the same output as an uninterrupted run."""

from __future__ import annotations

import _thread
import threading

import numpy as np

import ddflow as dd


def _flow(n: int) -> tuple[dd.Dataflow, dd.Capture]:
    flow = dd.Dataflow(log=False)
    inp, coll = flow.new_input({"k": "int64"})
    cap = coll.count(by="k").capture()
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 1_000, n)
    inp.update_batch({"k": keys}, times=np.arange(n), diffs=np.ones(n, dtype=np.int64))
    inp.advance_to(n)
    return flow, cap


def _interrupted_run(n: int, delay: float) -> tuple[bool, dd.Capture]:
    """Runs the flow of ``n`` updates with Ctrl-C after ``delay`` seconds, then again to
    completion; returns whether the first run was interrupted, and the capture."""
    flow, cap = _flow(n)
    timer = threading.Timer(delay, _thread.interrupt_main)
    timer.start()
    interrupted = False
    try:
        flow.run_until(n)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        timer.cancel()
    flow.run_until(n)  # resumes (or is already done)
    return interrupted, cap


def test_interrupt_then_resume() -> None:
    # The interrupt must land while the engine runs: a quiet machine finishes the smaller
    # workload in tens of milliseconds, so the larger one is tried when it did.
    for n, delay in ((400_000, 0.02), (3_000_000, 0.02)):
        interrupted, cap = _interrupted_run(n, delay)
        if interrupted:
            break
    assert interrupted, "the run finished before the interrupt: make the workload larger"
    reference_flow, reference = _flow(n)
    reference_flow.run_until(n)
    assert cap.updates().equals(reference.updates())
