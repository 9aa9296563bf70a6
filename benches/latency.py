"""Latency of single BFS updates run to completion on the 1k-node / 2k-edge graph.

The main job's dataflow (``dd.algorithms.bfs`` from node 0 on a G(n, m) graph from
``ddflow.examples.bfs.random_graph``), loaded at time 0; then, for update ``i`` at time
``1 + i``: ``edges_in.update_at`` adds ``edges[m + i]`` and removes ``edges[i]``, both inputs
``advance_to(2 + i)`` and ``flow.run_until(2 + i)``. Each update is timed from its first
``update_at`` call to the return of ``run_until`` (``time.perf_counter_ns``); after
``--warmup`` updates, ``--updates`` are measured. Reported: p50, p90, p99, p99.9 and max of
the whole update, and the same for its parts: ``run_until`` (the engine), the two
``update_at`` (buffered in Python) and the two ``advance_to`` (the first hands the buffered
records to the engine); and the engine's scheduling passes per update.

With the operator log on (``--log on``, the engine's default, as in the main job) the script
also sums the log per operator kind over the measured updates: invocations per update and the
engine's own nanoseconds, a profile of where one update's time goes.

Reference: differential-dataflow 0.26 on this machine kind, p50 33 us, p99 1.5 ms.

Usage::

    python benches/latency.py                          # 2,000 updates after 500 warm-up
    python benches/latency.py --updates 10000 --log off
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from typing import Any

import numpy as np

import ddflow as dd
from ddflow.examples.bfs import random_graph

__all__ = ["measure", "percentiles", "main"]

DD_P50_US = 33.0
DD_P99_US = 1500.0
QUANTILES = (50.0, 90.0, 99.0, 99.9)


def percentiles(ns: np.ndarray) -> dict[str, float]:
    """p50 .. p99.9, max and mean of nanosecond samples, in microseconds."""
    us = ns.astype(np.float64) / 1e3
    out = {f"p{q:g}": float(np.percentile(us, q)) for q in QUANTILES}
    out["max"] = float(us.max())
    out["mean"] = float(us.mean())
    return out


def measure(
    nodes: int,
    edges: int,
    updates: int,
    warmup: int,
    workers: int,
    log: bool,
    seed: int,
    gc_off: bool,
) -> dict[str, Any]:
    """Runs the single-update loop; returns samples (ns), load time and the log profile."""
    total = warmup + updates
    src, dst = random_graph(nodes, edges + total, seed)
    s_l, d_l = src.tolist(), dst.tolist()

    flow = dd.Dataflow(workers=workers)
    edges_in, edges_c = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
    roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
    dists = dd.algorithms.bfs(edges_c, roots)
    probe = dists.probe()

    start = time.perf_counter()
    edges_in.update_batch({"src": src[:edges], "dst": dst[:edges]}, times=0)
    roots_in.update_at((0,), time=0)
    edges_in.advance_to(1)
    roots_in.advance_to(1)
    flow.run_until(1)
    load = time.perf_counter() - start
    native: Any = flow._engine()  # the native engine (set_logging is not in EngineLike)
    native.set_logging(log)

    whole = np.empty(updates, dtype=np.int64)
    engine = np.empty(updates, dtype=np.int64)
    push = np.empty(updates, dtype=np.int64)
    log_from = 0
    passes_from = 0
    clock = time.perf_counter_ns
    if gc_off:
        gc.collect()
        gc.disable()
    try:
        for i in range(total):
            if i == warmup:
                log_from = len(flow.log()) if log else 0
                passes_from = native.passes()
            t = 1 + i
            t0 = clock()
            edges_in.update_at((s_l[edges + i], d_l[edges + i]), time=t, diff=1)
            edges_in.update_at((s_l[i], d_l[i]), time=t, diff=-1)
            tp = clock()
            edges_in.advance_to(t + 1)
            roots_in.advance_to(t + 1)
            t1 = clock()
            flow.run_until(t + 1)
            t2 = clock()
            if i >= warmup:
                whole[i - warmup] = t2 - t0
                engine[i - warmup] = t2 - t1
                push[i - warmup] = tp - t0
    finally:
        if gc_off:
            gc.enable()
    if not probe.done(total):
        raise dd.DdflowError(f"distances not complete at time {total}")

    profile: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    if log:
        for entry in flow.log()[log_from:]:
            p = profile[entry["op"]]
            p[0] += 1
            p[1] += entry["updates_in"]
            p[2] += entry["nanos"]
    return {
        "whole": whole,
        "engine": engine,
        "update_at": push,
        "advance_to": whole - engine - push,
        "passes": (native.passes() - passes_from) / updates,
        "load": load,
        "profile": dict(profile),
    }


def report(res: dict[str, Any], args: argparse.Namespace) -> str:
    """Markdown tables for one run."""
    lines = [
        f"{args.nodes:,} nodes / {args.edges:,} edges, {args.workers} worker(s), "
        f"{args.updates:,} single updates after {args.warmup:,} warm-up, operator log "
        f"{args.log}, gc {'off' if args.gc_off else 'on'}; load {res['load']:.3f} s",
        "",
        "| us | p50 | p90 | p99 | p99.9 | max | mean |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    parts = (
        ("update (API + engine)", "whole"),
        ("run_until only", "engine"),
        ("2 x update_at", "update_at"),
        ("2 x advance_to", "advance_to"),
    )
    for label, key in parts:
        p = percentiles(res[key])
        lines.append(
            f"| {label} | {p['p50']:.1f} | {p['p90']:.1f} | {p['p99']:.1f} | {p['p99.9']:.1f} "
            f"| {p['max']:.1f} | {p['mean']:.1f} |"
        )
    lines.append(f"| DD 0.26 reference | {DD_P50_US:.0f} | - | {DD_P99_US:.0f} | - | - | - |")
    p = percentiles(res["whole"])
    lines += [
        "",
        f"ratio DD / ddflow: p50 x{DD_P50_US / p['p50']:.2f}, p99 x{DD_P99_US / p['p99']:.2f} "
        "(above 1: ddflow is faster)",
        "",
        f"scheduling passes per update: {res['passes']:.2f}",
    ]
    prof = res["profile"]
    if prof:
        total_ns = sum(v[2] for v in prof.values())
        n = args.updates
        lines += [
            "",
            "Operator log over the measured updates (engine's own timing per invocation):",
            "",
            "| op | invocations / update | updates in / update | us / update | share "
            "| ns / invocation |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for op, (calls, upd, ns) in sorted(prof.items(), key=lambda kv: -kv[1][2]):
            lines.append(
                f"| {op} | {calls / n:.1f} | {upd / n:.1f} | {ns / n / 1e3:.2f} "
                f"| {ns / total_ns:.0%} | {ns / max(calls, 1):,.0f} |"
            )
        calls = sum(v[0] for v in prof.values())
        lines.append(
            f"| all | {calls / n:.1f} | {sum(v[1] for v in prof.values()) / n:.1f} "
            f"| {total_ns / n / 1e3:.2f} | 100% | {total_ns / max(calls, 1):,.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parses options, measures, prints markdown."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--edges", type=int, default=2_000)
    parser.add_argument("--updates", type=int, default=2_000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", choices=("on", "off"), default="on", help="operator log")
    parser.add_argument("--gc-off", action="store_true", help="disable Python's GC meanwhile")
    args = parser.parse_args(argv)
    res = measure(
        args.nodes,
        args.edges,
        args.updates,
        args.warmup,
        args.workers,
        args.log == "on",
        args.seed,
        args.gc_off,
    )
    print(report(res, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
