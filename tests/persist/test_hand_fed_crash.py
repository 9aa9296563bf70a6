"""A program feeding its inputs by hand, killed with SIGKILL at random points and restarted
each time (feeding again from ``inp.frontier()``), writes exactly the output of a run never
interrupted: every update once, none missing.

The program (``tests/persist/hand_pipeline.py``) feeds one input with ``update_batch`` and
one with ``update_at``, retracting earlier updates, into a grouped aggregate and a join, both
written to Parquet sinks; a kill lands anywhere in its steps (while it feeds, logs, computes,
writes a sink file or checkpoints). The sinks' updates, each ``(record, time)`` with its
summed diff, must equal the uninterrupted run's, whose final totals must equal DuckDB's over
every update fed.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from tests.io.sinkfiles import final_state, read_sink
from tests.persist.crash import run_command, run_command_killed_in_progress, updates
from tests.persist.hand_pipeline import SINKS, step_updates

pytestmark = pytest.mark.timeout(300)

STEPS, SEED = 250, 4


def _command(out: Path, state: Path | None) -> list[str]:
    where = "-" if state is None else str(state)
    module = "tests.persist.hand_pipeline"
    return [sys.executable, "-m", module, str(out), where, str(STEPS), str(SEED)]


def _duckdb_totals() -> dict[tuple[object, ...], int]:
    parts = []
    for t in range(STEPS):
        table, diffs = step_updates(SEED, t)
        parts.append(table.append_column("diff", pa.array(diffs)))
    con = duckdb.connect()
    con.register("fed", pa.concat_tables(parts))
    rows = con.sql(
        "select k, sum(diff) as n, sum(v * diff) as total from fed group by k "
        "having sum(diff) <> 0"
    ).fetchall()
    return {(k, n, total): 1 for k, n, total in rows}


def test_killed_and_restarted_equals_one_run(tmp_path: Path) -> None:
    whole = run_command(_command(tmp_path / "reference", None))
    reference = {sink: updates(tmp_path / "reference", sink) for sink in SINKS}
    _, rows = read_sink(tmp_path / "reference" / "totals")
    assert final_state(rows) == _duckdb_totals()

    out, state = tmp_path / "out", tmp_path / "state"
    persistent = _command(out, state)
    rng = random.Random(13)
    # Each kill comes once the restarted program writes a new sink file, then up to a
    # fifteenth of an uninterrupted run later (at most 0.4 s): inside its work however busy
    # the machine is, and five kills land before the work is over on a quiet machine too
    # (its 250 steps take about 1.5 s there, where kills up to 0.4 s apart could outlast it).
    most = min(0.4, whole / 15)
    kills = sum(run_command_killed_in_progress(persistent, out, rng, most) for _ in range(5))
    run_command(persistent)
    assert kills == 5
    for sink in SINKS:
        assert updates(out, sink) == reference[sink], sink
