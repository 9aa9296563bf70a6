"""Programming with time on Spark: ``advance_iteration`` holds updates for a later
superstep and ``delay`` is the identity (a superstep bundles each iteration already).
Prioritized SSSP, plain SSSP and a hand-written loop with ``advance_iteration`` must give
exactly the embedded engine's output, with 1-D and 2-D times; a bad value fails the run
naming the operator."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import run_on_spark

from .conftest import Data, check_equal, embedded, frames, on_spark

pytestmark = pytest.mark.timeout(240)


def _sssp(prioritized: bool) -> Any:
    def build(flow: dd.Dataflow) -> Any:
        ei, edges = flow.new_input(("src", "dst", "w"), name="edges")
        ri, roots = flow.new_input(("node",), name="roots")
        return {"edges": ei, "roots": ri}, [
            dd.algorithms.sssp(edges, roots, prioritized=prioritized)
        ]

    return build


def _graph(dims: int, seed: int = 3) -> Data:
    rng = np.random.default_rng(seed)
    edges = []
    for s, d, w in rng.integers(0, 12, (30, 3)):
        t = tuple(int(x) for x in rng.integers(0, 3, dims))
        # Weights 1-3: proposals are still held for later iterations, and prioritized SSSP
        # runs 13-16 supersteps (weights 1-12 took 30-33, each a few Spark jobs).
        edges.append((int(s), int(d), int(w) % 3 + 1, t if dims > 1 else t[0], 1))
    # Retract a few edges later, so distances grow back.
    for s, d, w, t, _ in edges[:5]:
        later = tuple(c + 2 for c in t) if dims > 1 else t + 2
        edges.append((s, d, w, later, -1))
    zero = (0,) * dims if dims > 1 else 0
    return {"edges": (("src", "dst", "w"), edges), "roots": (("node",), [(0, zero, 1)])}


@pytest.mark.parametrize("dims", [1, 2])
def test_prioritized_sssp_equals_the_engine(spark: SparkSession, dims: int) -> None:
    got = check_equal(spark, _sssp(True), _graph(dims), dims)
    assert got
    # Same result as the unprioritized loop (the priorities only reorder the work); that loop
    # on Spark is tested by tests/spark/test_fused.py.
    assert got == embedded(_sssp(False), _graph(dims))


def test_held_updates_skip_empty_iterations(spark: SparkSession) -> None:
    # One long edge: the proposal for node 1 (distance 50) is held until iteration 50; the
    # iterations between change nothing and are skipped, not run.
    data: Data = {
        "edges": (("src", "dst", "w"), [(0, 1, 50, 0, 1), (1, 2, 1, 0, 1)]),
        "roots": (("node",), [(0, 0, 1)]),
    }
    got, result = on_spark(spark, _sssp(True), data)
    assert {(r[1], r[2]) for r in got} == {(0, 0), (1, 50), (2, 51)}
    steps = [s for s in result.supersteps if s.phase.startswith("superstep")]
    assert len(steps) < 10, [s.phase for s in steps]


def test_delay_is_the_identity(spark: SparkSession) -> None:
    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("x",), name="xs")
        inner = a.iterate(lambda v: v.delay().select(x=dd.col("x") // 2).concat(v).distinct())
        return {"xs": ai}, [a.delay(), inner]

    check_equal(spark, build, {"xs": (("x",), [(9, 0, 1), (40, 1, 1), (9, 3, -1)])})


def test_a_negative_value_fails_naming_the_operator(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("x",), name="xs")
    out = a.iterate(lambda v: v.advance_iteration(dd.col("x") - 5).concat(v).distinct())
    dfs = frames(spark, {"xs": (("x",), [(9, 0, 1), (2, 1, 1)])}, 1)
    with pytest.raises(dd.DataError, match=r"advance_iteration@.*value -3 is negative"):
        run_on_spark(spark, flow, {ai: dfs["xs"]}, [out])


def test_a_value_past_max_iterations_fails(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("x",), name="xs")
    out = a.iterate(lambda v: v.advance_iteration("x").concat(v).distinct(), max_iterations=5)
    dfs = frames(spark, {"xs": (("x",), [(9, 0, 1)])}, 1)
    with pytest.raises(dd.DataError, match=r"value 9 is beyond the iterate's last iteration 4"):
        run_on_spark(spark, flow, {ai: dfs["xs"]}, [out])


def test_explain_spark_names_the_time_operators(spark: SparkSession) -> None:
    from ddflow.spark import explain_spark

    flow = dd.Dataflow()
    sessions, outs = _sssp(True)(flow)
    dfs = frames(spark, _graph(1), 1)
    text = explain_spark(spark, flow, {sessions[n]: df for n, df in dfs.items()}, outs)
    assert "advance_iteration: updates beyond the superstep held" in text, text
    assert "delay: identity" in text, text
