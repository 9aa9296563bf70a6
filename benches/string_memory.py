"""Memory held by interned strings: RSS after many unique strings, after dropped dataflows,
and the interning throughput, in one process.

``python -m benches.string_memory [--strings 1200000] [--flows 30] [--flow-mb 50]``

Three figures, each read from ``/proc/self/status`` (VmRSS):

* ``stream``: one dataflow fed ``--strings`` unique strings (about 20 bytes each) in batches of
  100,000, each batch retracted one time later, so the live state stays one batch; RSS is
  read after the first batch (warm-up) and at the end;
* ``dropped``: ``--flows`` dataflows created one after the other, each fed ``--flow-mb`` MB of
  unique strings (kept in an arrangement) and then dropped; RSS after the first and after the
  last;
* ``throughput``: unique strings interned per CPU-second (a pyarrow column of 1M new
  strings into an input with no consumers, fastest of 3; any collection that falls due is
  in the time), and the same for strings already interned.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import time

import pyarrow as pa

import ddflow as dd


def rss_mb() -> float:
    """This process's resident set (VmRSS) in MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def unique(prefix: str, start: int, n: int) -> pa.Array:
    """``n`` distinct strings of about 20 bytes (``prefix``, a counter, padding)."""
    return pa.array([f"{prefix}{i:012d}-pad" for i in range(start, start + n)])


def stream(total: int, batch: int = 100_000) -> tuple[float, float]:
    """RSS (MB) after the first batch and after ``total`` unique strings went through."""
    flow = dd.Dataflow(log=False)
    inp, rows = flow.new_input(("s",))
    rows.distinct().count().capture(keep="state")
    warm = 0.0
    for t, start in enumerate(range(0, total, batch)):
        col = unique("stream", start, min(batch, total - start))
        inp.update_batch({"s": col}, times=2 * t, diffs=1)
        inp.update_batch({"s": col}, times=2 * t + 1, diffs=-1)
        inp.advance_to(2 * t + 2)
        flow.run_until(2 * t + 2)
        if t == 0:
            warm = rss_mb()
    return warm, rss_mb()


def dropped(flows: int, mb: float) -> tuple[float, float]:
    """RSS (MB) after the first and after the last of ``flows`` dropped dataflows."""
    n = int(mb * 1e6 / 20)
    first = 0.0
    for k in range(flows):
        flow = dd.Dataflow(log=False)
        inp, rows = flow.new_input(("s",))
        out = rows.distinct().count().capture()
        for start in range(0, n, 200_000):
            inp.update_batch({"s": unique(f"flow{k}-", start, min(200_000, n - start))}, times=0)
        inp.advance_to(1)
        flow.run_until(1)
        assert out.state().num_rows == n
        del flow, inp, rows, out
        gc.collect()
        if k == 0:
            first = rss_mb()
    return first, rss_mb()


ROUNDS = itertools.count()


def throughput(n: int = 1_000_000) -> tuple[float, float]:
    """Strings per CPU-second interned (the process's CPU time, all threads: steadier than
    the wall time on a shared machine): new strings, then the same again (fastest of 3)."""
    best_new = best_old = float("inf")
    for _ in range(3):
        col = unique(f"tp{next(ROUNDS)}-", 0, n)  # never seen before in this process
        for kind in ("new", "old"):
            flow = dd.Dataflow(log=False)
            inp, _ = flow.new_input(("s",))
            t = time.process_time()
            inp.update_batch({"s": col}, times=0)
            inp.advance_to(1)
            flow.run_until(1)
            s = time.process_time() - t
            if kind == "new":
                best_new = min(best_new, s)
            else:
                best_old = min(best_old, s)
    return n / best_new, n / best_old


def main() -> None:
    """Prints a markdown table of the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strings", type=int, default=1_200_000)
    ap.add_argument("--flows", type=int, default=30)
    ap.add_argument("--flow-mb", type=float, default=50.0)
    args = ap.parse_args()
    start = rss_mb()
    warm, end = stream(args.strings)
    first, last = dropped(args.flows, args.flow_mb)
    tp_new, tp_old = throughput()
    rows = [
        ("interning, new strings", f"{tp_new / 1e6:.2f} M strings per CPU-s"),
        ("interning, known strings", f"{tp_old / 1e6:.2f} M strings per CPU-s"),
        ("stream: RSS after the first 100k strings", f"{warm:.0f} MB"),
        (f"stream: RSS after {args.strings:,} unique strings", f"{end:.0f} MB"),
        (
            f"dropped: RSS after the 1st of {args.flows} ({args.flow_mb:g} MB each)",
            f"{first:.0f} MB",
        ),
        (f"dropped: RSS after the {args.flows}th", f"{last:.0f} MB"),
    ]
    print(f"RSS at start: {start:.0f} MB\n")
    print("| figure | value |")
    print("| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
