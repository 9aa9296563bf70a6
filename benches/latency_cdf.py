"""Latency stability: CDFs of single-update latencies after many prior updates.

On the 1k-node / 2k-edge graph (``benches/gen_graph.py``, seed 0) both peers of
``benches/side_by_side.py`` run the distance-counts job (BFS from node 0, nodes per distance)
in ``latency`` mode: load at time 0, ``PRIOR`` updates in batches of ``--prior-batch`` (each
update at its own time, each batch run to completion), then ``--samples`` single updates (add
one edge, remove one, advance, run to completion), each timed. One child process per (system,
PRIOR). Writes a PNG with one CDF per (system, PRIOR) and a markdown table of percentiles::

    python benches/latency_cdf.py                        # PRIOR 1e3, 1e4, 1e5; 1,000 samples
    python benches/latency_cdf.py --priors 1000,10000,100000,1000000 --samples 1000

Outputs ``benches/results/latency_cdf.png`` and ``benches/results/latency_cdf.md`` (``--out``
changes the stem). The DD peer is built with cargo first unless ``--no-build``. The ddflow
peer's latency is its public API: two ``update_at``, ``advance_to``, ``run_until``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np

BENCHES = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHES))

from gen_graph import ensure_graph  # noqa: E402
from side_by_side import DD_BIN, DDFLOW_PEER, build_dd, loadavg, machine, run_child  # noqa: E402

NODES, EDGES = 1_000, 2_000
QUANTILES = (50, 90, 99, 99.9)


def measure(
    system: str, path: Path, prior: int, samples: int, workers: int, prior_batch: int, tmp: Path
) -> tuple[np.ndarray | None, str]:
    """Latencies in ns of ``samples`` single updates after ``prior``; or None and the error."""
    out = tmp / f"{system}-{prior}.lat"
    args = ["latency", str(path), str(EDGES), str(prior), str(samples)]
    args += ["-w", str(workers), "--prior-batch", str(prior_batch), "--latencies", str(out)]
    cmd = [str(DD_BIN), *args] if system == "DD" else [sys.executable, str(DDFLOW_PEER), *args]
    run = run_child(cmd, timeout=3600)
    if run.result is None or not out.exists():
        return None, run.error or "no output"
    return np.fromfile(out, dtype="<u8").astype(np.int64), ""


def plot(curves: dict[tuple[str, int], np.ndarray], png: Path, title: str) -> None:
    """One CDF per (system, prior): latency (log x) against the fraction of updates."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    priors = sorted({p for _, p in curves})
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.85, max(1, len(priors))))
    for (system, prior), ns in sorted(curves.items()):
        us = np.sort(ns) / 1e3
        y = np.arange(1, len(us) + 1) / len(us)
        style = "-" if system == "ddflow" else "--"
        color = colors[priors.index(prior)]
        ax.step(
            us,
            y,
            where="post",
            linestyle=style,
            color=color,
            label=f"{system}, after {prior:,} updates",
        )
    ax.set_xscale("log")
    ax.set_xlabel("latency of one update run to completion (us, log scale)")
    ax.set_ylabel("fraction of updates")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Measures every (system, prior), writes the PNG and the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--priors", default="1000,10000,100000")
    parser.add_argument("--samples", type=int, default=1_000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--prior-batch", type=int, default=1_000)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--out", type=Path, default=BENCHES / "results" / "latency_cdf")
    args = parser.parse_args(argv)
    command = "python benches/latency_cdf.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    priors = [int(p) for p in args.priors.split(",")]
    if not args.no_build:
        build_dd()
    info, start_load = machine(), loadavg()
    path = ensure_graph(NODES, EDGES, max(priors) + args.samples, seed=0)
    curves: dict[tuple[str, int], np.ndarray] = {}
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="latency_cdf-") as tmpdir:
        for prior in priors:
            for system in ("DD", "ddflow"):
                ns, err = measure(
                    system, path, prior, args.samples, args.workers, args.prior_batch, Path(tmpdir)
                )
                if ns is None:
                    failures.append(f"{system} after {prior:,}: {err}")
                    print(f"{system:>6} after {prior:>9,}: FAILED {err}", flush=True)
                    continue
                curves[(system, prior)] = ns
                p = np.percentile(ns / 1e3, [50, 99])
                print(
                    f"{system:>6} after {prior:>9,}: p50 {p[0]:,.0f} us, p99 {p[1]:,.0f} us",
                    flush=True,
                )
    end_load = loadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    png = args.out.with_suffix(".png")
    title = (
        f"single-update latency, BFS distance counts on 1k/2k, {args.workers} worker(s)\n"
        f"{info['cpu']}; commit {info['commit']}; {info['date']}"
    )
    plot(curves, png, title)
    lines = [
        "# Single-update latency after many prior updates",
        "",
        "Written by `benches/latency_cdf.py` (see its docstring). BFS distance counts on the "
        "1k-node / 2k-edge graph (`benches/gen_graph.py`, seed 0); after PRIOR updates "
        f"(batches of {args.prior_batch:,}, each update at its own time), {args.samples:,} "
        "single updates (add one edge, remove one, advance, run to completion), each timed. "
        "DD: `benches/peers/dd_bfs latency`; ddflow: `benches/peers/ddflow_peer.py latency` "
        "(public API, `Dataflow(log=False)`). Plot: "
        f"`{png.name}` (solid ddflow, dashed DD).",
        "",
        f"* command: `{command}`",
        f"* machine: {info['cpu']}; python {info['python']}; {info['rustc']}",
        f"* date: {info['date']}; commit {info['commit']} (last change to rust/ or python/: "
        f"{info['engine']}); ddflow {info['ddflow']} (the installed build: reinstall it "
        "from this checkout first, or the engine measured is older than the commit)",
        f"* load averages (1 / 5 / 15 min): {start_load} at the start, {end_load} at the end",
        "",
        "| prior updates | system | p50 us | p90 us | p99 us | p99.9 us | max us |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (system, prior), ns in sorted(curves.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        q = np.percentile(ns / 1e3, QUANTILES)
        cells = " | ".join(f"{v:,.0f}" for v in (*q, ns.max() / 1e3))
        lines.append(f"| {prior:,} | {system} | {cells} |")
    if failures:
        lines += ["", *[f"* FAILED: {f}" for f in failures]]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {png} and {args.out.with_suffix('.md')}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
