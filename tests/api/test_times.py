"""Time normalisation and validation: ints or tuples of non-negative ints, one shape per flow."""

from __future__ import annotations

import numpy as np
import pytest

import ddflow as dd
from ddflow.times import TimeShape, frontier_passed, less_equal


def test_int_and_tuple_times() -> None:
    shape = TimeShape()
    assert shape.normalize(5, "x") == (5,)
    assert shape.dims == 1
    assert shape.normalize((7,), "x") == (7,)
    assert shape.normalize(np.int64(3), "x") == (3,)
    assert shape.to_user((4,)) == 4
    with pytest.raises(dd.InvalidValueError, match=r"\(1, 2\)"):
        shape.normalize((1, 2), "x")
    pair = TimeShape(2)
    assert pair.normalize((1, 2), "x") == (1, 2)
    assert pair.to_user((1, 2)) == (1, 2)
    with pytest.raises(dd.DdflowError):
        pair.normalize(1, "x")


@pytest.mark.parametrize("bad", [-1, (0, -2), 2**63])
def test_negative_or_huge_times(bad: object) -> None:
    with pytest.raises(dd.InvalidValueError):
        TimeShape().normalize(bad, "input 'e'")


@pytest.mark.parametrize("bad", [True, 1.5, "3", (), (1, 2.0), None])
def test_times_of_wrong_type(bad: object) -> None:
    with pytest.raises(dd.SchemaTypeError, match="input 'e'"):
        TimeShape().normalize(bad, "input 'e'")


def test_declared_time_dims() -> None:
    with pytest.raises(dd.InvalidValueError):
        TimeShape(0)
    assert dd.Dataflow(time_dims=3).time_dims == 3
    assert dd.Dataflow().time_dims is None


def test_time_arrays() -> None:
    shape = TimeShape()
    arr = shape.array(np.array([3, 4], dtype=np.int32), 2, "x")
    assert arr.dtype == np.int64 and arr.shape == (2, 1) and arr.flags.c_contiguous
    assert shape.dims == 1
    assert shape.array(9, 3, "x").tolist() == [[9], [9], [9]]
    pairs = TimeShape()
    arr = pairs.array(np.array([[1, 2], [3, 4]]), 2, "x")
    assert pairs.dims == 2 and arr.tolist() == [[1, 2], [3, 4]]
    assert pairs.array((5, 6), 2, "x").tolist() == [[5, 6], [5, 6]]
    with pytest.raises(dd.InvalidValueError):
        pairs.array(np.array([1, 2]), 2, "x")
    with pytest.raises(dd.ShapeError):
        shape.array(np.array([1, 2, 3]), 2, "x")
    with pytest.raises(dd.InvalidValueError, match="-4"):
        shape.array(np.array([1, -4]), 2, "x")
    with pytest.raises(dd.SchemaTypeError):
        shape.array(np.array([1.0, 2.0]), 2, "x")


def test_partial_order_and_frontiers() -> None:
    assert less_equal((1, 2), (1, 3)) and not less_equal((1, 2), (0, 3))
    frontier = [[2, 0], [0, 3]]
    assert frontier_passed(frontier, (1, 2))
    assert not frontier_passed(frontier, (2, 1))
    assert not frontier_passed(frontier, (0, 3))
    assert frontier_passed([], (9, 9))
