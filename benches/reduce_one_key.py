"""A reduce over one key with N updates at random multi-dimensional times: seconds (CPU and
wall), output updates and interesting times as N doubles.

    python benches/reduce_one_key.py [--sizes 500,1000,2000,4000] [--limit 120]
                                     [--aggs count,min,sum,count_distinct] [--dims 2,3]
                                     [--out benches/results/reduce_one_key.md]

Every run is a fresh process: one input ``(k, v)`` with ``k = 0`` for all N updates, ``v``
random below 10^6, times random with coordinates below 10^6 (nearly all distinct), all in
one batch, then ``advance_to`` past them and ``run_until``. The aggregate is
``group_by("k").agg(...)`` (``count`` is ``count(by="k")``). A row of N stops at the first
size whose run passes ``--limit`` seconds of wall time (the child is killed there).

Reported per run: CPU (user + sys of the run, imports and input building excluded) and wall
seconds, the number of output updates (``updates()`` of the capture, consolidated), the
number of interesting times of the batch (``ddflow.kernels.interesting_times`` of the N
times as new times, no edits: every one of them is a time the reduce must evaluate), and
the CPU microseconds per interesting time. For random 2-D times the interesting times are
the joins of pairs of points, about N^2 / 4 of them, and the output changes at most of them,
so "in proportion" means: microseconds per interesting time roughly constant as N doubles.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benches.machine import commit, cpu, load  # noqa: E402

CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    import numpy as np
    import ddflow as dd
    import ddflow.kernels as K

    agg, n, dims = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(n * 10 + dims)
    keys = np.zeros(n, dtype=np.int64)
    vals = rng.integers(0, 10**6, n)
    times = rng.integers(0, 10**6, size=(n, dims))
    interesting = len(K.interesting_times(np.zeros((0, dims), dtype=np.int64), times))

    def cpu():
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    flow = dd.Dataflow(log=False, time_dims=dims)
    inp, col = flow.new_input({"k": "int64", "v": "int64"})
    if agg == "count":
        red = col.count(by="k")
    else:
        fn = {"min": dd.min, "sum": dd.sum, "count_distinct": dd.count_distinct}[agg]
        red = col.group_by("k").agg(a=fn("v"))
    out = red.capture()
    c0, w0 = cpu(), time.monotonic()
    inp.update_batch({"k": keys, "v": vals}, times=times)
    end = tuple([10**6] * dims)
    inp.advance_to(end)
    flow.run_until(end)
    c1, w1 = cpu(), time.monotonic()
    print(json.dumps({"cpu": c1 - c0, "wall": w1 - w0, "out": len(out.updates()),
                      "interesting": interesting}))
    """
)


def run(agg: str, n: int, dims: int, limit: float) -> dict[str, object] | None:
    """One run in a fresh process; ``None`` when it passed ``limit`` seconds."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", CHILD, agg, str(n), str(dims)],
            capture_output=True,
            text=True,
            timeout=limit,
            env={**os.environ},
        )
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise RuntimeError(f"{agg} N={n} {dims}-D failed:\n{done.stderr}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1000,2000,4000", help="N values (2-D rows)")
    parser.add_argument("--sizes-3d", default="50,100,200,400", help="N values (3-D rows)")
    parser.add_argument("--aggs", default="count,min,sum,count_distinct")
    parser.add_argument("--dims", default="2,3")
    parser.add_argument("--limit", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--out", type=Path, default=None, help="append the table here")
    args = parser.parse_args()
    header = (
        "| aggregate | dims | N | CPU s | wall s | output updates | interesting times "
        "| CPU us / interesting time |"
    )
    lines = [header, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    print("\n".join(lines), flush=True)
    load_before = load()
    started = time.monotonic()
    for dims in [int(d) for d in args.dims.split(",")]:
        sizes = args.sizes if dims == 2 else args.sizes_3d
        for agg in args.aggs.split(","):
            for n in [int(s) for s in sizes.split(",")]:
                r = run(agg, n, dims, args.limit)
                if r is None:
                    stop = f"> {args.limit:.0f} (stopped)"
                    lines.append(f"| {agg} | {dims} | {n:,} | {stop} | | | | |")
                    print(lines[-1], flush=True)
                    break
                per = 1e6 * float(r["cpu"]) / max(1, int(r["interesting"]))  # type: ignore[arg-type]
                lines.append(
                    f"| {agg} | {dims} | {n:,} | {r['cpu']:.2f} | {r['wall']:.2f} | "
                    f"{r['out']:,} | {r['interesting']:,} | {per:.2f} |"
                )
                print(lines[-1], flush=True)
    footer = (
        f"\ncommit {commit()}, {cpu()}, load average {load_before} before and {load()} after, "
        f"{time.monotonic() - started:.0f} s in all.\n"
    )
    print(footer)
    if args.out:
        with args.out.open("a") as f:
            f.write("\n".join(lines) + "\n" + footer + "\n")


if __name__ == "__main__":
    main()
