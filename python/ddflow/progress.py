"""Progress of ``flow.run()``: ``flow.run(progress=True | False | callable)``.

After every tick of the run loop (and once when the run ends) a reporter gets a
:class:`RunProgress`: rows the sources handed over, their rate, how much of the sources'
known size has been read, and how far the dataflow's frontier trails the clock. What it
shows:

* ``progress=True``: a progress bar (tqdm, the extra ``ddflow[progress]``) when every source
  knows its size (``Source.size()``: bytes of files, rows of a Delta snapshot; the bar adds
  them up), else a one-line status (rows, rows/s, frontier lag); without tqdm, the same as
  one plain line redrawn on stderr;
* ``progress=callable``: ``callable(progress)`` after every tick, nothing drawn;
* ``progress=False``: nothing; the default (``None``) is ``True`` when stderr is a terminal.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from ddflow.runloop import RunLoop

__all__ = ["RunProgress", "reporter"]


@dataclass(frozen=True)
class RunProgress:
    """Where a ``flow.run()`` stands."""

    elapsed: float
    """Seconds since the run started."""
    rows: int
    """Rows (and bad rows) the sources handed over in this run."""
    rate: float
    """``rows`` per second of ``elapsed``."""
    read: int | None
    """How much of the sources' ``total`` has been read (``Source.progress()``, summed), or
    ``None`` when a source does not know its size."""
    total: int | None
    """The sources' sizes summed (``Source.size()``), or ``None`` when one does not know."""
    frontier: int | None
    """The shared frontier of the source inputs (``None`` before the first tick)."""
    lag: int | None
    """How far the frontier trails the run loop's clock, in milliseconds (processing time;
    for sources with ``time_column=``, how far event time trails the clock)."""
    final: bool
    """Whether the run has ended (the last report)."""


def reporter(
    loop: RunLoop, progress: bool | Callable[[RunProgress], Any] | None
) -> Callable[[bool], None] | None:
    """The run loop's reporter for ``flow.run(progress=...)`` (``None``: report nothing)."""
    if progress is None:
        progress = _is_terminal(sys.stderr)
    if progress is False:
        return None
    tracker = _Tracker(loop)
    if progress is True:
        return _Display(tracker, sys.stderr)
    if not callable(progress):
        raise TypeError(f"run: progress must be True, False or a callable, not {progress!r}")
    target = progress
    return lambda final: target(tracker.snapshot(final))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


class _Tracker:
    """Turns the run loop's counters into :class:`RunProgress`."""

    def __init__(self, loop: RunLoop) -> None:
        self.loop = loop
        self.started = time.monotonic()
        self.rows_before = loop.rows_read

    def snapshot(self, final: bool) -> RunProgress:
        elapsed = time.monotonic() - self.started
        rows = self.loop.rows_read - self.rows_before
        sizes = [s.size() for s in self.loop.sources]
        known = bool(sizes) and all(size is not None for size in sizes)
        total = sum(size for size in sizes if size is not None) if known else None
        read = sum(s.progress() for s in self.loop.sources) if known else None
        frontier = self.loop.frontier
        lag = None if frontier is None else max(0, self.loop.clock() - frontier)
        return RunProgress(
            elapsed=elapsed,
            rows=rows,
            rate=rows / elapsed if elapsed > 0 else 0.0,
            read=read,
            total=total,
            frontier=frontier,
            lag=lag,
            final=final,
        )


class _Display:
    """Draws the progress on ``stream``: a tqdm bar or status line, else a plain line."""

    interval = 0.2
    """Seconds between two redraws."""

    def __init__(self, tracker: _Tracker, stream: TextIO) -> None:
        self.tracker = tracker
        self.stream = stream
        self.bar: Any = None
        self.bar_total: int | None = None
        self.last = 0.0
        # tqdm is the optional extra ddflow[progress] (it ships no type hints: Any here).
        self.tqdm: Any = None
        if importlib.util.find_spec("tqdm") is not None:
            self.tqdm = importlib.import_module("tqdm").tqdm

    def __call__(self, final: bool) -> None:
        now = time.monotonic()
        if not final and now - self.last < self.interval:
            return
        self.last = now
        p = self.tracker.snapshot(final)
        if self.tqdm is not None:
            self._tqdm(p)
        else:
            self._plain(p)

    def _tqdm(self, p: RunProgress) -> None:
        if self.bar is None or p.total != self.bar_total:
            if self.bar is not None:
                self.bar.close()
            self.bar_total = p.total
            self.bar = self.tqdm(
                total=p.total,
                file=self.stream,
                desc="ddflow run",
                unit=" rows" if p.total is None else "",
                unit_scale=True,
                dynamic_ncols=True,
                leave=True,
            )
        done = p.rows if p.total is None else (p.read or 0)
        self.bar.update(max(0, done - self.bar.n))
        postfix = {"rows/s": f"{p.rate:,.0f}"}
        if p.lag is not None:
            postfix["lag"] = f"{p.lag} ms"
        self.bar.set_postfix(postfix, refresh=True)
        if p.final:
            self.bar.close()
            self.bar = None

    def _plain(self, p: RunProgress) -> None:
        text = f"ddflow run: {p.rows:,} rows, {p.rate:,.0f} rows/s"
        if p.total:
            text += f", {100 * (p.read or 0) / p.total:.0f}% read"
        if p.lag is not None:
            text += f", frontier lag {p.lag} ms"
        self.stream.write("\r" + text + ("\n" if p.final else ""))
        self.stream.flush()
