"""Fixtures for the Spark backend tests: one local Spark session per test run, and helpers
that run the same dataflow on the embedded engine and on Spark and compare the outputs.

The session is ``local[2]`` with 2 shuffle partitions (so 2 key partitions: every exchange
still crosses partitions, and a test's stages cost about 30% less CPU than with 4), the UI
off and a JVM tuned for short jobs (``jvm_options.py``); executors' Python
workers use this interpreter (``PYSPARK_PYTHON``), which has ddflow installed. With
``DDFLOW_SPARK_REMOTE=sc://host:port`` it is a Spark Connect session to that server
instead. pyspark is imported unconditionally: without it (or without Java) these tests fail
rather than skip.
"""

from __future__ import annotations

import gc
import os
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from pyspark.sql import DataFrame, SparkSession

import ddflow as dd
from ddflow.spark import SparkResult, run_on_spark

from .session import local_session, use_test_jvm_options

Build = Callable[[dd.Dataflow], tuple[dict[str, dd.InputSession], list[dd.Collection]]]
"""Builds a dataflow: returns its inputs by name and its outputs."""

Rows = list[tuple[Any, ...]]
"""Updates as ``(record values..., time tuple, diff)``."""

Data = Mapping[str, tuple[Sequence[str], Rows]]
"""Per input name: column names and updates ``(values..., time, diff)`` (time int or tuple)."""


SPARK_WARNINGS = (
    "ignore:unclosed <socket.socket:ResourceWarning",
    "ignore:distutils Version classes:DeprecationWarning",
)
"""pyspark 3.5 leaves the sockets it reads results from to the garbage collector, and its
``mapInArrow`` checks the pandas version with distutils (code of a user's own, as in
``docs/how-to/kernels-in-spark.md``, calls it directly)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Spark tests tolerate pyspark's own warnings (``SPARK_WARNINGS``)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.path).startswith(here):
            for spec in SPARK_WARNINGS:
                item.add_marker(pytest.mark.filterwarnings(spec))


@pytest.fixture(autouse=True)
def _collect_sockets() -> Iterator[None]:
    """Collects pyspark's leftover sockets before the next test (outside the spark suite)."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


REMOTE = os.environ.get("DDFLOW_SPARK_REMOTE")
"""A Spark Connect URL (``sc://host:port``): the ``spark`` fixture connects there instead of
starting ``local[2]`` (``tests/spark/connect/run.sh`` starts such a server and sets it)."""


use_test_jvm_options()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """The one Spark session of the test run: ``local[2]``, or a Spark Connect session to
    ``DDFLOW_SPARK_REMOTE`` when set (its server's Python workers must have ddflow)."""
    if REMOTE:
        remote = SparkSession.builder.remote(REMOTE).getOrCreate()
        yield remote
        remote.stop()
        return
    session = local_session()
    yield session
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session.stop()


def _time(t: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in t) if isinstance(t, list | tuple) else (int(t),)


def embedded(build: Build, data: Data, workers: int = 1) -> Rows:
    """Runs ``build`` on the embedded engine over ``data``; sorted consolidated output rows of
    every output, each tagged with the output's index."""
    flow = dd.Dataflow(workers=workers)
    sessions, outputs = build(flow)
    caps = [o.capture() for o in outputs]
    for name, (cols, rows) in data.items():
        sess = sessions[name]
        if rows:
            columns = {c: np.array([r[i] for r in rows]) for i, c in enumerate(cols)}
            for c, arr in columns.items():
                if arr.dtype.kind == "U":
                    columns[c] = arr.astype(object)
            times = np.array([list(_time(r[len(cols)])) for r in rows], dtype=np.int64)
            if times.shape[1] == 1:
                times = times[:, 0]
            diffs = np.array([r[len(cols) + 1] for r in rows], dtype=np.int64)
            sess.update_batch(columns, times=times, diffs=diffs)
    for sess in sessions.values():
        sess.close()
    flow.run()
    out: Rows = []
    for k, cap in enumerate(caps):
        for row in cap.updates().to_pylist():
            t = _time(row.pop("time"))
            d = row.pop("diff")
            out.append((k, *row.values(), t, d))
    return sorted(out, key=repr)


def frames(spark: SparkSession, data: Data, dims: int) -> dict[str, DataFrame]:
    """Spark DataFrames of updates for ``data`` (``time`` or ``time_0..``, ``diff``)."""
    out = {}
    for name, (cols, rows) in data.items():
        tcols = ["time"] if dims == 1 else [f"time_{j}" for j in range(dims)]
        body = [(*r[: len(cols)], *_time(r[len(cols)]), r[len(cols) + 1]) for r in rows]
        types = {int: "long", float: "double", str: "string", bool: "boolean"}
        fields = []
        for i, c in enumerate(cols):
            # A column's type is its first non-null value's (nulls are None).
            sample = next((r[i] for r in rows if r[i] is not None), 0)
            fields.append(f"`{c}` {types[type(sample)]}")
        fields += [f"{t} long" for t in tcols] + ["diff long"]
        out[name] = spark.createDataFrame(body, ", ".join(fields))
    return out


def on_spark(
    spark: SparkSession, build: Build, data: Data, dims: int = 1, **kwargs: Any
) -> tuple[Rows, SparkResult]:
    """Runs ``build`` with ``run_on_spark`` over ``data``: sorted output rows as ``embedded``
    gives them, and the result object."""
    flow = dd.Dataflow()
    sessions, outputs = build(flow)
    dfs = frames(spark, data, dims)
    result = run_on_spark(
        spark, flow, {sessions[n]: df for n, df in dfs.items()}, outputs, **kwargs
    )
    rows: Rows = []
    for k, o in enumerate(outputs):
        df = result[o]
        tcols = ["time"] if dims == 1 else [f"time_{j}" for j in range(dims)]
        ncols = len(o.columns)
        for r in df.collect():
            vals = tuple(r[:ncols])
            t = tuple(int(r[c]) for c in tcols)
            rows.append((k, *vals, t, int(r["diff"])))
    return sorted(rows, key=repr), result


def check_equal(spark: SparkSession, build: Build, data: Data, dims: int = 1) -> Rows:
    """Asserts Spark's output equals the embedded engine's; returns it."""
    want = embedded(build, data)
    got, _ = on_spark(spark, build, data, dims)
    assert got == want
    return got
