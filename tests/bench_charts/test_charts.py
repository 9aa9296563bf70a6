"""``benches/charts.py``: the markdown table parser, every committed chart redrawn from its
table with the drawn bars checked against numbers read straight from the table's lines, the
committed PNGs and their copies on the documentation site, and the errors (an unknown table,
matplotlib missing: blocked by an import hook in a child process)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from benches import charts

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benches" / "results"
DOCS_IMG = ROOT / "docs" / "img" / "benchmarks"

plt = pytest.importorskip("matplotlib.pyplot")


def png_size(data: bytes) -> tuple[int, int]:
    """A PNG's width and height from its IHDR chunk; fails on anything but a PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def row_cells(md: Path, first: str) -> list[list[str]]:
    """The cells of the table lines of ``md`` whose first cell starts with ``first``."""
    out = []
    for line in md.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].startswith(first):
            out.append(cells)
    return out


def plain(cell: str) -> float:
    return float(cell.replace(",", "").replace("*", "").rstrip("x"))


def widths(ax: Any) -> list[float]:
    return [round(p.get_width(), 6) for p in ax.patches]


def test_tables_parser() -> None:
    text = textwrap.dedent(
        """\
        # Title
        ## Section A
        Some prose.

        | name | value | note |
        | --- | ---: | :---: |
        | a | 1,234 | **0.5x** / 0.7x |
        | b | - | |

        | not a table without a rule |
        ## Section B
        | x |
        | --- |
        | 1 |
        """
    )
    found = charts.tables(text)
    assert [t.heading for t in found] == ["Section A", "Section B"]
    a, b = found
    assert a.columns == ["name", "value", "note"]
    assert a.rows == [["a", "1,234", "**0.5x** / 0.7x"], ["b", "-", ""]]
    assert a.text_before.strip() == "Some prose."
    assert a.get("val") == ["1,234", "-"]
    assert b.rows == [["1"]]
    with pytest.raises(KeyError, match="no column starting with 'zzz'"):
        a.column("zzz")


@pytest.mark.parametrize(
    ("cell", "which", "want"),
    [
        ("1,234", 0, 1234.0),
        ("**0.86**", 0, 0.86),
        ("0.043x / 0.061x", 1, 0.061),
        ("1.05 (0.63; x0.60)", 0, 1.05),
        ("-", 0, None),
        ("2 / 2", 2, None),
    ],
)
def test_number(cell: str, which: int, want: float | None) -> None:
    assert charts.number(cell, which) == want


def test_kind_of() -> None:
    names = {
        "side_by_side": "side_by_side",
        "side_by_side_2026-11-24_start": "side_by_side",
        "bfs": "bfs_table",
        "bfs_table": "bfs_table",
        "tpch_sf0.1": "tpch",
        "tpch_sf0.1_sql": "tpch",
        "spark_incremental": "spark_incremental",
    }
    for stem, kind in names.items():
        assert charts.kind_of(Path(f"{stem}.md")).name == kind
    with pytest.raises(ValueError, match="no chart for sssp.md: known tables are side_by_side"):
        charts.kind_of(Path("sssp.md"))


def test_side_by_side_bars_are_the_table() -> None:
    md = RESULTS / "side_by_side.md"
    fig = charts.figure("side_by_side", md.read_text(), md)
    try:
        rows = [c for c in row_cells(md, "1") if "-b" in c[0]]  # 1k-..., 100k-..., 1m-...
        assert len(rows) >= 4
        dd, ours = [plain(c[6]) for c in rows], [plain(c[7]) for c in rows]
        assert widths(fig.axes[0]) == dd + ours
        assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == [c[0] for c in rows]
        micro = row_cells(md, "count-T")
        assert widths(fig.axes[1]) == [plain(c[3]) for c in micro] + [plain(c[4]) for c in micro]
    finally:
        plt.close(fig)


def test_side_by_side_marks_every_run_from_a_matching_json(tmp_path: Path) -> None:
    text = (RESULTS / "side_by_side.md").read_text()
    md = tmp_path / "side_by_side.md"
    md.write_text(text)
    command = text.split("* command: `")[1].split("`")[0]

    def run(rate: float) -> dict[str, Any]:  # a run as side_by_side.py --json writes it
        return {"result": {"updates_per_s": rate, "update_s": 1e5 / rate}, "peak_mb": 9.0}

    runs = {"1k-b10-w1": {"dd": [run(100.0), run(200.0)], "ddflow": [run(300.0)]}}
    runs["1k-b100-w1"] = {"dd": [{"result": None, "error": "timeout"}], "ddflow": []}
    md.with_suffix(".json").write_text(
        charts.json.dumps({"meta": {"command": command}, "runs": runs})
    )
    fig = charts.figure("side_by_side", text, md)
    try:
        ticks = [line.get_xdata().tolist() for line in fig.axes[0].lines if len(line.get_xdata())]
        assert sorted(ticks) == [[100.0, 200.0], [300.0]]
    finally:
        plt.close(fig)
    md.with_suffix(".json").write_text(
        charts.json.dumps({"meta": {"command": "another run"}, "runs": runs})
    )
    fig = charts.figure("side_by_side", text, md)
    try:
        assert not [line for line in fig.axes[0].lines if len(line.get_xdata())]
    finally:
        plt.close(fig)


def test_bfs_table_bars_are_the_table() -> None:
    md = RESULTS / "bfs.md"
    fig = charts.figure("bfs_table", md.read_text(), md)
    try:
        rows = [c for c in row_cells(md, "1") if c[0].endswith(("-w1", "-w2"))]
        dd, ours = [plain(c[6]) for c in rows], [plain(c[4]) for c in rows]
        assert widths(fig.axes[0]) == dd + ours
    finally:
        plt.close(fig)


def table_after(md: Path, header_has: str) -> list[list[str]]:
    """The body rows of the first table of ``md`` whose header line contains ``header_has``."""
    lines = md.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|") and header_has in line)
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


@pytest.mark.parametrize("stem", ["tpch_sf0.1_sql", "tpch_sf1"])
def test_tpch_bars_are_the_table(stem: str) -> None:
    md = RESULTS / f"{stem}.md"
    text = md.read_text()
    fig = charts.figure("tpch", text, md)
    try:
        main = table_after(md, "| ddflow per batch")  # the first table: this run's
        assert main and all(c[0].startswith("Q") for c in main)
        duck = [plain(c[4].split("/")[1]) for c in main]
        ours = [plain(c[3].split("/")[1]) for c in main]
        assert widths(fig.axes[0]) == duck + ours
        if stem.endswith("_sql"):
            sql = table_after(md, "| SQL / hand-written")
            assert len(fig.axes) == 2 and sql
            assert widths(fig.axes[1]) == [plain(c[3]) for c in sql]
        else:
            assert len(fig.axes) == 1 and "SQL / hand-written" not in text
    finally:
        plt.close(fig)


def test_spark_incremental_bars_are_the_newest_section() -> None:
    md = RESULTS / "spark_incremental.md"
    text = md.read_text()
    newest = text.split("\n## ")[-1]
    fig = charts.figure("spark_incremental", text, md)
    try:
        rows = [
            [c.strip() for c in line.strip("|").split("|")]
            for line in newest.splitlines()
            if line.startswith("| ") and line[2].isdigit()
        ]
        assert [round(p.get_height(), 6) for p in fig.axes[0].patches] == [
            plain(c[2]) for c in rows
        ]
        embedded = float(newest.split("whole history at once: ")[1].split(" s")[0])
        assert embedded in [line.get_ydata()[0] for line in fig.axes[0].lines]
    finally:
        plt.close(fig)


@pytest.mark.timeout(120)
def test_redraw_all_and_the_committed_pngs(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    written = charts.redraw_all(docs=docs, out_dir=tmp_path)
    assert [p.name for p in written] == [f"{s}.png" for s in charts.CHARTED]
    for png in written:
        size = png_size(png.read_bytes())
        assert size[0] >= 600 and size[1] >= 350 and png.stat().st_size > 20_000
        assert (docs / png.name).read_bytes() == png.read_bytes()
        committed = (RESULTS / png.name).read_bytes()
        assert png_size(committed) == size, png.name  # committed beside its table
        assert (DOCS_IMG / png.name).read_bytes() == committed  # the docs show the same chart


BLOCKER = textwrap.dedent(
    """
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "matplotlib":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    """
)


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKER + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )


@pytest.mark.timeout(90)
def test_without_matplotlib(tmp_path: Path) -> None:
    md = tmp_path / "tpch_sf1.md"
    shutil.copyfile(RESULTS / "tpch_sf1.md", md)
    done = run_python(
        f"""
        from benches.charts import write_chart
        print("returned", write_chart({str(md)!r}))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "returned None"
    assert done.stderr.strip() == (
        "chart skipped (the charts need matplotlib: pip install 'ddflow[plot]'); "
        f"later: python -m benches.charts {md}"
    )
    assert not md.with_suffix(".png").exists()
    done = run_python(
        f"""
        from benches.charts import main
        main([{str(md)!r}, "--docs", "none"])
        """
    )
    assert done.returncode == 2
    assert done.stderr.strip().endswith("the charts need matplotlib: pip install 'ddflow[plot]'")


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        charts.main([str(tmp_path / "missing.md")])
    assert "no such table" in capsys.readouterr().err
    other = tmp_path / "sssp.md"
    other.write_text("# nothing\n")
    with pytest.raises(SystemExit):
        charts.main([str(other)])
    assert "no chart for sssp.md" in capsys.readouterr().err


def test_write_chart_beside_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    md = tmp_path / "bfs_table.md"
    shutil.copyfile(RESULTS / "bfs.md", md)
    assert charts.write_chart(md) == tmp_path / "bfs_table.png"
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'bfs_table.png'}"
    assert png_size((tmp_path / "bfs_table.png").read_bytes())[0] >= 600


def test_write_chart_of_a_table_under_any_name(tmp_path: Path) -> None:
    """A benchmark script names its table's kind, so ``--out`` can be any file name; an
    unknown kind is refused naming the known ones."""
    md = tmp_path / "my run.md"
    shutil.copyfile(RESULTS / "side_by_side.md", md)
    with pytest.raises(ValueError, match="no chart for my run.md"):
        charts.write_chart(md)
    assert charts.write_chart(md, kind="side_by_side") == tmp_path / "my run.png"
    assert png_size((tmp_path / "my run.png").read_bytes())[0] >= 600
    with pytest.raises(ValueError, match="no chart kind 'sbs'.*side_by_side"):
        charts.write_chart(md, kind="sbs")


def test_bfs_table_out_writes_the_table_and_its_chart(tmp_path: Path) -> None:
    from benches import bfs_table

    rows = {r.name: r for r in bfs_table.ROWS}
    results = [
        bfs_table.Result(rows["1k-b1000-w1"], 1000, ["py", "-m", "x"], True, 2.0, 1.5, 90.0,
                         0.01, 0.5, 2000.0, None, [2000.0, 1800.0]),
        bfs_table.Result(rows["1k-b100-w1"], 1000, ["py", "-m", "y"], True, 3.0, 2.5, 95.0,
                         0.02, 0.8, 1250.0, None, [1250.0]),
    ]  # fmt: skip
    out = tmp_path / "bfs_table.md"
    bfs_table._write_table(out, results, 70.0)
    text = out.read_text()
    assert bfs_table.table(results) in text and "70 MB peak" in text
    assert png_size((tmp_path / "bfs_table.png").read_bytes())[0] >= 600
    fig = charts.figure("bfs_table", text, out)
    try:
        dd = [rows["1k-b1000-w1"].dd_rate, rows["1k-b100-w1"].dd_rate]
        assert widths(fig.axes[0]) == [*dd, 2000.0, 1250.0]
    finally:
        plt.close(fig)


def test_sssp_bars_from_the_json_and_from_the_table(tmp_path: Path) -> None:
    md = RESULTS / "sssp_side_by_side_1m.md"
    dump = charts.json.loads(md.with_suffix(".json").read_text())
    fig = charts.figure("sssp_side_by_side", md.read_text(), md)
    try:
        dd = [run["dd"]["compute_s"] for run in dump.values()]
        ours = [run["ddflow"]["compute_s"] for run in dump.values()]
        assert widths(fig.axes[0]) == [round(x, 6) for x in dd + ours]
        assert "sssp_side_by_side_1m.json" in fig.axes[0].get_xlabel()
    finally:
        plt.close(fig)
    rows = row_cells(md, "1m (")
    table_dd = [plain(c[3].split("/")[0]) for c in rows]
    table_ours = [plain(c[3].split("/")[1]) for c in rows]
    assert [round(x, 2) for x in dd + ours] == table_dd + table_ours  # the JSON is the table's
    alone = tmp_path / md.name  # no JSON beside it: the table's column
    shutil.copyfile(md, alone)
    fig = charts.figure("sssp_side_by_side", alone.read_text(), alone)
    try:
        assert widths(fig.axes[0]) == table_dd + table_ours
        assert "from the table" in fig.axes[0].get_xlabel()
    finally:
        plt.close(fig)


def test_attach_bars_from_the_json_and_from_the_tables(tmp_path: Path) -> None:
    md = RESULTS / "attach_side_by_side_1m.md"
    data = charts.json.loads(md.with_suffix(".json").read_text())
    fig = charts.figure("attach_side_by_side", md.read_text(), md)
    try:
        g = data["1m"]
        secs = {
            s: [
                g[f"{s} attach"]["arrange_s"],
                g[f"{s} attach"]["bfs_s"],
                g[f"{s} scratch"]["bfs_s"],
            ]
            for s in ("DD", "ddflow")
        }
        assert widths(fig.axes[0]) == [round(x, 6) for x in secs["DD"] + secs["ddflow"]]
        lat = {
            s: [data["latency"][s][p][q] / 1e6 for p in ("before", "during", "after")
                for q in ("p50_ns", "max_ns")]
            for s in ("DD", "ddflow")
        }  # fmt: skip
        assert widths(fig.axes[1]) == [round(x, 6) for x in lat["DD"] + lat["ddflow"]]
    finally:
        plt.close(fig)
    alone = tmp_path / md.name  # no JSON beside it: the tables
    shutil.copyfile(md, alone)
    fig = charts.figure("attach_side_by_side", alone.read_text(), alone)
    try:
        row = row_cells(md, "1m (")[0]
        dd = [plain(row[i].split("/")[0]) for i in (1, 2, 3)]
        ours = [plain(row[i].split("/")[1]) for i in (1, 2, 3)]
        assert widths(fig.axes[0]) == dd + ours
        assert [round(x, 2) for x in secs["DD"] + secs["ddflow"]] == dd + ours
        by_system = {c[0]: c for c in table_after(md, "| before: p50")}  # the first one
        table_lat = [
            plain(by_system[s][i].split("/")[k]) for s in ("DD", "ddflow") for i in (3, 4, 5)
            for k in (0, 2)
        ]  # fmt: skip
        assert widths(fig.axes[1]) == table_lat
    finally:
        plt.close(fig)
