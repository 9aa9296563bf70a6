"""Type mapping between ddflow dtypes, Arrow and Spark for the Spark backend, and
``mapInArrow`` without pyspark's own warning. (The internal column names of update
DataFrames are the tasks' own: ``tasks/batches.py``.)"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy.typing as npt
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from ddflow.errors import SchemaTypeError
from ddflow.spark.driver.columns import dtype_of
from ddflow.spark.tasks.batches import DIFF, tcol

__all__ = [
    "record_dtype",
    "arrow_type",
    "arrow_type_of_numpy",
    "spark_of_arrow",
    "spark_schema",
    "time_fields",
    "map_in_arrow",
]


def record_dtype(typ: T.DataType, what: str) -> str:
    """The ddflow dtype of a Spark record column type, or a ``SchemaTypeError``."""
    if isinstance(typ, T.LongType | T.IntegerType | T.ShortType | T.ByteType):
        return "int64"
    if isinstance(typ, T.DoubleType | T.FloatType):
        return "float64"
    if isinstance(typ, T.BooleanType):
        return "bool"
    if isinstance(typ, T.StringType):
        return "str"
    raise SchemaTypeError(
        f"{what}: Spark type {typ.simpleString()} is not supported (use bigint, double, "
        f"boolean or string)"
    )


def arrow_type(typ: T.DataType) -> pa.DataType:
    """The Arrow type of a (normalized) Spark column type."""
    return {"int64": pa.int64(), "float64": pa.float64(), "bool": pa.bool_(), "str": pa.string()}[
        dtype_of(typ)
    ]


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


def spark_of_arrow(typ: pa.DataType) -> T.DataType:
    """The Spark type of an Arrow type."""
    if typ == pa.int64():
        return T.LongType()
    if typ == pa.float64():
        return T.DoubleType()
    if typ == pa.bool_():
        return T.BooleanType()
    if typ == pa.int32():
        return T.IntegerType()
    return T.StringType()


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
