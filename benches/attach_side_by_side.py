"""BFS from scratch vs attached to a live edge arrangement, ddflow beside differential-dataflow,
and the latency of a small job while a large BFS attaches beside it.

Both systems read the same graph file (``benches/gen_graph.py``, seed 0) and run BFS from
node 0 (edges arranged by source; the histogram of distances is compared). Per graph, four
child processes, each under ``/usr/bin/time -v`` (wall seconds, peak RSS):

* ``scratch``: one dataflow arranges the edges and runs BFS over them; *from scratch* =
  from the first edge to the BFS being complete;
* ``attach``: a live dataflow arranges the edges and keeps a trace handle (*arrange*); a
  dataflow created afterwards imports the trace and runs the same BFS on it (*attached* =
  from building it to its BFS being complete). DD: ``arrange_by_key().trace`` and
  ``TraceAgent::import``; ddflow: ``arrange_by_key(on="src").trace()`` and
  ``Dataflow.import_trace``.

``--latency GRAPH`` (default off): one live dataflow holds the arranged GRAPH and a small
distance-counts BFS job on the 1,000-node / 2,000-edge graph. Single updates to the small job
(one edge swapped for another), each run until the small job's output is complete, are timed
``--samples`` times (*before*), then a BFS over GRAPH is attached beside it (import of the
live trace) and single updates go on until the large BFS is complete (*during*), then
``--samples`` more (*after*); p50 / p99 / max per phase. ddflow steps the shared engine
while the small job's probe is not done (``step_while``); DD steps the worker while the small
job's probe is behind.

DD: ``benches/peers/dd_attach`` (differential-dataflow 0.26.0 / timely 0.32.0, built here with
cargo). ddflow: the child mode of this script on the installed ``ddflow``, 1 worker::

    python benches/attach_side_by_side.py --rows 10k --latency 10k
    python benches/attach_side_by_side.py --rows 1m --latency 1m --samples 1000

Graphs: ``10k`` (10,000 nodes / 100,000 edges), ``100k`` (100,000 / 1M), ``1m`` (1M / 10M),
``10m`` (10M / 100M). The table goes to ``benches/results/attach_side_by_side.md`` (``--out``)
with machine, date, commit, load averages and the command; exit status 1 if a check fails.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BENCHES = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHES))

from charts import write_chart  # noqa: E402
from gen_graph import ensure_graph  # noqa: E402
from sssp_side_by_side import (  # noqa: E402
    GRAPHS,
    build_peer,
    loadavg,
    machine_lines,
    slim,
    timed,
)

DD_ATTACH = BENCHES / "peers" / "dd_attach"
SMALL = (1_000, 2_000)
UPDATES = 1_000
"""Update edges kept after the graph in each file (the SSSP files' layout; unused here
except by the small job of ``--latency``)."""


# -- the ddflow side ---------------------------------------------------------------------------


def bfs_on(edges: Any, roots: Any) -> Any:
    """BFS distances ``(node, dist)`` with ``edges`` an arrangement keyed by ``src``."""
    import ddflow as dd

    nodes = roots.select("node", dist=dd.lit(0))

    def step(dists: Any) -> Any:
        return (
            dists.join(edges, left_on="node", right_on="src")
            .select(node=dd.col("dst"), dist=dd.col("dist") + 1)
            .concat(nodes)
            .reduce(by="node", agg=dd.min("dist"))
        )

    return nodes.iterate(step)


def _edges(path: str, count: int) -> dict[str, np.ndarray]:
    flat = np.fromfile(path, dtype="<u4", count=2 * count).reshape(-1, 2).astype(np.int64)
    return {"src": np.ascontiguousarray(flat[:, 0]), "dst": np.ascontiguousarray(flat[:, 1])}


def _histogram(cap: Any, t: int) -> list[list[int]]:
    return sorted([int(r["dist"]), int(r["count"])] for r in cap.at(t).to_pylist())


def _peak_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _live() -> tuple[Any, Any, Any]:
    """A live dataflow whose edges are arranged by ``src``: flow, edge input, trace handle."""
    import ddflow as dd

    live = dd.Dataflow(workers=1, log=False)
    edges_in, e = live.new_input({"src": "int64", "dst": "int64"}, name="edges")
    trace = e.arrange_by_key(on="src").trace()
    return live, edges_in, trace


def child_bfs(mode: str, path: str, m: int) -> dict[str, Any]:
    """``scratch`` or ``attach`` on the ddflow side."""
    import ddflow as dd

    if mode == "scratch":
        t0 = time.perf_counter()
        flow = dd.Dataflow(workers=1, log=False)
        edges_in, e = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
        roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
        cap = bfs_on(e.arrange_by_key(on="src"), roots).count(by="dist").capture()
        edges_in.update_batch(_edges(path, m), times=0)
        roots_in.update_at((0,), time=0)
        edges_in.advance_to(1)
        roots_in.advance_to(1)
        flow.run_until(1)
        arrange_s, bfs_s, t_out = 0.0, time.perf_counter() - t0, 0
    else:
        t0 = time.perf_counter()
        live, edges_in, trace = _live()
        edges_in.update_batch(_edges(path, m), times=0)
        edges_in.advance_to(1)
        live.step_while(lambda: True)  # until the live dataflow has nothing left to do
        arrange_s = time.perf_counter() - t0
        t1 = time.perf_counter()
        flow = dd.Dataflow(workers=1, log=False)
        roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
        cap = bfs_on(flow.import_trace(trace), roots).count(by="dist").capture()
        roots_in.update_at((0,), time=1)
        roots_in.advance_to(2)
        edges_in.advance_to(2)
        flow.run_until(2)
        bfs_s, t_out = time.perf_counter() - t1, 1
    hist = _histogram(cap, t_out)
    return {
        "system": f"ddflow {dd.__version__}",
        "mode": mode,
        "arrange_s": arrange_s,
        "bfs_s": bfs_s,
        "reached": sum(c for _, c in hist),
        "peak_rss_mb": _peak_mib(),
        "histogram": hist,
    }


def _q(lat: list[int]) -> dict[str, int]:
    if not lat:
        return {"n": 0, "p50_ns": 0, "p99_ns": 0, "max_ns": 0}
    a = np.sort(np.array(lat, dtype=np.int64))
    return {
        "n": len(a),
        "p50_ns": int(a[round((len(a) - 1) * 0.5)]),
        "p99_ns": int(a[round((len(a) - 1) * 0.99)]),
        "max_ns": int(a[-1]),
    }


def child_latency(path: str, m: int, small_path: str, small_m: int, samples: int) -> dict:
    """``latency`` on the ddflow side (see the module docstring)."""
    import ddflow as dd

    live, edges_in, trace = _live()
    small_in, s = live.new_input({"src": "int64", "dst": "int64"}, name="small")
    sroots_in, sroots = live.new_input({"node": "int64"}, name="small_roots")
    small_probe = dd.algorithms.bfs(s, sroots).count(by="dist").probe()
    small = np.fromfile(small_path, dtype="<u4").reshape(-1, 2).astype(np.int64).tolist()
    small_u = len(small) - small_m
    edges_in.update_batch(_edges(path, m), times=0)
    edges_in.advance_to(1)
    small_in.update_batch(_edges(small_path, small_m), times=0)
    sroots_in.update_at((0,), time=0)
    sroots_in.close()
    small_in.advance_to(1)
    live.run_until(1)

    state = {"r": 0}
    clock = time.perf_counter_ns

    def one() -> int:
        """One swap of a small-graph edge at its own time, stepped until the small job's
        output is complete at that time; its latency in ns."""
        t0 = clock()
        r = state["r"]
        i = r % small_u
        add, rem = tuple(small[small_m + i]), tuple(small[i])
        if (r // small_u) % 2:
            add, rem = rem, add
        t = r + 1
        small_in.update_at(add, time=t, diff=1)
        small_in.update_at(rem, time=t, diff=-1)
        state["r"] = t
        small_in.advance_to(t + 1)
        edges_in.advance_to(t + 1)
        live.step_while(lambda: not small_probe.done(t))
        return clock() - t0

    before = [one() for _ in range(samples)]
    t_attach = state["r"] + 1
    attach_start = time.perf_counter()
    flow = dd.Dataflow(workers=1, log=False)
    roots_in, roots = flow.new_input({"node": "int64"}, name="roots")
    big_cap = bfs_on(flow.import_trace(trace), roots).count(by="dist").capture()
    roots_in.update_at((0,), time=t_attach)
    roots_in.close()
    flow._engine()  # attach now: the next passes run the attached plan too
    during: list[int] = []
    while True:
        during.append(one())
        if big_cap.done(t_attach) or len(during) > 10_000_000:
            break
    attach_s = time.perf_counter() - attach_start
    after = [one() for _ in range(samples)]
    hist = _histogram(big_cap, t_attach)
    return {
        "system": f"ddflow {dd.__version__}",
        "mode": "latency",
        "attach_s": attach_s,
        "before": _q(before),
        "during": _q(during),
        "after": _q(after),
        "reached": sum(c for _, c in hist),
        "peak_rss_mb": _peak_mib(),
        "histogram": hist,
    }


# -- the harness -------------------------------------------------------------------------------


def _f(r: dict[str, Any], key: str, fmt: str = "{:.2f}") -> str:
    return "-" if "error" in r else fmt.format(r[key])


def _ms(q: dict[str, int]) -> str:
    return f"{q['p50_ns'] / 1e6:.2f} / {q['p99_ns'] / 1e6:.2f} / {q['max_ns'] / 1e6:.1f}"


def main(argv: list[str] | None = None) -> int:
    """Runs the rows and the latency case; writes the results file."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default="10k", help="graphs for scratch vs attach")
    ap.add_argument("--latency", default=None, help="large graph for the latency case")
    ap.add_argument("--samples", type=int, default=1000, help="latency samples before/after")
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--out", type=Path, default=BENCHES / "results" / "attach_side_by_side.md")
    ap.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        mode, rest = args.child[0], args.child[1:]
        if mode == "latency":
            res = child_latency(rest[0], int(rest[1]), rest[2], int(rest[3]), int(rest[4]))
        else:
            res = child_bfs(mode, rest[0], int(rest[1]))
        print("RESULT " + json.dumps(res), flush=True)
        return 0
    command = "python benches/attach_side_by_side.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    dd_bin = DD_ATTACH / "target" / "release" / "dd_attach"
    if not args.no_build:
        dd_bin = build_peer(DD_ATTACH)
    head = machine_lines(command)
    load0 = loadavg()
    ok = True
    checks: list[str] = []
    raw: dict[str, Any] = {}
    table = [
        "| graph | arrange s DD / ddflow | attached BFS s DD / ddflow "
        "| from scratch s DD / ddflow | wall s scratch DD / ddflow | wall s attach DD / ddflow "
        "| peak RSS MiB scratch DD / ddflow | peak RSS MiB attach DD / ddflow | reached "
        "| load before | check |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    lat_table: list[str] = []

    def flush(load1: str) -> None:
        _write(args.out, head, load0, load1, table, lat_table, checks)

    for graph in [g for g in (args.rows or "").split(",") if g]:
        nodes, m = GRAPHS[graph]
        path = str(ensure_graph(nodes, m, UPDATES, seed=0))
        load = loadavg()
        res: dict[str, dict[str, Any]] = {}
        for mode in ("scratch", "attach"):
            res[f"DD {mode}"] = timed([str(dd_bin), mode, path, str(m)], args.timeout)
            res[f"ddflow {mode}"] = timed(
                [sys.executable, __file__, "--child", mode, path, str(m)], args.timeout
            )
        raw[graph] = {**res, "load": load}
        for name, r in res.items():
            if "error" in r:
                checks.append(f"{graph} {name}: {r['error']}")
                ok = False
            print(
                f"{graph} {name}: "
                + (
                    r.get("error")
                    or (
                        f"arrange {r['arrange_s']:.2f} s, bfs {r['bfs_s']:.2f} s, wall "
                        f"{r['wall_s']:.1f} s, peak {r['rss_mib']:.0f} MiB"
                    )
                ),
                flush=True,
            )
        hists = {json.dumps(r["histogram"]) for r in res.values() if "error" not in r}
        same = len(hists) == 1
        ok &= same
        checks.append(
            f"{graph}: distance histograms of {len(res)} runs: {'same' if same else 'DIFFERENT'}"
        )
        a, b = res["DD scratch"], res["ddflow scratch"]
        c, d = res["DD attach"], res["ddflow attach"]
        reached = next((f"{r['reached']:,}" for r in res.values() if "error" not in r), "-")
        table.append(
            f"| {graph} ({nodes:,} / {m:,}) | {_f(c, 'arrange_s')} / {_f(d, 'arrange_s')} "
            f"| {_f(c, 'bfs_s')} / {_f(d, 'bfs_s')} | {_f(a, 'bfs_s')} / {_f(b, 'bfs_s')} "
            f"| {_f(a, 'wall_s', '{:.1f}')} / {_f(b, 'wall_s', '{:.1f}')} "
            f"| {_f(c, 'wall_s', '{:.1f}')} / {_f(d, 'wall_s', '{:.1f}')} "
            f"| {_f(a, 'rss_mib', '{:,.0f}')} / {_f(b, 'rss_mib', '{:,.0f}')} "
            f"| {_f(c, 'rss_mib', '{:,.0f}')} / {_f(d, 'rss_mib', '{:,.0f}')} "
            f"| {reached} | {load} | {'same' if same else 'DIFFERENT'} |"
        )
        flush(loadavg() + " (partial)")

    if args.latency:
        nodes, m = GRAPHS[args.latency]
        path = str(ensure_graph(nodes, m, UPDATES, seed=0))
        small = str(ensure_graph(*SMALL, 100_000, seed=0))
        pos = ["latency", path, str(m), small, str(SMALL[1]), str(args.samples)]
        load = loadavg()
        res = {
            "DD": timed([str(dd_bin), *pos], args.timeout),
            "ddflow": timed([sys.executable, __file__, "--child", *pos], args.timeout),
        }
        raw["latency"] = {**res, "load": load}
        lat_table += [
            "| system | large graph | attach s (large BFS) | before: p50 / p99 / max ms "
            "| during: p50 / p99 / max ms | after: p50 / p99 / max ms | samples during "
            "| peak RSS MiB | load before |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for name, r in res.items():
            if "error" in r:
                checks.append(f"latency {name}: {r['error']}")
                ok = False
                lat_table.append(f"| {name} | {args.latency} | {r['error']} | | | | | | |")
                continue
            print(f"latency {name}: attach {r['attach_s']:.2f} s, {r}"[:400], flush=True)
            lat_table.append(
                f"| {name} | {args.latency} ({nodes:,} / {m:,}) | {r['attach_s']:.2f} "
                f"| {_ms(r['before'])} | {_ms(r['during'])} | {_ms(r['after'])} "
                f"| {r['during']['n']:,} | {r['rss_mib']:,.0f} | {load} |"
            )
        hists = {json.dumps(r["histogram"]) for r in res.values() if "error" not in r}
        ok &= len(hists) == 1
        checks.append(
            f"latency: the attached large BFS's distance histograms: "
            f"{'same' if len(hists) == 1 else 'DIFFERENT'}"
        )
    flush(loadavg())
    args.out.with_suffix(".json").write_text(json.dumps(slim(raw), indent=1))
    write_chart(args.out, kind="attach_side_by_side")
    print("\n".join(table + [""] + lat_table))
    print(f"wrote {args.out}")
    return 0 if ok else 1


def _write(
    out: Path,
    head: list[str],
    load0: str,
    load1: str,
    table: list[str],
    lat_table: list[str],
    checks: list[str],
) -> None:
    lines = [
        "# BFS attached to a live arrangement: ddflow beside differential-dataflow",
        "",
        "Written by `benches/attach_side_by_side.py` (see its docstring). Both systems read "
        "the same graph file and run BFS from node 0 over edges arranged by source, 1 worker. "
        "*arrange*: the live dataflow arranging the edges; *attached BFS*: a dataflow created "
        "afterwards that imports the live trace, until its BFS is complete; *from scratch*: "
        "one dataflow that arranges and runs BFS. Seconds are each child's own; wall and peak "
        "RSS come from `/usr/bin/time -v` (ddflow's include Python, numpy and pyarrow). "
        "DD: `benches/peers/dd_attach` (differential-dataflow 0.26.0 / timely 0.32.0).",
        "",
        *head,
        f"* load averages (1 / 5 / 15 min): {load0} at the start, {load1} at the end; the "
        "machine is shared with other engineers' builds, so seconds are noisy",
        "",
    ]
    if len(table) > 2:
        lines += ["## From scratch vs attached", "", *table, ""]
    if lat_table:
        lines += [
            "## Latency of single updates to a small job while a large BFS attaches",
            "",
            "The small job: distance counts of BFS on 1,000 nodes / 2,000 edges, one edge "
            "swapped per update, each update at its own time and run until the small job's "
            "output is complete. *during*: from the large dataflow's creation until its BFS "
            "is complete.",
            "",
            *lat_table,
            "",
        ]
    lines += ["## Checks", "", *[f"* {c}" for c in checks], ""]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
