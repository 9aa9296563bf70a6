"""Weighted shortest paths, plain vs prioritized.

For each row (GRAPH and weight range) and each variant, one child process builds the SSSP
dataflow from one node (the source of the last initial edge) on a G(n, m) random graph with
integer weights uniform in ``1..MAX_W``, loads the ``M`` edges at time 0 and runs to
completion (*compute*), then applies ``UPDATES`` updates (update ``r`` adds edge ``M + r``
and removes edge ``r`` at time ``r + 1``), fed together and run to completion (*update*).
Reported per run: compute seconds, update seconds, the child's peak RSS (its own
``VmHWM``), the number of scheduling passes and the number of nodes reached.

Variants (the columns of the table):

* ``plain``: ``dd.algorithms.sssp(..., prioritized=False)``: relax every edge every round;
* ``advanced``: each proposal's iteration advanced to its distance (``advance_iteration``),
  held in the ``arrange`` buffer in front of the ``min``;
* ``delayed``: ``advance_iteration`` then ``delay`` (``sssp(..., prioritized=True)``).

Check (exit status 1 on failure): every variant of a row ends with the same histogram of
distances (``count(by="dist")`` captured at the last time).

Rows are ``GRAPH-wMAX_W`` with GRAPH ``1k`` (1,000 nodes / 2,000 edges), ``100k``
(100,000 / 1M) or ``1m`` (1M / 10M)::

    python benches/sssp.py --rows 1k-w1,1k-w10,1k-w100,1k-w1000
    python benches/sssp.py --rows 100k-w1,100k-w10,100k-w100,100k-w1000 --updates 1000

Results go to ``benches/results/sssp.md`` (``--out``) with machine, date, commit, load
averages and the command.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
GRAPHS = {"1k": (1_000, 2_000), "100k": (100_000, 1_000_000), "1m": (1_000_000, 10_000_000)}
VARIANTS = ("plain", "advanced", "delayed")

__all__ = ["build", "child", "main"]


def build(flow: Any, variant: str) -> tuple[Any, Any, Any, Any]:
    """The SSSP dataflow for ``variant``: edge and root inputs, the distance histogram
    capture and a probe on the distances."""
    import ddflow as dd

    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64", "w": "int64"}, name="edges")
    roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
    if variant in ("plain", "delayed"):
        dists = dd.algorithms.sssp(edges, roots, weight="w", prioritized=variant == "delayed")
    else:
        nodes = roots.select("node", dist=dd.lit(0))

        def step(d: Any) -> Any:
            return (
                d.join(edges, left_on="node", right_on="src")
                .select(node=dd.col("dst"), dist=dd.col("dist") + dd.col("w"))
                .concat(nodes)
                .advance_iteration(dd.col("dist"))
                .reduce(by="node", agg=dd.min("dist"))
            )

        dists = nodes.iterate(step)
    hist = dists.count(by="dist").capture()
    return edges_in, roots_in, hist, dists.probe()


def peak_rss_mib() -> float:
    """This process's peak resident set (``VmHWM``), MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(nodes: int, m: int, max_w: int, updates: int, variant: str, seed: int) -> dict[str, Any]:
    """One run in this process; returns the measurements."""
    import ddflow as dd

    rng = np.random.default_rng(seed)
    total = m + updates
    src = rng.integers(0, nodes, total, dtype=np.int64)
    dst = rng.integers(0, nodes, total, dtype=np.int64)
    w = rng.integers(1, max_w + 1, total, dtype=np.int64)
    flow = dd.Dataflow(workers=1)
    edges_in, roots_in, hist, _probe = build(flow, variant)
    native: Any = flow._engine()  # passes() and set_logging are not in EngineLike
    native.set_logging(False)
    t0 = time.perf_counter()
    edges_in.update_batch({"src": src[:m], "dst": dst[:m], "w": w[:m]}, times=0)
    root = int(src[m - 1])  # has an edge that the updates (which remove edges 0..) keep
    roots_in.update_at((root,), time=0)
    edges_in.advance_to(1)
    roots_in.advance_to(1)
    flow.run_until(1)
    compute = time.perf_counter() - t0
    passes0 = native.passes()
    t1 = time.perf_counter()
    if updates:
        r = np.arange(updates, dtype=np.int64)
        adds = slice(m, m + updates)
        edges_in.update_batch(
            {
                "src": np.concatenate([src[adds], src[:updates]]),
                "dst": np.concatenate([dst[adds], dst[:updates]]),
                "w": np.concatenate([w[adds], w[:updates]]),
            },
            times=np.concatenate([r + 1, r + 1]),
            diffs=np.concatenate([np.ones(updates, np.int64), -np.ones(updates, np.int64)]),
        )
    edges_in.advance_to(updates + 1)
    roots_in.advance_to(updates + 1)
    flow.run_until(updates + 1)
    update = time.perf_counter() - t1
    final = sorted((int(row["dist"]), int(row["count"])) for row in hist.at(updates).to_pylist())
    return {
        "variant": variant,
        "compute_s": compute,
        "update_s": update,
        "peak_rss_mib": peak_rss_mib(),
        "passes": native.passes(),
        "passes_compute": passes0,
        "histogram": final,
        "reached": sum(c for _, c in final),
    }


def machine() -> str:
    """CPU model, cores, kernel, Python."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (
        f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def commit() -> str:
    """The repository's HEAD commit (short), or ``unknown``."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_child(
    graph: str, max_w: int, updates: int, variant: str, seed: int, timeout: float
) -> dict[str, Any]:
    """Runs one variant in a child process; ``{"error": ...}`` on failure or timeout."""
    nodes, m = GRAPHS[graph]
    cmd = [sys.executable, __file__, "--child", f"{nodes},{m},{max_w},{updates},{variant},{seed}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"variant": variant, "error": f"timeout after {timeout:.0f} s"}
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return dict(json.loads(line[len("RESULT ") :]))
    return {"variant": variant, "error": (out.stderr.strip().splitlines() or ["no output"])[-1]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", default="1k-w1,1k-w10,1k-w100,1k-w1000")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--updates", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--out", default=str(BENCHES / "results" / "sssp.md"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        n, m, mw, u, variant, seed = args.child.split(",")
        res = child(int(n), int(m), int(mw), int(u), variant, int(seed))
        print("RESULT " + json.dumps(res), flush=True)
        return 0

    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in VARIANTS:
            ap.error(f"unknown variant {v!r}; expected {', '.join(VARIANTS)}")
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    load_before = " ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "| graph | weights | variant | compute s | update s | peak RSS MiB | passes | reached "
        "| check |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    ok = True
    for row in args.rows.split(","):
        graph, wpart = row.split("-w")
        max_w = int(wpart)
        results = [
            run_child(graph, max_w, args.updates, v, args.seed, args.timeout) for v in variants
        ]
        hists = {json.dumps(r.get("histogram")) for r in results if "error" not in r}
        same = len(hists) <= 1
        ok &= same
        nodes, m = GRAPHS[graph]
        for r in results:
            if "error" in r:
                lines.append(f"| {graph} | 1..{max_w} | {r['variant']} | {r['error']} | | | | | |")
                print(f"{row} {r['variant']}: {r['error']}", flush=True)
                continue
            lines.append(
                f"| {graph} ({nodes:,}/{m:,}) | 1..{max_w} | {r['variant']} | "
                f"{r['compute_s']:.2f} | {r['update_s']:.2f} | {r['peak_rss_mib']:.0f} | "
                f"{r['passes']} | {r['reached']:,} | {'same' if same else 'DIFFERENT'} |"
            )
            print(
                f"{row} {r['variant']}: compute {r['compute_s']:.2f} s, update "
                f"{r['update_s']:.2f} s, peak {r['peak_rss_mib']:.0f} MiB, {r['passes']} passes",
                flush=True,
            )
    load_after = " ".join(f"{x:.2f}" for x in os.getloadavg())
    command = "python benches/sssp.py " + shlex.join(sys.argv[1:])
    text = "\n".join(
        [
            "# SSSP: plain vs prioritized",
            "",
            f"* command: `{command}`",
            f"* machine: {machine()}",
            f"* date: {started}, commit {commit()}, load averages before {load_before}, "
            f"after {load_after} (shared machine)",
            f"* job: SSSP from the source of the last initial edge, {args.updates:,} updates "
            f"(add one edge, remove one, each at its own time, run together); 1 worker, "
            f"operator log off; see `benches/sssp.py`",
            "",
            *lines,
            "",
        ]
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"wrote {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
