"""ddflow's kernels inside a user's own Spark function: ``ddflow.examples.spark_kernels``'
per-partition function run by ``mapInArrow`` on the executors, against a recount."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.errors import PythonException
from pyspark.sql import SparkSession

from ddflow.examples import spark_kernels as ex


@pytest.mark.timeout(120)
def test_views_in_map_in_arrow_match_a_recount(spark: SparkSession, tmp_path: Path) -> None:
    """A feed of a few hundred changes read from Parquet, 2 partitions by order: both views
    of a day (as published, as known now) equal the plain-Python recount."""
    changes = ex.feed(300, 10, seed=5)
    pq.write_table(changes, tmp_path / "changes.parquet")
    df = spark.read.parquet(str(tmp_path / "changes.parquet"))
    first, second = (5, 5), (5, 20)
    views = ex.views_on_spark(spark, df, first, second, partitions=2)
    assert views == ex.recount(changes, first, second)
    assert any(a != b for a, b in views.values())  # late changes make the views differ


@pytest.mark.timeout(120)
def test_a_kernel_error_reaches_the_driver_naming_the_argument(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A null diff in the feed: the task fails with the kernel's message, shown on the
    driver."""
    changes = ex.feed(20, 5, seed=1)
    diffs = changes["diff"].to_pylist()
    bad = changes.set_column(4, "diff", pa.array([None, *diffs[1:]], pa.int64()))
    pq.write_table(bad, tmp_path / "bad.parquet")
    df = spark.read.parquet(str(tmp_path / "bad.parquet"))
    with pytest.raises(PythonException, match="InvalidValueError: diffs: 1 null values"):
        ex.views_on_spark(spark, df, (2, 2), (2, 9), partitions=2)


@pytest.mark.timeout(120)
def test_the_example_runs_on_a_given_session(
    spark: SparkSession, capsys: pytest.CaptureFixture[str]
) -> None:
    """``main`` on the test session (left open): its report, checked against the recount."""
    assert ex.main(["--rows", "200", "--days", "8", "--seed", "3"], spark=spark) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("spark_kernels: ") and out[0].endswith(", 2 partitions")
    assert out[1] == "statuses of day 4: as published (version 4) and as known now (version 10)"
    assert out[-1] == "both views match a recount: True"
    assert spark.range(3).count() == 3  # the session is still open
