"""Single updates handed to the engine as Python rows equal the same updates as columns.

``update_at`` buffers rows; a flush hands int64 rows to the engine as they are, and any other
row (a null, a float, a string, an int outside int64) sends the whole buffer the general way,
as numpy columns. Random rows (tuples, lists and dicts; ints, numpy ints and nulls;
one- and two-coordinate times) fed one by one must give exactly the history that
``update_batch`` gives for the same rows, and an int64 overflow is refused with nothing lost.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import ddflow, requires_engine

pytestmark = [requires_engine, pytest.mark.timeout(120)]

INT64_MAX = 2**63 - 1

# -2**63 is int64's null word, refused as a value (tested below it with an int past int64).
_values = st.one_of(st.integers(-(2**63) + 1, INT64_MAX), st.integers(-5, 5).map(np.int64))


def _row(draw: Any, nullable: bool) -> tuple[Any, Any]:
    a = draw(_values)
    b = draw(st.one_of(_values, st.none()) if nullable else _values)
    return a, b


@st.composite
def _histories(draw: Any) -> tuple[int, list[tuple[Any, Any, tuple[int, ...], int]]]:
    dims = draw(st.sampled_from([1, 2]))
    nullable = draw(st.booleans())
    n = draw(st.integers(1, 12))
    updates = []
    for _ in range(n):
        a, b = _row(draw, nullable)
        time = tuple(draw(st.integers(0, 3)) for _ in range(dims))
        diff = draw(st.sampled_from([1, -1, 2]))
        updates.append((a, b, time, diff))
    return dims, updates


def _history(cap: Any) -> list[tuple[Any, ...]]:
    return sorted(cap.updates().to_pylist(), key=repr)


def _run(dims: int, feed: Any) -> list[tuple[Any, ...]]:
    dd = ddflow()
    flow = dd.Dataflow(time_dims=dims)
    inp, coll = flow.new_input({"a": "int64", "b": "int64"})
    cap = coll.capture()
    feed(inp)
    inp.close()
    flow.run()
    return _history(cap)


@settings(max_examples=40, deadline=None)
@given(_histories(), st.sampled_from(["tuple", "list", "dict"]))
def test_rows_fed_one_by_one_equal_the_same_columns(
    history: tuple[int, list[tuple[Any, Any, tuple[int, ...], int]]], shape: str
) -> None:
    dims, updates = history

    def one_by_one(inp: Any) -> None:
        for a, b, time, diff in updates:
            record: Any = {"tuple": (a, b), "list": [a, b], "dict": {"a": a, "b": b}}[shape]
            inp.update_at(record, time=time if dims > 1 else time[0], diff=diff)

    def as_columns(inp: Any) -> None:
        inp.update_batch(
            {
                "a": [int(a) for a, _, _, _ in updates],
                "b": [None if b is None else int(b) for _, b, _, _ in updates],
            },
            times=np.array([t for _, _, t, _ in updates], dtype=np.int64).reshape(
                len(updates), dims
            ),
            diffs=np.array([d for _, _, _, d in updates], dtype=np.int64),
        )

    assert _run(dims, one_by_one) == _run(dims, as_columns)


def test_an_int_outside_int64_is_refused_and_nothing_buffered_is_lost() -> None:
    dd = ddflow()
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"a": "int64"})
    cap = coll.capture()
    inp.update_at((1,), time=0)
    with pytest.raises(dd.DdflowError, match="int64"):
        inp.update_at((INT64_MAX + 1,), time=0)
    inp.update_at((2,), time=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert sorted(r["a"] for r in cap.at(0).to_pylist()) == [1, 2]
