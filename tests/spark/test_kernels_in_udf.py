"""ddflow's kernels inside a user's own Spark function: ``ddflow.examples.spark_kernels``'
per-partition function run by ``mapInArrow`` on the executors, against a recount."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from ddflow.examples import spark_kernels as ex


@pytest.mark.timeout(120)
@pytest.mark.filterwarnings("ignore:distutils Version classes:DeprecationWarning")  # pyspark 3.5
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
