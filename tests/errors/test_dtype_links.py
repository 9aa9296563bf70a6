"""A first batch whose dtype disagrees with a column the plan puts beside it (a join key, a
concat, a loop variable) is refused at the input, naming both columns and the operator; the
dataflow is not wedged: it keeps what it had accepted and runs on."""

from __future__ import annotations

import numpy as np
import pytest

import ddflow as dd
from ddflow.errors import SchemaTypeError

pytestmark = pytest.mark.timeout(60)


def _join_flow() -> tuple[dd.Dataflow, dd.InputSession, dd.InputSession, dd.Capture]:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k", "x"), name="a")
    bi, b = flow.new_input(("k", "y"), name="b")
    return flow, ai, bi, a.join(b, on="k").capture()


def test_update_at_of_other_key_dtype_is_refused_and_the_flow_runs_on() -> None:
    flow, ai, bi, cap = _join_flow()
    ai.update_at((1, 10), time=0)
    bi.update_at(("one", 20), time=0)
    bi.update_at(("two", 21), time=0)
    with pytest.raises(SchemaTypeError, match=r'column "k" of input "b" has dtype str') as info:
        flow.run_until(1)
    text = str(info.value)
    assert 'column "k" of input "a"' in text and "int64" in text and "join@" in text
    assert any("2 buffered updates" in note for note in info.value.__notes__)
    assert bi.dtypes == {"k": None, "y": None}  # open again
    bi.update_at((1, 20), time=0)
    ai.advance_to(2)
    bi.advance_to(2)
    flow.run_until(2)
    assert cap.updates().to_pylist() == [{"k": 1, "x": 10, "y": 20, "time": 0, "diff": 1}]


def test_update_batch_of_other_key_dtype_is_refused() -> None:
    flow, ai, bi, cap = _join_flow()
    ai.update_batch({"k": np.array([1, 2]), "x": np.array([5, 6])}, times=0)
    with pytest.raises(SchemaTypeError, match=r"str.*int64"):
        bi.update_batch({"k": np.array(["1"], dtype=object), "y": np.array([7])}, times=0)
    assert bi.dtypes == {"k": None, "y": None}
    bi.update_batch({"k": np.array([2]), "y": np.array([7])}, times=0)
    ai.close()
    bi.close()
    flow.run()
    assert cap.updates().to_pylist() == [{"k": 2, "x": 6, "y": 7, "time": 0, "diff": 1}]


def test_concat_inputs_must_agree() -> None:
    flow = dd.Dataflow()
    ai, a = flow.new_input(("v",), name="a")
    bi, b = flow.new_input(("v",), name="b")
    cap = a.concat(b).capture()
    bi.update_batch({"v": np.array([1.5])}, times=0)
    with pytest.raises(SchemaTypeError, match=r'column "v" of input "a" has dtype int64'):
        ai.update_batch({"v": np.array([3])}, times=0)
    ai.update_batch({"v": np.array([3.0])}, times=0)
    ai.close()
    bi.close()
    flow.run()
    assert sorted(r["v"] for r in cap.updates().to_pylist()) == [1.5, 3.0]


def test_unlinked_columns_stay_free() -> None:
    """A column computed by an expression starts a class of its own: nothing is refused."""
    flow = dd.Dataflow()
    ai, a = flow.new_input(("k",), name="a")
    bi, b = flow.new_input(("s",), name="b")
    keyed = b.select(k=dd.lit(1))
    cap = a.join(keyed, on="k").capture()
    ai.update_batch({"k": np.array([1])}, times=0)
    bi.update_batch({"s": np.array(["x"], dtype=object)}, times=0)
    ai.close()
    bi.close()
    flow.run()
    assert cap.updates().num_rows == 1
