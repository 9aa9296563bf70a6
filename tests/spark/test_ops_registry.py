"""The Spark backend's operator registry (``ddflow.spark.driver.ops``) covers every plan
operator exactly once: each ``OpSpec`` subclass in ``ddflow.plan`` has one entry, keyed by its
``OP``, that either says how it runs on Spark or why it is refused; and no entry names an
operator the plan does not have."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

from ddflow import plan
from ddflow.spark.driver.ops import SPARK_OPS, SparkOp, supported_ops

pytestmark = pytest.mark.timeout(60)


def _plan_ops() -> dict[str, type[plan.OpSpec]]:
    classes = [
        cls
        for _, cls in inspect.getmembers(plan, inspect.isclass)
        if issubclass(cls, plan.OpSpec) and cls is not plan.OpSpec
    ]
    by_op: dict[str, type[plan.OpSpec]] = {}
    for cls in classes:
        assert cls.OP not in by_op, f"{cls.__name__} and {by_op[cls.OP].__name__} share {cls.OP}"
        by_op[cls.OP] = cls
    return by_op


def test_every_plan_operator_has_exactly_one_entry() -> None:
    ops = _plan_ops()
    assert sorted(SPARK_OPS) == sorted(ops)
    for op, entry in SPARK_OPS.items():
        assert isinstance(entry, SparkOp)
        assert entry.spec is ops[op], f"{op}: entry for {entry.spec.__name__}"
        assert entry.op == op


def test_each_entry_says_how_it_runs_or_why_not() -> None:
    for op, entry in SPARK_OPS.items():
        if entry.supported:
            assert entry.explain, f"{op}: no explain text"
            assert entry.top is not None or entry.step is not None, f"{op}: no rule"
            assert entry.linear is None or (entry.top and entry.step), f"{op}: linear only"
        else:
            assert entry.refused.strip(), f"{op}: refused without a reason"
            assert entry.top is None and entry.step is None and entry.linear is None


def test_supported_names_and_iterate_rules() -> None:
    assert set(supported_ops()) == {op for op, e in SPARK_OPS.items() if e.supported}
    loop_only = {plan.EnterOp.OP, plan.EnterArrangementOp.OP, plan.VariableOp.OP}
    for op in loop_only | {plan.AdvanceIterationOp.OP}:
        assert SPARK_OPS[op].in_iterate and SPARK_OPS[op].top is None
    for refused in (plan.InspectPyOp, plan.ImportTraceOp, plan.CaptureOp, plan.ProbeOp):
        assert not SPARK_OPS[refused.OP].supported
    assert not SPARK_OPS[plan.InputOp.OP].in_iterate
    assert not SPARK_OPS[plan.LeaveOp.OP].in_iterate


def test_registry_imports_without_a_spark_session() -> None:
    code = (
        "import ddflow.spark.driver.ops as ops\n"
        "from pyspark.sql import SparkSession\n"
        "assert SparkSession.getActiveSession() is None\n"
        "assert SparkSession._instantiatedSession is None\n"
        "print(len(ops.SPARK_OPS))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=50, check=False
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip()) == len(_plan_ops())
