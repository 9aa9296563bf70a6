"""Benchmark charts: one PNG beside each results table, drawn from the table itself.

The benchmark scripts that write a markdown table in ``benches/results`` call
:func:`write_chart` with the table's path (or, for ``bfs_table.py``, which prints its table,
with the text and a PNG path); the chart is drawn from the markdown the script just wrote, so
a chart and its table always show the same run. ``side_by_side.md`` also reads the JSON dump
beside it (``--json``) when that dump records the same command, to mark every run, not only
the fastest. Redraw every chart from the committed results without rerunning anything::

    python -m benches.charts                 # every known table in benches/results
    python -m benches.charts benches/results/tpch_sf1.md --docs none

Each redrawn chart is also copied to ``docs/img/benchmarks/`` (``--docs``), where the
documentation site's benchmark page shows it. Charts (a table's name -> what is drawn):

* ``side_by_side*.md``: updates/s of ddflow and differential-dataflow per BFS row, and the
  ``count`` micro-case's ns per update;
* ``bfs*.md`` (``bfs_table.py``): the main job's updates/s per row beside DD's reference;
* ``tpch_sf*.md``: per query, ddflow's median CPU per refresh batch beside DuckDB's re-run
  (log scale), and with ``--sql`` the SQL plan's per-batch CPU over the hand-written plan's;
* ``spark_incremental.md``: the seconds of each incremental Spark run of the newest section,
  beside the embedded engine and one run of the whole history;
* ``sssp_side_by_side*.md``: compute seconds of DD and ddflow per weight range and variant,
  from the JSON the script writes beside the table (the table's column without it);
* ``attach_side_by_side*.md``: arranging, attaching and BFS from scratch (DD and ddflow), and
  a small job's latency while a large BFS attaches (JSON first, as for SSSP).

matplotlib is the optional extra ``ddflow[plot]``; without it a script prints that the chart
was skipped and how to draw it later, and still writes its table.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCHES = Path(__file__).resolve().parent
RESULTS = BENCHES / "results"
DOCS_IMG = BENCHES.parent / "docs" / "img" / "benchmarks"

__all__ = ["Table", "tables", "number", "figure", "write_chart", "draw_text", "redraw_all", "main"]

DD_COLOR, DDFLOW_COLOR, OTHER_COLOR = "tab:gray", "tab:blue", "tab:orange"


@dataclass
class Table:
    """One markdown table: the heading above it, its column names and its rows."""

    heading: str
    columns: list[str]
    rows: list[list[str]]
    text_before: str = ""

    def column(self, prefix: str) -> int:
        """The index of the first column whose name starts with ``prefix`` (KeyError if none)."""
        for i, name in enumerate(self.columns):
            if name.startswith(prefix):
                return i
        raise KeyError(f"no column starting with {prefix!r} in {self.columns}")

    def get(self, prefix: str) -> list[str]:
        """The cells of the column named by ``prefix``."""
        i = self.column(prefix)
        return [row[i] for row in self.rows]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(text: str) -> list[Table]:
    """Every pipe table in ``text``, with the nearest heading above it and the prose between
    that heading and the table."""
    found: list[Table] = []
    heading, prose = "", []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading, prose = line.lstrip("#").strip(), []
        elif (
            line.lstrip().startswith("|")
            and i + 1 < len(lines)
            and re.fullmatch(r"\s*\|(\s*:?-{3,}:?\s*\|)+\s*", lines[i + 1])
        ):
            columns = _cells(line)
            rows = []
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            found.append(Table(heading, columns, rows, "\n".join(prose)))
            continue
        else:
            prose.append(line)
        i += 1
    return found


def number(cell: str, which: int = 0) -> float | None:
    """The ``which``-th number in a cell (thousands separators, ``**`` and units ignored), or
    None when it has none: ``"1,234"`` -> 1234.0, ``"0.043x / 0.061x"`` -> 0.043 (1: 0.061)."""
    found = re.findall(r"-?\d[\d,]*(?:\.\d+)?(?:e-?\d+)?", cell.replace("**", ""))
    if len(found) <= which:
        return None
    return float(found[which].replace(",", ""))


def _plt() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (ImportError naming the extra)."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("the charts need matplotlib: pip install 'ddflow[plot]'") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _thousands(ax_axis: Any) -> None:
    from matplotlib import ticker

    ax_axis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))


def _pairs(ax: Any, labels: list[str], series: list[tuple[str, list[float | None], str]]) -> None:
    """Horizontal grouped bars: one group per label, one bar per (name, values, color)."""
    import numpy as np

    n = len(series)
    height = 0.8 / n
    y = np.arange(len(labels))
    for k, (name, values, color) in enumerate(series):
        vals = [np.nan if v is None else v for v in values]
        ax.barh(y + (k - (n - 1) / 2) * height, vals, height, label=name, color=color)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


def _side_by_side(text: str, md: Path | None, plt: Any) -> Any:
    found = tables(text)
    bfs = next((t for t in found if "updates/s ddflow" in " ".join(t.columns)), None)
    micro = next((t for t in found if "ns/update ddflow" in " ".join(t.columns)), None)
    if bfs is None and micro is None:
        raise ValueError("side_by_side: neither the BFS table nor the count micro-case table")
    runs = _side_by_side_runs(text, md)
    panels = [t for t in (bfs, micro) if t is not None]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(6.5 * len(panels), 5.2), squeeze=False, constrained_layout=True
    )
    ax = axes[0][0]
    if bfs is not None:
        labels = bfs.get("row")
        dd = [number(c) for c in bfs.get("updates/s DD")]
        ours = [number(c) for c in bfs.get("updates/s ddflow")]
        _pairs(
            ax, labels, [("differential-dataflow", dd, DD_COLOR), ("ddflow", ours, DDFLOW_COLOR)]
        )
        for i, label in enumerate(labels):
            for k, system in enumerate(("dd", "ddflow")):
                xs = runs.get(label, {}).get(system, [])
                ax.plot(xs, [i + (k - 0.5) * 0.4] * len(xs), "k|", markersize=6)
        ratios = bfs.get("ddflow / DD")
        for i, r in enumerate(ratios):
            top = max((v for v in (dd[i], ours[i]) if v is not None), default=0)
            ax.annotate(f"{r} DD's time", (top, i), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=7)  # fmt: skip
        ax.set_xlabel("updates/s (fastest run; ticks: every run)")
        ax.set_title("BFS distance counts, 100,000 updates", fontsize=9)
        ax.set_xlim(right=ax.get_xlim()[1] * 1.25)
        _thousands(ax.xaxis)
        ax = axes[0][len(panels) - 1]
    if micro is not None:
        labels = [f"T = {c}" for c in micro.get("T")]
        dd = [number(c) for c in micro.get("ns/update DD")]
        ours = [number(c) for c in micro.get("ns/update ddflow")]
        _pairs(
            ax, labels, [("differential-dataflow", dd, DD_COLOR), ("ddflow", ours, DDFLOW_COLOR)]
        )
        ax.set_xlabel("ns per update (lower is better)")
        ax.set_title("count over 20 keys, one batch of T times", fontsize=9)
    fig.suptitle("ddflow beside differential-dataflow 0.26 " + _when(text), fontsize=10)
    return fig


def _side_by_side_runs(text: str, md: Path | None) -> dict[str, dict[str, list[float]]]:
    """Every run's updates/s per row and system from the JSON beside ``md``, when that JSON
    records the command of the table; else empty."""
    if md is None or not md.with_suffix(".json").exists():
        return {}
    data = json.loads(md.with_suffix(".json").read_text())
    command = str(data.get("meta", {}).get("command", ""))
    if not command or f"`{command}" not in text:
        return {}
    out: dict[str, dict[str, list[float]]] = {}
    for label, run in data.get("runs", {}).items():
        for system in ("dd", "ddflow"):
            results = [r.get("result") or {} for r in run.get(system, [])]
            rates = [x["updates_per_s"] for x in results if x.get("updates_per_s")]
            out.setdefault(label, {})[system] = [float(x) for x in rates]
    return out


def _when(text: str) -> str:
    """``(date, commit C)`` of a results text: its ``date:`` line (else its first date) and its
    first ``commit`` named."""
    date = re.search(r"(?i)date:?\s*(20\d\d-\d\d-\d\d)", text) or re.search(
        r"\b(20\d\d-\d\d-\d\d)\b", text
    )
    commit = re.search(r"commit:?\s*`?([0-9a-f]{7,})\b", text)
    parts = [p for p in (date and date[1], commit and f"commit {commit[1]}") if p]
    return f"({', '.join(parts)})" if parts else ""


def _bfs_table(text: str, md: Path | None, plt: Any) -> Any:
    table = next(
        t for t in tables(text) if any(c.startswith("ddflow updates/s") for c in t.columns)
    )
    labels = table.get("row")
    ours = [number(c) for c in table.get("ddflow updates/s")]
    dd = [number(c) for c in table.get("DD updates/s")]
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(labels) + 1.6), constrained_layout=True)
    _pairs(ax, labels, [("differential-dataflow 0.26 (reference)", dd, DD_COLOR),
                        ("ddflow main job", ours, DDFLOW_COLOR)])  # fmt: skip
    ax.set_xlabel("updates/s (each update at its own time, each batch run to completion)")
    _thousands(ax.xaxis)
    ax.set_title("python -m ddflow.examples.bfs beside differential-dataflow " + _when(text),
                 fontsize=9)  # fmt: skip
    return fig


def _tpch(text: str, md: Path | None, plt: Any) -> Any:
    found = tables(text)
    main = next(t for t in found if any(c.startswith("ddflow per batch") for c in t.columns))
    sql = next((t for t in found if any(c.startswith("SQL / hand") for c in t.columns)), None)
    queries = main.get("query")
    ours = [number(c, 1) for c in main.get("ddflow per batch")]  # wall / CPU: the CPU
    duck = [number(c, 1) for c in main.get("DuckDB re-run")]
    panels = 2 if sql is not None else 1
    size = (max(8.0, 6.5 * panels), max(3.5, 0.3 * len(queries) + 1.5))
    fig, axes = plt.subplots(1, panels, figsize=size, squeeze=False, constrained_layout=True)
    ax = axes[0][0]
    _pairs(ax, queries, [("DuckDB re-run", duck, DD_COLOR),
                         ("ddflow per refresh batch", ours, DDFLOW_COLOR)])  # fmt: skip
    ax.set_xscale("log")
    ax.set_xlabel("median CPU ms (log scale)")
    ax.set_title("one refresh pair: incremental update vs re-running the query", fontsize=9)
    if sql is not None:
        ax = axes[0][1]
        ratio = [number(c) for c in sql.get("SQL / hand")]
        ax.barh(range(len(ratio)), [r or 0 for r in ratio], color=OTHER_COLOR)
        ax.set_yticks(range(len(ratio)), sql.get("query"), fontsize=8)
        ax.invert_yaxis()
        ax.axvline(1.0, color="k", linewidth=0.8)
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_xlabel("dd.sql plan's per-batch CPU / hand-written plan's (1 = the same)")
        ax.set_title("the same queries as SQL", fontsize=9)
    sf = re.search(r"SF ([\d.]+)", text)
    fig.suptitle(f"TPC-H{' SF ' + sf[1] if sf else ''}: ddflow beside DuckDB " + _when(text),
                 fontsize=10)  # fmt: skip
    return fig


def _spark_incremental(text: str, md: Path | None, plt: Any) -> Any:
    sections = re.split(r"(?m)^## ", text)
    last = "## " + sections[-1]
    table = tables(last)[0]
    runs = table.get("run")
    secs = [number(c) or 0.0 for c in table.get("seconds")]
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    colors = [DDFLOW_COLOR if r == "0" else OTHER_COLOR for r in runs]
    ax.bar([f"run {r}" for r in runs], secs, color=colors)
    lines = [
        (r"Embedded engine over the whole history at once: ([\d.]+) s", "embedded engine, "
         "whole history", "k"),
        (r"without `state=` \(the fused loop\): ([\d.]+) s", "Spark, whole history in one "
         "run", "tab:red"),
    ]  # fmt: skip
    for pattern, label, color in lines:
        m = re.search(pattern, last)
        if m:
            ax.axhline(float(m[1]), color=color, linestyle="--", linewidth=1,
                       label=f"{label}: {float(m[1]):.2f} s")  # fmt: skip
    ax.set_ylabel("seconds")
    ax.tick_params(axis="x", labelsize=8, rotation=45)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    title = table.heading.split(":")[0] if table.heading else "BFS"
    ax.set_title(f"Incremental Spark runs, {title}: run 0 then continuations " + _when(last),
                 fontsize=9)  # fmt: skip
    return fig


def _sssp_side_by_side(text: str, md: Path | None, plt: Any) -> Any:
    """Compute seconds of DD and ddflow per (weights, variant): from the JSON the script
    writes beside its table when it is there, else from the table's ``compute s`` column."""
    labels: list[str] = []
    dd: list[float | None] = []
    ours: list[float | None] = []
    dump = md.with_suffix(".json") if md is not None else None
    if dump is not None and dump.exists():
        for key, run in json.loads(dump.read_text()).items():
            m = re.fullmatch(r"(?P<graph>\w+)-w(?P<w>\d+)-(?P<variant>\w+)", key)
            labels.append(f"1..{m['w']} {m['variant']}" if m else key)
            dd.append(run.get("dd", {}).get("compute_s"))
            ours.append(run.get("ddflow", {}).get("compute_s"))
        source = dump.name
    else:
        table = next(t for t in tables(text) if any(c.startswith("compute s") for c in t.columns))
        labels = [
            f"{w} {v}" for w, v in zip(table.get("weights"), table.get("variant"), strict=True)
        ]
        dd = [number(c, 0) for c in table.get("compute s")]
        ours = [number(c, 1) for c in table.get("compute s")]
        source = "the table"
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(labels) + 1.8), constrained_layout=True)
    _pairs(ax, labels, [("differential-dataflow", dd, DD_COLOR), ("ddflow", ours, DDFLOW_COLOR)])
    ax.set_xlabel(f"compute seconds, as the table's compute s (from {source})")
    graph = re.search(r"\| (\w+) \((\S+) / (\S+)\)", text)
    what = f"{graph[2]} nodes / {graph[3]} edges" if graph else "SSSP"
    ax.set_title(f"SSSP beside differential-dataflow, {what} " + _when(text), fontsize=9)
    return fig


_ATTACH_MEASURES = (
    ("arrange the edges", "arrange s"),
    ("BFS attached to them", "attached BFS s"),
    ("BFS from scratch", "from scratch s"),
)
_PHASES = ("before", "during", "after")


def _attach_side_by_side(text: str, md: Path | None, plt: Any) -> Any:
    """Seconds to arrange, attach and run from scratch (DD and ddflow), and the latency of a
    small job before, during and after a large BFS attaches: from the JSON the script writes
    beside its table when it is there, else from the tables."""
    dump = md.with_suffix(".json") if md is not None else None
    secs: dict[str, list[float | None]] = {"DD": [], "ddflow": []}
    lat: dict[str, list[float | None]] = {"DD": [], "ddflow": []}
    if dump is not None and dump.exists():
        data = json.loads(dump.read_text())
        graph = next(v for k, v in data.items() if k != "latency")
        for system in secs:
            scratch, attach = graph.get(f"{system} scratch", {}), graph.get(f"{system} attach", {})
            secs[system] = [attach.get("arrange_s"), attach.get("bfs_s"), scratch.get("bfs_s")]
            runs = data.get("latency", {}).get(system, {})
            for phase in _PHASES:
                for q in ("p50_ns", "max_ns"):
                    ns = runs.get(phase, {}).get(q)
                    lat[system].append(None if ns is None else ns / 1e6)
        source = dump.name
    else:
        found = tables(text)
        main = next(t for t in found if any(c.startswith("arrange s") for c in t.columns))
        for k, system in enumerate(secs):
            secs[system] = [number(main.get(col)[0], k) for _, col in _ATTACH_MEASURES]
        small = next((t for t in found if any(c.startswith("before:") for c in t.columns)), None)
        for row in small.rows if small is not None else []:
            cells = dict(zip(small.columns if small else [], row, strict=True))
            system = cells.get("system", "")
            if system in lat:
                for phase in _PHASES:
                    cell = next(v for c, v in cells.items() if c.startswith(f"{phase}:"))
                    lat[system] += [number(cell, 0), number(cell, 2)]
        source = "the tables"
    series = [("differential-dataflow", DD_COLOR), ("ddflow", DDFLOW_COLOR)]
    panels = 2 if any(lat.values()) else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.2), squeeze=False,
                             constrained_layout=True)  # fmt: skip
    ax = axes[0][0]
    labels = [name for name, _ in _ATTACH_MEASURES]
    _pairs(ax, labels, [(n, secs[s], c) for (n, c), s in zip(series, secs, strict=True)])
    ax.set_xlabel(f"seconds (from {source})")
    ax.set_title("arranging a large graph, then BFS attached vs from scratch", fontsize=9)
    if panels == 2:
        ax = axes[0][1]
        labels = [f"{phase}: {q}" for phase in _PHASES for q in ("p50", "max")]
        _pairs(ax, labels, [(n, lat[s], c) for (n, c), s in zip(series, lat, strict=True)])
        ax.set_xscale("log")
        ax.set_xlabel("ms per update of a small job (log scale)")
        ax.set_title("a small job's latency while the large BFS attaches", fontsize=9)
    graph_m = re.search(r"\| (\w+) \((\S+) / (\S+)\)", text)
    what = f"{graph_m[2]} nodes / {graph_m[3]} edges" if graph_m else "a large graph"
    fig.suptitle(f"BFS attached to a live arrangement, {what} " + _when(text), fontsize=10)
    return fig


Drawer = Callable[[str, "Path | None", Any], Any]


@dataclass(frozen=True)
class Kind:
    """A kind of results table: the file names it has and how to draw it."""

    name: str
    pattern: str
    draw: Drawer = field(compare=False)


KINDS: tuple[Kind, ...] = (
    Kind("side_by_side", r"side_by_side(_[\w.-]+)?", _side_by_side),
    Kind("bfs_table", r"bfs(_table)?(_[\w.-]+)?", _bfs_table),
    Kind("tpch", r"tpch_sf[\d.]+(_sql)?", _tpch),
    Kind("spark_incremental", r"spark_incremental", _spark_incremental),
    Kind("sssp_side_by_side", r"sssp_side_by_side(_[\w.-]+)?", _sssp_side_by_side),
    Kind("attach_side_by_side", r"attach_side_by_side(_[\w.-]+)?", _attach_side_by_side),
)
"""Every kind of table that has a chart; a table's kind is the first whose pattern matches
its file name (without ``.md``)."""

CHARTED = (
    "side_by_side",
    "bfs",
    "tpch_sf0.1",
    "tpch_sf0.1_sql",
    "tpch_sf1",
    "spark_incremental",
    "sssp_side_by_side_1m",
    "attach_side_by_side_1m",
)
"""The results files that ``python -m benches.charts`` redraws by default (dated snapshots
and earlier runs keep their tables only)."""


def kind_of(md: Path) -> Kind:
    """The kind of the table at ``md`` (ValueError naming the known kinds if none)."""
    for kind in KINDS:
        if re.fullmatch(kind.pattern, md.stem):
            return kind
    known = ", ".join(k.pattern for k in KINDS)
    raise ValueError(f"no chart for {md.name}: known tables are {known}")


def figure(kind: str, text: str, md: Path | None = None) -> Any:
    """The matplotlib figure of ``kind`` drawn from the markdown ``text`` (``md``: its path,
    for a JSON dump beside it)."""
    plt = _plt()
    return next(k for k in KINDS if k.name == kind).draw(text, md, plt)


def draw_text(kind: str, text: str, png: Path, md: Path | None = None) -> Path:
    """Draws the chart of ``kind`` from the markdown ``text`` into ``png``; returns it."""
    plt = _plt()
    fig = figure(kind, text, md)
    fig.savefig(png, dpi=90)
    plt.close(fig)
    return png


def write_chart(
    md: str | Path,
    text: str | None = None,
    png: str | Path | None = None,
    kind: str | None = None,
) -> Path | None:
    """The chart of the table at ``md`` (or of ``text``), written beside it as ``.png``.

    For the benchmark scripts: ``kind`` names the table's kind (one of :data:`KINDS`), so a
    table written under any name gets its chart; without it, the kind comes from the file
    name (:func:`kind_of`). A chart of :data:`CHARTED` is also copied to the docs
    (``docs/img/benchmarks``); when matplotlib is missing, prints how to draw the chart later
    and returns None instead of failing the run.
    """
    md = Path(md)
    out = Path(png) if png is not None else md.with_suffix(".png")
    try:
        _plt()
    except ImportError as e:
        print(f"chart skipped ({e}); later: python -m benches.charts {md}", file=sys.stderr)
        return None
    if kind is None:
        kind = kind_of(md).name
    elif all(k.name != kind for k in KINDS):
        raise ValueError(f"no chart kind {kind!r}: known kinds are {[k.name for k in KINDS]}")
    draw_text(kind, md.read_text() if text is None else text, out, md)
    print(f"wrote {out}")
    if png is None and md.resolve().parent == RESULTS and md.stem in CHARTED:
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(out, DOCS_IMG / out.name)  # the docs' benchmark page shows it
    return out


def redraw_all(
    paths: Sequence[Path] = (), docs: Path | None = DOCS_IMG, out_dir: Path | None = None
) -> list[Path]:
    """Redraws the charts of ``paths`` (default: :data:`CHARTED` in ``benches/results``) from
    the tables, each beside its table (or in ``out_dir``) and copied into ``docs`` unless that
    is None. Returns the PNGs written beside the tables (or in ``out_dir``)."""
    if not paths:
        paths = [RESULTS / f"{stem}.md" for stem in CHARTED if (RESULTS / f"{stem}.md").exists()]
    written = []
    for md in paths:
        png = (out_dir or md.parent) / f"{md.stem}.png"
        draw_text(kind_of(md).name, md.read_text(), png, md)
        written.append(png)
        if docs is not None:
            docs.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(png, docs / png.name)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m benches.charts [TABLE.md ...] [--docs DIR|none]``."""
    parser = argparse.ArgumentParser(
        prog="python -m benches.charts", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("tables", nargs="*", type=Path, help="results tables (default: all known)")
    parser.add_argument("--docs", default=str(DOCS_IMG), help="copy the PNGs here ('none': don't)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.tables if not p.exists()]
    if missing:
        parser.error(f"no such table: {', '.join(missing)}")
    try:
        for p in args.tables:
            kind_of(p)
        docs = None if args.docs == "none" else Path(args.docs)
        for png in redraw_all(args.tables, docs):
            print(f"wrote {png}" + (f" (and {docs / png.name})" if docs else ""))
    except (ImportError, ValueError) as e:
        parser.error(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
