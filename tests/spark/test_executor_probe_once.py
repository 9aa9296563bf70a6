"""The executors' ddflow is probed once per application and set of executors: a second
``run_on_spark`` on the same session runs no probe job, and a changed set of executors or
another driver version probes again (``preflight.check_executors``)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import run_on_spark
from ddflow.spark.driver import preflight
from ddflow.spark.driver.progress import is_connect

pytestmark = pytest.mark.timeout(240)


def _run(spark: SparkSession) -> list[tuple[Any, ...]]:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k",), name="a")
    out = a.distinct()
    df = spark.createDataFrame([(1, 0, 1), (1, 1, 1), (2, 1, 1)], "k long, time long, diff long")
    return sorted(tuple(r) for r in run_on_spark(spark, flow, {ai: df}, [out])[out].collect())


def test_a_second_run_on_the_same_executors_probes_no_more(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    probes: list[tuple[str, str]] = []
    real = preflight._probe

    def counted(session: SparkSession, partitions: int, want: tuple[str, str]) -> None:
        probes.append(want)
        real(session, partitions, want)

    monkeypatch.setattr(preflight, "_probe", counted)
    monkeypatch.setattr(preflight, "_PROBED", set())
    want = [(1, 0, 1), (2, 1, 1)]
    assert _run(spark) == want
    assert _run(spark) == want
    if is_connect(spark):
        assert len(probes) == 2  # the client sees no executors: every run probes
        return
    assert len(probes) == 1
    executors = preflight._executor_set(spark)
    assert executors is not None and executors[0] == spark.sparkContext.applicationId
    assert executors[1], "the status tracker lists at least the driver"

    # An executor replaced since (another host:port): the next run probes again, once.
    monkeypatch.setattr(
        preflight, "_executor_set", lambda s: (executors[0], executors[1] | {"other-host:1"})
    )
    assert _run(spark) == want
    assert _run(spark) == want
    assert len(probes) == 2

    # Another driver version: probed again (and refused: the executors keep theirs).
    monkeypatch.setattr(dd, "__version__", "0.0.0-driver")
    with pytest.raises(preflight.ExecutorVersionError):
        _run(spark)
    assert len(probes) == 3
