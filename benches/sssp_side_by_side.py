"""Weighted SSSP on ddflow beside differential-dataflow, same input, one run.

The same experiment on both systems: a random graph (``benches/gen_graph.py``, seed 0) with
integer weights uniform in ``1..W`` (a weights file written here, seed 1: one u32 per edge),
read by both. SSSP from the source of edge ``M - 1``: the ``M`` edges at time 0 run to
completion (*compute*), then ``UPDATES`` single-edge updates (update ``r`` adds edge ``M + r``
and removes edge ``r`` at time ``r + 1``, each at its own time), fed together and run to
completion (*update*). Variants, the columns of the table:

* ``plain``: every proposal at the iteration that produced it;
* ``advanced``: each proposal's iteration set to its distance (ddflow
  ``advance_iteration(dist)``; DD: ``inner.map_in_place`` setting ``t.inner``);
* ``delayed``: advanced, then bundled by time (ddflow ``delay()``, i.e.
  ``dd.algorithms.sssp(prioritized=True)``; DD: the record-level delay operator of
  ``benches/peers/dd_sssp``, which timely 0.32 lacks).

Each run is a child process under ``/usr/bin/time -v`` (wall seconds and peak RSS of the
whole process, Python runtime included for ddflow); the children report their own compute
and update seconds. DD: ``benches/peers/dd_sssp`` (differential-dataflow 0.26.0 / timely
0.32.0 from crates.io, built here with cargo). ddflow: ``build()`` of ``benches/sssp.py`` on
the installed ``ddflow``. Check (exit status 1 on failure): every run of a row, both systems
and all variants, ends with the same histogram of distances.

Rows are ``GRAPH-wW`` with GRAPH ``10k`` (10,000 nodes / 100,000 edges), ``100k``
(100,000 / 1M) or ``1m`` (1M / 10M)::

    python benches/sssp_side_by_side.py --rows 10k-w1,10k-w10,10k-w100,10k-w1000
    python benches/sssp_side_by_side.py --rows 1m-w1,1m-w10,1m-w100,1m-w1000 --timeout 900

The table goes to ``benches/results/sssp_side_by_side.md`` (``--out``) with machine, date,
commit, load averages (before and after every row) and the command.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

BENCHES = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCHES))

from charts import write_chart  # noqa: E402
from gen_graph import DATA_DIR, ensure_graph  # noqa: E402

GRAPHS = {
    "1k": (1_000, 2_000),
    "10k": (10_000, 100_000),
    "100k": (100_000, 1_000_000),
    "1m": (1_000_000, 10_000_000),
    "10m": (10_000_000, 100_000_000),
}
VARIANTS = ("plain", "advanced", "delayed")
DD_SSSP = BENCHES / "peers" / "dd_sssp"
TIME = "/usr/bin/time"

__all__ = ["GRAPHS", "build_peer", "timed", "slim", "machine_lines", "ensure_weights", "main"]


def build_peer(crate: Path) -> Path:
    """Builds a DD peer crate (release, its own target directory); returns the binary."""
    cmd = ["cargo", "build", "--release", "--quiet", "--manifest-path", str(crate / "Cargo.toml")]
    cmd += ["--target-dir", str(crate / "target")]
    print("building:", shlex.join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return crate / "target" / "release" / crate.name


def ensure_weights(edges: int, max_w: int, seed: int = 1) -> Path:
    """A file of ``edges`` u32 weights uniform in ``1..max_w`` (reused if present)."""
    path = DATA_DIR / f"weights-m{edges}-w{max_w}-s{seed}.u32"
    if path.exists() and path.stat().st_size == 4 * edges:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    w = np.random.default_rng(seed).integers(1, max_w + 1, edges, dtype=np.uint32)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    w.astype("<u4").tofile(tmp)
    tmp.replace(path)
    return path


def slim(raw: Any) -> Any:
    """``raw`` with each histogram replaced by its length and a digest (for the .json file)."""
    if isinstance(raw, dict):
        out = {k: slim(v) for k, v in raw.items() if k != "histogram"}
        if "histogram" in raw:
            text = json.dumps(raw["histogram"])
            out["histogram_len"] = len(raw["histogram"])
            out["histogram_sha1"] = hashlib.sha1(text.encode()).hexdigest()
        return out
    return raw


def _time_field(text: str, name: str) -> str | None:
    m = re.search(rf"^\s*{re.escape(name)}: (.*)$", text, re.M)
    return m.group(1).strip() if m else None


def timed(cmd: list[str], timeout: float) -> dict[str, Any]:
    """Runs ``cmd`` under ``/usr/bin/time -v``; its RESULT json plus ``wall_s`` and
    ``rss_mib`` (time's figures), or ``{"error": ...}``."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = [TIME, "-v", "-o", tf.name, *cmd]
        start = time.perf_counter()
        try:
            out = subprocess.run(full, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        elapsed = time.perf_counter() - start
        report = Path(tf.name).read_text()
    rss = _time_field(report, "Maximum resident set size (kbytes)")
    wall = _time_field(report, "Elapsed (wall clock) time (h:mm:ss or m:ss)")
    wall_s = elapsed
    if wall:
        parts = [float(p) for p in wall.split(":")]
        wall_s = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr or out.stdout).strip().splitlines()[-3:]
        return {"error": f"exit {out.returncode}: " + " | ".join(tail)}
    res: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
    res["wall_s"] = wall_s
    res["rss_mib"] = int(rss) / 1024 if rss else float("nan")
    return res


def loadavg() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def machine_lines(command: str) -> list[str]:
    """Markdown bullets: command, machine, date, commit, ddflow build."""
    from side_by_side import machine

    info = machine()
    return [
        f"* command: `{command}`",
        f"* machine: {info['cpu']}, 24 GiB; python {info['python']}; {info['rustc']}",
        f"* date: {info['date']}; commit {info['commit']} (last change to rust/ or python/: "
        f"{info['engine']}); ddflow {info['ddflow']}",
    ]


def child(argv: list[str]) -> int:
    """The ddflow side: ``VARIANT GRAPH WEIGHTS M UPDATES`` as the DD peer."""
    import ddflow as dd
    from sssp import build

    variant, gpath, wpath = argv[0], argv[1], argv[2]
    m, updates = int(argv[3]), int(argv[4])
    total = m + updates
    pairs = np.fromfile(gpath, dtype="<u4", count=2 * total).reshape(-1, 2).astype(np.int64)
    w = np.fromfile(wpath, dtype="<u4", count=total).astype(np.int64)
    src, dst = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
    del pairs
    flow = dd.Dataflow(workers=1, log=False)
    edges_in, roots_in, hist, _probe = build(flow, variant)
    t0 = time.perf_counter()
    edges_in.update_batch({"src": src[:m], "dst": dst[:m], "w": w[:m]}, times=0)
    roots_in.update_at((int(src[m - 1]),), time=0)
    edges_in.advance_to(1)
    roots_in.advance_to(1)
    flow.run_until(1)
    compute = time.perf_counter() - t0
    t1 = time.perf_counter()
    r = np.arange(updates, dtype=np.int64)
    adds = slice(m, total)
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
    histogram = sorted(
        [int(row["dist"]), int(row["count"])] for row in hist.at(updates).to_pylist()
    )
    result = {
        "system": f"ddflow {dd.__version__}",
        "variant": variant,
        "compute_s": compute,
        "update_s": update,
        "updates": updates,
        "reached": sum(c for _, c in histogram),
        "histogram": histogram,
    }
    print("RESULT " + json.dumps(result), flush=True)
    return 0


def _cell(r: dict[str, Any], key: str, fmt: str = "{:.2f}") -> str:
    return "-" if "error" in r else fmt.format(r[key])


def main(argv: list[str] | None = None) -> int:
    """Runs the rows; writes the results file; 1 if a check failed."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", default="10k-w1,10k-w10,10k-w100,10k-w1000")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--updates", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per child run")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--out", type=Path, default=BENCHES / "results" / "sssp_side_by_side.md")
    ap.add_argument("--child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child)
    command = "python benches/sssp_side_by_side.py " + shlex.join(
        sys.argv[1:] if argv is None else argv
    )
    variants = [v for v in args.variants.split(",") if v]
    dd_bin = DD_SSSP / "target" / "release" / "dd_sssp"
    if not args.no_build:
        dd_bin = build_peer(DD_SSSP)
    head = machine_lines(command)
    start_load = loadavg()
    table = [
        "| graph | weights | variant | compute s DD / ddflow | update s DD / ddflow "
        "| wall s DD / ddflow | peak RSS MiB DD / ddflow | ddflow / DD compute "
        "| reached | load before | check |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    checks: list[str] = []
    ok = True
    raw: dict[str, Any] = {}
    for row in args.rows.split(","):
        graph, wpart = row.split("-w")
        nodes, m = GRAPHS[graph]
        max_w = int(wpart)
        gpath = ensure_graph(nodes, m, args.updates, seed=0)
        wpath = ensure_weights(m + args.updates, max_w)
        hists: dict[str, str] = {}
        for v in variants:
            load = loadavg()
            pos = [v, str(gpath), str(wpath), str(m), str(args.updates)]
            dd_res = timed([str(dd_bin), *pos], args.timeout)
            df_res = timed([sys.executable, __file__, "--child", *pos], args.timeout)
            raw[f"{row}-{v}"] = {"dd": dd_res, "ddflow": df_res, "load": load}
            for side, res in (("DD", dd_res), ("ddflow", df_res)):
                if "error" in res:
                    msg = f"{row} {v} {side}: {res['error']}"
                    print(msg, flush=True)
                    checks.append(msg)
                    ok &= res["error"].startswith("timed out")
                else:
                    hists[f"{side} {v}"] = json.dumps(res["histogram"])
                    print(
                        f"{row} {v} {side}: compute {res['compute_s']:.2f} s, update "
                        f"{res['update_s']:.2f} s, wall {res['wall_s']:.1f} s, peak "
                        f"{res['rss_mib']:.0f} MiB, reached {res['reached']:,}",
                        flush=True,
                    )
            ratio = (
                f"{df_res['compute_s'] / dd_res['compute_s']:.2f}x"
                if "error" not in dd_res and "error" not in df_res
                else "-"
            )
            reached = next((f"{r['reached']:,}" for r in (dd_res, df_res) if "error" not in r), "-")
            table.append(
                f"| {graph} ({nodes:,} / {m:,}) | 1..{max_w} | {v} "
                f"| {_cell(dd_res, 'compute_s')} / {_cell(df_res, 'compute_s')} "
                f"| {_cell(dd_res, 'update_s')} / {_cell(df_res, 'update_s')} "
                f"| {_cell(dd_res, 'wall_s', '{:.1f}')} / {_cell(df_res, 'wall_s', '{:.1f}')} "
                f"| {_cell(dd_res, 'rss_mib', '{:,.0f}')} / {_cell(df_res, 'rss_mib', '{:,.0f}')} "
                f"| {ratio} | {reached} | {load} | ROWCHECK |"
            )
        same = len(set(hists.values())) == 1
        ok &= same or not hists
        verdict = "same" if same else "DIFFERENT"
        table = [ln.replace("ROWCHECK", verdict) for ln in table]
        checks.append(
            f"{row}: final distance histograms of {len(hists)} runs (DD and ddflow, "
            f"{', '.join(variants)}): {verdict}"
        )
        _write(args.out, head, start_load, loadavg() + " (partial)", args.updates, table, checks)
    _write(args.out, head, start_load, loadavg(), args.updates, table, checks)
    args.out.with_suffix(".json").write_text(json.dumps(slim(raw), indent=1))
    write_chart(args.out, kind="sssp_side_by_side")
    print("\n".join(table))
    print(f"wrote {args.out}")
    return 0 if ok else 1


def _write(
    out: Path,
    head: list[str],
    load0: str,
    load1: str,
    updates: int,
    table: list[str],
    checks: list[str],
) -> None:
    lines = [
        "# SSSP: ddflow beside differential-dataflow",
        "",
        "Written by `benches/sssp_side_by_side.py` (see its docstring). Both systems read the "
        "same graph and weight files; SSSP from the source of the last initial edge, then "
        f"{updates:,} single-edge updates each at its own time, fed together and run to "
        "completion. DD: `benches/peers/dd_sssp` (differential-dataflow 0.26.0 / timely "
        "0.32.0, 1 worker); ddflow: `benches/sssp.py`'s dataflow, `Dataflow(workers=1, "
        "log=False)`. Compute and update seconds are each child's own; wall and peak RSS "
        "come from `/usr/bin/time -v` (ddflow's includes Python, numpy and pyarrow, ~90 MiB).",
        "",
        *head,
        f"* load averages (1 / 5 / 15 min): {load0} at the start, {load1} at the end; the "
        "machine is shared with other engineers' builds, so seconds are noisy",
        "",
        *table,
        "",
        "## Checks",
        "",
        *[f"* {c}" for c in checks],
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
