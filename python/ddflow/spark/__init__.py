"""The Spark backend: the same dataflow plan run over complete input histories on PySpark.

``run_on_spark(spark, flow, inputs={session: df}, outputs=[collection])`` returns a
:class:`SparkResult`; ``result[collection]`` is a DataFrame of the consolidated output
history. Iterate scopes run iteration-major (one superstep per iteration, all outer times at
once); see ``README.md`` in this directory for the design, its measurements and cluster use.
"""

from ddflow.spark.runner import (
    SparkResult,
    Superstep,
    UnsupportedOperatorError,
    explain_spark,
    run_on_spark,
    warm_up,
)

__all__ = [
    "run_on_spark",
    "explain_spark",
    "warm_up",
    "SparkResult",
    "Superstep",
    "UnsupportedOperatorError",
]
