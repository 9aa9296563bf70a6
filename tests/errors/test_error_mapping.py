"""Every core error variant maps to its own ``ddflow.errors`` class, with ``operator`` set
exactly when the core error names one (``rust/ddflow-py/src/errors.rs``)."""

from __future__ import annotations

import pytest

import ddflow as dd
from ddflow import _core

# The core's example errors, in order: one per variant, the last wrapped in an operator.
EXPECTED = [
    (dd.errors.ShapeError, ValueError, None),
    (dd.errors.SchemaTypeError, TypeError, None),
    (dd.errors.InvalidValueError, ValueError, None),
    (dd.errors.UnsortedInputError, ValueError, None),
    (dd.errors.OverflowError, OverflowError, None),
    (dd.errors.TimeError, ValueError, None),
    (dd.errors.ColumnNotFoundError, KeyError, None),
    (dd.errors.PlanError, ValueError, None),
    (dd.errors.DivisionByZeroError, ZeroDivisionError, None),
    (dd.errors.UserFunctionError, ValueError, None),
    (dd.errors.InternalError, RuntimeError, None),
    (dd.errors.MemoryLimitError, MemoryError, None),
    (dd.errors.SpillError, OSError, None),
    (dd.errors.OverflowError, OverflowError, "example_op"),
]


def test_every_variant_has_an_example() -> None:
    assert _core._error_examples() == len(EXPECTED)


@pytest.mark.parametrize(("i", "expected"), list(enumerate(EXPECTED)))
def test_each_variant_maps_to_its_class(
    i: int, expected: tuple[type[Exception], type[Exception], str | None]
) -> None:
    cls, builtin, operator = expected
    with pytest.raises(cls) as ei:
        _core._raise_error_example(i)
    assert type(ei.value) is cls
    assert isinstance(ei.value, dd.DdflowError) and isinstance(ei.value, builtin)
    assert ei.value.operator == operator
    assert "example" in str(ei.value)
    if operator is not None:
        assert f"operator {operator}: " in str(ei.value)


def test_the_classes_are_distinct() -> None:
    classes = [c for c, _, op in EXPECTED if op is None]
    assert len(set(classes)) == len(classes)


def test_errors_raised_in_python_have_no_operator() -> None:
    with pytest.raises(dd.PlanError) as ei:
        dd.Dataflow().new_input({"k": "int64"})[1].capture(errors="sometimes")
    assert ei.value.operator is None
