"""Bad input raises a ``DdflowError`` and loses nothing accepted before.

Each kind of bad input (a time behind the input's ``advance_to``, ``advance_to`` going
backwards, a record of the wrong arity or types, a reducer returning the wrong shape, an
expression naming a missing column) raises a ``ddflow.DdflowError`` subclass whose message
names the operator or input, the column and the value; afterwards the same flow accepts more
input and its outputs equal what the accepted input alone gives.

Once a record is inside the dataflow, errors are data: a user function that raises
(or returns something malformed) on some records makes those records *error updates*; the run
goes on, reading an output where the error is live raises ``DataError`` naming the operator, the
exception and the values, and retracting the record retracts the error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from . import model as m
from .conftest import captured_at, ddflow, reduce_python, requires_engine

pytestmark = requires_engine


def _flow() -> tuple[Any, Any, Any]:
    """A flow with input ``(src, dst)`` and a capture of ``select(src, dst, s=src+dst)``."""
    dd = ddflow()
    flow = dd.Dataflow(workers=1)
    inp, edges = flow.new_input(("src", "dst"))
    cap = edges.with_columns(s=dd.col("src") + dd.col("dst")).capture()
    return flow, inp, cap


def _at(cap: Any, t: int) -> m.Counts:
    return captured_at(cap, (t,), ("src", "dst", "s"))


def _rows(*pairs: tuple[int, int]) -> m.Counts:
    return {(a, b, a + b): 1 for a, b in pairs}


def _message(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    return str(excinfo.value)


def test_update_behind_advance_to() -> None:
    dd = ddflow()
    flow, inp, cap = _flow()
    inp.update_at((1, 2), time=0, diff=1)
    inp.advance_to(5)
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_at((7, 8), time=3, diff=1)
    msg = _message(ei)
    assert "input" in msg.lower() and "3" in msg and "5" in msg, msg
    with pytest.raises(dd.DdflowError):
        inp.update_batch(
            {"src": np.array([7, 9]), "dst": np.array([8, 9])},
            times=np.array([6, 4], dtype=np.int64),
            diffs=np.array([1, 1], dtype=np.int64),
        )
    inp.update_at((3, 4), time=5, diff=1)
    inp.advance_to(6)
    flow.run_until(6)
    assert _at(cap, 4) == _rows((1, 2))
    assert _at(cap, 5) == _rows((1, 2), (3, 4))
    inp.close()
    flow.run()
    assert _at(cap, 9) == _rows((1, 2), (3, 4)), "a rejected batch was partly accepted"


def test_advance_to_backwards() -> None:
    dd = ddflow()
    flow, inp, cap = _flow()
    inp.update_at((1, 2), time=0, diff=1)
    inp.advance_to(5)
    with pytest.raises(dd.DdflowError) as ei:
        inp.advance_to(3)
    msg = _message(ei)
    assert "input" in msg.lower() and "3" in msg and "5" in msg, msg
    inp.update_at((3, 4), time=5, diff=1)
    inp.advance_to(7)
    flow.run_until(7)
    assert _at(cap, 6) == _rows((1, 2), (3, 4))
    with pytest.raises(dd.DdflowError):
        inp.advance_to(6)
    assert _at(cap, 0) == _rows((1, 2))


def test_time_of_another_shape() -> None:
    dd = ddflow()
    flow, inp, cap = _flow()
    inp.update_at((1, 2), time=0, diff=1)
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_at((5, 6), time=(1, 1), diff=1)
    assert "(1, 1)" in _message(ei), _message(ei)
    inp.close()
    flow.run()
    assert _at(cap, 3) == _rows((1, 2))


def test_record_with_wrong_arity() -> None:
    dd = ddflow()
    flow, inp, cap = _flow()
    inp.update_at((1, 2), time=0, diff=1)
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_at((1, 2, 3), time=1, diff=1)
    msg = _message(ei)
    assert "input" in msg.lower() and "1, 2, 3" in msg, msg
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_at((9,), time=1, diff=1)
    assert "9" in _message(ei), _message(ei)
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_batch(
            {"src": np.array([4])},
            times=np.array([1], dtype=np.int64),
            diffs=np.array([1], dtype=np.int64),
        )
    assert "dst" in _message(ei), _message(ei)
    inp.update_at((3, 4), time=1, diff=1)
    inp.close()
    flow.run()
    assert _at(cap, 1) == _rows((1, 2), (3, 4))


def test_record_with_wrong_types() -> None:
    dd = ddflow()
    flow, inp, cap = _flow()
    inp.update_at((1, 2), time=0, diff=1)
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_at(("bogus", 2), time=1, diff=1)
    msg = _message(ei)
    assert "input" in msg.lower() and "src" in msg and "bogus" in msg, msg
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_batch(
            {"src": np.array([5]), "dst": np.array([2.5])},
            times=np.array([1], dtype=np.int64),
            diffs=np.array([1], dtype=np.int64),
        )
    msg = _message(ei)
    assert "dst" in msg and ("2.5" in msg or "float" in msg), msg
    with pytest.raises(dd.DdflowError) as ei:
        inp.update_batch(
            {"src": pa.array([5, -(2**63)], pa.int64()), "dst": pa.array([1, 2], pa.int64())},
            times=np.array([1, 1], dtype=np.int64),
            diffs=np.array([1, 1], dtype=np.int64),
        )
    msg = _message(ei)
    assert "src" in msg and "null" in msg.lower(), msg
    inp.update_batch(
        {"src": np.array([3, 5]), "dst": np.array([4, 6])},
        times=np.array([1, 2], dtype=np.int64),
        diffs=np.array([1, 1], dtype=np.int64),
    )
    inp.close()
    flow.run()
    assert _at(cap, 0) == _rows((1, 2))
    assert _at(cap, 2) == _rows((1, 2), (3, 4), (5, 6))


def test_expression_naming_a_missing_column() -> None:
    """Column names are known when the plan is built: the bad operator is refused there."""
    dd = ddflow()
    flow, inp, cap = _flow()
    inp2, other = flow.new_input(("a", "b"))
    checks = [
        ("select", lambda: other.select(x=dd.col("nope") + 1)),
        ("filter", lambda: other.filter(dd.col("nope") > 1)),
        ("with_columns", lambda: other.with_columns(c=dd.col("a") * dd.col("nope"))),
        ("reduce", lambda: other.reduce(by="nope", agg=dd.min("b"))),
        ("reduce", lambda: other.reduce(by="a", agg=dd.sum("nope"))),
        ("join", lambda: other.join(other.select(c=dd.col("a")), on="nope")),
    ]
    for op, build in checks:
        with pytest.raises(dd.DdflowError) as ei:
            build()
        msg = _message(ei)
        assert "nope" in msg and op in msg.lower(), f"{op}: {msg}"
    good = other.select(x=dd.col("a") + dd.col("b")).capture()
    inp.update_at((1, 2), time=0, diff=1)
    inp2.update_at((5, 6), time=0, diff=1)
    inp.close()
    inp2.close()
    flow.run()
    assert _at(cap, 0) == _rows((1, 2))
    assert captured_at(good, (0,), ("x",)) == {(11,): 1}


class Boom(Exception):
    """A user function's own exception type."""


def test_python_exception_in_map_is_an_error_update() -> None:
    dd = ddflow()
    flow = dd.Dataflow(workers=1)
    inp, coll = flow.new_input(("k", "v"))

    def fn(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if (cols["v"] == 99).any():
            raise Boom("user function failed on 99")
        return {"k": cols["k"], "v2": cols["v"] * 2}

    cap = coll.map(fn).capture()
    inp.update_at((1, 10), time=0, diff=1)
    inp.advance_to(1)
    flow.run_until(1)
    inp.update_at((2, 99), time=1, diff=1)
    inp.update_at((3, 4), time=1, diff=1)
    inp.advance_to(2)
    flow.run_until(2)
    with pytest.raises(dd.DataError) as ei:
        cap.at(1)
    msg = _message(ei)
    assert "map@" in msg and "Boom: user function failed on 99" in msg and "v=99" in msg, msg
    assert captured_at(cap, (0,), ("k", "v2")) == {(1, 20): 1}
    inp.update_at((2, 99), time=2, diff=-1)
    inp.close()
    flow.run()
    assert captured_at(cap, (2,), ("k", "v2")) == {(1, 20): 1, (3, 8): 1}


def _reducer(state: dict[str, str]) -> Any:
    """Per key: one row ``(total,)`` = sum of values with positive count; misbehaves on 99."""

    def reducer(batch: Any) -> dict[str, Any]:
        get = (lambda n: batch[n]) if isinstance(batch, dict) else (lambda n: getattr(batch, n))
        offsets = np.asarray(get("offsets"), dtype=np.int64)
        vals = np.asarray(get("values")["v"], dtype=np.int64)
        counts = np.asarray(get("counts"), dtype=np.int64)
        totals = [
            int(vals[lo:hi][counts[lo:hi] > 0].sum())
            for lo, hi in zip(offsets[:-1], offsets[1:], strict=True)
        ]
        out_offsets = np.arange(len(totals) + 1, dtype=np.int64)
        total = np.array(totals, dtype=np.int64)
        if (vals == 99).any():
            if state["mode"] == "offsets":
                out_offsets = out_offsets[:-1]
            elif state["mode"] == "length":
                total = np.append(total, 0)
            elif state["mode"] == "raise":
                raise Boom("reducer failed")
        return {"offsets": out_offsets, "total": total}

    return reducer


@pytest.mark.parametrize("mode", ["offsets", "length", "raise"])
def test_reducer_misbehaving(mode: str) -> None:
    dd = ddflow()
    flow = dd.Dataflow(workers=1)
    inp, coll = flow.new_input(("k", "v"))
    state = {"mode": "ok"}
    cap = reduce_python(coll, "k", _reducer(state), ("total",)).capture()
    inp.update_at((1, 10), time=0, diff=1)
    inp.update_at((1, 5), time=0, diff=1)
    inp.update_at((2, 7), time=0, diff=1)
    inp.advance_to(1)
    flow.run_until(1)
    state["mode"] = mode
    inp.update_at((1, 99), time=1, diff=1)
    inp.advance_to(2)
    flow.run_until(2)
    with pytest.raises(dd.DataError) as ei:
        cap.at(1)
    msg = _message(ei)
    what = {"raise": "Boom: reducer failed", "offsets": "offsets", "length": "total"}[mode]
    assert "reduce" in msg.lower() and what in msg and "k=1" in msg, msg
    assert [e["values"] for e in ei.value.errors] == ["k=1"]
    assert captured_at(cap, (0,), ("k", "total")) == {(1, 15): 1, (2, 7): 1}
    # The reducer still misbehaves on 99: retracting the record is what clears the error.
    inp.update_at((1, 99), time=2, diff=-1)
    inp.update_at((2, 1), time=2, diff=1)
    inp.close()
    flow.run()
    assert captured_at(cap, (2,), ("k", "total")) == {(1, 15): 1, (2, 8): 1}
