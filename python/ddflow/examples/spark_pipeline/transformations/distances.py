"""The pipeline's materialized view ``distances``: BFS distances from node 0, updated by
ddflow from the source files added since the last ``spark-pipelines run``.

``spark-pipelines`` imports this file with ``spark`` (its Spark Connect session) defined;
the project directory is this file's parent's parent.
"""

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame

from ddflow.examples.spark_pipeline import NAME, update, view

# ``from pyspark import pipelines as dp`` and ``@dp.materialized_view(name=...)`` in a
# pipeline of your own; imported by name here because this file is also type-checked
# against pyspark 3.5, which has no pyspark.pipelines.
materialized_view: Callable[..., Callable[[Callable[[], DataFrame]], None]] = (
    importlib.import_module("pyspark.pipelines").materialized_view
)
spark: Any = globals()["spark"]
PROJECT = Path(__file__).resolve().parent.parent

# The ddflow run: at module level, where SDP allows jobs (a query function may only build
# a DataFrame). It reads only the source files added since the last run.
update(spark, PROJECT)


@materialized_view(name=NAME)
def distances() -> DataFrame:
    return view(spark, PROJECT)
