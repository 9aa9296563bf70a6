"""The soak bench: an endless clickstream through the run loop for ``--minutes``, with a
1-minute temporal filter (``dd.now()``) feeding a count per page and hourly windows
(``group_by_dynamic(every="1h", emit="final")`` behind a watermark); samples the process'
RSS and writes ``benches/results/soak.md``.

``python benches/soak.py [--minutes 10] [--warmup 2] [--batch 2000] [--step-ms 50]
[--users 10000] [--user-churn 0] [--pages 200] [--sample 2] [--out benches/results/soak.md]``

Events ``(ts, user, page)``: ``ts`` a ``timestamp[ms]`` that advances ``--step-ms`` of
*simulated* event time per event (faster than wall time, so hourly windows close within
the run), pages drawn from a pool of ``--pages``, users from a pool of ``--users`` ids that
slides forward by ``--user-churn`` new ids per tick: with churn, user ids never seen before
keep arriving and old ones stop for good, so the string interner must free the strings no
trace holds any more (``ddflow.memory``) for memory to stay flat. The source is *timed*: each
event's logical time is its ``ts`` in milliseconds (as a source's ``time_column=`` gives),
so ``now()`` is the simulated clock, and one tick of the run loop pushes one batch.

Outputs go to ``dd.subscribe`` callbacks that count rows and keep nothing (their captures
keep the current state only: the per-page counts, and one row per page and closed window).
RSS (``psutil`` if installed, else ``/proc/self/status``), the engine's heap bytes and the
Rust live bytes are read after a tick of the run loop at least every ``--sample`` seconds;
after ``--warmup`` minutes the max/min ratio says whether memory stays flat (within 10%),
and the peak per minute whether it creeps.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import ddflow as dd
from ddflow.memory import live_bytes, string_memory
from ddflow.sources import Source, SourceBatch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import commit, cpu, load  # noqa: E402

START_MS = 1_767_225_600_000
"""2026-01-01T00:00:00Z: the simulated clock's start."""


def rss_bytes() -> int:
    """This process' resident set size."""
    try:
        import psutil  # type: ignore[import-untyped]

        return int(psutil.Process().memory_info().rss)
    except ImportError:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    return 0


class Clicks(Source):
    """An endless generated clickstream: ``batch`` events per poll, each ``step_ms`` of
    simulated event time after the last."""

    name = "clicks"
    timed = True

    def __init__(
        self, batch: int, step_ms: int, users: int, churn: int, pages: int, seed: int
    ) -> None:
        self.batch = batch
        self.step_ms = step_ms
        self.rng = np.random.default_rng(seed)
        self.users = users
        self.churn = churn
        self.first_user = 0
        self.pages = np.array([f"/page/{i}" for i in range(pages)], dtype=object)
        self.next_ms = START_MS
        self.events = 0

    def poll(self) -> list[SourceBatch]:
        ts = self.next_ms + self.step_ms * np.arange(self.batch, dtype=np.int64)
        self.next_ms = int(ts[-1]) + self.step_ms
        # Zipf-like popularity: a few pages get most clicks.
        page = np.minimum(self.rng.zipf(1.3, self.batch) - 1, len(self.pages) - 1)
        user = self.first_user + self.rng.integers(0, self.users, self.batch)
        self.first_user += self.churn
        table = pa.table(
            {
                "ts": pa.array(ts, pa.timestamp("ms")),
                "user": pa.array(np.char.add("u", user.astype(str))),
                "page": pa.array(self.pages[page]),
            }
        )
        self.events += self.batch
        return [SourceBatch(table, "clicks", times=ts)]

    @property
    def ended(self) -> bool:
        return False


def build(flow: dd.Dataflow, source: Clicks) -> dict[str, int]:
    """The two views over one input; returns the counters their subscribers bump."""
    session, clicks = flow.new_input({"ts": "timestamp[ms]", "user": "str", "page": "str"})
    flow.attach_source(session, source)
    seen = {"recent": 0, "hourly": 0}

    def counter(name: str) -> Any:
        def on_change(table: pa.Table) -> None:
            seen[name] += table.num_rows

        return on_change

    recent = clicks.filter(dd.col("ts") + dd.duration("1m") > dd.now())
    dd.subscribe(recent.group_by("page").agg(n=dd.count()), counter("recent"))
    hourly = (
        clicks.with_watermark("ts", "1m")
        .group_by_dynamic("ts", every="1h", group_by="page", emit="final")
        .agg(n=dd.count(), users=dd.count_distinct("user"))
    )
    # The final rows of the last two hours only: a subscriber's capture keeps the current
    # state, which would otherwise grow by one row per page and hour for ever.
    recent_hours = hourly.filter(dd.col("window_end") + dd.duration("2h") > dd.now())
    dd.subscribe(recent_hours, counter("hourly"))
    return seen


@dataclass
class Sample:
    """One look at the process."""

    seconds: float
    rss: int
    heap: int
    """The engine's heap bytes (``flow.metrics().heap_bytes``: traces and operator state)."""
    events: int
    clock_ms: int
    strings: int
    """Distinct strings the interner holds (``ddflow.memory.string_memory()``)."""
    live: int = 0
    """Bytes live in ddflow's Rust heap (``ddflow.memory.live_bytes()``: the engine's state,
    the interner, sorter scratch, captures)."""

    @property
    def simulated_hours(self) -> float:
        return (self.clock_ms - START_MS) / 3_600_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=2.0, help="minutes before RSS counts")
    p.add_argument("--batch", type=int, default=2000)
    p.add_argument("--step-ms", type=int, default=50)
    p.add_argument("--users", type=int, default=10_000, help="size of the user id pool")
    p.add_argument("--user-churn", type=int, default=0, help="new user ids per tick")
    p.add_argument("--pages", type=int, default=200)
    p.add_argument("--sample", type=float, default=2.0, help="seconds between RSS samples")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default="benches/results/soak.md")
    args = p.parse_args()

    flow = dd.Dataflow(log=False)
    source = Clicks(args.batch, args.step_ms, args.users, args.user_churn, args.pages, args.seed)
    seen = build(flow, source)
    samples: list[Sample] = []
    start = time.monotonic()

    def sample() -> None:
        heap = flow.metrics().heap_bytes
        strings = string_memory()["strings"]
        samples.append(
            Sample(
                time.monotonic() - start,
                rss_bytes(),
                heap,
                source.events,
                source.next_ms,
                strings,
                live_bytes(),
            )
        )

    def after_tick(_: Any) -> None:
        # Called by the run loop after every tick, in the driving thread.
        if time.monotonic() - start >= samples[-1].seconds + args.sample:
            sample()
            if samples[-1].seconds >= args.minutes * 60:
                flow.stop()

    samples.append(Sample(0.0, rss_bytes(), 0, 0, START_MS, string_memory()["strings"]))
    flow.run(progress=after_tick)
    wall = time.monotonic() - start
    report(args, samples, source.events, wall, seen)


def report(
    args: argparse.Namespace,
    samples: list[Sample],
    events: int,
    wall: float,
    seen: dict[str, int],
) -> None:
    """Writes the results file and prints it."""
    mb = 1 << 20
    strings = string_memory()
    warm = [s for s in samples if s.seconds >= args.warmup * 60] or samples[-1:]
    hi, lo = max(s.rss for s in warm), min(s.rss for s in warm)
    ratio = hi / lo
    heap_hi, heap_lo = max(s.heap for s in warm), min(s.heap for s in warm)
    live_hi, live_lo = max(s.live for s in warm), min(s.live for s in warm)
    minutes = range(int(args.warmup) + 1, int(samples[-1].seconds // 60) + 1)
    peaks = [max(s.rss for s in samples if m - 1 <= s.seconds / 60 < m) for m in minutes]
    cmd = "python benches/soak.py " + " ".join(sys.argv[1:])
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "# Soak: a temporal filter and hourly windows over an endless stream",
        "",
        f"Command: `{cmd.strip()}` (commit {commit()}, {stamp}).",
        f"Machine: {cpu()}, {os.cpu_count()} cores shared with other work; load average "
        f"(1/5/15 min) at the end: {load()}.",
        "",
        f"The stream: {args.batch} events per tick, each {args.step_ms} ms of simulated event "
        f"time after the last (the source is timed: logical time = event time in ms, so "
        f"simulated time runs far faster than wall time and hourly windows close within the "
        f"run), {args.pages} pages, users from a pool of {args.users:,} ids that slides "
        f"forward by {args.user_churn:,} new ids per tick (about "
        f"{args.users + args.user_churn * (events // args.batch):,} user ids in all). Views: "
        f"`filter(col('ts') + duration('1m') > now())` then a count per page, and "
        f"`with_watermark('ts', '1m').group_by_dynamic('ts', every='1h', group_by='page', "
        f"emit='final')` with count and count_distinct(user), its rows kept for two hours "
        f"(`filter(col('window_end') + duration('2h') > now())`); subscribers count rows and "
        f"keep nothing (their captures keep the current state).",
        "",
        f"Ran {wall:.0f} s wall, {events:,} events ({events / wall:,.0f} events/s), "
        f"{samples[-1].simulated_hours:.1f} h of simulated event time ({seen['hourly']:,} "
        f"final window rows, {seen['recent']:,} per-page count updates).",
        "",
        f"RSS after the {args.warmup:g}-minute warm-up ({len(warm)} samples every "
        f"{args.sample:g} s): max {hi / mb:.1f} MB, min {lo / mb:.1f} MB, max/min = "
        f"{ratio:.3f}: " + ("**within 10%**." if ratio <= 1.10 else "**over 10%**."),
        "Peak RSS per minute after the warm-up: "
        + ", ".join(f"{p / mb:.1f}" for p in peaks)
        + f" MB (last / first = {peaks[-1] / peaks[0]:.3f})."
        if peaks
        else "",
        f"The engine's heap (traces and operator state) after the warm-up: max "
        f"{heap_hi / mb:.1f} MB, min {heap_lo / mb:.1f} MB. Strings interned after the warm-up: "
        f"max {max(s.strings for s in warm):,}, min {min(s.strings for s in warm):,} "
        f"({strings['collections']:,} collections freed {strings['freed']:,} strings in all). "
        f"Rust live bytes (`ddflow.memory.live_bytes()`) after the warm-up: max "
        f"{live_hi / mb:.1f} MB, min {live_lo / mb:.1f} MB.",
        "",
        "| minute | RSS at its end (MB) | max in it | min in it | engine heap at its end (MB) "
        "| strings interned at its end | events | simulated hours |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for minute in range(1, int(samples[-1].seconds // 60) + 1):
        inside = [s for s in samples if minute - 1 <= s.seconds / 60 < minute]
        end = inside[-1]
        lines.append(
            f"| {minute} | {end.rss / mb:.1f} | {max(s.rss for s in inside) / mb:.1f} | "
            f"{min(s.rss for s in inside) / mb:.1f} | {end.heap / mb:.1f} | {end.strings:,} | "
            f"{end.events:,} | "
            f"{end.simulated_hours:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
