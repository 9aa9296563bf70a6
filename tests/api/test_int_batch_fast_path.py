"""``update_batch`` of int64 numpy columns into a started input of int64 columns takes a short
path (no conversion of columns, times or diffs; one hold of the gate). It must give exactly
the history the general path gives for the same updates (fed as Python lists, which always
go the general way), and every batch it does not take (a null word, a time before the
frontier, ragged columns, other dtypes or layouts) goes the general way with its errors,
nothing added.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ddflow as dd

pytestmark = pytest.mark.timeout(120)

INT64_MIN = -(2**63)

_ints = st.integers(INT64_MIN + 1, 2**63 - 1)


@st.composite
def _batches(draw: Any) -> list[tuple[list[int], list[int], list[int] | int | None, Any, int]]:
    """Batches of (a, b, times, diffs, the frontier the input advances to after it)."""
    out = []
    frontier = 1
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(1, 6))
        a = draw(st.lists(_ints, min_size=n, max_size=n))
        b = draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
        times = draw(
            st.one_of(
                st.none(),
                st.integers(frontier, frontier + 3),
                st.lists(st.integers(frontier, frontier + 3), min_size=n, max_size=n),
            )
        )
        diffs = draw(
            st.one_of(st.none(), st.lists(st.sampled_from([1, -1, 3]), min_size=n, max_size=n))
        )
        frontier += draw(st.integers(0, 2))
        out.append((a, b, times, diffs, frontier))
    return out


def _history(numpy_columns: bool, batches: list[Any]) -> list[tuple[Any, ...]]:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"a": "int64", "b": "int64"})
    cap = coll.capture()
    inp.update_batch({"a": [0], "b": [0]}, times=0)  # starts the input
    inp.advance_to(1)
    flow.run_until(1)
    general = inp._update_batch
    calls = []

    def counted(*args: Any) -> None:
        calls.append(1)
        general(*args)

    inp._update_batch = counted  # type: ignore[method-assign]
    for a, b, times, diffs, frontier in batches:
        if numpy_columns:
            cols = {"a": np.array(a, dtype=np.int64), "b": np.array(b, dtype=np.int64)}
            t = np.array(times, dtype=np.int64) if isinstance(times, list) else times
            d = np.array(diffs, dtype=np.int64) if isinstance(diffs, list) else diffs
        else:
            cols, t, d = {"a": list(a), "b": list(b)}, times, diffs
        inp.update_batch(cols, times=t, diffs=d)
        inp.advance_to(frontier)
    inp.close()
    flow.run()
    # numpy columns take the short path every time; lists go the general way every time
    assert len(calls) == (0 if numpy_columns else len(batches))
    return sorted(cap.updates().to_pylist(), key=repr)


@settings(max_examples=40, deadline=None)
@given(_batches())
def test_numpy_int_batches_equal_the_general_path(batches: list[Any]) -> None:
    assert _history(True, batches) == _history(False, batches)


def _started() -> tuple[dd.Dataflow, dd.InputSession, dd.Capture]:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"a": "int64", "b": "int64"})
    cap = coll.capture()
    inp.update_batch({"a": np.array([1]), "b": np.array([1])}, times=0)
    inp.advance_to(5)
    flow.run_until(5)
    return flow, inp, cap


def _col(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


@pytest.mark.parametrize(
    ("columns", "times", "diffs", "error", "match"),
    [
        ({"a": _col(INT64_MIN, 2), "b": _col(1, 2)}, 5, None, dd.InvalidValueError, "at row 0"),
        ({"a": _col(1, 2), "b": _col(1, 2)}, _col(5, 4), None, dd.TimeError, "time 4"),
        ({"a": _col(1, 2), "b": _col(1, 2)}, 4, None, dd.TimeError, "time 4"),
        ({"a": _col(1, 2), "b": _col(1)}, 5, None, dd.ShapeError, "column 'b' has 1 rows"),
        ({"a": _col(1, 2), "b": _col(1, 2)}, _col(5), None, dd.ShapeError, "1 times for 2"),
        ({"a": _col(1, 2), "b": _col(1, 2)}, 5, _col(1), dd.ShapeError, "1 diffs for 2"),
        ({"a": _col(1, 2), "c": _col(1, 2)}, 5, None, dd.ColumnNotFoundError, "unknown columns"),
        (
            {"a": _col(1, 2), "b": np.array([1.5, 2.5])},
            5,
            None,
            dd.SchemaTypeError,
            "dtype float64",
        ),
    ],
)
def test_a_batch_the_short_path_does_not_take_fails_as_before(
    columns: dict[str, Any], times: Any, diffs: Any, error: type[Exception], match: str
) -> None:
    flow, inp, cap = _started()
    with pytest.raises(error, match=match):
        inp.update_batch(columns, times=times, diffs=diffs)
    inp.advance_to(6)
    flow.run_until(6)
    assert cap.updates().to_pylist() == [{"a": 1, "b": 1, "time": 0, "diff": 1}]


def test_strided_and_narrow_columns_are_taken_the_general_way() -> None:
    flow, inp, cap = _started()
    wide = np.arange(8, dtype=np.int64)
    inp.update_batch({"a": wide[::2], "b": np.arange(4, dtype=np.int32)}, times=5)
    inp.advance_to(6)
    flow.run_until(6)
    got = [(r["a"], r["b"]) for r in cap.updates().to_pylist()]
    assert got == [(1, 1), (0, 0), (2, 1), (4, 2), (6, 3)]


def test_single_updates_buffered_before_a_batch_come_first() -> None:
    flow, inp, cap = _started()
    inp.update_at((7, 7), 5)
    inp.update_batch({"a": _col(8), "b": _col(8)}, times=_col(6), diffs=_col(2))
    inp.advance_to(7)
    flow.run_until(7)
    got = [(r["a"], r["time"], r["diff"]) for r in cap.updates().to_pylist()]
    assert got == [(1, 0, 1), (7, 5, 1), (8, 6, 2)]
