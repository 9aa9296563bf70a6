"""A persistent pipeline killed with SIGKILL at random points and restarted each time
writes exactly the output of a run never interrupted: every update once, none missing.

The pipeline (``tests/persist/pipeline.py``) reads CSV files with event times into a grouped
aggregate and a join, and writes both to Parquet sinks; each kill lands somewhere in its
ticks (while it reads, logs, computes, writes a sink file or checkpoints). The sinks'
updates, each ``(record, time)`` with its summed diff, must equal the uninterrupted run's,
which must in turn equal a recompute of the aggregate from the input files.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest
from tests.io.sinkfiles import final_state, read_sink
from tests.persist.crash import (
    SINKS,
    pipeline_command,
    run_command_killed_in_progress,
    run_whole,
    updates,
    write_inputs,
)

pytestmark = pytest.mark.timeout(300)


def _recomputed_totals(source: Path) -> Counter[tuple[int, ...]]:
    table = pa.concat_tables(pa_csv.read_csv(p) for p in sorted(source.iterdir()))
    by_key = table.group_by("k").aggregate([("v", "count"), ("v", "sum"), ("v", "max")])
    return Counter({(r["k"], r["v_count"], r["v_sum"], r["v_max"]): 1 for r in by_key.to_pylist()})


def test_killed_and_restarted_equals_one_run(tmp_path: Path) -> None:
    source = tmp_path / "in"
    write_inputs(source, files=60, rows=200, seed=7)
    whole = run_whole(source, tmp_path / "reference", None)
    reference = {sink: updates(tmp_path / "reference", sink) for sink in SINKS}
    _, rows = read_sink(tmp_path / "reference" / "totals")
    assert final_state(rows) == _recomputed_totals(source)

    out, state = tmp_path / "out", tmp_path / "state"
    rng = random.Random(11)
    # Each kill comes once the restarted pipeline writes a new sink file, then up to a tenth
    # of an uninterrupted run later (at most 0.4 s): inside its work however busy the
    # machine is, and five kills land before the work is over on a fast machine too (its
    # 120 ticks take about 1 s there).
    command = pipeline_command(source, out, state)
    most = min(0.4, whole / 10)
    kills = sum(run_command_killed_in_progress(command, out, rng, most) for _ in range(5))
    run_whole(source, out, state)
    assert kills == 5
    for sink in SINKS:
        assert updates(out, sink) == reference[sink], sink
