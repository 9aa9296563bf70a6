"""Time per refresh batch of ``min`` / ``max`` / ``count_distinct`` (or, with ``--floats``,
``sum`` / ``mean`` of a float64 column) over a few huge groups: whether a batch costs its own
size or its groups'.

Loads ``--rows`` rows into ``--groups`` groups at time 0, then applies ``--batches`` batches
of ``--batch`` changes (half inserts, half deletes of loaded rows), each at its own time, and
reports the load time and the median time per batch. With running multisets a batch costs
about its size times log of the group; re-reading the group costs the group's size.

    python benches/group_extremes.py --rows 1000000 --groups 4 --batches 20 --batch 100
    python benches/group_extremes.py --floats     # float sums and means (exact running sums)
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from fractions import Fraction

import numpy as np

import ddflow as dd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--floats", action="store_true", help="sum and mean of a float64 column")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    g = rng.integers(0, args.groups, args.rows)
    x = rng.integers(0, 10 * args.rows, args.rows)
    u = rng.integers(0, args.rows // 10 + 1, args.rows)

    flow = dd.Dataflow()
    inp, c = flow.new_input({"g": "int64", "x": "int64", "u": "int64"})
    if args.floats:
        f = c.select("g", xf=dd.col("x").cast("float64") / 7.0)
        out = f.group_by("g").agg(total=dd.sum("xf"), avg=dd.mean("xf"))
    else:
        out = c.group_by("g").agg(lo=dd.min("x"), hi=dd.max("x"), users=dd.count_distinct("u"))
    cap = out.capture(keep="state")
    start = time.perf_counter()
    inp.update_batch({"g": g, "x": x, "u": u}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    load = time.perf_counter() - start
    per_batch = []
    half = args.batch // 2
    for b in range(args.batches):
        t = b + 1
        gone = rng.choice(args.rows, half, replace=False)
        ng = rng.integers(0, args.groups, half)
        nx = rng.integers(0, 10 * args.rows, half)
        nu = rng.integers(0, args.rows // 10 + 1, half)
        start = time.perf_counter()
        inp.update_batch(
            {
                "g": np.concatenate([g[gone], ng]),
                "x": np.concatenate([x[gone], nx]),
                "u": np.concatenate([u[gone], nu]),
            },
            times=t,
            diffs=np.concatenate([-np.ones(half, np.int64), np.ones(half, np.int64)]),
        )
        g[gone], x[gone], u[gone] = ng, nx, nu
        inp.advance_to(t + 1)
        flow.run_until(t + 1)
        per_batch.append(time.perf_counter() - start)
    state = cap.state().to_pylist()
    for row in state:
        sel = g == row["g"]
        if args.floats:
            # The exact sum of the group's floats, rounded once (as the engine's).
            xs = x[sel].astype(np.float64) / 7.0
            exact = float(sum(map(Fraction, xs.tolist())))
            assert row["total"] == exact, row
            assert math.isclose(row["avg"], exact / len(xs), rel_tol=1e-15), row
            continue
        assert row["lo"] == x[sel].min() and row["hi"] == x[sel].max(), row
        assert row["users"] == len(np.unique(u[sel])), row
    print(
        f"rows {args.rows:,} in {args.groups} groups: load {load:.2f} s; "
        f"{args.batches} batches of {args.batch} changes: median "
        f"{statistics.median(per_batch) * 1000:.1f} ms per batch "
        f"(min {min(per_batch) * 1000:.1f}, max {max(per_batch) * 1000:.1f}); "
        "final state checked against numpy" + (" and exact fractions" if args.floats else "")
    )


if __name__ == "__main__":
    main()
