"""The operator catalogue agrees everywhere: the engine's plan types (``_core.PLAN_OPERATORS``,
derived from the Rust ``plan::Op`` enum), the Python plan builders (``ddflow.plan``'s
``OpSpec`` classes), the Spark backend's registry and the brute-force model's cases.

Adding an operator to one of them and not the others fails here, naming what is missing.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import ddflow as dd
from ddflow import _core
from ddflow import plan as plan_module

from .test_operators_vs_model import CASES, INPUTS, new_flow

# Operators the model's cases do not build, each with where its semantics are checked.
NOT_IN_MODEL_CASES = {
    "probe": "tests/api/test_plan.py, tests/engine/test_traces.py",
    "inspect_py": "tests/api/test_callbacks.py (passes updates through unchanged)",
    "import_trace": "tests/engine/test_traces.py (another dataflow's arrangement)",
    "advance_iteration": "tests/engine/test_time_programming.py, against the model",
    "delay": "tests/engine/test_time_programming.py, against the model",
    "watermark": "tests/eventtime, against a recompute from scratch at every time",
    "temporal_filter": "tests/eventtime/test_temporal_filter.py, against a recompute at every time",
    "constant": "tests/engine/test_constant.py, against its rows and a recompute from scratch",
}


def _plan_classes() -> dict[str, type[plan_module.OpSpec]]:
    classes: dict[str, type[plan_module.OpSpec]] = {}
    for name in dir(plan_module):
        obj = getattr(plan_module, name)
        if isinstance(obj, type) and issubclass(obj, plan_module.OpSpec):
            if obj is not plan_module.OpSpec:
                classes[obj.OP] = obj
    return classes


def _model_case_plans() -> list[dict[str, Any]]:
    plans = []
    for case in CASES:
        flow = new_flow(1)
        colls = {name: flow.new_input(INPUTS[name])[1] for name in case.inputs}
        case.build(dd, colls).capture()
        plans.append(flow.plan())
    return plans


def test_engine_and_python_builders_name_the_same_operators() -> None:
    engine = set(_core.PLAN_OPERATORS)
    python = set(_plan_classes())
    assert engine - python == set(), "operators without a Python plan class"
    assert python - engine == set(), "Python plan classes the engine does not know"


def test_spark_registry_covers_every_operator() -> None:
    pytest.importorskip("pyspark")
    from ddflow.spark.driver.ops import SPARK_OPS

    engine = set(_core.PLAN_OPERATORS)
    assert engine - set(SPARK_OPS) == set(), "operators without a Spark registry entry"
    assert set(SPARK_OPS) - engine == set(), "Spark registry entries for unknown operators"


def test_model_cases_cover_every_operator() -> None:
    used = {node["op"] for p in _model_case_plans() for node in p["nodes"]}
    engine = set(_core.PLAN_OPERATORS)
    uncovered = engine - used - set(NOT_IN_MODEL_CASES)
    assert uncovered == set(), "operators no model case builds (add a case or a reason)"
    assert set(NOT_IN_MODEL_CASES) <= engine, "reasons given for unknown operators"
    stale = set(NOT_IN_MODEL_CASES) & used
    assert stale == set(), "operators listed as uncovered that a case builds"


def test_python_nodes_survive_the_engine_round_trip_field_for_field() -> None:
    # The engine parses each node into its typed plan::Op and writes it back: a field the
    # Python builder writes that the engine does not know would disappear, and a field the
    # engine has that Python does not write would appear with its default.
    for plan in _model_case_plans():
        again = json.loads(_core._plan_round_trip(json.dumps(plan)))
        for mine, theirs in zip(plan["nodes"], again["nodes"], strict=True):
            assert set(mine) - {"notes"} == set(theirs) - {"notes"}, mine["op"]
