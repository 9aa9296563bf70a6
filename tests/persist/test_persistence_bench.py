"""``benches/persistence.py`` on a small graph: ``--runs`` chooses the job runs, ``--no-crash``
skips the crash tests, ``--append`` adds the table as a section of ``--out`` (before its crash
tests, replacing a section of the same heading); every run's BFS distances equal those of the
rebuild without persistence, and of a recompute in Python; bad ``--runs`` are refused."""

from __future__ import annotations

import subprocess
import sys
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benches" / "persistence.py"
SMALL = ["--nodes", "300", "--edges", "1500", "--files", "3", "--rows-per-poll", "250"]
EXISTING = "# Persistence\n\nThe first table.\n\n## Crash tests\n\nThe crash tests.\n"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True
    )


@pytest.mark.timeout(300)
def test_chosen_runs_appended_as_a_section(tmp_path: Path) -> None:
    out = tmp_path / "persistence.md"
    out.write_text(EXISTING)
    runs = ["--runs", "rebuild1,restart,ckpt10", "--no-crash", "--append", "--out", str(out)]
    done = bench(*SMALL, *runs)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    heading = "## Restart against rebuild: 300 nodes, 1,500 edges"
    assert text.startswith("# Persistence\n\nThe first table.\n\n" + heading)
    assert text.index(heading) < text.index("## Crash tests") == text.rindex("## Crash tests")
    assert text.endswith("## Crash tests\n\nThe crash tests.\n")
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    # the runs in their fixed order, the ratios against the first run (no rebuild chosen)
    assert [r.split(" | ")[0] for r in rows] == [
        "| run",
        "| checkpoint every 10 s",
        "| restart from the 10 s checkpoint",
        "| rebuild, every edge in one tick",
    ]
    assert rows[0].endswith(
        "CPU vs checkpoint every 10 s | peak RSS (MB) | peak anon RSS (MB) | spilled (MB) |"
    )
    assert " 1.00x " in rows[1]
    assert "Both runs' distances are the same: True." in text
    assert "x that of a rebuild that reads every edge in one tick." in text
    assert "--runs ckpt10,restart,rebuild1 --no-crash --append`" in text
    # a second run replaces the section instead of adding another
    limited = ["--runs", "rebuild,limited", "--memory-limit", "256MB"]
    again = bench(*SMALL, *limited, "--no-crash", "--append", "--out", str(out))
    assert again.returncode == 0, again.stderr
    text = out.read_text()
    assert text.count(heading) == 1
    assert "| rebuild (no persistence) |" in text and "| restart from" not in text
    assert "| rebuild under the memory limit |" in text
    assert "--runs rebuild,limited --memory-limit 256MB --no-crash --append`" in text
    assert "Both runs' distances are the same: True." in text
    assert text.endswith("## Crash tests\n\nThe crash tests.\n")


@pytest.mark.timeout(300)
def test_default_runs_all_five_and_match_a_recompute(tmp_path: Path) -> None:
    out = tmp_path / "persistence.md"
    done = bench(*SMALL, "--no-crash", "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert text.startswith("# Persistence: checkpoint cost, restart, crash test\n")
    assert "--rows-per-poll 250 --no-crash`" in text and "--runs" not in text
    assert "## Crash tests" not in text
    for name in (
        "rebuild (no persistence)",
        "checkpoint every 10 s",
        "checkpoint every 1 s",
        "restart from the 10 s checkpoint",
        "rebuild, every edge in one tick",
    ):
        assert f"| {name} |" in text
    assert "All four runs' distances are the same: True." in text


def test_job_distances_match_a_recompute(tmp_path: Path) -> None:
    """The job itself (one process, persistent) against a breadth-first search in Python."""
    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT))
    from benches.persistence import _distances, _write_graph

    _write_graph(tmp_path, 300, 1500, 3)
    command = [sys.executable, str(SCRIPT), "job", str(tmp_path / "edges"), str(tmp_path / "roots")]
    command += [str(tmp_path / "out"), str(tmp_path / "state"), "10s", "250"]
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    edges = pq.read_table(tmp_path / "edges").to_pydict()
    graph: dict[int, list[int]] = {}
    for src, dst in zip(edges["src"], edges["dst"], strict=True):
        graph.setdefault(src, []).append(dst)
    dist = {0: 0}
    queue = deque([0])
    while queue:
        node = queue.popleft()
        for nxt in graph.get(node, []):
            if nxt not in dist:
                dist[nxt] = dist[node] + 1
                queue.append(nxt)
    assert _distances(tmp_path / "out") == {(n, d): 1 for n, d in dist.items()}


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ("rebuild,twice", "--runs: unknown run twice; choose from"),
        ("restart", "--runs: restart needs ckpt10"),
        (",", "--runs: unknown run (none given)"),
    ],
)
def test_bad_runs_refused(runs: str, message: str) -> None:
    done = bench("--runs", runs, "--no-crash")
    assert done.returncode == 2
    assert message in done.stderr
