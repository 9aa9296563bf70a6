"""The ddflow peer of ``benches/peers/dd_bfs``: the same jobs, through ddflow's public API.

Same modes, arguments and ``RESULT {json}`` summary line as the differential-dataflow peer
(see ``benches/peers/dd_bfs/src/main.rs``), so ``benches/side_by_side.py`` and
``benches/latency_cdf.py`` run both alike, each in its own process::

    python benches/peers/ddflow_peer.py bfs FILE M UPDATES BATCH [-w W] [--history OUT]
    python benches/peers/ddflow_peer.py count TIMES [-w W] [--records N] [--keys K] [--history OUT]
    python benches/peers/ddflow_peer.py latency FILE M PRIOR SAMPLES [-w W] [--prior-batch B]
        [--latencies OUT] [--phases]

``bfs``: ``dd.algorithms.bfs(edges, roots).count(by="dist")`` from node 0 on
``Dataflow(log=False, workers=W)``; the first ``M`` edges of ``FILE`` (u32 little-endian
``(src, dst)`` pairs) loaded with one ``update_batch`` at time 0, then update ``r`` adds edge
``M + r`` and removes edge ``r`` at time ``r + 1``, one ``update_batch`` per batch of
``BATCH``, each batch run to completion (``run_until``). The output is kept with
``capture()``; ``--history`` writes its ``updates()`` as little-endian int64 rows
``(dist, count, time, diff)``. ``count``: ``count(by="k")`` over ``(k, v)`` records, as the DD
peer's count mode. ``latency``: single updates (``update_at``) each run to completion.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

import ddflow as dd

SYSTEM = f"ddflow {dd.__version__}"


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ddflow_peer", description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("bfs", "count", "latency"))
    parser.add_argument("args", nargs="+")
    parser.add_argument("-w", "--workers", type=int, default=1)
    parser.add_argument("--history", default=None)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--prior-batch", type=int, default=1_000)
    parser.add_argument("--latencies", default=None)
    parser.add_argument(
        "--phases",
        action="store_true",
        help="latency: also time each call of the cycle (update_at x2, advance_to, run_until) "
        "and report their medians",
    )
    return parser.parse_args(argv)


def _read_edges(path: str, need: int) -> np.ndarray:
    """The first ``need`` (src, dst) pairs of a graph file, as a (need, 2) uint32 array (held
    as the DD peer holds them; columns are widened to int64 batch by batch)."""
    flat = np.fromfile(path, dtype="<u4", count=2 * need)
    if len(flat) != 2 * need:
        raise SystemExit(f"ddflow_peer: {path} holds {len(flat) // 2} edges, {need} needed")
    return flat.reshape(-1, 2)


def _column(table: pa.Table, name: str) -> np.ndarray:
    """A column of int64 as numpy, shared with Arrow through DLPack (no copy for one chunk):
    pyarrow's ``to_numpy`` would import pandas (some 35 MB resident) when it is installed."""
    col = table[name]
    return np.from_dlpack(col.chunk(0) if col.num_chunks == 1 else col.combine_chunks())


def _history(table: pa.Table, record: str) -> list[np.ndarray]:
    """The captured updates as four int64 columns: record, count, time, diff (views of the
    table's buffers while they are int64 and in one chunk)."""
    return [
        _column(table, c).astype(np.int64, copy=False) for c in (record, "count", "time", "diff")
    ]


def _write_history(cols: list[np.ndarray], path: str, chunk: int = 1 << 16) -> None:
    """Writes the updates as little-endian int64 rows ``(record, count, time, diff)``, a chunk
    of rows at a time (a whole (n, 4) array would be a second copy of the history)."""
    with open(path, "wb") as f:
        for lo in range(0, len(cols[0]), chunk):
            np.column_stack([c[lo : lo + chunk] for c in cols]).astype("<i8", copy=False).tofile(f)


def _final(cols: list[np.ndarray], chunk: int = 1 << 16) -> list[list[int]]:
    """The accumulated output: [record, count, multiplicity] with zeros dropped, sorted.

    Summed in numpy a chunk of rows at a time into a dict per (record, count): a dict entry
    per update, or ``np.unique`` over all rows at once, would hold more than the history."""
    rec, cnt, _, diff = cols
    acc: dict[tuple[int, int], int] = {}
    for lo in range(0, len(rec), chunk):
        part = np.column_stack([rec[lo : lo + chunk], cnt[lo : lo + chunk]])
        pairs, inverse = np.unique(part, axis=0, return_inverse=True)
        sums = np.zeros(len(pairs), dtype=np.int64)
        np.add.at(sums, inverse.reshape(-1), diff[lo : lo + chunk])
        for (r, c), d in zip(pairs.tolist(), sums.tolist(), strict=True):
            acc[(r, c)] = acc.get((r, c), 0) + d
    return [[r, c, m] for (r, c), m in sorted(acc.items()) if m != 0]


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB (``VmHWM``: it starts afresh at ``exec``,
    unlike ``ru_maxrss``, which also covers the pages of the process that forked this one)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return -1.0


def _report(
    mode: str,
    workers: int,
    load: float,
    update: float,
    units: int,
    hist: list[np.ndarray],
    **extra: object,
) -> None:
    result = {
        "system": SYSTEM,
        "mode": mode,
        "workers": workers,
        "load_s": load,
        "update_s": update,
        "updates": units,
        "updates_per_s": units / update if update > 0 else float("inf"),
        "changes": len(hist[0]),
        "peak_rss_mb": peak_rss_mb(),
        "final": _final(hist),
        **extra,
    }
    print("RESULT " + json.dumps(result), flush=True)


def _bfs_flow(workers: int) -> tuple[dd.Dataflow, dd.InputSession, dd.InputSession, dd.Collection]:
    flow = dd.Dataflow(log=False, workers=workers)
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
    roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
    counts = dd.algorithms.bfs(edges, roots).count(by="dist")
    return flow, edges_in, roots_in, counts


def _load(
    flow: dd.Dataflow,
    edges_in: dd.InputSession,
    roots_in: dd.InputSession,
    pairs: np.ndarray,
    m: int,
) -> None:
    cols = {"src": pairs[:m, 0].astype(np.int64), "dst": pairs[:m, 1].astype(np.int64)}
    edges_in.update_batch(cols, times=0)
    del cols
    roots_in.update_at((0,), time=0)
    roots_in.close()
    edges_in.advance_to(1)
    flow.run_until(1)


def _run_updates(
    flow: dd.Dataflow,
    edges_in: dd.InputSession,
    pairs: np.ndarray,
    m: int,
    lo: int,
    hi: int,
    batch: int,
) -> None:
    """Updates lo..hi (update r at time r + 1), each batch run to completion."""
    pm = np.array([1, -1], dtype=np.int64)
    for start in range(lo, hi, batch):
        end = min(start + batch, hi)
        idx = np.arange(start, end, dtype=np.int64)
        times = idx + 1
        edges_in.update_batch(
            {
                "src": np.concatenate([pairs[m + idx, 0], pairs[idx, 0]]).astype(np.int64),
                "dst": np.concatenate([pairs[m + idx, 1], pairs[idx, 1]]).astype(np.int64),
            },
            times=np.concatenate([times, times]),
            diffs=np.repeat(pm, end - start),
        )
        edges_in.advance_to(end + 1)
        flow.run_until(end + 1)


def run_bfs(args: argparse.Namespace) -> None:
    """Mode ``bfs FILE M UPDATES BATCH``."""
    if len(args.args) != 4:
        raise SystemExit("ddflow_peer: bfs takes FILE M UPDATES BATCH")
    path, m, updates, batch = args.args[0], *map(int, args.args[1:])
    pairs = _read_edges(path, m + updates)
    flow, edges_in, roots_in, counts = _bfs_flow(args.workers)
    cap = counts.capture()

    start = time.perf_counter()
    _load(flow, edges_in, roots_in, pairs, m)
    load = time.perf_counter() - start

    start = time.perf_counter()
    _run_updates(flow, edges_in, pairs, m, 0, updates, batch)
    update = time.perf_counter() - start

    hist = _history(cap.updates(), "dist")
    if args.history:
        _write_history(hist, args.history)
    _report("bfs", args.workers, load, update, updates, hist)


def run_count(args: argparse.Namespace) -> None:
    """Mode ``count TIMES``: the count micro-case."""
    if len(args.args) != 1:
        raise SystemExit("ddflow_peer: count takes TIMES")
    times, records, keys = int(args.args[0]), args.records, args.keys
    flow = dd.Dataflow(log=False, workers=args.workers)
    recs_in, recs = flow.new_input({"k": "int64", "v": "int64"}, name="recs")
    cap = recs.count(by="k").capture()

    start = time.perf_counter()
    i = np.arange(records, dtype=np.int64)
    recs_in.update_batch({"k": i % keys, "v": i}, times=0)
    recs_in.advance_to(1)
    flow.run_until(1)
    load = time.perf_counter() - start

    start = time.perf_counter()
    t = np.repeat(np.arange(1, times + 1, dtype=np.int64), keys)
    k = np.tile(np.arange(keys, dtype=np.int64), times)
    recs_in.update_batch({"k": k, "v": records + (t - 1) * keys + k}, times=t)
    recs_in.advance_to(times + 1)
    flow.run_until(times + 1)
    update = time.perf_counter() - start

    hist = _history(cap.updates(), "k")
    if args.history:
        _write_history(hist, args.history)
    n = times * keys
    _report(
        "count", args.workers, load, update, n, hist, times=times, ns_per_update=update * 1e9 / n
    )


def run_latency(args: argparse.Namespace) -> None:
    """Mode ``latency FILE M PRIOR SAMPLES``: single updates after PRIOR updates."""
    if len(args.args) != 4:
        raise SystemExit("ddflow_peer: latency takes FILE M PRIOR SAMPLES")
    path, m, prior, samples = args.args[0], *map(int, args.args[1:])
    pairs = _read_edges(path, m + prior + samples)
    flow, edges_in, roots_in, counts = _bfs_flow(args.workers)
    counts.probe()
    _load(flow, edges_in, roots_in, pairs, m)
    start = time.perf_counter()
    _run_updates(flow, edges_in, pairs, m, 0, prior, max(1, args.prior_batch))
    prior_s = time.perf_counter() - start

    srcs, dsts = pairs[:, 0].tolist(), pairs[:, 1].tolist()
    lat = np.empty(samples, dtype=np.int64)
    phases = np.zeros((samples, 3), dtype=np.int64)
    clock = time.perf_counter_ns
    for j, r in enumerate(range(prior, prior + samples)):
        if args.phases:
            t0 = clock()
            edges_in.update_at((srcs[m + r], dsts[m + r]), time=r + 1, diff=1)
            edges_in.update_at((srcs[r], dsts[r]), time=r + 1, diff=-1)
            t1 = clock()
            edges_in.advance_to(r + 2)
            t2 = clock()
            flow.run_until(r + 2)
            t3 = clock()
            lat[j] = t3 - t0
            phases[j] = (t1 - t0, t2 - t1, t3 - t2)
            continue
        t0 = clock()
        edges_in.update_at((srcs[m + r], dsts[m + r]), time=r + 1, diff=1)
        edges_in.update_at((srcs[r], dsts[r]), time=r + 1, diff=-1)
        edges_in.advance_to(r + 2)
        flow.run_until(r + 2)
        lat[j] = clock() - t0
    if args.latencies:
        lat.astype("<u8").tofile(args.latencies)
    result = {
        "system": SYSTEM,
        "mode": "latency",
        "workers": args.workers,
        "prior": prior,
        "prior_s": prior_s,
        "samples": samples,
        "p50_ns": int(np.quantile(lat, 0.5, method="nearest")) if samples else 0,
        "p99_ns": int(np.quantile(lat, 0.99, method="nearest")) if samples else 0,
        "peak_rss_mb": peak_rss_mb(),
    }
    if args.phases and samples:
        names = ("update_at_x2", "advance_to", "run_until")
        medians = np.median(phases, axis=0)
        result["phase_p50_ns"] = {n: int(v) for n, v in zip(names, medians, strict=True)}
    print("RESULT " + json.dumps(result), flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one mode; prints its RESULT line."""
    args = _parse(argv)
    {"bfs": run_bfs, "count": run_count, "latency": run_latency}[args.mode](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
