"""Errors as data on Spark (``run_on_spark(..., errors="collect")``): a record that makes an
operator fail becomes an error update instead of failing the job. The outputs must hold
exactly the updates the embedded engine's ``capture(errors="collect").updates()`` gives, and
``result.errors(c)`` exactly its ``errors()`` (operator, message, values, time, iteration,
diff), for top-level stages, user functions, reduces and loops, with 1-D and 2-D times."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import run_on_spark

from .conftest import Build, Data, _time, frames

pytestmark = pytest.mark.timeout(240)

ErrRow = tuple[str, str, str, tuple[int, ...], tuple[int, ...], int]


def _embedded(build: Build, data: Data) -> tuple[list[Any], list[ErrRow]]:
    flow = dd.Dataflow()
    sessions, outputs = build(flow)
    caps = [o.capture(errors="collect") for o in outputs]
    for name, (cols, rows) in data.items():
        if not rows:
            continue
        columns = {c: np.array([r[i] for r in rows]) for i, c in enumerate(cols)}
        times = np.array([list(_time(r[len(cols)])) for r in rows], dtype=np.int64)
        diffs = np.array([r[len(cols) + 1] for r in rows], dtype=np.int64)
        sessions[name].update_batch(
            columns, times=times[:, 0] if times.shape[1] == 1 else times, diffs=diffs
        )
    for sess in sessions.values():
        sess.close()
    flow.run()
    out = []
    for k, cap in enumerate(caps):
        for row in cap.updates().to_pylist():
            t = _time(row.pop("time"))
            d = row.pop("diff")
            out.append((k, *row.values(), t, d))
    errors = [
        (
            r["operator"],
            r["message"],
            r["values"],
            _time(r["time"]),
            tuple(r["iteration"]),
            r["diff"],
        )
        for cap in caps[:1]
        for r in cap.errors().to_pylist()
    ]
    return sorted(out, key=repr), sorted(errors)


def _spark(
    spark: SparkSession,
    build: Build,
    data: Data,
    dims: int,
    results: list[Any] | None = None,
    **kwargs: Any,
) -> tuple[list[Any], list[ErrRow]]:
    flow = dd.Dataflow()
    sessions, outputs = build(flow)
    dfs = frames(spark, data, dims)
    result = run_on_spark(
        spark,
        flow,
        {sessions[n]: df for n, df in dfs.items()},
        outputs,
        errors="collect",
        **kwargs,
    )
    if results is not None:
        results.append(result)
    tcols = ["time"] if dims == 1 else [f"time_{j}" for j in range(dims)]
    rows = []
    for k, o in enumerate(outputs):
        for r in result[o].collect():
            vals = tuple(r[: len(o.columns)])
            rows.append((k, *vals, tuple(int(r[c]) for c in tcols), int(r["diff"])))
    errors = [
        (
            r["operator"],
            r["message"],
            r["values"],
            tuple(int(r[c]) for c in tcols),
            tuple(r["iteration"]),
            int(r["diff"]),
        )
        for r in result.errors(outputs[0]).collect()
    ]
    return sorted(rows, key=repr), sorted(errors)


def check(spark: SparkSession, build: Build, data: Data, dims: int = 1) -> list[ErrRow]:
    """Asserts Spark's outputs and errors equal the embedded engine's; returns the errors."""
    want_rows, want_errors = _embedded(build, data)
    got_rows, got_errors = _spark(spark, build, data, dims)
    assert got_rows == want_rows
    assert got_errors == want_errors
    return got_errors


def _one(fn: Any) -> Build:
    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("k", "v"), name="a")
        return {"a": ai}, [fn(a)]

    return build


# A record that fails (k = 0) arrives at 1 and is retracted at 3; a huge v at 2.
DATA: Data = {
    "a": (
        ("k", "v"),
        [(2, 5, 0, 1), (0, 7, 1, 1), (4, 2**62, 2, 1), (0, 7, 3, -1), (5, 1, 2, 1), (1, 1, 4, 2)],
    )
}


def test_expression_errors_become_error_updates_and_retract(spark: SparkSession) -> None:
    errors = check(spark, _one(lambda a: a.select(q=dd.lit(100) // dd.col("k"), v="v")), DATA)
    assert [(e[2], e[3], e[5]) for e in errors] == [("k=0, v=7", (1,), 1), ("k=0, v=7", (3,), -1)]
    assert all("division by zero" in e[1] and e[0].startswith("select@") for e in errors)


def test_overflow_of_a_spark_compilable_expression_is_collected(spark: SparkSession) -> None:
    # ``v + v`` compiles to a Spark Column expression that raises; collect mode runs it in
    # the Rust evaluator so the overflowing record becomes an error row.
    errors = check(spark, _one(lambda a: a.select("k", w=dd.col("v") + dd.col("v"))), DATA)
    assert len(errors) == 1 and "overflow" in errors[0][1] and errors[0][3] == (2,)


def test_filter_expression_errors(spark: SparkSession) -> None:
    check(spark, _one(lambda a: a.filter(dd.lit(10) % dd.col("k") == 0)), DATA)


def test_python_function_errors(spark: SparkSession) -> None:
    def inverse(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if (cols["k"] == 0).any():
            raise ZeroDivisionError("k is zero")
        return {"k": cols["k"], "inv": 100 // cols["k"]}

    errors = check(spark, _one(lambda a: a.map(inverse)), DATA)
    assert {e[5] for e in errors} == {1, -1}


def test_python_filter_errors(spark: SparkSession) -> None:
    def keep(cols: dict[str, np.ndarray]) -> np.ndarray:
        if (cols["k"] == 0).any():
            raise ValueError("no zeros")
        return cols["v"] > 1

    check(spark, _one(lambda a: a.filter(keep)), DATA)


def test_reduce_overflow_errors(spark: SparkSession) -> None:
    # sum of v per k: k = 4 has 2**62 once; adding 3 * 2**62 more at 5 overflows, retracted
    # at 6.
    data: Data = {
        "a": (
            ("k", "v"),
            [(4, 2**62, 0, 1), (4, 2**62, 5, 3), (4, 2**62, 6, -3), (1, 3, 0, 1), (1, 4, 5, 1)],
        )
    }
    errors = check(spark, _one(lambda a: a.reduce(by="k", agg=dd.sum("v"))), data)
    assert [e[3] for e in errors] == [(5,), (6,)]
    assert [e[5] for e in errors] == [1, -1]


def test_errors_inside_a_loop_carry_their_iteration(spark: SparkSession) -> None:
    def step(x: dd.Collection) -> dd.Collection:
        bad = x.select(k=dd.col("k") - 1, v=dd.lit(60) // (dd.col("k") - 1))
        return x.concat(bad.filter(dd.col("k") >= 0)).distinct()

    data: Data = {"a": (("k", "v"), [(3, 0, 0, 1), (5, 0, 2, 1), (5, 0, 4, -1)])}
    errors = check(spark, _one(lambda a: a.iterate(step)), data)
    assert errors and all(len(e[4]) == 1 for e in errors)


def test_two_dimensional_times(spark: SparkSession) -> None:
    data: Data = {
        "a": (
            ("k", "v"),
            [(2, 5, (0, 0), 1), (0, 7, (1, 0), 1), (0, 7, (0, 2), 1), (0, 7, (1, 2), -1)],
        )
    }
    check(spark, _one(lambda a: a.select(q=dd.lit(8) // dd.col("k"))), data, dims=2)


def test_bfs_in_collect_mode_runs_unfused_and_equals_the_engine(spark: SparkSession) -> None:
    def build(flow: dd.Dataflow) -> Any:
        ei, edges = flow.new_input(("src", "dst"), name="edges")
        ri, roots = flow.new_input(("node",), name="roots")
        return {"edges": ei, "roots": ri}, [dd.algorithms.bfs(edges, roots)]

    rng = np.random.default_rng(7)
    edges = [(int(s), int(d), int(t), 1) for s, d, t in rng.integers(0, 30, (80, 3))]
    data: Data = {"edges": (("src", "dst"), edges), "roots": (("node",), [(0, 0, 1)])}
    assert check(spark, build, data) == []


def _bfs_with_a_bad_edge(flow: dd.Dataflow) -> Any:
    # BFS whose step divides by (dst - 3): every edge into node 3 fails in the fused chain.
    ei, edges = flow.new_input(("src", "dst"), name="edges")
    ri, roots = flow.new_input(("node",), name="roots")
    nodes = roots.select("node", dist=dd.lit(0))

    def step(dists: dd.Collection) -> dd.Collection:
        return (
            dists.join(edges, left_on="node", right_on="src")
            .select(node=dd.col("dst"), dist=dd.col("dist") + 6 // (dd.col("dst") - 3))
            .concat(nodes)
            .reduce(by="node", agg=dd.min("dist"))
        )

    return {"edges": ei, "roots": ri}, [nodes.iterate(step)]


def test_a_fused_loop_with_a_data_error_reruns_operator_by_operator(
    spark: SparkSession,
) -> None:
    data: Data = {
        "edges": (
            ("src", "dst"),
            [(0, 1, 0, 1), (1, 2, 0, 1), (2, 3, 1, 1), (2, 3, 4, -1), (1, 5, 2, 1), (5, 6, 3, 1)],
        ),
        "roots": (("node",), [(0, 0, 1)]),
    }
    want_rows, want_errors = _embedded(_bfs_with_a_bad_edge, data)
    results: list[Any] = []
    got_rows, got_errors = _spark(spark, _bfs_with_a_bad_edge, data, 1, results=results)
    assert got_rows == want_rows
    assert got_errors == want_errors
    assert got_errors and all("division by zero" in e[1] for e in got_errors)
    assert "met a data error" in results[0].explain()


def test_a_fused_loop_without_errors_stays_fused(spark: SparkSession) -> None:
    data: Data = {
        "edges": (("src", "dst"), [(0, 1, 0, 1), (1, 2, 0, 1), (2, 4, 1, 1), (1, 5, 2, 1)]),
        "roots": (("node",), [(0, 0, 1)]),
    }
    results: list[Any] = []
    rows, errors = _spark(spark, _bfs_with_a_bad_edge, data, 1, results=results)
    assert (rows, errors) == _embedded(_bfs_with_a_bad_edge, data)
    assert errors == []
    text = results[0].explain()
    assert "fused" in text and "met a data error" not in text, text


def test_errors_need_collect_mode(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k", "v"), name="a")
    out = a.select("k")
    result = run_on_spark(spark, flow, {ai: frames(spark, DATA, 1)["a"]}, [out])
    with pytest.raises(dd.PlanError, match='errors="collect"'):
        result.errors(out)
    with pytest.raises(dd.PlanError, match="errors must be"):
        run_on_spark(spark, flow, {ai: frames(spark, DATA, 1)["a"]}, [out], errors="ignore")


def test_python_reducer_errors(spark: SparkSession) -> None:
    def largest_inverse(batch: Any) -> dict[str, Any]:
        # Per key, 100 // (smallest value); raises on a key whose values include 0.
        offsets = np.asarray(batch.offsets, dtype=np.int64)
        v = np.asarray(batch.values["v"], dtype=np.int64)
        n = len(offsets) - 1
        low = np.minimum.reduceat(v, offsets[:-1]) if n and len(v) else np.zeros(n, np.int64)
        if (low == 0).any():
            raise ZeroDivisionError("a value is zero")
        return {"offsets": np.arange(n + 1, dtype=np.int64), "inv": 100 // low}

    data: Data = {"a": (("k", "v"), [(1, 5, 0, 1), (1, 0, 1, 1), (1, 0, 2, -1), (2, 4, 0, 1)])}
    check(
        spark,
        _one(lambda a: a.reduce(by="k", agg=dd.reducer(largest_inverse, columns=["inv"]))),
        data,
    )


@pytest.mark.parametrize("reduce_state", ["store", "shuffle"])
def test_reduce_errors_inside_a_loop(spark: SparkSession, reduce_state: str) -> None:
    # Per key, the sum of the values reachable by halving keys; the reducer fails on key 0,
    # present from time 2 to 5. The failing key has no output, so it is gone from
    # iteration 1 on: its error appears at iteration 0 and retracts at iteration 1, as on
    # the embedded engine (whose error log keeps it live: it was live in some iteration).
    def halve_sum(batch: Any) -> dict[str, Any]:
        offsets = np.asarray(batch.offsets, dtype=np.int64)
        v = np.asarray(batch.values["v"], dtype=np.int64)
        n = len(offsets) - 1
        if n and (np.asarray(batch.keys["k"]) == 0).any():
            raise ZeroDivisionError("key 0")
        total = np.add.reduceat(v, offsets[:-1]) if n and len(v) else np.zeros(n, np.int64)
        return {"offsets": np.arange(n + 1, dtype=np.int64), "v": total}

    def step(x: dd.Collection) -> dd.Collection:
        half = x.select(k=dd.col("k") // 2, v="v").filter(dd.col("k") > 0)
        summed = x.concat(half).reduce(by="k", agg=dd.reducer(halve_sum, columns=["v"]))
        return summed.reduce(by="k", agg=dd.min("v"))

    data: Data = {
        "a": (
            ("k", "v"),
            [(8, 2**62, 0, 1), (4, 2**62, 1, 1), (4, 2**62, 3, -1), (0, 1, 2, 1), (0, 1, 5, -1)],
        )
    }
    want_rows, want_errors = _embedded(_one(lambda a: a.iterate(step)), data)
    got_rows, got_errors = _spark(
        spark, _one(lambda a: a.iterate(step)), data, 1, reduce_state=reduce_state
    )
    assert got_rows == want_rows
    assert got_errors == want_errors
    assert [(e[2], e[3], e[4], e[5]) for e in got_errors] == [
        ("k=0", (2,), (0,), 1),
        ("k=0", (2,), (1,), -1),
        ("k=0", (5,), (0,), -1),
        ("k=0", (5,), (1,), 1),
    ]
    assert all("ZeroDivisionError: key 0" in e[1] for e in got_errors)


def test_a_join_product_outside_int64_raises_instead_of_wrapping(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k", "v"), name="a")
    out = a.join(a.rename(v="w"), on="k")
    big: Data = {"a": (("k", "v"), [(1, 1, 0, 2**40)])}
    result = run_on_spark(spark, flow, {ai: frames(spark, big, 1)["a"]}, [out])
    with pytest.raises(Exception, match="leaves int64"):
        result[out].collect()


def test_a_consolidated_diff_outside_int64_raises_instead_of_wrapping(
    spark: SparkSession,
) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k", "v"), name="a")
    out = a.select("k")
    big: Data = {"a": (("k", "v"), [(1, 1, 0, 2**62), (1, 2, 0, 2**62)])}
    result = run_on_spark(spark, flow, {ai: frames(spark, big, 1)["a"]}, [out])
    with pytest.raises(Exception, match="leaves int64"):
        result[out].collect()


def test_negating_the_least_int64_diff_raises_instead_of_wrapping(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k", "v"), name="a")
    out = a.negate()
    least: Data = {"a": (("k", "v"), [(1, 1, 0, -(2**63))])}
    result = run_on_spark(spark, flow, {ai: frames(spark, least, 1)["a"]}, [out])
    with pytest.raises(Exception, match="int64 overflow in negate"):
        result[out].collect()
