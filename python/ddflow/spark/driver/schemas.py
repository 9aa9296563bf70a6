"""Type mapping between ddflow dtypes, Arrow and Spark for the Spark backend, and
``mapInArrow`` without pyspark's own warning. (The internal column names of update
DataFrames are the tasks' own: ``tasks/batches.py``.)

Each Spark type the backend holds is one ddflow dtype and back: the physical four, the
narrow integers and ``float32``, ``date32``, ``decimal128(p, s)``, ``duration[us]``
(``interval day to second``), ``timestamp[us]`` (``timestamp_ntz``) and a Spark
``timestamp`` as ``timestamp[us, tz=<session time zone>]``, the Arrow type Spark hands
``mapInArrow``. The session's zone is read once per run, when the compiler is built
(``use_time_zone``; the driver plans one run at a time). A dtype Spark cannot hold is refused
naming the column (``spark_type``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy.typing as npt
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ddflow.errors import SchemaTypeError
from ddflow.logical_types import arrow_type as logical_arrow_type
from ddflow.logical_types import canonical, name_of_arrow
from ddflow.spark.tasks.batches import DIFF, tcol

__all__ = [
    "SUPPORTED",
    "record_dtype",
    "dtype_of_spark",
    "spark_type",
    "use_time_zone",
    "session_timestamp",
    "arrow_type",
    "arrow_type_of_numpy",
    "spark_of_arrow",
    "spark_schema",
    "time_fields",
    "map_in_arrow",
]


_TIME_ZONE = ["UTC"]
"""The session time zone of the run being planned (``use_time_zone``): Spark hands
``mapInArrow`` a ``timestamp`` column as Arrow's ``timestamp[us, tz=<session time zone>]``."""


def use_time_zone(spark: SparkSession) -> None:
    """Plans the next run for ``spark``'s session time zone (``spark.sql.session.timeZone``)."""
    _TIME_ZONE[0] = str(spark.conf.get("spark.sql.session.timeZone") or "UTC")


def session_timestamp() -> str:
    """The dtype of a Spark ``timestamp`` column: ``timestamp[us, tz=<session time zone>]``."""
    return canonical(f"timestamp[us, tz={_TIME_ZONE[0]}]")


_SIMPLE: dict[str, T.DataType] = {
    "int64": T.LongType(),
    "float64": T.DoubleType(),
    "bool": T.BooleanType(),
    "str": T.StringType(),
    "int32": T.IntegerType(),
    "int16": T.ShortType(),
    "int8": T.ByteType(),
    "float32": T.FloatType(),
    "date32": T.DateType(),
    "timestamp[us]": T.TimestampNTZType(),
    "duration[us]": T.DayTimeIntervalType(),
    "binary": T.BinaryType(),
}
"""ddflow dtypes and the Spark type holding each (timestamps with the session's zone and
decimals: ``spark_type``)."""

SUPPORTED = (
    "bigint, int, smallint, tinyint, double, float, boolean, string, date, timestamp, "
    "timestamp_ntz, decimal(p, s), binary and interval day to second"
)
"""The Spark record column types ``run_on_spark`` takes."""


def record_dtype(typ: T.DataType, what: str, declared: str | None = None) -> str:
    """The ddflow dtype of an input's Spark record column type, or a ``SchemaTypeError``.
    The narrow integers and ``float`` are read as ``int64`` and ``float64`` (the input frame
    casts them) unless the input declares them at their own width (``int32`` for ``int``)."""
    if declared is not None and typ == _SIMPLE.get(declared):
        return declared
    if isinstance(typ, T.LongType | T.IntegerType | T.ShortType | T.ByteType):
        return "int64"
    if isinstance(typ, T.DoubleType | T.FloatType):
        return "float64"
    try:
        return dtype_of_spark(typ)
    except SchemaTypeError:
        raise SchemaTypeError(
            f"{what}: Spark type {typ.simpleString()} is not supported (use {SUPPORTED})"
        ) from None


def dtype_of_spark(typ: T.DataType) -> str:
    """The ddflow dtype of a Spark column type inside the backend (exact: an ``int`` column
    is ``int32``; a ``timestamp`` is ``timestamp[us, tz=<session time zone>]``)."""
    if isinstance(typ, T.DecimalType):
        return canonical(f"decimal128({typ.precision}, {typ.scale})")
    if isinstance(typ, T.TimestampType):
        return session_timestamp()
    if isinstance(typ, T.DayTimeIntervalType):
        return "duration[us]"
    for name, spark in _SIMPLE.items():
        if typ == spark:
            return name
    raise SchemaTypeError(f"Spark type {typ.simpleString()} has no ddflow dtype")


def spark_type(dtype: str, what: str = "a column") -> T.DataType:
    """The Spark type holding ddflow dtype ``dtype``, or a ``SchemaTypeError`` naming
    ``what`` for a dtype Spark cannot hold exactly (unsigned integers, timestamps and
    durations in other units than microseconds, a timestamp zoned other than the session)."""
    name = canonical(dtype)
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name.startswith("decimal128("):
        p, s = name[len("decimal128(") : -1].split(",")
        return T.DecimalType(int(p), int(s))
    if name == session_timestamp():
        return T.TimestampType()
    raise SchemaTypeError(
        f"{what}: dtype {name} has no exact Spark type on run_on_spark (Spark holds "
        f"timestamps and durations in microseconds, zoned timestamps in the session time "
        f"zone {_TIME_ZONE[0]!r}, and no unsigned integers); cast it to one that does"
    )


def arrow_type(typ: T.DataType) -> pa.DataType:
    """The Arrow type ``mapInArrow`` gives a task for a Spark column type."""
    return logical_arrow_type(dtype_of_spark(typ))


def arrow_type_of_numpy(arr: npt.NDArray[Any]) -> pa.DataType:
    """The Arrow type of a numpy column as the engine produces it."""
    kind = arr.dtype.kind
    if kind in "iu":
        return pa.int64()
    if kind == "f":
        return pa.float64()
    if kind == "b":
        return pa.bool_()
    return pa.string()


def spark_of_arrow(typ: pa.DataType, what: str = "a column") -> T.DataType:
    """The Spark type of an Arrow type (the tagged reduce schema's ``int32`` tag too)."""
    if pa.types.is_large_string(typ):
        return T.StringType()
    name = name_of_arrow(typ)
    if name is None:
        raise SchemaTypeError(f"{what}: Arrow type {typ} has no Spark type on run_on_spark")
    return spark_type(name, what)


def spark_schema(schema: pa.Schema) -> T.StructType:
    """A Spark schema for an Arrow schema (all fields nullable)."""
    return T.StructType([T.StructField(f.name, spark_of_arrow(f.type), True) for f in schema])


def time_fields(dims: int) -> list[T.StructField]:
    """The time coordinate fields and the diff field of an update DataFrame."""
    return [T.StructField(tcol(j), T.LongType(), False) for j in range(dims)] + [
        T.StructField(DIFF, T.LongType(), False)
    ]


def map_in_arrow(df: DataFrame, fn: Callable[..., Any], schema: T.StructType) -> DataFrame:
    """``df.mapInArrow(fn, schema)``, without pyspark 3.5's own DeprecationWarning (its pandas
    version check uses distutils)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "distutils Version classes", DeprecationWarning)
        return df.mapInArrow(fn, schema)
