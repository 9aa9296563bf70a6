"""Bad input raises ddflow.errors classes that name the argument and the problem."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from ddflow import _core
from ddflow import kernels as K
from ddflow.errors import (
    DdflowError,
    InvalidValueError,
    OverflowError,
    SchemaTypeError,
    ShapeError,
    TimeError,
    UnsortedInputError,
)

I64_MAX = np.iinfo(np.int64).max
A = np.array([1, 2, 3], dtype=np.int64)
T = np.zeros(3, dtype=np.int64)
D = np.ones(3, dtype=np.int64)


def test_classes_are_builtin_flavoured() -> None:
    assert issubclass(ShapeError, ValueError) and issubclass(ShapeError, DdflowError)
    assert issubclass(SchemaTypeError, TypeError)
    assert issubclass(InvalidValueError, ValueError)
    assert issubclass(UnsortedInputError, ValueError)
    assert issubclass(TimeError, ValueError)


# --- ShapeError --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda: _core.sort_pairs(A, A[:2]), ["keys", "vals"]),
        (lambda: _core.consolidate_pairs(A, A, D[:1]), ["diffs"]),
        (lambda: _core.consolidate([A, A[:2]], T, D), ["columns[1]"]),
        (lambda: _core.consolidate([A], T[:2], D), ["times"]),
        (lambda: _core.consolidate([A], T, D[:1]), ["diffs"]),
        (
            lambda: _core.less_equal(np.zeros((3, 2), np.int64), np.zeros((2, 2), np.int64)),
            ["a has 3", "b has 2"],
        ),
        (lambda: _core.sort_values(np.zeros((2, 2), dtype=np.int64)), ["values", "1-D"]),
        (lambda: _core.Trace.from_static_pairs(A, A[:1]), ["src", "dst"]),
        (lambda: _core.Trace(["int64"], 2), ["key_columns"]),
        (lambda: _core.Trace(["int64"], 1).insert([A, A]), ["expected 1 columns"]),
        (lambda: _core.Trace(["int64"], 1).insert([A], T[:2]), ["times"]),
    ],
)
def test_shape_errors(call, names: list[str]) -> None:
    with pytest.raises(ShapeError) as e:
        call()
    for n in names:
        assert n in str(e.value)


# --- SchemaTypeError ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda: _core.sort_pairs(A.astype(np.float64), A), ["keys", "float64"]),
        (lambda: _core.sort_values(A.astype(np.int32)), ["values", "int32"]),
        (lambda: _core.sort_values([1, 2, 3]), ["values", "numpy array"]),
        (lambda: _core.consolidate([A.astype(np.complex128)], T, D), ["columns[0]", "complex"]),
        (lambda: _core.consolidate([A], T.astype(np.int32), D), ["times", "int64"]),
        (lambda: _core.consolidate([A], T, D.astype(np.float64)), ["diffs", "int64"]),
        (lambda: _core.consolidate(A, T, D), ["columns", "list"]),
        (
            lambda: _core.consolidate([np.array(["a", 1, "b"], dtype=object)], T, D),
            ["columns[0]", "row 1", "str"],
        ),
        (
            lambda: _core.consolidate([np.array(["a", None, "b"], dtype=object)], T, D),
            ["columns[0]", "None"],
        ),
        (lambda: _core.Trace(["int64", "decimal"], 1), ["dtypes[1]", "decimal"]),
        (
            lambda: _core.Trace(["int64", "str"], 1).insert([A, A]),
            ["columns[1]", "str"],
        ),
        (lambda: _core.Trace(["str"], 1).key_history(3), ["key[0]", "str"]),
        (lambda: K.frontier_less_equal(np.array([0.5]), np.zeros(1, np.int64)), ["frontier"]),
    ],
)
def test_schema_type_errors(call, names: list[str]) -> None:
    with pytest.raises(SchemaTypeError) as e:
        call()
    for n in names:
        assert n in str(e.value)


# --- InvalidValueError -------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, names",
    [
        (lambda: _core.consolidate([A], np.array([0, -1, 0]), D), ["times", "negative", "-1"]),
        (lambda: _core.join(np.array([[0, 1]]), np.array([[-3, 0]])), ["b", "negative"]),
        (lambda: _core.consolidate([A], np.zeros((3, 5), np.int64), D), ["times", "5 coord"]),
        (lambda: _core.consolidate([A], np.zeros((3, 0), np.int64), D), ["times", "0 coord"]),
        (lambda: _core.consolidate([A], np.zeros((3, 1, 1), np.int64), D), ["times", "shape"]),
        (lambda: _core.advance_by(np.zeros((2, 2), np.int64), [[1, 1, 1]]), ["frontier"]),
        (lambda: _core.advance_by(T, [[-1]]), ["frontier", "negative"]),
        (lambda: _core.Trace(["int64"], 1, time_dims=5), ["time_dims"]),
        (
            lambda: _core.Trace(["int64"], 1, time_dims=2).insert([A], T),
            ["times", "coordinates"],
        ),
        (lambda: _core.Trace(["int64"], 1).advance_compaction([[1, 2]]), ["frontier"]),
        (lambda: K.sort_values(pa.array([1, None, 3])), ["values", "null"]),
        (lambda: K.consolidate([pa.array(["a", None, "c"])], T, D), ["columns[0]", "null"]),
        (lambda: K.Trace.from_static_pairs(pa.array([1, None]), [1, 2]), ["src", "null"]),
    ],
)
def test_invalid_value_errors(call, names: list[str]) -> None:
    with pytest.raises(InvalidValueError) as e:
        call()
    for n in names:
        assert n in str(e.value)


# --- UnsortedInputError, OverflowError, TimeError ----------------------------------------


def test_unsorted_input_error() -> None:
    trace = _core.Trace(["int64"], 1)
    with pytest.raises(UnsortedInputError, match=r"sorted=True.*update 2"):
        trace.insert([np.array([1, 2, 0], dtype=np.int64)], sorted=True)
    # Negative int64 sort after non-negative ones in trace order.
    trace.insert([np.array([0, 5, -1], dtype=np.int64)], sorted=True)
    assert len(trace) == 3


def test_overflow_errors() -> None:
    big = np.array([I64_MAX, 1], dtype=np.int64)
    two = np.array([7, 7], dtype=np.int64)
    with pytest.raises(OverflowError, match="consolidate"):
        _core.consolidate([two], np.zeros(2, np.int64), big)
    with pytest.raises(OverflowError, match="consolidate_pairs"):
        _core.consolidate_pairs(two, two, big)
    with pytest.raises(OverflowError, match="insert"):
        _core.Trace(["int64"], 1).insert([two], np.zeros(2, np.int64), big)
    # The builtin flavour keeps working.
    with pytest.raises(ArithmeticError):
        _core.consolidate([two], np.zeros(2, np.int64), big)


def test_time_errors() -> None:
    trace = _core.Trace(["int64"], 1)
    trace.advance_compaction(5)
    with pytest.raises(TimeError, match="advance_compaction"):
        trace.advance_compaction(4)
    with pytest.raises(TimeError, match="times"):
        trace.insert([A], np.array([5, 4, 6]))


def test_errors_leave_trace_usable() -> None:
    trace = K.Trace(["int64", "str"], 1)
    with pytest.raises(SchemaTypeError):
        trace.insert([A, A])
    trace.insert([A, np.array(["a", "b", "c"], dtype=object)])
    assert len(trace) == 3


def test_facade_rejects_non_sequences() -> None:
    with pytest.raises(SchemaTypeError, match="columns"):
        K.consolidate(A, T, D)  # type: ignore[arg-type]
