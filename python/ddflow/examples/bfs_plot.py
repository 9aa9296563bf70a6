"""The main job's ``--plot PATH``: a PNG of updates/s and latency per round, two panels.

Drawn with matplotlib, the optional extra ``ddflow[plot]``; :func:`require_matplotlib` says
so in a clear error when it is missing (the job checks before it starts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ddflow.examples.bfs_output import RoundTimes

__all__ = ["MISSING", "require_matplotlib", "plot_rounds", "rounds_figure"]

MISSING = "--plot needs matplotlib: pip install 'ddflow[plot]'"
"""The error when matplotlib is not installed."""


def require_matplotlib() -> Any:
    """matplotlib's ``pyplot`` on the file-only Agg backend; ImportError naming the extra
    ``ddflow[plot]`` when matplotlib is missing."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError(MISSING) from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_rounds(times: RoundTimes, path: str | Path, title: str) -> Path:
    """Writes the PNG at ``path``: updates/s per round above, latency per round (ms) below,
    each with its median as a dashed line. Returns the path."""
    plt = require_matplotlib()
    fig = rounds_figure(times, title)
    out = Path(path)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def rounds_figure(times: RoundTimes, title: str) -> Any:
    """The figure :func:`plot_rounds` saves (the caller closes it)."""
    plt = require_matplotlib()
    from matplotlib import ticker

    rounds = np.arange(1, len(times.seconds) + 1)
    rates = times.rates()
    ms = np.asarray(times.seconds, dtype=np.float64) * 1e3
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True, constrained_layout=True)
    marker = "o" if len(rounds) <= 60 else None
    finite = rates[np.isfinite(rates)]
    top.plot(rounds, rates, color="tab:blue", marker=marker, markersize=3, linewidth=1)
    if len(finite):
        med = float(np.median(finite))
        top.axhline(med, color="tab:blue", linestyle="--", linewidth=0.8)
        top.annotate(f"median {med:,.0f}", (1, med), fontsize=8, va="bottom")
    if len(finite) and finite.max() > 5 * float(np.median(finite)):
        top.set_yscale("log")  # a few rounds with little to do would flatten the rest
        top.set_ylabel("updates/s (log scale)")
    else:
        top.set_ylim(bottom=0)
        top.set_ylabel("updates/s")
    top.yaxis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))
    top.grid(True, alpha=0.3)
    top.set_title(title, fontsize=9)
    bottom.plot(rounds, ms, color="tab:red", marker=marker, markersize=3, linewidth=1)
    if len(ms):
        med = float(np.median(ms))
        bottom.axhline(med, color="tab:red", linestyle="--", linewidth=0.8)
        bottom.annotate(f"median {med:.1f} ms", (1, med), fontsize=8, va="bottom")
    bottom.set_ylabel("round latency (ms)")
    bottom.set_xlabel("round (one batch of updates, run to completion)")
    bottom.set_ylim(bottom=0)
    bottom.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    bottom.grid(True, alpha=0.3)
    return fig
