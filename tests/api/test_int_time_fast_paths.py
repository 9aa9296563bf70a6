"""``advance_to`` and ``run_until`` on int times take a short path once an input is started
(its dtypes fixed and the engine running): the frontier check, the hand-off of the buffer
and the engine call under one hold of the gate. Every time the short path does not take
(going backwards, negative, past int64, a bool, a numpy int, a tuple) goes the general way,
with the same errors as before and nothing buffered lost.
"""

from __future__ import annotations

import numpy as np
import pytest

import ddflow as dd

pytestmark = pytest.mark.timeout(60)


def _started() -> tuple[dd.Dataflow, dd.InputSession, dd.Capture]:
    flow = dd.Dataflow()
    inp, c = flow.new_input({"x": "int64"})
    cap = c.capture()
    inp.update_at((1,), 0)
    inp.advance_to(5)
    flow.run_until(5)
    return flow, inp, cap


@pytest.mark.parametrize(
    ("time", "error", "match"),
    [
        (4, dd.TimeError, r"advance_to\(4\) would go backwards from 5"),
        (-1, dd.InvalidValueError, "non-negative int64"),
        (2**63, dd.InvalidValueError, "non-negative int64"),
        (True, dd.SchemaTypeError, "a time must be a non-negative int"),
        ((6, 1), dd.InvalidValueError, "1 coordinate"),
    ],
)
def test_advance_to_refuses_as_the_general_path_and_keeps_the_buffer(
    time: object, error: type[Exception], match: str
) -> None:
    flow, inp, cap = _started()
    inp.update_at((2,), 5)
    with pytest.raises(error, match=match):
        inp.advance_to(time)  # type: ignore[arg-type]
    assert inp.time == 5
    inp.advance_to(6)
    flow.run_until(6)
    assert cap.updates().to_pylist() == [
        {"x": 1, "time": 0, "diff": 1},
        {"x": 2, "time": 5, "diff": 1},
    ]


def test_advance_to_takes_numpy_ints_and_equal_times() -> None:
    flow, inp, cap = _started()
    inp.update_at((2,), 5)
    inp.advance_to(5)  # the same time again: nothing moves
    inp.advance_to(np.int64(7))  # the general path
    assert inp.time == 7
    inp.update_at((3,), 7)
    inp.advance_to(8)  # the short path again, from the frontier the general path set
    flow.run_until(8)
    assert [(r["x"], r["time"]) for r in cap.updates().to_pylist()] == [(1, 0), (2, 5), (3, 7)]


def test_a_closed_input_refuses_advance_to() -> None:
    _, inp, _ = _started()
    inp.close()
    with pytest.raises(dd.DdflowError, match="is closed"):
        inp.advance_to(9)


@pytest.mark.parametrize(
    ("time", "error"),
    [(-1, dd.InvalidValueError), (2**63, dd.InvalidValueError), (True, dd.SchemaTypeError)],
)
def test_run_until_refuses_what_normalize_refuses(time: object, error: type[Exception]) -> None:
    flow, _, _ = _started()
    with pytest.raises(error):
        flow.run_until(time)  # type: ignore[arg-type]


def test_run_until_an_int_on_two_coordinate_times_is_refused() -> None:
    flow = dd.Dataflow(time_dims=2)
    inp, c = flow.new_input({"x": "int64"})
    c.capture()
    inp.update_at((1,), (0, 0))
    with pytest.raises(dd.InvalidValueError, match="2 coordinates"):
        flow.run_until(3)
