"""Event-time windows over a stream: what the watermark and ``emit="final"`` cost beside the
same aggregation grouped by a computed window column without a watermark.

``python benches/event_time.py [--events 1000000] [--batch 10000] [--keys 100] [--workers 1]``

Events ``(ts, key, x)``: ``ts`` in milliseconds rising with the logical time plus up to 2 s of
disorder (1% of events 60 s behind: late), one logical time per batch. Each variant runs
the whole stream, batch by batch (``update_batch`` + ``advance_to`` + ``run_until``), and
prints seconds and events per second (fastest of ``--repeat``):

* ``group_by``: ``with_columns(w = ts // 60000).group_by("w", "key").agg(...)``, no watermark;
* ``tumbling``: ``with_watermark("ts", 5000)`` + ``group_by_dynamic(every=60000)``;
* ``tumbling final``: the same with ``emit="final"``;
* ``session``: ``with_watermark`` + ``group_by_session(gap=1000)``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

import ddflow as dd

Build = Callable[[dd.Collection], dd.Collection]
AGGS = {"n": dd.count(), "s": dd.sum("x")}

VARIANTS: dict[str, Build] = {
    "group_by": lambda c: c.with_columns(w=dd.col("ts") // 60_000).group_by("w", "key").agg(**AGGS),
    "tumbling": lambda c: c.with_watermark("ts", 5_000)
    .group_by_dynamic("ts", every=60_000, group_by="key")
    .agg(**AGGS),
    "tumbling final": lambda c: c.with_watermark("ts", 5_000)
    .group_by_dynamic("ts", every=60_000, group_by="key", emit="final")
    .agg(**AGGS),
    "session": lambda c: c.with_watermark("ts", 5_000)
    .group_by_session("ts", gap=1_000, group_by="key")
    .agg(**AGGS),
}


def stream(events: int, batch: int, keys: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """The batches: event times rising 1 ms per event, with disorder and 1% late."""
    rng = np.random.default_rng(seed)
    base = np.arange(events, dtype=np.int64)
    ts = base + rng.integers(-2_000, 2_000, events)
    ts[rng.random(events) < 0.01] -= 60_000
    key = np.array([f"k{i}" for i in range(keys)], dtype=object)[rng.integers(0, keys, events)]
    x = rng.integers(0, 100, events)
    return [
        {"ts": ts[i : i + batch], "key": key[i : i + batch], "x": x[i : i + batch]}
        for i in range(0, events, batch)
    ]


def run(build: Build, batches: list[dict[str, np.ndarray]], workers: int) -> tuple[float, int]:
    """Seconds for the whole stream, and the output rows at the end."""
    flow = dd.Dataflow(workers=workers, log=False)
    inp, c = flow.new_input({"ts": "int64", "key": "str", "x": "int64"})
    out = build(c).capture(keep="state")
    start = time.perf_counter()
    for t, b in enumerate(batches):
        inp.update_batch(b, times=t)
        inp.advance_to(t + 1)
        flow.run_until(t + 1)
    return time.perf_counter() - start, out.state().num_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=10_000)
    ap.add_argument("--keys", type=int, default=100)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    batches = stream(args.events, args.batch, args.keys)
    print(f"{args.events:,} events, batches of {args.batch:,}, {args.keys} keys, ", end="")
    print(f"{args.workers} worker(s)")
    for name, build in VARIANTS.items():
        best, rows = min(run(build, batches, args.workers) for _ in range(args.repeat))
        print(f"{name:16s} {best:7.2f} s  {args.events / best:12,.0f} events/s  {rows:,} rows")


if __name__ == "__main__":
    main()
