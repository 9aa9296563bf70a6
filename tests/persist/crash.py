"""The crash test's parts: input files, a pipeline process killed at random points, and
the comparison of its sinks with an uninterrupted run's.

Shared by ``tests/persist/test_crash_restart.py`` and ``test_hand_fed_crash.py`` (a few
kills, in CI) and ``benches/persistence.py`` (20 kills). :func:`run_whole` runs the
file pipeline (``tests/persist/pipeline.py``, :func:`pipeline_command`); :func:`run_command`
and :func:`run_command_killed_in_progress` any program.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tests.io.sinkfiles import read_sink

ROOT = Path(__file__).resolve().parents[2]
SINKS = ("totals", "large")


def write_inputs(directory: Path, files: int, rows: int, seed: int) -> None:
    """``files`` CSV files of ``rows`` rows (``t``, ``k``, ``v``), times increasing."""
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    t = 0
    for i in range(files):
        lines = ["t,k,v"]
        for _ in range(rows):
            t += rng.randint(0, 3)
            lines.append(f"{t},{rng.randint(0, 50)},{rng.randint(0, 1000)}")
        (directory / f"part-{i:04d}.csv").write_text("\n".join(lines) + "\n")


def pipeline_command(source: Path, out: Path, state: Path | str | None) -> list[str]:
    """The command running the file pipeline (``state`` None: without persistence)."""
    return [
        sys.executable,
        "-m",
        "tests.persist.pipeline",
        str(source),
        str(out),
        "-" if state is None else str(state),
        "100",
    ]


def run_whole(source: Path, out: Path, state: Path | None, timeout: float = 120) -> float:
    """Runs the pipeline to its end; returns its wall time."""
    return run_command(pipeline_command(source, out, state), timeout)


def run_command(command: list[str], timeout: float = 120) -> float:
    """Runs ``command`` (from the repository's root) to its end; returns its wall time."""
    start = time.monotonic()
    subprocess.run(command, cwd=ROOT, check=True, timeout=timeout)
    return time.monotonic() - start


def run_command_killed_in_progress(
    command: list[str], out: Path, rng: random.Random, most: float = 0.4
) -> bool:
    """Starts ``command``, waits until it writes a new file under ``out`` (its start-up and
    restore are over and it is at work), then kills it with SIGKILL after a random 0 to
    ``most`` seconds more; True when it was killed (False when it ended first). Each kill
    then lands inside the work however busy the machine is, and a run cut short this way
    leaves work for the next kill."""

    def files() -> set[Path]:
        return {f for f in out.rglob("*") if f.is_file()} if out.exists() else set()

    before = files()
    process = subprocess.Popen(command, cwd=ROOT, env=os.environ.copy())
    try:
        while process.poll() is None and not files() - before:
            time.sleep(0.01)
        if process.poll() is None:
            time.sleep(rng.uniform(0, most))
        killed = process.poll() is None
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
    assert killed or process.returncode == 0, process.returncode
    return killed


def updates(out: Path, sink: str) -> Counter[tuple[Any, ...]]:
    """A sink's updates as (record..., time) -> summed diff; the sink's files must tile
    their times without gap or overlap (``read_sink`` checks)."""
    _, rows = read_sink(out / sink)
    total: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        key = tuple(v for k, v in row.items() if k != "diff")
        total[key] += row["diff"]
    return total
