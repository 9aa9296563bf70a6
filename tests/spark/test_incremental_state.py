"""Incremental Spark runs (``run_on_spark(..., state=path)``): a history split into several
runs at random times, each run given only its own updates, must give outputs whose
concatenation equals the embedded engine's output over the whole history; and the stored
state refuses another plan, updates before its frontier, and a second commit of one version.
"""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from typing import Any

import pytest
from pyspark.sql import SparkSession
from tests.spark.conftest import Build, Data, Rows, embedded, frames

import ddflow as dd
from ddflow.spark import StateConflictError, StateError, run_on_spark
from ddflow.spark.driver import incremental, local_continuation
from ddflow.spark.driver.stored_state import Manifest, StateDir


def _consolidated(rows: Rows) -> Rows:
    total: Counter[tuple[Any, ...]] = Counter()
    for r in rows:
        total[r[:-1]] += r[-1]
    return sorted(((*k, d) for k, d in total.items() if d != 0), key=repr)


def _split(data: Data, cuts: list[int]) -> list[Data]:
    """``data`` cut at the times ``cuts`` (increasing): one Data per run."""
    bounds = [None, *cuts, None]
    parts = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        part = {}
        for name, (cols, rows) in data.items():
            t = len(cols)
            keep = [r for r in rows if (lo is None or r[t] >= lo) and (hi is None or r[t] < hi)]
            part[name] = (cols, keep)
        parts.append(part)
    return parts


def _run_chunks(spark: SparkSession, build: Build, chunks: list[Data], state: str) -> Rows:
    """Each chunk as its own incremental run (a fresh dataflow each time, as a pipeline
    would build it); all runs' output rows, tagged by output index."""
    out: Rows = []
    for chunk in chunks:
        flow = dd.Dataflow()
        sessions, outputs = build(flow)
        dfs = frames(spark, chunk, 1)
        result = run_on_spark(
            spark, flow, {sessions[n]: df for n, df in dfs.items()}, outputs, state=state
        )
        for k, o in enumerate(outputs):
            ncols = len(o.columns)
            for r in result[o].collect():
                out.append((k, *r[:ncols], (int(r["time"]),), int(r["diff"])))
    return out


def _relational(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    a_in, a = flow.new_input(("k", "v"))
    b_in, b = flow.new_input(("k", "w"))
    joined = a.join(b, on="k")
    sums = joined.group_by("k").agg(total=dd.sum("v"), n=dd.count())
    lonely = a.antijoin(b, on="k")
    return {"a": a_in, "b": b_in}, [sums, lonely.count(by="v"), joined]


def _random_relational(rng: random.Random, n: int, horizon: int) -> Data:
    def rows(width: int) -> list[tuple[Any, ...]]:
        live: list[tuple[int, int]] = []
        out: list[tuple[Any, ...]] = []
        for _ in range(n):
            t = rng.randrange(horizon)
            if live and rng.random() < 0.3:
                rec = live.pop(rng.randrange(len(live)))
                out.append((*rec, t + horizon, -1))  # retracted later than inserted
            else:
                rec = (rng.randrange(6), rng.randrange(width))
                live.append(rec)
                out.append((*rec, t, 1))
        return out

    return {"a": (("k", "v"), rows(5)), "b": (("k", "w"), rows(4))}


@pytest.mark.timeout(400)
@pytest.mark.parametrize("local_run", [-1, 100_000], ids=["dataframes", "driver"])
def test_relational_runs_concatenate_to_the_whole_history(
    spark: SparkSession, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, local_run: int
) -> None:
    monkeypatch.setattr(local_continuation, "LOCAL_RUN", local_run)
    # One random history per path (a seed each), cut at two random times.
    seed = 0 if local_run < 0 else 1
    rng = random.Random(seed)
    data = _random_relational(rng, 40, 10)
    want = embedded(_relational, data)
    cuts = sorted(rng.sample(range(1, 20), 2))
    got = _run_chunks(spark, _relational, _split(data, cuts), str(tmp_path / f"s{seed}"))
    assert _consolidated(got) == want, f"seed {seed}, cuts {cuts}"


def _bfs(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    e_in, edges = flow.new_input(("src", "dst"))
    r_in, roots = flow.new_input(("node",))
    dists = dd.algorithms.bfs(edges, roots)
    return {"edges": e_in, "roots": r_in}, [dists.count(by="dist"), dists]


def _random_graph(rng: random.Random, nodes: int, edges: int, changes: int) -> Data:
    live = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(edges)]
    rows: list[tuple[Any, ...]] = [(s, d, 0, 1) for s, d in live]
    for t in range(1, changes + 1):
        if live and rng.random() < 0.4:
            s, d = live.pop(rng.randrange(len(live)))
            rows.append((s, d, t, -1))
        else:
            s, d = rng.randrange(nodes), rng.randrange(nodes)
            live.append((s, d))
            rows.append((s, d, t, 1))
    return {"edges": (("src", "dst"), rows), "roots": (("node",), [(0, 0, 1)])}


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("small_run", "local_run"),
    [(1_000_000, -1), (-1, -1), (-1, 100_000)],
    ids=["broadcast", "shuffled", "driver"],
)
def test_bfs_runs_concatenate_to_the_whole_history(
    spark: SparkSession,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    small_run: int,
    local_run: int,
) -> None:
    """Continuations broadcast their deltas (small runs), shuffle both sides (large), or
    run on the driver (``local_continuation.py``)."""
    monkeypatch.setattr(incremental, "SMALL_RUN", small_run)
    monkeypatch.setattr(local_continuation, "LOCAL_RUN", local_run)
    rng = random.Random(23)
    data = _random_graph(rng, 20, 30, 24)
    want = embedded(_bfs, data)
    # The loop runs (distances up to 3 at time 0), and each continuation changes distances.
    assert max(r[2] for r in want if r[0] == 1 and r[3] == (0,)) == 3
    assert all(any(lo <= r[3][0] < hi for r in want if r[0] == 1) for lo, hi in ((1, 13), (13, 25)))
    chunks = _split(data, [1, 13])
    got = _run_chunks(spark, _bfs, chunks, str(tmp_path / "bfs"))
    assert _consolidated(got) == want


@pytest.mark.timeout(300)
def test_a_run_with_nothing_new_returns_nothing(spark: SparkSession, tmp_path: Any) -> None:
    data = _random_graph(random.Random(3), 10, 12, 6)
    state = str(tmp_path / "s")
    _run_chunks(spark, _bfs, [data], state)
    empty: Data = {name: (cols, []) for name, (cols, _) in data.items()}
    assert _run_chunks(spark, _bfs, [empty], state) == []


@pytest.mark.timeout(300)
def test_updates_before_the_frontier_are_refused(spark: SparkSession, tmp_path: Any) -> None:
    state = str(tmp_path / "s")
    data = _random_relational(random.Random(1), 10, 5)
    _run_chunks(spark, _relational, [data], state)
    frontier = StateDir(spark, state).current()
    assert frontier is not None and frontier.frontier is not None
    late: Data = {
        "a": (("k", "v"), [(1, 1, frontier.frontier - 1, 1)]),
        "b": (("k", "w"), []),
    }
    with pytest.raises(StateError, match=r"input 'input0' has an update at time \d+, before"):
        _run_chunks(spark, _relational, [late], state)
    after = StateDir(spark, state).current()
    assert after is not None and after.version == frontier.version


@pytest.mark.timeout(300)
def test_another_plan_is_refused_before_any_job(spark: SparkSession, tmp_path: Any) -> None:
    state = str(tmp_path / "s")
    data = _random_relational(random.Random(2), 10, 5)
    _run_chunks(spark, _relational, [data], state)

    def other(flow: dd.Dataflow) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
        sessions, outs = _relational(flow)
        return sessions, [outs[0].select("k")]

    with pytest.raises(StateError, match="written by another plan"):
        _run_chunks(spark, other, [data], state)


def test_a_second_commit_of_one_version_loses(spark: SparkSession, tmp_path: Any) -> None:
    root = str(tmp_path / "s")
    first, second = StateDir(spark, root), StateDir(spark, root)
    os.makedirs(os.path.join(root, second.run_dir(1)))
    first.commit(Manifest(version=1, plan=["#0 a"], frontier=3))
    with pytest.raises(StateConflictError, match="another run committed version 1"):
        second.commit(Manifest(version=1, plan=["#0 b"], frontier=9))
    assert not os.path.exists(os.path.join(root, second.run_dir(1)))
    current = StateDir(spark, root).current()
    assert current is not None and current.plan == ["#0 a"] and current.frontier == 3


def test_a_manifest_of_another_format_version_is_refused(
    spark: SparkSession, tmp_path: Any
) -> None:
    root = tmp_path / "s"
    root.mkdir()
    text = Manifest(version=1, plan=[], frontier=None).to_json()
    raw = json.loads(text)
    raw["format_version"] = 99
    (root / "manifest-00000001.json").write_text(json.dumps(raw))
    with pytest.raises(StateError, match="format version 99"):
        StateDir(spark, str(root)).current()


@pytest.mark.timeout(300)
def test_a_directory_of_the_other_backend_is_refused_both_ways(
    spark: SparkSession, tmp_path: Any
) -> None:
    """A Spark state and an embedded dataflow's persistence directory keep different things:
    each backend refuses the other's directory, naming it, and leaves it as it was."""
    spark_state = tmp_path / "spark-state"
    _run_chunks(spark, _relational, [_random_relational(random.Random(4), 6, 3)], str(spark_state))
    before = sorted(p.name for p in spark_state.iterdir())
    flow = dd.Dataflow(persistence=dd.Persistence(spark_state))
    a_in, _ = flow.new_input({"k": "int64"}, name="a")
    with pytest.raises(dd.PersistenceError, match="holds a Spark state"):
        a_in.frontier()
    assert sorted(p.name for p in spark_state.iterdir()) == before

    embedded_dir = tmp_path / "embedded"
    flow = dd.Dataflow(persistence=dd.Persistence(embedded_dir))
    a_in, a = flow.new_input({"k": "int64"}, name="a")
    a.count().capture()
    a_in.frontier()
    a_in.update_at((1,), 0)
    a_in.advance_to(1)
    flow.run_until(1)
    del flow
    before = sorted(p.name for p in embedded_dir.iterdir())
    with pytest.raises(StateError, match="persistence directory of an embedded dataflow"):
        _run_chunks(
            spark, _relational, [_random_relational(random.Random(5), 6, 3)], str(embedded_dir)
        )
    assert sorted(p.name for p in embedded_dir.iterdir()) == before
