"""A stopped Spark session, or an input DataFrame of one, is refused with a clear
``InvalidValueError`` before pyspark fails with an empty ``AssertionError``.

It needs a classic local session of its own to stop, and one process holds one Spark
context: the shared ``spark`` fixture's must not be stopped, so the test runs its session
in a child Python process (``local[1]``, the UI off), which prints what each call raised.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(240)

CHILD = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    import ddflow as dd
    from ddflow.spark import explain_spark, run_on_spark

    def session():
        return (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                .config("spark.sql.shuffle.partitions", "1").getOrCreate())

    def plan():
        flow = dd.Dataflow()
        ai, a = flow.new_input(("k",), name="a")
        return flow, ai, a.count(by="k")

    def outcome(call):
        try:
            return ["ok", call()]
        except Exception as exc:
            return [type(exc).__name__, str(exc), isinstance(exc, dd.DdflowError)]

    report = {}
    spark = session()
    schema = "k long, time long, diff long"
    old = spark.createDataFrame([(1, 0, 1), (1, 1, 1), (2, 1, 1)], schema)
    spark.stop()
    flow, ai, out = plan()
    report["stopped"] = outcome(lambda: run_on_spark(spark, flow, {ai: old}, [out]))
    report["explain"] = outcome(lambda: explain_spark(spark, flow, {ai: old}, [out]))
    spark = session()
    report["old frame"] = outcome(lambda: run_on_spark(spark, flow, {ai: old}, [out]))
    df = spark.createDataFrame([(1, 0, 1), (1, 1, 1), (2, 1, 1)], schema)
    result = run_on_spark(spark, flow, {ai: df}, [out])
    report["new session"] = ["ok", sorted(tuple(r) for r in result[out].collect())]
    spark.stop()
    print("REPORT" + json.dumps(report))
    """
)


def test_a_stopped_session_and_its_frames_are_refused_clearly() -> None:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=220
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("REPORT")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    report = json.loads(lines[-1].removeprefix("REPORT"))
    for call in ("stopped", "explain"):
        name, text, is_ddflow = report[call]
        assert (name, is_ddflow) == ("InvalidValueError", True), report[call]
        assert "the Spark session is stopped" in text
    name, text, is_ddflow = report["old frame"]
    assert name == "InvalidValueError" and is_ddflow, report["old frame"]
    assert "input 'a'" in text and "stopped" in text
    # The same plan on a running session: count per key at times 0 and 1.
    assert report["new session"] == [
        "ok",
        [[1, 1, 0, 1], [1, 1, 1, -1], [1, 2, 1, 1], [2, 1, 1, 1]],
    ]
