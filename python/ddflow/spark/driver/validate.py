"""Input and plan validation of the Spark backend, all before any Spark job runs: outputs
belong to the dataflow, every operator the outputs need is supported where it is (the
operator registry, ``ops.py``), input DataFrames have
the input's columns with supported types and agreeing time coordinates. Checks only the data
can answer (null times or diffs, negative times, an int64 record value of ``-2**63``, the
engine's null word) are compiled into the input frames as ``raise_error`` columns naming the
input and the column. Record columns may hold nulls (SQL nulls, as on the embedded
engine)."""

from __future__ import annotations

import decimal
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ddflow.capture import Capture
from ddflow.collection import Collection
from ddflow.dataflow import Dataflow
from ddflow.errors import ColumnNotFoundError, PlanError, SchemaTypeError
from ddflow.input import InputSession
from ddflow.plan import InputOp, VariableOp
from ddflow.spark.driver.ops import SPARK_OPS, supported_ops
from ddflow.spark.driver.schemas import record_dtype, spark_type
from ddflow.spark.tasks.batches import DIFF, ccol, tcol

_I64_MIN = -(2**63)

__all__ = [
    "UnsupportedOperatorError",
    "output_node",
    "needed_nodes",
    "check_ops",
    "time_dims",
    "input_frames",
]


class UnsupportedOperatorError(PlanError):
    """The plan uses an operator (or a shape of plan) the Spark backend cannot run."""


def output_node(flow: Dataflow, out: Any) -> int:
    """The plan node whose history output ``out`` (a Collection or a Capture) asks for."""
    nodes = flow.builder.plan.nodes
    if isinstance(out, Capture):
        if out.flow is not flow:
            raise PlanError(f"run_on_spark: output {out!r} belongs to another dataflow")
        return int(nodes[out.node]["inputs"][0])
    if isinstance(out, Collection):
        if out.flow is not flow:
            raise PlanError(f"run_on_spark: output {out!r} belongs to another dataflow")
        if out.scope != 0:
            raise PlanError(
                f"run_on_spark: output {out!r} is inside an iterate body; use the "
                f"collection that iterate() returns"
            )
        return out.node
    raise PlanError(f"run_on_spark: outputs must be Collections or Captures, got {out!r}")


def needed_nodes(nodes: Sequence[dict[str, Any]], roots: Sequence[int]) -> set[int]:
    """The plan nodes the ``roots`` depend on (through inputs and loop feedback)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        node = nodes[n]
        stack.extend(node["inputs"])
        if node["op"] == VariableOp.OP and node.get("result") is not None:
            stack.append(node["result"])
    return seen


def check_ops(flow: Dataflow, needed: set[int]) -> None:
    """Raises ``UnsupportedOperatorError`` naming the first needed node the backend cannot
    run (where it is)."""
    plan = flow.builder.plan
    plan.validate()
    for n in sorted(needed):
        node = plan.nodes[n]
        op = node["op"]
        entry = SPARK_OPS.get(op)
        if entry is None or not entry.supported:
            why = "an operator this backend does not know" if entry is None else entry.refused
            raise UnsupportedOperatorError(
                f"{node['label']}: operator {op!r} is not supported by the Spark backend: "
                f"{why} (supported: {', '.join(supported_ops())})"
            )
        if plan.depth(node["scope"]) > 1:
            raise UnsupportedOperatorError(
                f"{node['label']}: nested iterate (depth {plan.depth(node['scope'])}) is "
                f"not supported by the Spark backend yet; one level of iterate is"
            )
        if node["scope"] != 0 and not entry.in_iterate:
            raise UnsupportedOperatorError(
                f"{node['label']}: operator {op!r} is not supported inside an iterate by the "
                f"Spark backend"
            )
        if node["scope"] == 0 and entry.top is None:
            raise UnsupportedOperatorError(
                f"{node['label']}: operator {op!r} runs only inside an iterate on the Spark "
                f"backend"
            )


def time_dims(flow: Dataflow, inputs: Mapping[InputSession, DataFrame]) -> int:
    """The number of time coordinates, agreed by the dataflow and every input frame."""
    dims: int | None = flow.time_dims
    source = "the dataflow's time_dims"
    for session, df in inputs.items():
        cols = df.columns
        if "time" in cols:
            d = 1
        elif "time_0" in cols:
            d = 0
            while f"time_{d}" in cols:
                d += 1
        else:
            raise ColumnNotFoundError(
                f"input {session.name!r}: no time column: expected 'time' (int64) or "
                f"'time_0', 'time_1', ... (one int64 column per time coordinate); the "
                f"DataFrame has {cols}"
            )
        if dims is not None and d != dims:
            raise SchemaTypeError(
                f"input {session.name!r}: {d} time coordinate(s), but {source} has {dims}"
            )
        dims, source = d, f"input {session.name!r}"
    return dims or 1


def input_frames(
    flow: Dataflow, needed: set[int], inputs: Mapping[InputSession, DataFrame], dims: int
) -> dict[int, DataFrame]:
    """The validated input frames in the backend's column naming, by input node."""
    nodes = flow.builder.plan.nodes
    by_node: dict[int, DataFrame] = {}
    for session, df in inputs.items():
        if not isinstance(session, InputSession) or session.flow is not flow:
            raise PlanError(
                f"run_on_spark: inputs must be keyed by this dataflow's input sessions, "
                f"got {session!r}"
            )
        if not isinstance(df, DataFrame):
            raise SchemaTypeError(
                f"input {session.name!r}: expected a Spark DataFrame, got {type(df).__name__}"
            )
        by_node[session.node] = _input_frame(session, df, dims)
    for n in sorted(needed):
        node = nodes[n]
        if node["op"] == InputOp.OP and n not in by_node:
            raise PlanError(
                f"run_on_spark: no DataFrame for input {node['name']!r} ({node['label']}), "
                f"which the outputs depend on"
            )
    return by_node


def _input_frame(session: InputSession, df: DataFrame, dims: int) -> DataFrame:
    what = f"input {session.name!r}"
    types = dict((f.name, f.dataType) for f in df.schema.fields)
    nullable = dict((f.name, f.nullable) for f in df.schema.fields)
    tnames = ["time"] if dims == 1 else [f"time_{j}" for j in range(dims)]
    for c in [*session.columns, *tnames, "diff"]:
        if c not in types:
            raise ColumnNotFoundError(
                f"{what}: column {c!r} missing; the DataFrame has {df.columns}, the input "
                f"needs {[*session.columns, *tnames, 'diff']}"
            )
    exprs: list[Column] = []
    for i, c in enumerate(session.columns):
        declared = session.dtypes.get(c)
        dtype = record_dtype(types[c], f"{what}, column {c!r}", declared)
        if declared is not None and declared != dtype:
            raise SchemaTypeError(
                f"{what}, column {c!r}: Spark type {types[c].simpleString()} ({dtype}), "
                f"the input is declared {declared}"
                + (
                    " (a Spark timestamp is zoned in spark.sql.session.timeZone: declare "
                    "that zone, or set the session's)"
                    if isinstance(types[c], T.TimestampType)
                    else ""
                )
            )
        col = F.col(c).cast(spark_type(dtype, f"{what}, column {c!r}"))
        typ = types[c]
        if isinstance(typ, T.DecimalType) and typ.precision > 18:
            # The engine holds a decimal's unscaled value in one 64-bit word.
            limit = decimal.Decimal(_I64_MIN + 1).scaleb(-typ.scale).copy_abs()
            col = F.when(
                F.abs(F.col(c)) > F.lit(limit).cast(typ),
                F.raise_error(
                    F.concat(
                        F.lit(f"ddflow: {what}, column {c!r}: value "),
                        F.col(c).cast("string"),
                        F.lit(
                            f" does not fit {dtype} as ddflow stores it (one 64-bit word: "
                            "decimals up to about 18 digits)"
                        ),
                    )
                ),
            ).otherwise(col)
        if isinstance(typ, T.LongType):
            # Nulls are values; -2**63 is int64's null word, which no record may hold.
            col = F.when(
                F.col(c) == F.lit(_I64_MIN),
                F.raise_error(
                    F.lit(
                        f"ddflow: {what}, column {c!r}: value {_I64_MIN} is int64's reserved "
                        "null word (the one int64 value ddflow cannot hold; use a null)"
                    )
                ),
            ).otherwise(col)
        exprs.append(col.alias(ccol(i)))
    for j, c in enumerate([*tnames, "diff"]):
        if not isinstance(types[c], T.LongType | T.IntegerType | T.ShortType | T.ByteType):
            raise SchemaTypeError(
                f"{what}, column {c!r}: Spark type {types[c].simpleString()}, expected an "
                f"integer type (int64)"
            )
        col = F.col(c).cast(T.LongType())
        checks = []
        if nullable[c]:
            checks.append((F.col(c).isNull(), "null value"))
        if c != "diff":
            checks.append((F.col(c) < 0, "negative time (times are non-negative)"))
        for cond, msg in reversed(checks):
            col = F.when(
                cond, F.raise_error(F.lit(f"ddflow: {what}, column {c!r}: {msg}"))
            ).otherwise(col)
        exprs.append(col.alias(DIFF if c == "diff" else tcol(j)))
    return df.select(*exprs)
