"""Progress lines and ``explain()`` phases come from job results, on classic and Spark Connect
sessions alike: one line per superstep with its wall time and the updates it fed back (the
fused tasks' count rows, or the count the job cutting a reduce's output computes), the last
superstep feeding back nothing. A classic session adds Spark's own figures (jobs, shuffle
bytes) from its status store; a Connect session has none to give."""

from __future__ import annotations

import re

import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import run_on_spark

from .conftest import REMOTE, embedded, frames

pytestmark = pytest.mark.timeout(240)

EDGES = [(0, 1, 0, 1), (1, 2, 0, 1), (2, 3, 1, 1), (3, 4, 1, 1), (1, 2, 2, -1), (0, 4, 3, 1)]
DATA = {"edges": (("src", "dst"), EDGES), "roots": (("node",), [(0, 0, 1)])}


def _bfs(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    ei, e = flow.new_input(("src", "dst"), name="edges")
    ri, r = flow.new_input(("node",), name="roots")
    return {"edges": ei, "roots": ri}, [dd.algorithms.bfs(e, r)]


@pytest.mark.parametrize("reduce_state", ["store", "shuffle"])
def test_superstep_lines_report_the_updates_fed_back(
    spark: SparkSession, reduce_state: str
) -> None:
    flow = dd.Dataflow()
    sessions, outputs = _bfs(flow)
    dfs = frames(spark, DATA, 1)
    lines: list[str] = []
    result = run_on_spark(
        spark,
        flow,
        {sessions[n]: df for n, df in dfs.items()},
        outputs,
        progress=lines.append,
        reduce_state=reduce_state,
    )
    got = sorted(
        ((0, r["node"], r["dist"], (r["time"],), r["diff"]) for r in result[outputs[0]].collect()),
        key=repr,
    )
    assert got == embedded(_bfs, DATA)
    steps = [s for s in result.supersteps if s.iteration is not None]
    assert [s.iteration for s in steps] == list(range(len(steps))), lines
    assert len(steps) >= 3
    assert [s.rows_fed_back for s in steps][-1] == 0, lines
    assert all(s.rows_fed_back for s in steps[:-1]), lines
    pattern = r"superstep (\d+): [0-9.]+ s, (\d+) updates fed back"
    found = [re.match(pattern, line) for line in lines if line.startswith("superstep")]
    assert all(found) and len(found) == len(steps), lines
    assert [int(m.group(2)) for m in found if m] == [s.rows_fed_back for s in steps]
    assert ("shuffle write" in lines[-1]) == (REMOTE is None), lines
    assert all(line in result.explain() for line in lines)
