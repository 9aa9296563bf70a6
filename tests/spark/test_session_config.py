"""The test session is configured as ``tests/spark/session.py`` documents: two shuffle
partitions, no adaptive execution, and whole-stage code generation unless
``DDFLOW_TEST_SPARK_CODEGEN=off`` (a Spark Connect server keeps its own configuration). Read
from the configuration the session started with: a test may change the session's SQL
configuration for its own run."""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from ddflow.spark.driver.progress import is_connect

from .session import WHOLE_STAGE_CODEGEN


def test_the_session_has_the_documented_configuration(spark: SparkSession) -> None:
    if is_connect(spark):
        pytest.skip("a Spark Connect server is configured by tests/spark/connect/run.sh")
    started = spark.sparkContext.getConf()
    assert started.get("spark.sql.shuffle.partitions") == "2"
    assert started.get("spark.sql.adaptive.enabled") == "false"
    assert started.get("spark.sql.codegen.wholeStage") == str(WHOLE_STAGE_CODEGEN).lower()
