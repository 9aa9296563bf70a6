"""Small incremental Spark runs on the driver (``local_continuation.py``): random histories
split into runs that take the driver path or the DataFrame path in turn (each continues
from the other's state), compared with the embedded engine over the whole history; a driver
run's supersteps run no Spark job; a data error leaves the state as it was; a plan the
driver does not handle takes the DataFrame path.
"""

from __future__ import annotations

import random
import sys
from typing import Any

import pyarrow as pa
import pytest
from pyspark import cloudpickle
from pyspark.sql import SparkSession
from tests.spark.conftest import REMOTE, Build, Data, Rows, embedded, frames
from tests.spark.test_incremental_state import _consolidated, _random_graph, _split

import ddflow as dd
from ddflow import col
from ddflow.errors import DataError
from ddflow.spark import run_on_spark
from ddflow.spark.driver import local_continuation, local_frames
from ddflow.spark.driver.compiler import Compiler
from ddflow.spark.driver.stored_state import StateDir

# Executors cannot import this test module: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _mixed(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    """Expressions, joins of every kind, a reduce keyed by two columns (one a string with
    nulls), and a BFS over the second input's edges."""
    a_in, a = flow.new_input(("k", "name", "v"))
    b_in, b = flow.new_input(("k", "w"))
    wide = a.filter(col("v") > 2).select("k", "name", v2=col("v") * 2 - 1)
    joined = wide.join(b, on="k")
    sums = joined.group_by("k", "name").agg(total=dd.sum("v2"), n=dd.count())
    semi = a.semijoin(b, on="k").count(by="name")
    lonely = a.antijoin(b, on="k").select("k", "v")
    edges = b.select(src=col("k"), dst=col("w"))
    roots = a.filter(col("v") == 0).select(node=col("k"))
    dists = dd.algorithms.bfs(edges, roots).count(by="dist")
    return {"a": a_in, "b": b_in}, [sums, semi, lonely, dists, joined.negate()]


def _random_mixed(rng: random.Random, n: int, horizon: int) -> Data:
    names = ["x", "y", None, "zz"]

    def rows(make: Any) -> list[tuple[Any, ...]]:
        live: list[tuple[Any, ...]] = []
        out: list[tuple[Any, ...]] = []
        for _ in range(n):
            t = rng.randrange(horizon)
            if live and rng.random() < 0.3:
                rec = live.pop(rng.randrange(len(live)))
                out.append((*rec, t, -1))
            else:
                rec = make()
                live.append(rec)
                out.append((*rec, t, 1))
        return sorted(out, key=lambda r: r[-2])

    a = rows(lambda: (rng.randrange(8), rng.choice(names), rng.randrange(6)))
    b = rows(lambda: (rng.randrange(8), rng.randrange(8)))
    return {"a": (("k", "name", "v"), a), "b": (("k", "w"), b)}


def _run(
    spark: SparkSession,
    build: Build,
    chunks: list[Data],
    state: str,
    monkeypatch: pytest.MonkeyPatch,
    driver: list[bool],
) -> tuple[Rows, list[list[str]]]:
    """Each chunk as an incremental run, on the driver where ``driver`` says (the first
    run always takes the DataFrame path); all output rows, and each run's phase names."""
    out: Rows = []
    phases = []
    for chunk, local in zip(chunks, driver, strict=True):
        monkeypatch.setattr(local_continuation, "LOCAL_RUN", 100_000 if local else -1)
        flow = dd.Dataflow()
        sessions, outputs = build(flow)
        dfs = frames(spark, chunk, 1)
        result = run_on_spark(
            spark, flow, {sessions[n]: df for n, df in dfs.items()}, outputs, state=state
        )
        phases.append([p.phase for p in result.supersteps])
        for k, o in enumerate(outputs):
            ncols = len(o.columns)
            for r in result[o].collect():
                out.append((k, *r[:ncols], (int(r["time"]),), int(r["diff"])))
    return out, phases


@pytest.mark.timeout(900)
def test_driver_and_dataframe_runs_continue_each_other(
    spark: SparkSession, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four runs: a driver run after a DataFrame run, a DataFrame run after a driver run, and
    # a driver run after that, at random cuts of one random history.
    rng = random.Random(100)
    data = _random_mixed(rng, 40, 12)
    want = embedded(_mixed, data)
    cuts = sorted(rng.sample(range(1, 12), 3))
    driver = [False, True, False, True]
    got, phases = _run(spark, _mixed, _split(data, cuts), str(tmp_path / "s"), monkeypatch, driver)
    assert _consolidated(got) == want, f"cuts {cuts}"
    for run, local in zip(phases[1:], driver[1:], strict=True):
        assert all(p.endswith("(driver)") == local for p in run), (driver, phases)


def _bfs(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    e_in, edges = flow.new_input(("src", "dst"))
    r_in, roots = flow.new_input(("node",))
    return {"edges": e_in, "roots": r_in}, [dd.algorithms.bfs(edges, roots).count(by="dist")]


@pytest.mark.timeout(600)
def test_a_driver_run_runs_its_supersteps_without_spark_jobs(
    spark: SparkSession, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 60 edges over 20 nodes: the first run (on the DataFrame path) reaches 17 nodes within
    # 3 hops (30 nodes took 7), and the driver runs still change 19 distances.
    rng = random.Random(3)
    data = _random_graph(rng, 20, 60, 40)
    want = embedded(_bfs, data)
    got, phases = _run(
        spark,
        _bfs,
        _split(data, [1, 20, 30]),
        str(tmp_path / "bfs2"),
        monkeypatch,
        [False, True, True, True],
    )
    assert _consolidated(got) == want
    for run in phases[1:]:
        assert run and all(p.endswith("(driver)") for p in run), run
    if REMOTE is None:
        # The stored state's newest manifest names every run's layers; the driver runs
        # wrote theirs in the DataFrame path's layout, which Spark reads back.
        state = StateDir(spark, str(tmp_path / "bfs2"))
        manifest = state.current()
        assert manifest is not None and manifest.version == 4
        for node in manifest.layers:
            hist = state.history(manifest, node)
            assert hist is not None
            hist.count()


@pytest.mark.timeout(300)
def test_a_data_error_on_the_driver_leaves_the_state(
    spark: SparkSession, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
        a_in, a = flow.new_input(("k", "v"))
        return {"a": a_in}, [a.select("k", q=col("k") // col("v")).count(by="q")]

    state = str(tmp_path / "err")
    first: Data = {"a": (("k", "v"), [(1, 1, 0, 1), (4, 2, 1, 1)])}
    bad: Data = {"a": (("k", "v"), [(3, 0, 5, 1)])}
    _run(spark, build, [first], state, monkeypatch, [False])
    with pytest.raises(DataError, match="division by zero|divide by zero|by zero"):
        _run(spark, build, [bad], state, monkeypatch, [True])
    manifest = StateDir(spark, state).current()
    assert manifest is not None and manifest.version == 1
    good: Data = {"a": (("k", "v"), [(3, 1, 5, 1)])}
    got, phases = _run(spark, build, [good], state, monkeypatch, [True])
    assert phases == [[]]
    want = [r for r in embedded(build, {"a": (("k", "v"), first["a"][1] + good["a"][1])})]
    assert _consolidated(got) == [r for r in want if r[-2] == (5,)]


@pytest.mark.timeout(300)
def test_a_python_function_takes_the_dataframe_path(
    spark: SparkSession, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def build(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
        a_in, a = flow.new_input(("k", "v"))
        return {"a": a_in}, [a.filter(lambda r: r["v"] > 1).count(by="k")]

    rows = [(k % 3, k, k, 1) for k in range(10)]
    data: Data = {"a": (("k", "v"), rows)}
    flow = dd.Dataflow()
    sessions, outputs = build(flow)
    # The refusal names the operator, before any job.
    compiler = Compiler(
        spark, flow, {sessions["a"]: frames(spark, data, 1)["a"]}, outputs, None, "local", None
    )
    try:
        assert "filter" in (local_continuation.local_refusal(compiler) or "")
    finally:
        compiler.close()
    got, _ = _run(
        spark, build, _split(data, [4, 7]), str(tmp_path / "py"), monkeypatch, [False, True, True]
    )
    assert _consolidated(got) == embedded(build, data)


@pytest.mark.timeout(600)
def test_a_missing_arrow_kernel_falls_back_to_dataframes(
    spark: SparkSession, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise pa.ArrowNotImplementedError("no kernel for this type")

    # 30 edges over 12 nodes: 3 hops at most (20 nodes took 6), so both runs' loops run
    # half the supersteps; the second run still changes 8 distances at 3 times.
    rng = random.Random(5)
    data = _random_graph(rng, 12, 30, 20)
    want = embedded(_bfs, data)
    chunks = _split(data, [1])
    state = str(tmp_path / "bfs")
    got, _ = _run(spark, _bfs, chunks[:1], state, monkeypatch, [False])
    monkeypatch.setattr(local_frames, "join_updates", missing)
    later, phases = _run(spark, _bfs, chunks[1:], state, monkeypatch, [True])
    assert _consolidated(got + later) == want
    # Each run's supersteps ran again as Spark jobs after the driver gave up.
    assert all("superstep 0" in p for p in phases), phases
