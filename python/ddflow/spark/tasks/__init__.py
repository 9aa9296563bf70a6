"""The Spark backend's tasks: everything that runs inside ``mapInArrow`` on the executors.

Partition functions and the specs pickled with them (``batch_functions.py``: expressions and
user batch functions; ``reduce.py``: the engine's reduce operator; ``fused.py``: a whole
fused superstep), the reduce state store's on-disk layout (``store.py``), data errors as
error updates and rows (``error_rows.py``), Arrow columns into the engine and back with
nulls (``engine_io.py``) and the shared Arrow helpers and column names
(``batches.py``). These modules import Arrow, numpy, ``ddflow._core`` and plain ddflow
modules only, never pyspark: an executor runs them without the driver's code.

Importing the package loads every task module, so a task function pickled by reference
finds them all on the executor; :func:`warm_up_batches` is the identity partition function
whose run does only that.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ddflow.spark.tasks import (
    batch_functions,
    batches,
    engine_io,
    error_rows,
    fused,
    reduce,
    store,
)

__all__ = [
    "warm_up_batches",
    "batch_functions",
    "batches",
    "engine_io",
    "error_rows",
    "fused",
    "reduce",
    "store",
]


def warm_up_batches(parts: Iterable[Any]) -> Iterator[Any]:
    """The identity partition function; importing this package (which loads the task
    modules) is its job, so the first Arrow stage of a session finds them loaded."""
    yield from parts
