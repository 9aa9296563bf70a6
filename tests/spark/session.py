"""The Spark session the tests run on, and the JVM flags every test JVM gets: no ddflow
import here, so the JVM archive's workload (``jvm_options.py``) can start the same session
before ddflow is installed.

``local[2]`` with 2 shuffle partitions (so 2 key partitions: every exchange still crosses
partitions, and a test's stages cost about 30% less CPU than with 4), the UI off and a JVM
tuned for short jobs (``jvm_options.py``); executors' Python workers use this interpreter
(``PYSPARK_PYTHON``).

``DDFLOW_TEST_SPARK_CODEGEN=off`` turns Spark's whole-stage code generation off in these
sessions (``spark.sql.codegen.wholeStage``): the same answers (Spark runs the same
operators, interpreted), less CPU for the tests' many small queries, each of which otherwise
compiles its generated Java (``tests/spark/test_incremental_state.py`` on pyspark 3.5.3:
158 s of CPU to 140 s, ``perf stat -e task-clock``). ``.ci/run`` sets it for the pyspark
4.x classic lane only; the SQL corpus and TPC-H on Spark, the cluster, fault and pipeline
tests and the Spark Connect subset keep it on, as users run.
"""

from __future__ import annotations

import os
import sys
import warnings

from pyspark.sql import SparkSession

from .jvm_options import java_options

_OWN_JVM_OPTIONS = "SPARK_SUBMIT_OPTS" not in os.environ

WHOLE_STAGE_CODEGEN = os.environ.get("DDFLOW_TEST_SPARK_CODEGEN", "on") != "off"
"""Whether the sessions compile whole-stage generated code (Spark's default; see above)."""
"""Whether these tests set ``SPARK_SUBMIT_OPTS`` (a value set before them is kept)."""


def use_test_jvm_options() -> None:
    """Every JVM ``spark-submit`` starts from these tests (this session's, those of the jobs
    the tests run in subprocesses, Connect servers) gets the test flags (``jvm_options.py``:
    a client-compiler, serial-GC JVM and the class-data-sharing archive once it is built).
    The flags are read again at each session start, so an archive built after the import
    is used. A value set before the tests is kept."""
    if _OWN_JVM_OPTIONS:
        os.environ["SPARK_SUBMIT_OPTS"] = java_options()


def local_session(
    master: str = "local[2]", partitions: int = 2, app: str = "ddflow-tests"
) -> SparkSession:
    """A local session configured for the tests: ``master`` (``local[2]``; ``local[2,4]``
    retries a failed task up to 4 times), ``partitions`` shuffle partitions, no UI, no
    adaptive execution, executors' Python this interpreter, whole-stage code generation
    unless ``DDFLOW_TEST_SPARK_CODEGEN=off``."""
    use_test_jvm_options()
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        session = (
            SparkSession.builder.master(master)
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(partitions))
            .config("spark.default.parallelism", str(partitions))
            .config("spark.driver.memory", "1g")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.sql.codegen.wholeStage", str(WHOLE_STAGE_CODEGEN).lower())
            .getOrCreate()
        )
        session.sparkContext.setLogLevel("ERROR")
    return session
