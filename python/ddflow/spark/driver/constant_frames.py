"""A ``constant`` plan node on the Spark backend: one DataFrame of its rows at time 0 (every
time coordinate 0), each with diff 1, in the backend's column naming and the Spark types of
the node's dtypes (built on the driver with ``createDataFrame``; a constant is small)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ddflow.constants import constant_table
from ddflow.spark.driver.schemas import spark_type, time_fields
from ddflow.spark.tasks.batches import ccol

__all__ = ["constant_frame"]


def constant_frame(spark: SparkSession, node: Mapping[str, Any], dims: int) -> DataFrame:
    """Constant node ``node``'s whole history with ``dims`` time coordinates."""
    table = constant_table(node)
    fields = [
        T.StructField(ccol(i), spark_type(d, f"{node['label']}, column {c!r}"), True)
        for i, (c, d) in enumerate(zip(node["columns"], node["dtypes"], strict=True))
    ]
    schema = T.StructType(fields + time_fields(dims))
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = [(*values, *([0] * dims), 1) for values in zip(*columns, strict=True)]
    if not columns:
        rows = []
    return spark.createDataFrame(rows, schema)
