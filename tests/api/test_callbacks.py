"""The callback dispatcher: payload conversion, result validation, exception notes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ddflow as dd
from ddflow.callbacks import Dispatcher, ReduceBatch, Registered


def _dispatch(kind: str, fn: Any, payload: Any, **kw: Any) -> Any:
    d = Dispatcher()
    fn_id = d.register(Registered(kind, fn, f"{kind.removesuffix('_py')}@x.py:1", **kw))
    return d(fn_id, kind, payload)


def _batch() -> dict[str, np.ndarray]:
    return {"a": np.array([1, 2, 3]), "s": np.array(["x", "y", "z"], dtype=object)}


def test_map_results() -> None:
    double = lambda b: {"d": b["a"] * 2, "t": b["s"]}  # noqa: E731
    out = _dispatch("map_py", double, _batch(), columns=("d", "t"))
    assert list(out) == ["d", "t"] and out["d"].tolist() == [2, 4, 6]
    assert out["t"].dtype == object
    out = _dispatch("map_py", lambda b: (b["a"],), _batch(), columns=("only",))
    assert out["only"].tolist() == [1, 2, 3]
    out = _dispatch("map_py", lambda b: {"t": b["a"], "d": b["a"]}, _batch(), columns=("d", "t"))
    assert list(out) == ["d", "t"], "returned in the declared order"
    with pytest.raises(dd.UserFunctionError, match=r"map@x\.py:1.*missing \['t'\]"):
        _dispatch("map_py", lambda b: {"d": b["a"]}, _batch(), columns=("d", "t"))
    with pytest.raises(dd.UserFunctionError, match="column 'd' has 2 rows.*3"):
        _dispatch("map_py", lambda b: {"d": b["a"][:2]}, _batch(), columns=("d",))
    with pytest.raises(dd.UserFunctionError, match="column 'd'.*unsupported dtype"):
        _dispatch("map_py", lambda b: {"d": b["a"] * 1j}, _batch(), columns=("d",))
    with pytest.raises(dd.UserFunctionError, match="must return a dict"):
        _dispatch("map_py", lambda b: 5, _batch(), columns=("d",))


def test_flat_map_rows_column() -> None:
    def fn(b: dict[str, np.ndarray]) -> dict[str, Any]:
        return {"x": np.repeat(b["a"], 2), "__row__": np.repeat(np.arange(3), 2)}

    out = _dispatch("flat_map_py", fn, _batch(), columns=("x",))
    assert out["x"].tolist() == [1, 1, 2, 2, 3, 3] and out["__row__"].tolist() == [0, 0, 1, 1, 2, 2]
    with pytest.raises(dd.UserFunctionError, match="__row__"):
        _dispatch("flat_map_py", lambda b: {"x": b["a"]}, _batch(), columns=("x",))
    with pytest.raises(dd.UserFunctionError, match="row index 3"):
        _dispatch(
            "flat_map_py", lambda b: {"x": b["a"], "__row__": [1, 2, 3]}, _batch(), columns=("x",)
        )


def test_filter_results() -> None:
    assert _dispatch("filter_py", lambda b: b["a"] > 1, _batch()).tolist() == [False, True, True]
    with pytest.raises(dd.UserFunctionError, match="bool array"):
        _dispatch("filter_py", lambda b: b["a"], _batch())
    with pytest.raises(dd.UserFunctionError, match="bool array"):
        _dispatch("filter_py", lambda b: np.array([True]), _batch())


def _reduce_payload() -> dict[str, Any]:
    return {
        "keys": {"k": np.array([1, 2])},
        "offsets": np.array([0, 2, 3]),
        "values": {"v": np.array([5, 7, 9])},
        "counts": np.array([1, -1, 2]),
    }


def test_python_reducer() -> None:
    def total(batch: ReduceBatch) -> dict[str, Any]:
        assert len(batch) == 2
        sums = [int((v["v"] * c).sum()) for _, v, c in batch.groups()]
        return {"offsets": np.arange(3), "total": np.array(sums)}

    out = _dispatch("reduce_py", total, _reduce_payload(), columns=("total",))
    assert list(out) == ["__offsets__", "total"]
    assert out["__offsets__"].tolist() == [0, 1, 2] and out["total"].tolist() == [-2, 18]

    def bad_offsets(batch: ReduceBatch) -> dict[str, Any]:
        return {"offsets": np.arange(2), "total": np.array([1])}

    with pytest.raises(dd.UserFunctionError, match=r"reduce@x\.py:1.*'offsets'"):
        _dispatch("reduce_py", bad_offsets, _reduce_payload(), columns=("total",))

    def bad_length(batch: ReduceBatch) -> dict[str, Any]:
        return {"offsets": np.arange(3), "total": np.array([1, 2, 3])}

    with pytest.raises(dd.UserFunctionError, match="column 'total' has 3 rows"):
        _dispatch("reduce_py", bad_length, _reduce_payload(), columns=("total",))

    def with_count(batch: ReduceBatch) -> dict[str, Any]:
        return {"offsets": np.array([0, 1, 1]), "total": [4], "count": [3]}

    out = _dispatch("reduce_py", with_count, _reduce_payload(), columns=("total",))
    assert out["__count__"].tolist() == [3]
    as_column = _dispatch("reduce_py", with_count, _reduce_payload(), columns=("total", "count"))
    assert as_column["count"].tolist() == [3] and "__count__" not in as_column


def test_threshold() -> None:
    calls: list[int] = []

    def positive(c: int) -> int:
        calls.append(int(c))
        return 1 if c > 0 else 0

    counts = np.array([3, -1, 3, 0, 3])
    out = _dispatch("threshold_py", positive, counts, vectorized=False)
    assert out.tolist() == [1, 0, 1, 0, 1] and out.dtype == np.int64
    assert sorted(calls) == [-1, 0, 3], "called once per distinct count"
    numpy_style = _dispatch("threshold_py", lambda c: np.where(c > 0, 1, 0), counts)
    assert numpy_style.tolist() == [1, 0, 1, 0, 1]
    vec = _dispatch("threshold_py", lambda c: np.minimum(c, 1), counts, vectorized=True)
    assert vec.tolist() == [1, -1, 1, 0, 1]
    with pytest.raises(dd.UserFunctionError, match="must return an int"):
        _dispatch("threshold_py", lambda c: 0.5, counts, vectorized=False)


def test_inspect() -> None:
    seen: list[Any] = []
    payload = {
        "columns": {"a": np.array([1, 2])},
        "time": np.array([[0, 1], [2, 0]]),
        "diff": np.array([1, -1]),
    }
    _dispatch("inspect_py", lambda *u: seen.append(u), payload, batch=False)
    assert seen == [((1,), (0, 1), 1), ((2,), (2, 0), -1)]
    assert _dispatch("inspect_py", seen.append, payload, batch=True) is None
    assert list(seen[-1]) == ["a", "time", "diff"]


class Boom(Exception):
    pass


def test_user_exceptions_propagate_with_a_note() -> None:
    def fn(b: dict[str, np.ndarray]) -> dict[str, Any]:
        raise Boom("bad")

    with pytest.raises(Boom) as ei:
        _dispatch("map_py", fn, _batch(), columns=("d",))
    assert type(ei.value) is Boom
    assert any("map@x.py:1" in note for note in ei.value.__notes__)


def test_kind_mismatch_is_reported() -> None:
    d = Dispatcher()
    fn_id = d.register(Registered("map_py", lambda b: b, "map@x.py:1", columns=("a",)))
    with pytest.raises(dd.UserFunctionError, match="map_py"):
        d(fn_id, "filter_py", _batch())


def test_row_functions() -> None:
    flow = dd.Dataflow()
    _, c = flow.new_input(("a", "b"))
    m = c.map_rows(lambda r: (r[0] + r[1], r[0]), columns=("s", "a"))
    f = c.filter_rows(lambda r: r[0] > 1)
    fm = c.flat_map_rows(lambda r: [(r[0],)] * r[1], columns=("a",))
    batch = {"a": np.array([1, 2]), "b": np.array([10, 2])}
    nodes = flow.plan()["nodes"]
    d = flow.builder.functions
    assert d(nodes[m.node]["fn"], "map_py", batch)["s"].tolist() == [11, 4]
    assert d(nodes[f.node]["fn"], "filter_py", batch).tolist() == [False, True]
    out = d(nodes[fm.node]["fn"], "flat_map_py", batch)
    assert out["a"].tolist() == [1] * 10 + [2, 2]
    assert out["__row__"].tolist() == [0] * 10 + [1, 1]
    with pytest.raises(dd.UserFunctionError, match=r"map_rows@test_callbacks\.py"):
        bad = c.map_rows(lambda r: (1, 2, 3))
        d(flow.plan()["nodes"][bad.node]["fn"], "map_py", batch)
