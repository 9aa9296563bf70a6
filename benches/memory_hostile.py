"""The hostile memory cases, each in its own process under a memory limit: completed (wall
time, peak RSS) or stopped with ``MemoryLimitError`` (its message), never an abort.

    python benches/memory_hostile.py [--limit 2GB] [--out benches/results/memory_hostile.md]

1. **hot-key join**: 10^4 x 10^4 rows on one key feeding ``count`` (``N * N`` products of
   one record): ``left.join(right, on="k").group_by("k").agg(n=dd.count())``.
2. **min over 4-D times**: one key, 300 updates at random 4-D times (coordinates below
   1,000) feeding ``min``; the reduce's interesting times are the closure of the times
   under join, up to ~300^4 of them.
3. **interesting times 300 x 300**: ``ddflow.kernels.interesting_times`` on 300 edits and 300
   new times of four coordinates below 1,000 (the same closure, as a kernel, under the
   process limit ``DDFLOW_MEMORY_LIMIT``).

A case whose process dies by a signal or with another exit status is reported as an abort.
The table goes to ``--out`` with the command, the machine and the load average.
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

PRELUDE = textwrap.dedent(
    """
    import json, resource, sys, time
    import numpy as np
    import ddflow as dd
    import ddflow.kernels as K
    limit = sys.argv[1]

    def report(**fields):
        fields["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(fields))

    start = time.monotonic()
    try:
        answer = run()
    except dd.MemoryLimitError as exc:
        report(outcome="MemoryLimitError", wall=time.monotonic() - start, message=str(exc))
        sys.exit(3)
    report(outcome="completed", wall=time.monotonic() - start, answer=answer)
    """
)

CASES = {
    "hot-key join 10^4 x 10^4 into count": """
        def run():
            n = 10_000
            flow = dd.Dataflow(log=False, memory_limit=limit)
            left_in, left = flow.new_input({"k": "int64", "a": "int64"})
            right_in, right = flow.new_input({"k": "int64", "b": "int64"})
            out = left.join(right, on="k").group_by("k").agg(n=dd.count()).capture()
            keys = np.zeros(n, dtype=np.int64)
            left_in.update_batch({"k": keys, "a": np.arange(n)}, times=0)
            right_in.update_batch({"k": keys, "b": np.arange(n)}, times=0)
            left_in.advance_to(1)
            right_in.advance_to(1)
            flow.run_until(1)
            (row,) = out.state().to_pylist()
            assert row["n"] == n * n, row
            return f"count {row['n']:,} (= N * N)"
        """,
    "min over 4-D times (300 updates, one key)": """
        def run():
            rng = np.random.default_rng(0)
            n = 300
            flow = dd.Dataflow(log=False, time_dims=4, memory_limit=limit)
            inp, col = flow.new_input({"k": "int64", "v": "int64"})
            out = col.group_by("k").agg(m=dd.min("v")).capture()
            inp.update_batch(
                {"k": np.zeros(n, dtype=np.int64), "v": rng.integers(0, 10**6, n)},
                times=rng.integers(0, 1000, size=(n, 4)),
            )
            inp.advance_to((1000, 1000, 1000, 1000))
            flow.run_until((1000, 1000, 1000, 1000))
            return f"{len(out.updates())} output updates"
        """,
    "interesting_times 300 x 300, 4-D": """
        def run():
            rng = np.random.default_rng(0)
            edits = rng.integers(0, 1000, size=(300, 4))
            news = rng.integers(0, 1000, size=(300, 4))
            return f"{len(K.interesting_times(edits, news)):,} times"
        """,
}


def run_case(body: str, limit: str) -> dict[str, object]:
    """Runs one case in a fresh process; its report, or an abort with the exit status."""
    script = textwrap.dedent(body) + PRELUDE
    env = {**os.environ, "DDFLOW_MEMORY_LIMIT": limit}
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script, limit], capture_output=True, text=True, env=env
    )
    wall = time.monotonic() - start
    if done.returncode in (0, 3):
        result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
        return result
    tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return {"outcome": f"ABORT (exit status {done.returncode})", "wall": wall, "message": tail}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", default="2GB", help="memory_limit of every case")
    parser.add_argument("--out", type=Path, default=ROOT / "benches/results/memory_hostile.md")
    args = parser.parse_args()
    load_before = load()
    rows = []
    for name, body in CASES.items():
        r = run_case(body, args.limit)
        detail = r.get("answer") or r.get("message") or ""
        rss = f"{r['rss_mb']:.0f} MB" if "rss_mb" in r else "-"
        rows.append(f"| {name} | {r['outcome']} | {r['wall']:.1f} s | {rss} | {detail} |")
        print(rows[-1], flush=True)
    lines = [
        "# Hostile memory cases",
        "",
        f"`python benches/memory_hostile.py --limit {args.limit}` (commit {commit()}), each case "
        f"in its own process with `memory_limit={args.limit!r}` (the kernel under "
        f"`DDFLOW_MEMORY_LIMIT={args.limit}`). Machine: {cpu()}, {os.cpu_count()} cores shared "
        f"with other work; load average {load_before} before, {load()} after.",
        "",
        "| case | outcome | wall | peak RSS | answer or message |",
        "| --- | --- | --: | --: | --- |",
        *rows,
        "",
        "Peak RSS is the process's (Python, numpy and the libraries included); the limit "
        "bounds the bytes ddflow's Rust side holds. Wall times are on the shared machine.",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
