"""The Spark backend: the same dataflow plan run over complete input histories on PySpark.

``run_on_spark(spark, flow, inputs={session: df}, outputs=[collection])`` returns a
:class:`SparkResult`; ``result[collection]`` is a DataFrame of the consolidated output
history. Iterate scopes run iteration-major (one superstep per iteration, all outer times at
once); see ``README.md`` in this directory for the design, its measurements and cluster use.

The backend is two packages: ``driver`` (planning and supersteps, on pyspark) and ``tasks``
(what ``mapInArrow`` runs on the executors, without pyspark). The public names below are
loaded on first use, so importing ``ddflow.spark.tasks`` on an executor does not import the
driver or pyspark.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ddflow.spark.driver.runner import (
        ExecutorVersionError,
        SparkResult,
        Superstep,
        UnsupportedOperatorError,
        explain_spark,
        run_on_spark,
        warm_up,
    )
    from ddflow.spark.driver.stored_state import StateConflictError, StateError

__all__ = [
    "run_on_spark",
    "explain_spark",
    "warm_up",
    "SparkResult",
    "Superstep",
    "UnsupportedOperatorError",
    "ExecutorVersionError",
    "StateError",
    "StateConflictError",
]

_STATE_NAMES = ("StateError", "StateConflictError")


def __getattr__(name: str) -> Any:
    """The public names, from ``driver.runner`` (imported on first use)."""
    if name in _STATE_NAMES:
        return getattr(importlib.import_module("ddflow.spark.driver.stored_state"), name)
    if name in __all__:
        return getattr(importlib.import_module("ddflow.spark.driver.runner"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
