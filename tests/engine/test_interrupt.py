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


def test_interrupt_then_resume() -> None:
    n = 400_000
    flow, cap = _flow(n)
    timer = threading.Timer(0.05, _thread.interrupt_main)
    timer.start()
    interrupted = False
    try:
        flow.run_until(n)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        timer.cancel()
    flow.run_until(n)  # resumes (or is already done)
    reference_flow, reference = _flow(n)
    reference_flow.run_until(n)
    assert interrupted, "the run finished before the interrupt: make the workload larger"
    assert cap.updates().equals(reference.updates())
