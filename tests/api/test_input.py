"""``InputSession`` validation and buffering, checked against a fake engine."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import ddflow as dd

from .conftest import FakeEngine


def _flow() -> tuple[dd.Dataflow, dd.InputSession]:
    flow = dd.Dataflow()
    inp, coll = flow.new_input(("src", "dst"), name="edges")
    coll.capture()
    return flow, inp


def test_single_records_are_pushed_as_one_batch(engines: list[FakeEngine]) -> None:
    flow, inp = _flow()
    inp.update_at((1, 2), time=0, diff=1)
    inp.insert((3, 4))
    inp.update((5, 6), diff=-2)
    inp.remove({"dst": 8, "src": 7}, time=3)
    assert not engines
    flow.step()
    (engine,) = engines
    assert [c[0] for c in engine.calls] == ["push", "step"]
    node, cols, times, diffs = engine.pushes[0]
    assert node == inp.node
    assert [c.tolist() for c in cols] == [[1, 3, 5, 7], [2, 4, 6, 8]]
    assert all(c.dtype == np.int64 for c in cols)
    assert times.shape == (4, 1) and times.dtype == np.int64 and times.flags.c_contiguous
    assert times[:, 0].tolist() == [0, 0, 0, 3]
    assert diffs.tolist() == [1, 1, -2, -1]
    assert engine.plan["time_dims"] == 1
    flow.step()
    assert [c[0] for c in engine.calls] == ["push", "step", "step"], "nothing pushed twice"


def test_advance_flushes_first(engines: list[FakeEngine]) -> None:
    flow, inp = _flow()
    inp.update_at((1, 2), time=4)
    inp.advance_to(5)
    (engine,) = engines
    assert [c[0] for c in engine.calls] == ["push", "advance_input"]
    assert engine.calls[1] == ("advance_input", inp.node, [5])
    assert inp.time == 5
    inp.close()
    assert engine.calls[-1] == ("close_input", inp.node)
    with pytest.raises(dd.DdflowError, match="closed"):
        inp.insert((1, 1))


def test_times_behind_the_frontier(engines: list[FakeEngine]) -> None:
    flow, inp = _flow()
    inp.advance_to(5)
    with pytest.raises(dd.TimeError, match=r"input 'edges'.*time 3.*frontier 5"):
        inp.update_at((1, 2), time=3)
    with pytest.raises(dd.TimeError, match="input 'edges'.*4"):
        inp.update_batch({"src": [1, 2], "dst": [1, 2]}, times=np.array([6, 4]))
    with pytest.raises(dd.TimeError, match="backwards"):
        inp.advance_to(2)
    inp.update_at((1, 2), time=5)
    flow.run_until(6)
    (engine,) = engines
    assert [c[0] for c in engine.calls] == ["advance_input", "push", "run_until"]
    assert engine.pushes[0][2].tolist() == [[5]]


def test_tuple_times(engines: list[FakeEngine]) -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input(("a",))
    inp.update_at(1, time=(0, 1))
    with pytest.raises(dd.DdflowError, match=r"\(2, 2, 2\)"):
        inp.update_at(1, time=(2, 2, 2))
    with pytest.raises(dd.DdflowError):
        inp.update_at(1, time=3)
    inp.advance_to((1, 1))
    with pytest.raises(dd.TimeError):
        inp.update_at(2, time=(0, 5))
    with pytest.raises(dd.TimeError, match="backwards"):
        inp.advance_to((2, 0))
    inp.update_batch({"a": [5, 6]}, times=np.array([[1, 1], [3, 2]]))
    (engine,) = engines
    assert engine.plan["time_dims"] == 2
    assert engine.pushes[-1][2].tolist() == [[1, 1], [3, 2]]


def test_record_arity_and_types(engines: list[FakeEngine]) -> None:
    flow, inp = _flow()
    inp.update_at((1, 2), time=0)
    with pytest.raises(dd.SchemaTypeError, match=r"input 'edges'.*\(1, 2, 3\)"):
        inp.update_at((1, 2, 3), time=0)
    with pytest.raises(dd.SchemaTypeError, match=r"column 'src'.*'bogus'"):
        inp.update_at(("bogus", 2), time=0)
    with pytest.raises(dd.SchemaTypeError, match="column 'dst'.*2.5"):
        inp.update_at((1, 2.5), time=0)
    with pytest.raises(dd.OverflowError, match="column 'src'"):
        inp.update_at((2**63, 1), time=0)
    with pytest.raises(dd.SchemaTypeError, match="diff"):
        inp.update_at((1, 2), time=0, diff=1.0)
    with pytest.raises(dd.InvalidValueError, match="column 'src'.*null word"):
        inp.update_at((-(2**63), 2), time=0)
    with pytest.raises(dd.SchemaTypeError, match="column 'dst'.*float64"):
        inp.update_batch({"src": [5], "dst": [2.5]}, times=0)
    with pytest.raises(dd.SchemaTypeError, match="missing columns.*dst"):
        inp.update_batch({"src": [5]}, times=0)
    with pytest.raises(dd.ColumnNotFoundError, match="unknown columns.*x"):
        inp.update_batch({"src": [5], "dst": [1], "x": [1]}, times=0)
    with pytest.raises(dd.InvalidValueError, match="column 'src'.*row 1.*null word"):
        inp.update_batch({"src": pa.array([5, -(2**63)]), "dst": pa.array([1, 2])}, times=0)
    with pytest.raises(dd.ShapeError, match="column 'dst'"):
        inp.update_batch({"src": [5, 6], "dst": [1]}, times=0)
    with pytest.raises(dd.ShapeError, match="diffs"):
        inp.update_batch({"src": [5, 6], "dst": [1, 2]}, times=0, diffs=np.array([1]))
    inp.update_at((3, 4), time=1)
    flow.step()
    (engine,) = engines
    assert len(engine.pushes) == 1, "rejected updates never reach the engine"
    assert [c.tolist() for c in engine.pushes[0][1]] == [[1, 3], [2, 4]]


def test_dtypes_fixed_by_first_update_or_declared(engines: list[FakeEngine]) -> None:
    flow = dd.Dataflow()
    inp, _ = flow.new_input(("k", "name"))
    typed, _ = flow.new_input({"x": "float64", "flag": bool}, name="typed")
    with pytest.raises(dd.SchemaTypeError):
        inp.update_at((1, 2, 3), time=0)
    assert inp.dtypes == {"k": None, "name": None}, "a rejected record fixes nothing"
    inp.update_at((1, "a"), time=0)
    assert inp.dtypes == {"k": "int64", "name": "str"}
    with pytest.raises(dd.SchemaTypeError, match="column 'name'"):
        inp.update_batch({"k": [1], "name": [2]}, times=0)
    inp.update_batch({"k": np.array([2]), "name": np.array(["b"])}, times=0)
    typed.insert((1, True))
    with pytest.raises(dd.SchemaTypeError, match="column 'flag'"):
        typed.insert((1.0, 1))
    typed.update_batch(pa.table({"x": [1, 2], "flag": [True, False]}))
    flow.step()
    engine = engines[0]
    # The fully declared input fixed its dtypes with an empty batch when the engine started.
    declared = [p for p in engine.pushes if len(p[1][0]) == 0]
    assert [[a.dtype for a in p[1]] for p in declared] == [[np.float64, np.bool_]]
    first, batch, single, table = [p for p in engine.pushes if len(p[1][0]) > 0]
    assert single[1][0].dtype == np.float64 and single[1][1].dtype == np.bool_
    assert table[1][0].tolist() == [1.0, 2.0] and table[1][0].dtype == np.float64
    assert batch[1][1].dtype == object and first[1][1].tolist() == ["a"]


def test_batch_forms(engines: list[FakeEngine]) -> None:
    flow, inp = _flow()
    inp.update_batch([np.array([1, 2]), np.array([3, 4])])
    inp.update_batch({"src": [5], "dst": [6]}, times=7, diffs=-3)
    inp.update_batch({"src": np.array([], dtype=np.int64), "dst": np.array([], np.int64)})
    (engine,) = engines
    assert len(engine.pushes) == 2
    _, _, times, diffs = engine.pushes[0]
    assert times.tolist() == [[0], [0]] and diffs.tolist() == [1, 1]
    _, _, times, diffs = engine.pushes[1]
    assert times.tolist() == [[7]] and diffs.tolist() == [-3]


def test_fast_path_keeps_every_check(engines: list[FakeEngine]) -> None:
    flow, inp = _flow()
    inp.update_at((1, 2), time=0)
    inp.update_at((3, 4), time=7, diff=2)
    inp.advance_to(5)
    with pytest.raises(dd.TimeError):
        inp.update_at((1, 2), time=4)
    with pytest.raises(dd.OverflowError):
        inp.update_at((1, 2**63), time=6)
    with pytest.raises(dd.OverflowError):
        inp.update_at((1, 2), time=6, diff=-(2**63) - 1)
    with pytest.raises(dd.SchemaTypeError):
        inp.update_at((1, True), time=6)
    with pytest.raises(dd.SchemaTypeError):
        inp.update_at((1, 2), time=6, diff=True)
    inp.update_at((5, 6), time=5)
    inp.update_at([7, np.int64(8)], time=np.int64(9))
    inp.close()
    with pytest.raises(dd.DdflowError, match="closed"):
        inp.update_at((1, 2), time=10)
    (engine,) = engines
    pushed = [
        (list(zip(*(c.tolist() for c in p[1]), strict=True)), p[2][:, 0].tolist(), p[3].tolist())
        for p in engine.pushes
    ]
    assert pushed == [
        ([(1, 2), (3, 4)], [0, 7], [1, 2]),
        ([(5, 6), (7, 8)], [5, 9], [1, 1]),
    ]
