"""The Spark session a run is given, and its input DataFrames' sessions, must be running.

A stopped classic session (``spark.stop()``) would otherwise fail deep inside pyspark with an
empty ``AssertionError`` (``SparkContext._active_spark_context is not None``); a DataFrame
made by a session since stopped fails the same way even when a new session runs. Both are
refused up front with an ``InvalidValueError`` saying what to do. A Spark Connect session
reports itself through ``is_stopped``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddflow.errors import InvalidValueError

__all__ = ["check_session"]


def _stopped(spark: Any) -> bool:
    """Whether ``spark`` (a classic or Spark Connect session) has been stopped."""
    is_stopped = getattr(type(spark), "is_stopped", None)
    if is_stopped is not None:  # Spark Connect
        return bool(spark.is_stopped)
    context = getattr(spark, "_sc", None)
    return context is not None and getattr(context, "_jsc", None) is None


def check_session(spark: Any, inputs: Mapping[Any, Any], what: str) -> None:
    """Raises ``InvalidValueError`` naming ``what`` (``run_on_spark``) if ``spark`` or the
    session of an input DataFrame (keyed by its input session) is stopped."""
    if _stopped(spark):
        raise InvalidValueError(
            f"{what}: the Spark session is stopped (spark.stop() was called); start a new one "
            "(SparkSession.builder.getOrCreate()) and make the input DataFrames with it"
        )
    for session, df in inputs.items():
        owner = getattr(df, "sparkSession", None)
        if owner is not None and owner is not spark and _stopped(owner):
            name = getattr(session, "name", session)
            raise InvalidValueError(
                f"{what}: the DataFrame of input {name!r} belongs to a Spark session that is "
                "stopped; make it again with the running session"
            )
