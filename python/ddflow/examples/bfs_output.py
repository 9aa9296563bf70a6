"""What the main job (``python -m ddflow.examples.bfs``) shows while and after it runs.

* :class:`Progress`: a tqdm bar (the optional extra ``ddflow[progress]``) or, without tqdm or
  a terminal, a plain line at every tenth of the work;
* :class:`RoundPrinter`: ``--inspect``'s line per round (the net change of each distance's
  count), only the first and last :data:`EDGE_ROUNDS` rounds unless told to print all;
* :class:`RoundTimes` and :func:`summary_table`: the time of every round and the short table
  printed at the end.
"""

from __future__ import annotations

import importlib
import io
import os
import time
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO

import numpy as np
import pyarrow as pa

__all__ = ["EDGE_ROUNDS", "Progress", "RoundPrinter", "RoundTimes", "summary_table", "tqdm_class"]

EDGE_ROUNDS = 3
"""``--inspect`` prints this many rounds at the start (the load first) and at the end."""

ProgressMode = Literal["auto", "bar", "lines", "off"]


def tqdm_class() -> Any | None:
    """tqdm's bar class, or None when tqdm (``ddflow[progress]``) is not installed."""
    try:
        # tqdm ships no type hints: Any here.
        module: Any = importlib.import_module("tqdm")
    except ImportError:
        return None
    return module.tqdm


def _size(stream: TextIO) -> tuple[int, int]:
    """Columns and lines of the terminal ``stream`` writes to; zeros when unknown."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return 0, 0
    return size.columns, size.lines


class Progress:
    """Progress over ``total`` updates on ``stream``: a tqdm bar (``bar``), or a plain line at
    every tenth of the work (``lines``), or nothing (``off``). ``auto`` is a bar on a terminal
    when tqdm is installed, else lines."""

    def __init__(self, total: int, stream: TextIO, mode: ProgressMode = "auto") -> None:
        """Starts the clock; ``bar`` without tqdm raises ImportError naming the extra."""
        bar_class = tqdm_class() if mode in ("auto", "bar") else None
        if mode == "bar" and bar_class is None:
            raise ImportError("a progress bar needs tqdm: pip install 'ddflow[progress]'")
        if mode == "auto":
            mode = "bar" if bar_class is not None and stream.isatty() else "lines"
        self.mode: ProgressMode = mode
        self.total = total
        self.stream = stream
        self.start = time.perf_counter()
        self.done = 0
        self._tenth = 0
        self.bar: Any = None
        if mode == "bar" and bar_class is not None:
            # A terminal that reports no size (0 x 0) would get no bar at all.
            known = min(_size(stream)) > 0
            self.bar = bar_class(
                total=total,
                file=stream,
                desc="bfs",
                unit=" updates",
                unit_scale=total >= 10_000,
                dynamic_ncols=known,
                ncols=None if known else 80,
                nrows=None if known else 24,
                mininterval=0.25,
                leave=True,
            )

    def update(self, done: int) -> None:
        """Reports that ``done`` of the ``total`` updates are complete."""
        step, self.done = done - self.done, done
        if self.bar is not None:
            self.bar.update(step)
        elif self.mode == "lines" and self.total > 0:
            tenth = done * 10 // self.total
            if tenth > self._tenth:
                self._tenth = tenth
                elapsed = time.perf_counter() - self.start
                rate = done / elapsed if elapsed > 0 else float("inf")
                self.stream.write(
                    f"progress: {done:,}/{self.total:,} updates ({done / self.total:.0%}), "
                    f"{elapsed:.1f} s, {rate:,.0f} updates/s\n"
                )
                self.stream.flush()

    def close(self) -> None:
        """Ends the bar (its last state stays on the terminal)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class RoundPrinter:
    """Prints one line per round: the net change of each distance's count over the round and
    at how many distinct times the counts changed. Subscribe it to the capture of the counts'
    changes and call :meth:`end_round` after each round runs to completion (a round without
    changes gets no callback). With ``rounds`` (the number of rounds the job will run, the
    load included) and not ``every``, only the first and last ``edge`` rounds, with one line
    saying how many were left out."""

    def __init__(self, rounds: int, every: bool = False, edge: int = EDGE_ROUNDS) -> None:
        """A printer starting at round 0 (the load)."""
        self.round = 0
        self.rounds = rounds
        self.every = every or rounds <= 2 * edge
        self.edge = edge
        self._pending: list[pa.Table] = []

    def __call__(self, table: pa.Table) -> None:
        """Called with the consolidated changes of a newly completed interval."""
        self._pending.append(table)

    def end_round(self) -> None:
        """Prints the round that just completed (if it is one to show)."""
        r, tables = self.round, self._pending
        self.round, self._pending = r + 1, []
        if not self.every and self.edge <= r < self.rounds - self.edge:
            if r == self.edge:
                hidden = self.rounds - 2 * self.edge
                print(f"... {hidden:,} rounds not shown (--inspect-all prints every round)")
            return
        times = np.concatenate([t["time"].to_numpy() for t in tables]) if tables else []
        net: dict[int, int] = {}
        for table in tables:
            for d, c in zip(table["dist"].to_pylist(), table["diff"].to_pylist(), strict=True):
                net[d] = net.get(d, 0) + c
        parts = [f"dist {d} {c:+d}" for d, c in sorted(net.items()) if c != 0]
        span = f"times {int(min(times))}..{int(max(times))}" if len(times) else "no changes"
        distinct = len(np.unique(times))
        print(
            f"round {r:>5}  {span:<22} changes at {distinct:>5} times  net: "
            + (", ".join(parts) if parts else "none")
        )


@dataclass
class RoundTimes:
    """Wall time of the load and of every update round, with the updates in each round."""

    load_s: float = 0.0
    seconds: list[float] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)

    def add(self, updates: int, seconds: float) -> None:
        """Records one round of ``updates`` that took ``seconds``."""
        self.updates.append(updates)
        self.seconds.append(seconds)

    @property
    def total_s(self) -> float:
        """Seconds spent in update rounds."""
        return float(sum(self.seconds))

    def rates(self) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Updates per second of every round (inf for a round of no measurable time)."""
        secs = np.asarray(self.seconds, dtype=np.float64)
        ups = np.asarray(self.updates, dtype=np.float64)
        with np.errstate(divide="ignore"):
            return np.where(secs > 0, ups / np.maximum(secs, 1e-300), np.inf)


def summary_table(times: RoundTimes, edges: int) -> str:
    """The short table printed at the end: the load and the update rounds, their time,
    updates/s and the median, 90th percentile and slowest round's latency."""
    head = ("phase", "rounds", "updates", "time s", "updates/s", "round ms: p50", "p90", "max")
    rows = [("load", "1", f"{edges:,} edges", f"{times.load_s:.3f}", "-", "-", "-", "-")]
    if times.seconds:
        ms = np.asarray(times.seconds) * 1e3
        total = sum(times.updates)
        rate = total / times.total_s if times.total_s > 0 else float("inf")
        p50, p90 = np.percentile(ms, [50, 90])
        rows.append(
            (
                "updates",
                f"{len(ms):,}",
                f"{total:,}",
                f"{times.total_s:.3f}",
                f"{rate:,.0f}",
                f"{p50:.1f}",
                f"{p90:.1f}",
                f"{ms.max():.1f}",
            )
        )
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    lines = []
    for row in (head, *rows):
        cells = [row[0].ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
