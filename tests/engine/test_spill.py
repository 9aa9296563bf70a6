"""Spilling under a small ``memory_limit``: past 70% of it the engine writes cold trace
batches to spill files and reads them back through memory maps. A count of counts whose
traces outgrow the limit gives exactly the result of a run without a limit, and leaves no
file behind (each is unlinked as soon as it is mapped)."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
import pytest

import ddflow as dd
from ddflow.memory import live_bytes, spilled_bytes_total

pytestmark = pytest.mark.timeout(60)

ROUNDS, PER, KEYS = 40, 4500, 75_000
# Above what the process holds before the run: the run's traces alone need more (3.7-4.6 MB
# live at the end on one or two workers; with 50,000 keys two workers held 2.3-2.8 MB, too
# close to this margin).
MARGIN = 2_500_000


def _counts(
    limit: int | None, workers: int = 1, persistence: dd.Persistence | None = None
) -> tuple[list[tuple[int, int]], int]:
    """How many keys have each count, over rows arriving in ``ROUNDS`` rounds (every key's
    rows spread over rounds, so the traces grow round by round while each round's work is
    small); and the bytes live in ddflow's heap at the end."""
    flow = dd.Dataflow(log=False, workers=workers, memory_limit=limit, persistence=persistence)
    rows_in, rows = flow.new_input({"k": "int64", "v": "int64"})
    per_key = rows.group_by("k").agg(n=dd.count())
    out = per_key.group_by("n").agg(m=dd.count()).capture(keep="state")
    for r in range(ROUNDS):
        k = np.arange(r * PER, (r + 1) * PER, dtype=np.int64) % KEYS
        rows_in.update_batch({"k": k, "v": k * 7 + r}, times=r)
        rows_in.advance_to(r + 1)
        flow.run_until(r + 1)
    live = live_bytes()
    return sorted((row["n"], row["m"]) for row in out.state().to_pylist()), live


@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_that_spills_equals_an_unlimited_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    gc.collect()
    base = live_bytes()
    expected, unlimited_live = _counts(None, workers)
    assert unlimited_live - base > MARGIN, "the unlimited run fits the limit: no test"
    gc.collect()
    spill_dir = tmp_path / "spill"
    monkeypatch.setenv("DDFLOW_SPILL_DIR", str(spill_dir))
    before = spilled_bytes_total()
    got, _ = _counts(live_bytes() + MARGIN, workers)
    assert spilled_bytes_total() > before, "the run did not spill"
    assert got == expected
    assert expected == [(2, 3 * KEYS // 5), (3, 2 * KEYS // 5)]
    assert spill_dir.is_dir()
    assert list(spill_dir.iterdir()) == []


def test_a_persistent_dataflow_spills_under_its_path(tmp_path: Path) -> None:
    expected, _ = _counts(None)
    gc.collect()
    before = spilled_bytes_total()
    got, _ = _counts(live_bytes() + MARGIN, persistence=dd.Persistence(tmp_path / "state"))
    assert spilled_bytes_total() > before
    assert got == expected
    assert (tmp_path / "state" / "spill").is_dir()
    assert list((tmp_path / "state" / "spill").iterdir()) == []
