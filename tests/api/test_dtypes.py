"""Conversion of user columns (numpy, pyarrow, lists) to the engine's canonical columns."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.dtypes import dtype_name, to_column


def test_canonical_dtypes() -> None:
    assert to_column(np.array([1, 2], dtype=np.int32), "c").dtype == np.int64
    assert to_column(np.array([1, 2], dtype=np.uint8), "c").dtype == np.int64
    assert to_column(np.array([1.5], dtype=np.float32), "c").dtype == np.float64
    assert to_column([True, False], "c").dtype == np.bool_
    s = to_column(np.array(["a", "bc"]), "c")
    assert s.dtype == object and s.tolist() == ["a", "bc"]
    assert to_column(pa.array(["x", "y"]), "c").tolist() == ["x", "y"]
    assert to_column(pa.chunked_array([[1, 2], [3]]), "c").tolist() == [1, 2, 3]
    assert to_column(np.array([1, 2], dtype=object), "c").dtype == np.int64


def test_rejections_name_the_column() -> None:
    with pytest.raises(dd.InvalidValueError, match="col 'x'.*null"):
        to_column(pa.array([1, None]), "col 'x'")
    with pytest.raises(dd.InvalidValueError, match="null"):
        to_column(np.array(["a", None], dtype=object), "col 'x'")
    with pytest.raises(dd.SchemaTypeError, match="col 'x'"):
        to_column(np.array([1 + 2j]), "col 'x'")
    with pytest.raises(dd.SchemaTypeError, match="mixed"):
        to_column(np.array([1, "a"], dtype=object), "col 'x'")
    with pytest.raises(dd.OverflowError):
        to_column(np.array([2**64 - 1], dtype=np.uint64), "col 'x'")
    with pytest.raises(dd.SchemaTypeError, match="one-dimensional"):
        to_column(np.zeros((2, 2)), "col 'x'")


def test_dtype_names() -> None:
    assert dtype_name(int) == "int64" and dtype_name("float") == "float64"
    assert dtype_name(np.dtype("int32")) == "int64" and dtype_name(pa.string()) == "str"
    assert dtype_name(pa.float64()) == "float64" and dtype_name(bool) == "bool"
    with pytest.raises(dd.SchemaTypeError):
        dtype_name("decimal")
