"""Fuzz targets for the native module's readers: the plan JSON reader and the batch decoders.

Plans: valid plans of small random dataflows, then mutated (a key dropped, a value replaced
by another JSON value, a node reference out of range, a node duplicated), go to the native
``Engine`` constructor. Batches: columns of every numpy dtype and layout (narrow and wide
ints, uint64 past int64, float32, NaN, object arrays of mixed values, 2-D arrays, str and bytes
arrays, datetimes), with times and diffs of wrong shapes, dtypes or signs, go to
``Engine.push`` (of an input, another node, or a node id past the plan's), then the engine
runs. Every outcome is a result or a ``DdflowError`` that is
not an ``InternalError`` (a panic caught at the boundary): never a crash, a hang or another
exception.
"""

from __future__ import annotations

import copy
import json
from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ddflow as dd
from ddflow import _core
from ddflow.callbacks import Dispatcher

pytestmark = pytest.mark.timeout(120)

SETTINGS = settings(
    max_examples=60,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


def _plans() -> list[dict[str, Any]]:
    """The plans of a few dataflows that cover the common operators."""
    out = []
    for shape in range(4):
        flow = dd.Dataflow()
        _, a = flow.new_input({"k": "int64", "v": "float64", "s": "str"})
        _, b = flow.new_input({"k": "int64", "w": "str"})
        if shape == 0:
            c = a.filter(dd.col("v") > 1).select("k", y=dd.col("v") * 2 + dd.col("k"))
        elif shape == 1:
            c = a.join(b, on="k").group_by("k").agg(n=dd.count(), m=dd.max("v"))
        elif shape == 2:
            c = a.select("k").iterate(lambda x: x.concat(x.select(k=dd.col("k") + 1)).distinct())
        else:
            c = a.antijoin(b, on="k").count(by="s")
        c.capture()
        out.append(json.loads(flow.builder.plan.dumps(1)))
    return out


PLANS = _plans()

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indices) to a value inside a JSON document."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_plans(draw: st.DrawFn) -> str:
    plan = copy.deepcopy(draw(st.sampled_from(PLANS)))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(plan) if p]
        path = draw(st.sampled_from(paths))
        parent = plan
        for key in path[:-1]:
            parent = parent[key]
        how = draw(st.sampled_from(["replace", "drop", "reference", "duplicate"]))
        last = path[-1]
        if how == "replace":
            parent[last] = draw(JSON_VALUES)
        elif how == "drop":
            del parent[last]
        elif how == "reference":
            parent[last] = draw(st.sampled_from([-1, 0, 1, 99, 2**40]))
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
    return json.dumps(plan)


def _no_callback(fn_id: int, kind: str, payload: Any) -> Any:
    raise AssertionError("no user functions in these plans")


def _settle(engine: Any, inputs: list[int]) -> None:
    for node in inputs:
        engine.close_input(node)
    engine.run()


@SETTINGS
@given(text=mutated_plans())
def test_the_plan_reader_accepts_or_refuses_any_plan(text: str) -> None:
    try:
        engine = _core.Engine(text, 1, _no_callback)
    except dd.DdflowError as exc:
        assert not isinstance(exc, dd.InternalError), exc
        return
    inputs = [n["id"] for n in json.loads(text)["nodes"] if n.get("op") == "input"]
    try:
        _settle(engine, inputs)
    except dd.DdflowError as exc:
        assert not isinstance(exc, dd.InternalError), exc


def _column(kind: str, n: int, draw: st.DrawFn) -> Any:
    ints = st.integers(-(2**63), 2**63 - 1)
    if kind == "int64":
        return np.array(draw(st.lists(ints, min_size=n, max_size=n)), dtype=np.int64)
    if kind == "int8":
        return np.array(draw(st.lists(st.integers(-128, 127), min_size=n, max_size=n)), np.int8)
    if kind == "uint64":
        big = st.integers(0, 2**64 - 1)
        return np.array(draw(st.lists(big, min_size=n, max_size=n)), dtype=np.uint64)
    if kind == "float32":
        return np.array(draw(st.lists(st.floats(width=32), min_size=n, max_size=n)), np.float32)
    if kind == "float64":
        return np.array(draw(st.lists(st.floats(), min_size=n, max_size=n)), dtype=np.float64)
    if kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    if kind == "str":
        texts = st.lists(st.text(max_size=4), min_size=n, max_size=n)
        return np.array(draw(texts), dtype=object)
    if kind == "unicode":
        return np.array(draw(st.lists(st.text(max_size=4), min_size=n, max_size=n)))
    if kind == "bytes":
        return np.array(draw(st.lists(st.binary(max_size=4), min_size=n, max_size=n)))
    if kind == "mixed":
        mixed = st.one_of(st.none(), st.integers(), st.text(max_size=2), st.floats())
        arr = np.empty(n, dtype=object)
        arr[:] = draw(st.lists(mixed, min_size=n, max_size=n))
        return arr
    if kind == "2d":
        return np.zeros((n, 2), dtype=np.int64)
    if kind == "datetime":
        return np.array(["2020-01-01"] * n, dtype="datetime64[D]")
    return [1] * n  # a list, not an array


KINDS = [
    "int64",
    "int8",
    "uint64",
    "float32",
    "float64",
    "bool",
    "str",
    "unicode",
    "bytes",
    "mixed",
    "2d",
    "datetime",
    "list",
]


@st.composite
def batches(draw: st.DrawFn) -> tuple[int, list[Any], Any, Any]:
    n = draw(st.integers(0, 5))
    columns = [
        _column(draw(st.sampled_from(KINDS)), n + draw(st.sampled_from([0, 0, 0, 1])), draw)
        for _ in range(draw(st.sampled_from([3, 3, 3, 2, 4])))
    ]
    times = draw(
        st.sampled_from(
            [
                np.zeros((n, 1), dtype=np.int64),
                np.arange(n, dtype=np.int64).reshape(n, 1),
                np.full((n, 1), -1, dtype=np.int64),
                np.zeros((n, 2), dtype=np.int64),
                np.zeros(n, dtype=np.int64),
                np.zeros((n, 1), dtype=np.float64),
                np.zeros((n + 1, 1), dtype=np.int64),
            ]
        )
    )
    diffs = draw(
        st.sampled_from(
            [
                np.ones(n, dtype=np.int64),
                np.full(n, 2**63 - 1, dtype=np.int64),
                np.ones(n, dtype=np.float64),
                np.ones(n + 1, dtype=np.int64),
                np.ones((n, 1), dtype=np.int64),
            ]
        )
    )
    node = draw(st.sampled_from([0, 0, 0, 1, 5, 2**40]))
    return node, columns, times, diffs


@SETTINGS
@given(batch=batches())
def test_the_batch_decoders_accept_or_refuse_any_batch(
    batch: tuple[int, list[Any], Any, Any],
) -> None:
    node, columns, times, diffs = batch
    flow = dd.Dataflow()
    _, a = flow.new_input(("k", "v", "s"))
    a.count(by="k").capture()
    a.select(t=dd.col("v")).capture()
    engine = _core.Engine(flow.builder.plan.dumps(1), 1, Dispatcher())
    try:
        engine.push(node, columns, times, diffs)
    except dd.DdflowError as exc:
        assert not isinstance(exc, dd.InternalError), exc
    try:
        _settle(engine, [0])
    except dd.DdflowError as exc:
        assert not isinstance(exc, dd.InternalError), exc


@pytest.mark.parametrize("depth", [300, 5_000, 1_000_000])
def test_plan_json_nested_too_deep_is_a_plan_error(depth: int) -> None:
    """An expression nested past the engine's limit, and JSON nested anywhere past the
    reader's, are refused before anything recurses on them."""
    plan = PLANS[0]
    node = next(n for n in plan["nodes"] if n["op"] == "select")
    deep = '{"op":"neg","arg":' * depth + '{"op":"col","name":"k"}' + "}" * depth
    text = json.dumps(plan).replace(json.dumps(node["exprs"][0]), deep, 1)
    with pytest.raises(dd.PlanError, match="nest"):
        _core.Engine(text, 1, _no_callback)
    junk = json.dumps(plan).replace(
        '"label"', '"junk":' + "[" * depth + "]" * depth + ',"label"', 1
    )
    if depth > 576:
        with pytest.raises(dd.PlanError, match="nests .* levels deep"):
            _core.Engine(junk, 1, _no_callback)
