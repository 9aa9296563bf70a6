"""Spilling under a small ``memory_limit``: past 70% of it the engine writes cold trace
batches to spill files and reads them back through memory maps. A BFS whose traces need
spilling to stay under the limit gives exactly the distances of a run without a limit, and
leaves no file behind (each is unlinked as soon as it is mapped)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ddflow as dd
from ddflow.memory import live_bytes, spilled_bytes_total

pytestmark = pytest.mark.timeout(60)

NODES, EDGES, ROUNDS = 20_000, 120_000, 4


def _bfs(limit: int | None, workers: int = 1) -> list[tuple[int, int]]:
    """BFS from node 0 over a random graph whose edges arrive in ``ROUNDS`` rounds."""
    rng = np.random.default_rng(7)
    src = rng.integers(0, NODES, EDGES, dtype=np.int64)
    dst = rng.integers(0, NODES, EDGES, dtype=np.int64)
    flow = dd.Dataflow(log=False, workers=workers, memory_limit=limit)
    edges_in, edges = flow.new_input({"src": "int64", "dst": "int64"})
    roots_in, roots = flow.new_input({"node": "int64"})
    out = dd.algorithms.bfs(edges, roots).capture()
    roots_in.update_batch({"node": np.array([0], dtype=np.int64)}, times=0)
    roots_in.advance_to(ROUNDS)
    per = EDGES // ROUNDS
    for r in range(ROUNDS):
        part = slice(r * per, (r + 1) * per)
        edges_in.update_batch({"src": src[part], "dst": dst[part]}, times=r)
        edges_in.advance_to(r + 1)
        flow.run_until(r + 1)
    return sorted((row["node"], row["dist"]) for row in out.state().to_pylist())


@pytest.mark.parametrize("workers", [1, 2])
def test_a_bfs_that_spills_equals_an_unlimited_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    expected = _bfs(None, workers)
    spill_dir = tmp_path / "spill"
    monkeypatch.setenv("DDFLOW_SPILL_DIR", str(spill_dir))
    before = spilled_bytes_total()
    # A few MB above what the process holds already: the traces pass 70% of it.
    got = _bfs(live_bytes() + (3 << 20), workers)
    assert spilled_bytes_total() > before, "the run did not spill"
    assert got == expected
    assert spill_dir.is_dir()
    assert list(spill_dir.iterdir()) == []
