"""The main job's output (``python -m ddflow.examples.bfs``): ``--inspect`` against a BFS
recomputed from scratch after every round, ``--inspect-all`` and ``--inspect-times``, the
progress bar and lines, the summary table, and ``--plot``'s PNG, with and without matplotlib
and tqdm (blocked by an import hook in a child process)."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
import textwrap
from collections import Counter, deque
from io import StringIO
from pathlib import Path

import numpy as np
import pytest

from ddflow.examples import bfs
from ddflow.examples.bfs_output import Progress, RoundTimes, summary_table

NODES, EDGES, BATCH, UPDATES = 30, 40, 1, 10
ARGS = [str(NODES), str(EDGES), str(BATCH), str(UPDATES), "--no-progress"]


def histogram(src: np.ndarray, dst: np.ndarray) -> Counter[int]:
    """Nodes per BFS distance from node 0 over the directed edges (src, dst): the oracle."""
    out: dict[int, list[int]] = {}
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        out.setdefault(s, []).append(d)
    dist = {0: 0}
    queue = deque([0])
    while queue:
        u = queue.popleft()
        for v in out.get(u, []):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return Counter(dist.values())


def expected_rounds(nodes: int, edges: int, batch: int, updates: int) -> list[dict[int, int]]:
    """Each round's net change of the nodes per distance (round 0: the load)."""
    src, dst = bfs.random_graph(nodes, edges + updates, seed=0)
    cuts = [0, *range(batch, updates, batch), updates] if updates else [0]
    hists = [histogram(src[k : edges + k], dst[k : edges + k]) for k in cuts]
    rounds = [dict(hists[0])]
    for before, after in zip(hists, hists[1:], strict=False):
        net = {d: after[d] - before[d] for d in set(before) | set(after)}
        rounds.append({d: c for d, c in net.items() if c != 0})
    return rounds


def parse_rounds(lines: list[str]) -> dict[int, dict[int, int]]:
    """``round N ... net: dist D +C, ...`` lines as {N: {D: C}}."""
    got: dict[int, dict[int, int]] = {}
    for line in lines:
        m = re.match(r"round\s+(\d+)\s.*net: (.*)$", line)
        if m:
            net = m[2]
            pairs = re.findall(r"dist (\d+) ([+-]\d+)", net)
            assert pairs or net == "none", line
            got[int(m[1])] = {int(d): int(c) for d, c in pairs}
    return got


@pytest.mark.timeout(60)
def test_inspect_all_matches_a_recomputed_bfs(capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main([*ARGS, "--inspect-all"]) == 0
    out = capsys.readouterr().out.splitlines()
    want = expected_rounds(NODES, EDGES, BATCH, UPDATES)
    assert len(want) == 1 + UPDATES
    assert parse_rounds(out) == dict(enumerate(want))
    assert not any(line.startswith("...") for line in out)


@pytest.mark.timeout(60)
def test_inspect_shows_the_first_and_last_rounds(capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main([*ARGS, "--inspect"]) == 0
    out = capsys.readouterr().out.splitlines()
    want = dict(enumerate(expected_rounds(NODES, EDGES, BATCH, UPDATES)))
    shown = [0, 1, 2, 8, 9, 10]
    assert parse_rounds(out) == {r: want[r] for r in shown}
    round_lines = [i for i, line in enumerate(out) if line.startswith("round ")]
    skipped = out.index("... 5 rounds not shown (--inspect-all prints every round)")
    assert round_lines[2] < skipped < round_lines[3]


@pytest.mark.timeout(60)
def test_inspect_with_few_rounds_shows_them_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main([str(NODES), str(EDGES), "4", "10", "--inspect", "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert parse_rounds(out) == dict(enumerate(expected_rounds(NODES, EDGES, 4, 10)))


@pytest.mark.timeout(60)
def test_inspect_times_sums_to_the_final_histogram(capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main([*ARGS, "--inspect-times"]) == 0
    out = capsys.readouterr().out.splitlines()
    changes = [re.fullmatch(r"time\s+(\d+)\s+dist\s+(\d+)\s+([+-]\d+)", line) for line in out]
    found = [m for m in changes if m]
    assert found and all(0 <= int(m[1]) <= UPDATES for m in found)
    total: Counter[int] = Counter()
    for m in found:
        total[int(m[2])] += int(m[3])
    src, dst = bfs.random_graph(NODES, EDGES + UPDATES, seed=0)
    final = histogram(src[UPDATES:], dst[UPDATES:])
    assert {d: c for d, c in total.items() if c} == dict(final)
    # the changes at time 0 are the load's histogram
    load: Counter[int] = Counter()
    for m in found:
        if m[1] == "0":
            load[int(m[2])] += int(m[3])
    assert load == histogram(src[:EDGES], dst[:EDGES])


@pytest.mark.timeout(60)
def test_summary_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main([str(NODES), str(EDGES), "4", "10", "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-5].split() == [
        "phase",
        "rounds",
        "updates",
        "time",
        "s",
        "updates/s",
        "round",
        "ms:",
        "p50",
        "p90",
        "max",
    ]
    assert set(out[-4]) <= {"-", " "}
    load, updates = out[-3].split(), out[-2].split()
    assert load[:4] == ["load", "1", "40", "edges"] and load[5:] == ["-"] * 4
    assert updates[:3] == ["updates", "3", "10"]
    summary = re.search(r"load ([\d.]+) s, updates ([\d.]+) s, ([\d,]+) updates/s", out[-1])
    assert summary is not None
    assert load[4] == summary[1] and updates[3] == summary[2] and updates[4] == summary[3]
    p50, p90, worst = (float(x) for x in updates[5:])
    assert 0 <= p50 <= p90 <= worst <= 1e3 * float(summary[2]) + 0.1


def test_summary_table_without_updates() -> None:
    times = RoundTimes(load_s=0.25)
    lines = summary_table(times, 7).splitlines()
    assert len(lines) == 3 and lines[2].split() == ["load", "1", "7", "edges", "0.250"] + ["-"] * 4


def test_round_times_rates() -> None:
    times = RoundTimes()
    times.add(10, 0.5)
    times.add(4, 0.0)
    assert times.total_s == 0.5
    assert times.rates().tolist() == [20.0, float("inf")]


def test_progress_lines_at_every_tenth() -> None:
    stream = StringIO()  # not a terminal: auto gives plain lines
    progress = Progress(20, stream)
    for done in range(1, 21):
        progress.update(done)
    progress.close()
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        f"progress: {2 * k}/20 updates ({10 * k}%)" for k in range(1, 11)
    ]
    assert all(line.endswith(" updates/s") for line in lines)


def test_progress_lines_with_large_steps() -> None:
    stream = StringIO()
    progress = Progress(100, stream, "lines")
    for done in (5, 35, 100):
        progress.update(done)
    assert [line.split(" updates")[0] for line in stream.getvalue().splitlines()] == [
        "progress: 35/100",
        "progress: 100/100",
    ]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("flags", "want"),
    [
        (["--progress", "lines"], 10),
        ([], 10),  # stderr is not a terminal: lines
        (["--no-progress"], 0),
        (["--progress", "off"], 0),
    ],
)
def test_progress_flags(flags: list[str], want: int, capsys: pytest.CaptureFixture[str]) -> None:
    assert bfs.main([str(NODES), str(EDGES), "1", "10", *flags]) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == want
    assert all(re.fullmatch(r"progress: \d+/10 updates \(\d+%\), .* updates/s", x) for x in err)


@pytest.mark.timeout(60)
def test_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    assert bfs.main([str(NODES), str(EDGES), "1", "10", "--progress", "bar"]) == 0
    err = capsys.readouterr().err
    final = err.replace("\r", "\n").strip().splitlines()[-1]
    assert final.startswith("bfs: 100%|") and "| 10/10 [" in final, final


@pytest.mark.timeout(90)
def test_auto_progress_on_a_terminal_is_a_bar() -> None:
    """stderr on a pseudo-terminal (which reports no size here): auto draws the tqdm bar."""
    pytest.importorskip("tqdm")
    import os
    import pty

    master, slave = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "ddflow.examples.bfs", str(NODES), str(EDGES), "1", "10"],
            stdout=subprocess.PIPE,
            stderr=slave,
            text=True,
            timeout=60,
            check=False,
        )
        os.close(slave)
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side is closed and drained
                break
            if not chunk:
                break
            err += chunk
    finally:
        os.close(master)
    assert done.returncode == 0
    screens = err.decode().replace("\r\n", "\n").replace("\r", "\n").splitlines()
    final = [line for line in screens if line.startswith("bfs: 100%|")]
    assert final and "| 10/10 [" in final[-1], err
    assert not any(line.startswith("progress: ") for line in screens)


def png_size(path: Path) -> tuple[int, int]:
    """The PNG's width and height (its IHDR chunk); fails on anything but a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.timeout(90)
def test_plot_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "rounds.png"
    assert bfs.main([str(NODES), str(EDGES), "2", "20", "--no-progress", "--plot", str(png)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"plot: {png}" in out
    assert png_size(png) == (900, 600)
    assert png.stat().st_size > 20_000  # two panels of lines, labels and a title


BLOCKER = textwrap.dedent(
    """
    import sys

    class Block:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, Block())
    from ddflow.examples import bfs
    sys.exit(bfs.main({argv!r}))
    """
)


def run_blocked(blocked: set[str], argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The job in a child process in which importing ``blocked`` modules fails."""
    code = BLOCKER.format(blocked=blocked, argv=argv)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.timeout(90)
def test_plot_without_matplotlib_names_the_extra(tmp_path: Path) -> None:
    png = tmp_path / "rounds.png"
    done = run_blocked({"matplotlib"}, [*ARGS, "--plot", str(png)])
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "python -m ddflow.examples.bfs: error: "
        "--plot needs matplotlib: pip install 'ddflow[plot]'"
    ), done.stderr
    assert done.stdout == "" and not png.exists()  # refused before the job ran


@pytest.mark.timeout(90)
def test_without_tqdm(tmp_path: Path) -> None:
    done = run_blocked({"tqdm"}, [str(NODES), str(EDGES), "1", "10"])
    assert done.returncode == 0, done.stderr
    assert len(done.stderr.splitlines()) == 10
    assert done.stderr.splitlines()[-1].startswith("progress: 10/10 updates (100%)")
    assert done.stdout.splitlines()[-1].startswith("bfs: 30 nodes")
    refused = run_blocked({"tqdm"}, [*ARGS[:4], "--progress", "bar"])
    assert refused.returncode == 2
    assert refused.stderr.strip().endswith(
        "--progress bar needs tqdm: pip install 'ddflow[progress]'"
    )


@pytest.mark.parametrize(("fast", "scale"), [(900.0, "linear"), (100_000.0, "log")])
def test_plot_panels_are_the_round_times(fast: float, scale: str) -> None:
    plt = pytest.importorskip("matplotlib.pyplot")
    from ddflow.examples.bfs_plot import rounds_figure

    times = RoundTimes(load_s=0.5)
    for seconds in (0.01, 0.02, 0.01, 10 / fast, 0.04):
        times.add(10, seconds)
    fig = rounds_figure(times, "title")
    try:
        top, bottom = fig.axes
        x, rates = top.lines[0].get_data()
        assert list(x) == [1, 2, 3, 4, 5]
        assert list(rates) == pytest.approx([1000, 500, 1000, fast, 250])
        median = sorted([1000, 500, 1000, fast, 250])[2]
        assert top.lines[1].get_ydata()[0] == pytest.approx(median)  # dashed: the median
        assert top.get_yscale() == scale  # log when a round is 5x faster than the median
        assert list(bottom.lines[0].get_ydata()) == pytest.approx([10, 20, 10, 1e4 / fast, 40])
        assert bottom.get_ylabel() == "round latency (ms)"
    finally:
        plt.close(fig)


@pytest.mark.timeout(90)
def test_runs_with_no_optional_dependency() -> None:
    """The README's first command installs ddflow alone: the job needs none of the extras."""
    extras = {"tqdm", "matplotlib", "sqlglot", "pandas", "polars", "pyspark", "psycopg"}
    extras |= {"deltalake", "prometheus_client", "duckdb"}
    done = run_blocked(extras, [str(NODES), str(EDGES), "4", "10", "--inspect"])
    assert done.returncode == 0, done.stderr
    assert parse_rounds(done.stdout.splitlines()) == dict(
        enumerate(expected_rounds(NODES, EDGES, 4, 10))
    )
    assert done.stdout.splitlines()[-1].startswith("bfs: 30 nodes, 40 edges, 10 updates")
