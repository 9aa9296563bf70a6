"""The cost of one operator invocation in the engine, and of an empty scheduling pass.

A dataflow ``input -> N cheap operators -> probe``, the operators alternating
``select(x=col("x") + 1)`` and ``filter(col("x") >= 0)`` (every record passes), is fed one
single-record update per time: ``update_at((i,), time=t)``, ``advance_to(t + 1)``,
``run_until(t + 1)``. For each chain length N the script times ``--steps`` such steps with the
operator log off, then counts the invocations per step in a calibration pass with the log on
(same dataflow, more steps). The per-invocation cost is the slope of time per step against
invocations per step over the chain lengths (least squares), which removes the fixed cost of
a step (the Python API, the input, the probe); ``time per step / invocations per step`` at the
longest chain is printed too, as is the mean of the engine's own per-invocation ``nanos`` from
the log (the operator's work, without scheduling).

Empty pass: for each chain length, ``engine.step()`` with nothing to do (alone and through
``Dataflow.step``), and ``run_until`` to a time already complete; per plan node too.

Usage::

    python benches/invocation_cost.py                       # N = 0, 8, 32, 128, 256
    python benches/invocation_cost.py --chains 0,64,512 --steps 5000
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from typing import Any

import numpy as np

import ddflow as dd

__all__ = ["build", "time_steps", "main"]


def build(n: int) -> tuple[dd.Dataflow, Any, Any]:
    """A dataflow with a chain of ``n`` cheap operators: (flow, input session, probe)."""
    flow = dd.Dataflow(workers=1)
    inp, c = flow.new_input({"x": "int64"}, name="x")
    for i in range(n):
        c = c.select(x=dd.col("x") + 1) if i % 2 == 0 else c.filter(dd.col("x") >= 0)
    probe = c.probe()
    return flow, inp, probe


def time_steps(flow: dd.Dataflow, inp: Any, start: int, steps: int) -> np.ndarray:
    """Runs ``steps`` single-record updates at times ``start ..``; ns per step."""
    out = np.empty(steps, dtype=np.int64)
    clock = time.perf_counter_ns
    for k in range(steps):
        t = start + k
        t0 = clock()
        inp.update_at((t,), time=t)
        inp.advance_to(t + 1)
        flow.run_until(t + 1)
        out[k] = clock() - t0
    return out


def measure_chain(n: int, steps: int, warmup: int, calib: int) -> dict[str, float]:
    """Time per step (log off) and invocations per step (log on) for a chain of ``n``."""
    flow, inp, _ = build(n)
    engine: Any = flow._engine()  # the native engine: set_logging, passes
    engine.set_logging(False)
    time_steps(flow, inp, 0, warmup)
    gc.collect()
    gc.disable()
    try:
        ns = time_steps(flow, inp, warmup, steps)
    finally:
        gc.enable()
    engine.set_logging(True)
    before = len(flow.log())
    time_steps(flow, inp, warmup + steps, calib)
    entries = flow.log()[before:]
    invocations = len(entries) / calib
    op_nanos = sum(e["nanos"] for e in entries) / max(len(entries), 1)
    passes0 = engine.passes()
    time_steps(flow, inp, warmup + steps + calib, calib)
    passes = (engine.passes() - passes0) / calib
    return {
        "n": n,
        "median_ns": float(np.median(ns)),
        "mean_ns": float(ns.mean()),
        "invocations": invocations,
        "op_nanos": op_nanos,
        "passes": passes,
    }


def empty_pass(n: int, reps: int) -> dict[str, float]:
    """ns per ``engine.step()``, ``flow.step()`` and no-op ``run_until`` with nothing to do."""
    flow, inp, _ = build(n)
    engine: Any = flow._engine()  # the native engine: set_logging, passes
    engine.set_logging(False)
    time_steps(flow, inp, 0, 10)
    while engine.step():
        pass
    clock = time.perf_counter_ns
    res = {}
    for label, fn in (
        ("engine.step()", engine.step),
        ("flow.step()", flow.step),
        ("flow.run_until(done)", lambda: flow.run_until(5)),
    ):
        for _ in range(100):
            fn()
        t0 = clock()
        for _ in range(reps):
            fn()
        res[label] = (clock() - t0) / reps
    return res


def main(argv: list[str] | None = None) -> int:
    """Measures every chain length and prints markdown."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--chains", default="0,8,32,128,256", help="chain lengths N")
    parser.add_argument("--steps", type=int, default=3_000, help="timed steps per chain")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--calib", type=int, default=200, help="steps with the log on")
    parser.add_argument("--reps", type=int, default=20_000, help="empty passes timed")
    args = parser.parse_args(argv)
    chains = [int(x) for x in args.chains.split(",")]

    rows = [measure_chain(n, args.steps, args.warmup, args.calib) for n in chains]
    inv = np.array([r["invocations"] for r in rows])
    med = np.array([r["median_ns"] for r in rows])
    slope, intercept = np.polyfit(inv, med, 1) if len(rows) > 1 else (float("nan"), 0.0)

    print(
        "| chain N | invocations / step | passes / step | median ns / step "
        "| mean ns / step | ns / invocation (step / invocations) | engine nanos / invocation |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        per = r["median_ns"] / r["invocations"] if r["invocations"] else float("nan")
        print(
            f"| {r['n']} | {r['invocations']:.1f} | {r['passes']:.1f} | {r['median_ns']:,.0f} "
            f"| {r['mean_ns']:,.0f} | {per:,.0f} | {r['op_nanos']:,.0f} |"
        )
    print(
        f"\nslope (least squares of median ns / step on invocations / step): "
        f"**{slope:,.0f} ns per invocation**; intercept {intercept:,.0f} ns (fixed cost of a "
        "step: update_at + advance_to + run_until through the Python API)"
    )
    print("\nempty pass with nothing to do, by chain length (ns per call):\n")
    labels = ("engine.step()", "flow.step()", "flow.run_until(done)")
    print("| chain N | plan nodes | " + " | ".join(labels) + " | engine.step() / node |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in chains:
        empty = empty_pass(n, args.reps)
        nodes = len(build(n)[0].plan()["nodes"])
        cells = " | ".join(f"{empty[k]:,.0f}" for k in labels)
        print(f"| {n} | {nodes} | {cells} | {empty['engine.step()'] / nodes:,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
