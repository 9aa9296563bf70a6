"""``run_on_spark`` first checks, with one small Spark job, that the executors import ddflow
and that theirs is the driver's version: a mismatch or a missing ddflow fails the run with an
``ExecutorVersionError`` naming the executor's version and interpreter, before any data job.

The versions compared are the ones the executors' Python workers report: the mismatch test
changes the driver's version (the executors keep the installed one), the missing test starts
a Spark session in a subprocess whose Python workers find a ``ddflow`` that fails to import
ahead of the installed one."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import ddflow as dd
from ddflow.spark import ExecutorVersionError, run_on_spark

pytestmark = pytest.mark.timeout(240)


def _never_read(spark: SparkSession) -> DataFrame:
    """An input whose rows fail any job that reads them: the check must come first."""
    df = spark.createDataFrame([(1, 0, 1)], "k long, time long, diff long")
    boom = F.raise_error(F.lit("a Spark job read the input"))
    return df.withColumn("k", F.when(F.col("diff") != 0, boom).otherwise(F.col("k")))


def test_matching_versions_run(spark: SparkSession) -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k",), name="a")
    out = a.distinct()
    df = spark.createDataFrame([(1, 0, 1), (2, 1, 1), (2, 2, 1)], "k long, time long, diff long")
    result = run_on_spark(spark, flow, {ai: df}, [out])
    assert sorted(tuple(r) for r in result[out].collect()) == [(1, 0, 1), (2, 1, 1)]


def test_executor_version_differing_from_the_driver_is_refused(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dd, "__version__", "0.0.0-driver")
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k",), name="a")
    with pytest.raises(ExecutorVersionError) as info:
        run_on_spark(spark, flow, {ai: _never_read(spark)}, [a.distinct()])
    msg = str(info.value)
    assert isinstance(info.value, dd.PlanError)
    assert "driver's ddflow 0.0.0-driver" in msg, msg
    # What the executors' Python workers reported: the installed version and interpreter.
    core = dd._core.__version__
    assert f"executor Python {sys.executable} (" in msg, msg
    assert f"has ddflow {core} (_core {core})" in msg, msg
    assert "read the input" not in msg


_SCRIPT = """
import os, sys, warnings
from pyspark.sql import SparkSession
import ddflow as dd
from ddflow.spark import ExecutorVersionError, run_on_spark

warnings.simplefilter("ignore")
spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.shuffle.partitions", "2")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("OFF")
flow = dd.Dataflow()
ai, a = flow.new_input(("k",), name="a")
df = spark.createDataFrame([(1, 0, 1)], "k long, time long, diff long")
try:
    run_on_spark(spark, flow, {ai: df}, [a.distinct()])
    print("NO ERROR")
except ExecutorVersionError as exc:
    print("REFUSED:", exc)
spark.stop()
"""


def test_executor_without_ddflow_is_refused(tmp_path: Path) -> None:
    hidden = tmp_path / "hidden" / "ddflow"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ImportError("this ddflow is hidden")\n')
    worker = tmp_path / "worker-python"
    worker.write_text(
        textwrap.dedent(
            f"""\
            #!/bin/sh
            PYTHONPATH="{tmp_path / "hidden"}:$PYTHONPATH" exec "{sys.executable}" "$@"
            """
        )
    )
    worker.chmod(0o755)
    env = dict(os.environ, PYSPARK_PYTHON=str(worker), PYSPARK_DRIVER_PYTHON=sys.executable)
    out = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert "REFUSED:" in out.stdout, (out.stdout, out.stderr[-3000:])
    msg = out.stdout
    assert f"executor Python {sys.executable} (" in msg, msg
    assert "cannot import ddflow: ImportError: this ddflow is hidden" in msg, msg
    assert "PYSPARK_PYTHON" in msg
