"""What the Spark backend checks before a run's first data job: the executors' ddflow, and
the dtypes of columns the plan puts side by side.

Executors: one tiny ``mapInArrow`` job (one row per key partition) reports each task's
``ddflow.__version__``, ``ddflow._core.__version__``, Python version and ``sys.executable``
(``tasks/batches.py``'s ``version_probe``); an executor that cannot import ddflow, or has
another version than the driver, fails the run with an ``ExecutorVersionError`` naming its
version and interpreter, instead of a task failing later with an unpickling error or
running other code than the driver planned for. On a classic session the probe runs once
per application and set of executors: a later run on the same executors (the same
``host:port`` of each, as Spark's status tracker lists them) skips the job, and an executor
added or replaced since (a new port) makes the next run probe again. A Spark Connect
session shows no executors to the client, so every run there probes.

Dtypes: the two sides of a join key, the inputs of a ``concat``, a loop variable with its
source and result.

The embedded engine refuses an input's first batch whose dtype disagrees with a column of
another input the plan links it with (``rust/ddflow-core/src/engine/dtype_links.rs``). Spark
would not: an int64 key joined with a string column is compared after an implicit cast
(``"1"`` and ``" 1"`` both match ``1``), and with a double column after widening the long to
double (``2**53 + 1`` matches ``2.0**53``). So the driver asks the engine itself: it builds
the plan in an embedded engine and pushes one empty batch per input DataFrame, with the
dtypes of the DataFrame's columns, in the order the inputs were given. The engine fixes each
input's dtypes and refuses the first that disagrees, with its own message
(``SchemaTypeError``); nothing runs and no data is read.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

import ddflow
from ddflow import _core
from ddflow.dataflow import Dataflow
from ddflow.dtypes import empty_column
from ddflow.errors import PlanError, SchemaTypeError
from ddflow.input import InputSession
from ddflow.spark.driver.progress import classic_context
from ddflow.spark.driver.schemas import map_in_arrow, record_dtype
from ddflow.spark.tasks.batches import PROBE_COLUMNS, version_probe

__all__ = ["ExecutorVersionError", "check_executors", "check_linked_dtypes"]


class ExecutorVersionError(PlanError):
    """The executors cannot import ddflow, or theirs is not the driver's version."""


def driver_versions() -> tuple[str, str]:
    """The driver's ``ddflow.__version__`` and ``ddflow._core.__version__``."""
    return str(ddflow.__version__), str(_core.__version__)


_PROBED: set[tuple[str, frozenset[str], tuple[str, str]]] = set()
"""Executor sets whose probe passed: (application id, each executor's ``host:port``, the
driver's versions)."""


def _executor_set(spark: SparkSession) -> tuple[str, frozenset[str]] | None:
    """The classic session's application id and the ``host:port`` of each executor it has
    (the driver among them), or None where the client cannot see them (Spark Connect)."""
    sc = classic_context(spark)
    if sc is None:
        return None
    try:
        infos = sc._jsc.sc().statusTracker().getExecutorInfos()
        executors = frozenset(f"{i.host()}:{i.port()}" for i in infos)
    except Exception:  # a context without the status tracker: probe every run
        return None
    return str(sc.applicationId), executors


def check_executors(spark: SparkSession, partitions: int) -> None:
    """Runs one job of ``partitions`` one-row tasks reporting the executors' ddflow (see the
    module doc), unless this application's executors, the same ones, passed it before;
    raises ``ExecutorVersionError`` naming each interpreter that cannot import it or has
    another version than the driver."""
    want = driver_versions()
    executors = _executor_set(spark)
    key = None if executors is None else (*executors, want)
    if key is not None and key in _PROBED:
        return
    _probe(spark, partitions, want)
    if key is not None:
        _PROBED.add(key)


def _probe(spark: SparkSession, partitions: int, want: tuple[str, str]) -> None:
    """The probe job; raises ``ExecutorVersionError`` (see ``check_executors``)."""
    schema = T.StructType([T.StructField(c, T.StringType()) for c in PROBE_COLUMNS])
    probe = map_in_arrow(spark.range(0, partitions, 1, partitions), version_probe(), schema)
    rows = {tuple(r) for r in probe.collect()}
    bad: list[str] = []
    for ddflow_version, core, python, executable, error in sorted(rows, key=repr):
        where = f"executor Python {executable} ({python})"
        if error is not None:
            bad.append(f"{where} cannot import ddflow: {error}")
        elif (ddflow_version, core) != want:
            bad.append(f"{where} has ddflow {ddflow_version} (_core {core})")
    if bad:
        raise ExecutorVersionError(
            f"run_on_spark: the executors need the driver's ddflow {want[0]} (_core "
            f"{want[1]}; driver Python {sys.executable} ({platform.python_version()})), but "
            + "; ".join(bad)
            + ". Install the same ddflow on every executor (locally: set PYSPARK_PYTHON to "
            "the interpreter that has it before the session starts; on a cluster: the wheel "
            "on every node, or a packed environment with --archives)"
        )


def _no_functions(fn_id: int, kind: str, payload: Any) -> Any:
    """The engine's user-function callback: never called, no update is pushed."""
    raise AssertionError(f"check_linked_dtypes ran user function {fn_id} ({kind})")


def check_linked_dtypes(
    flow: Dataflow, inputs: Mapping[InputSession, DataFrame], dims: int
) -> None:
    """Raises the embedded engine's ``SchemaTypeError`` when two input columns the plan puts
    side by side (a join key, a concat, a loop variable) have different dtypes in the input
    DataFrames (see the module doc). Call after the inputs' columns and types are checked."""
    sessions = list(inputs.items())
    if len(sessions) < 2:
        return
    engine = _core.Engine(flow.builder.plan.dumps(dims), 1, _no_functions)
    engine.set_logging(False)
    times = np.zeros((0, dims), dtype=np.int64)
    diffs = np.zeros(0, dtype=np.int64)
    for session, df in sessions:
        types = {f.name: f.dataType for f in df.schema.fields}
        dtypes = [
            record_dtype(types[c], f"input {session.name!r}, column {c!r}", session.dtypes.get(c))
            for c in session.columns
        ]
        columns = [empty_column(d) for d in dtypes]
        try:
            engine.push(session.node, columns, times, diffs)
        except SchemaTypeError as exc:
            raise SchemaTypeError(
                f"run_on_spark: {exc} (refused before any Spark job: Spark would compare "
                f"such columns after an implicit cast)"
            ) from None
