"""Column dtypes the plan puts side by side, checked before any Spark job: the two sides of a
join key, the inputs of a ``concat``, a loop variable with its source and result.

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

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
from pyspark.sql import DataFrame

from ddflow.dataflow import Dataflow
from ddflow.errors import SchemaTypeError
from ddflow.input import InputSession
from ddflow.spark.driver.schemas import record_dtype

__all__ = ["check_linked_dtypes"]

_EMPTY: dict[str, npt.DTypeLike] = {
    "int64": np.int64,
    "float64": np.float64,
    "bool": np.bool_,
    "str": object,
}
"""The numpy dtype of an empty column of each ddflow dtype (an object column is ``str``)."""


def _no_functions(fn_id: int, kind: str, payload: Any) -> Any:
    """The engine's user-function callback: never called, no update is pushed."""
    raise AssertionError(f"check_linked_dtypes ran user function {fn_id} ({kind})")


def check_linked_dtypes(
    flow: Dataflow, inputs: Mapping[InputSession, DataFrame], dims: int
) -> None:
    """Raises the embedded engine's ``SchemaTypeError`` when two input columns the plan puts
    side by side (a join key, a concat, a loop variable) have different dtypes in the input
    DataFrames (see the module doc). Call after the inputs' columns and types are checked."""
    from ddflow import _core

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
            record_dtype(types[c], f"input {session.name!r}, column {c!r}") for c in session.columns
        ]
        if any(d not in _EMPTY for d in dtypes):
            continue  # a dtype without an empty numpy form: the engine checks it on its own
        columns = [np.zeros(0, dtype=_EMPTY[d]) for d in dtypes]
        try:
            engine.push(session.node, columns, times, diffs)
        except SchemaTypeError as exc:
            raise SchemaTypeError(
                f"run_on_spark: {exc} (refused before any Spark job: Spark would compare "
                f"such columns after an implicit cast)"
            ) from None
