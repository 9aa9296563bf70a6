"""Edge cases give the exact answer or a clear error, never a wrong answer, lost updates, a
crash or a hang: diffs and sums at the int64 bounds, keys of mismatched dtypes, lone
surrogates in strings, out-of-range ``workers`` / ``max_iterations`` / ``time_dims``, a loop
body from another dataflow, callbacks calling back into the running dataflow, and kernel
arguments.

Most tests start from ``f = dd.Dataflow(); i, c = f.new_input(("k",))`` (``_flow``). Errors
must be ``DdflowError`` subclasses whose message names the operator or input, the column or
argument, and the value; nothing accepted earlier may be lost.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

import ddflow as dd

BIG = 2**62
I64_MIN = -(2**63)


def _flow(columns: Any = ("k",)) -> tuple[dd.Dataflow, dd.InputSession, dd.Collection]:
    f = dd.Dataflow()
    i, c = f.new_input(columns)
    return f, i, c


def _rows(table: Any) -> list[dict[str, Any]]:
    return list(table.to_pylist())


# -- exact answers, not silently wrong ones -------------------------------------------------


def test_capture_sums_are_exact_or_a_clear_overflow() -> None:
    """Capture.updates()/at() sum diffs exactly: a sum outside int64 (2 * 2**62) is an
    OverflowError naming the record and the sum, not a wrapped -2**63."""
    f, i, c = _flow()
    out = c.capture()
    i.update_at((1,), 0, BIG)
    i.update_at((1,), 1, BIG)
    i.update_at((1,), 2, -BIG)
    i.update_at((7,), 2, 3)
    i.advance_to(3)
    f.run_until(3)
    assert _rows(out.at(0)) == [{"k": 1, "diff": BIG}]
    with pytest.raises(dd.OverflowError) as ei:
        out.at(1)
    assert "'k': 1" in str(ei.value) and str(2 * BIG) in str(ei.value)
    # The wrapped partial sums cancel exactly once the total fits again.
    assert _rows(out.at(2)) == [{"k": 1, "diff": BIG}, {"k": 7, "diff": 3}]


def test_negate_of_min_diff_is_exact() -> None:
    """negate() of diff=-2**63 does not wrap: negated twice it is exact, and a capture
    holding -(-2**63) raises an OverflowError naming 2**63."""
    f, i, c = _flow()
    twice = c.negate().negate().capture()
    once = c.negate().capture()
    i.update_at((1,), 0, I64_MIN)
    i.advance_to(1)
    f.run_until(1)
    assert _rows(twice.at(0)) == [{"k": 1, "diff": I64_MIN}]
    with pytest.raises(dd.OverflowError) as ei:
        once.at(0)
    assert str(2**63) in str(ei.value)


def test_arrangement_overflow_loses_nothing() -> None:
    """An int64 overflow inside an arrangement is an error update for that key only: the
    other records of its batch are kept and later answers are right. count(by="k") after
    two diff=2**62 updates of one record plus (2, 2)."""
    f, i, c = _flow(("k", "v"))
    counts = c.count(by="k").capture()
    distinct = c.distinct().capture(errors="collect")
    i.update_at((1, 1), 0, BIG)
    i.update_at((1, 1), 0, BIG)
    i.update_at((2, 2), 0, 2)
    i.advance_to(1)
    f.run_until(1)
    with pytest.raises(dd.DataError) as ei:
        counts.at(0)
    msg = str(ei.value)
    assert "count@" in msg and "overflow" in msg and "k=1" in msg, msg
    assert [e["values"] for e in ei.value.errors] == ["k=1"]
    # Nothing else in the batch was lost: key 2 is there (read beside the error).
    assert _rows(distinct.at(0)) == [{"k": 2, "v": 2, "diff": 1}]
    assert [e["values"] for e in distinct.errors_at(0)] == ["k=1, v=1"]
    i.update_at((1, 1), 1, -BIG)
    i.update_at((3, 3), 1, 1)
    i.advance_to(2)
    f.run_until(2)
    assert _rows(counts.at(1)) == [
        {"k": 1, "count": BIG, "diff": 1},
        {"k": 2, "count": 2, "diff": 1},
        {"k": 3, "count": 1, "diff": 1},
    ]
    assert _rows(distinct.at(1)) == [
        {"k": 1, "v": 1, "diff": 1},
        {"k": 2, "v": 2, "diff": 1},
        {"k": 3, "v": 3, "diff": 1},
    ]
    assert distinct.errors_at(1) == []


def test_sum_overflow_across_times_is_an_error_then_recovers() -> None:
    f, i, c = _flow(("k", "v"))
    sums = c.reduce("k", dd.sum("v")).capture()
    i.update_at((1, BIG), 0)
    i.update_at((1, BIG + 1), 1)
    i.update_at((2, 5), 1)
    i.advance_to(2)
    f.run_until(2)
    assert _rows(sums.at(0)) == [{"k": 1, "v": BIG, "diff": 1}]
    with pytest.raises(dd.DataError) as ei:
        sums.at(1)
    assert "k=1" in str(ei.value) and "sum" in str(ei.value)
    i.update_at((1, BIG), 2, -1)
    i.advance_to(3)
    f.run_until(3)
    assert _rows(sums.at(2)) == [
        {"k": 1, "v": BIG + 1, "diff": 1},
        {"k": 2, "v": 5, "diff": 1},
    ]


@pytest.mark.parametrize("vectorized", [True, False])
def test_threshold_result_outside_int64_is_a_clear_error(vectorized: bool) -> None:
    """A threshold result outside int64 (uint64 2**64-1 from a vectorized function, 2**63
    from a scalar one) is an error update naming the operator and value, not -1 or a bare
    OverflowError."""
    f, i, c = _flow()
    if vectorized:
        out = c.threshold(
            lambda counts: np.full(len(counts), 2**64 - 1, dtype=np.uint64), vectorized=True
        ).capture()
    else:
        out = c.threshold(lambda count: 2**63).capture()
    other = c.count().capture()
    i.update_at((1,), 0)
    i.advance_to(1)
    f.run_until(1)
    with pytest.raises(dd.DataError) as ei:
        out.at(0)
    msg = str(ei.value)
    assert "threshold@" in msg and "does not fit in int64" in msg and "k=1" in msg, msg
    assert _rows(other.at(0)) == [{"k": 1, "count": 1, "diff": 1}]


def test_join_of_int_and_str_keys_is_an_error() -> None:
    """A join of an int key with a str key raises SchemaTypeError (instead of silently
    matching nothing), and the dataflow runs on."""
    f = dd.Dataflow()
    a, ca = f.new_input(("k", "v"))
    b, cb = f.new_input(("k", "w"))
    ca.join(cb, on="k").capture()
    a.update_at((1, 1), 0)
    b.update_at(("1", 2), 0)
    a.advance_to(1)
    with pytest.raises(dd.SchemaTypeError) as ei:
        b.advance_to(1)  # the buffered batch reaches the engine, which refuses it
    msg = str(ei.value)
    assert "join@" in msg and '"k"' in msg and "int64" in msg and "str" in msg
    # Not wedged (tests/errors/test_dtype_links.py has more): the dataflow runs on.
    b.advance_to(1)
    f.run_until(1)


# -- no lost updates ------------------------------------------------------------------------


def test_lone_surrogate_rejected_when_accepted_and_nothing_lost() -> None:
    """update_at refuses "\\ud800" at once, naming the column and the value; the records
    buffered before and after it are kept."""
    f, i, c = _flow(("s",))
    out = c.capture()
    i.update_at(("a",), 0)
    with pytest.raises(dd.InvalidValueError) as ei:
        i.update_at(("\ud800",), 0)
    assert "'s'" in str(ei.value) and "\\ud800" in str(ei.value)
    i.update_at(("b",), 0)
    i.advance_to(1)
    f.run_until(1)
    assert _rows(out.at(0)) == [{"s": "a", "diff": 1}, {"s": "b", "diff": 1}]


def test_lone_surrogate_in_update_batch_names_the_row() -> None:
    f, i, c = _flow(("s",))
    out = c.capture()
    with pytest.raises(dd.InvalidValueError) as ei:
        i.update_batch({"s": np.array(["ok", "x\ud800"], dtype=object)}, times=0)
    assert "row 1" in str(ei.value) and "'s'" in str(ei.value)
    i.update_batch({"s": ["ok"]}, times=0)
    i.advance_to(1)
    f.run_until(1)
    assert _rows(out.at(0)) == [{"s": "ok", "diff": 1}]


def test_fast_path_checks_strings_too() -> None:
    """Once dtypes are fixed, update_at takes a fast path; it must not skip the text check."""
    f, i, c = _flow(("s", "n"))
    out = c.capture()
    i.update_at(("a", 1), 0)
    i.advance_to(0)
    with pytest.raises(dd.InvalidValueError):
        i.update_at(("\udfff", 2), 0)
    i.advance_to(1)
    f.run_until(1)
    assert _rows(out.at(0)) == [{"s": "a", "n": 1, "diff": 1}]


# -- no crashes or hangs --------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, -1, 2**62, 10**9, 257, True, 1.5, "2"])
def test_workers_bounded(workers: Any) -> None:
    """Dataflow(workers=...) outside 1..MAX_WORKERS (or not an int) is a PlanError naming
    the bound, not a panic or an abort."""
    with pytest.raises(dd.PlanError) as ei:
        dd.Dataflow(workers=workers)
    assert "workers" in str(ei.value) and str(dd.dataflow.MAX_WORKERS) in str(ei.value)


def test_engine_rejects_too_many_workers_directly() -> None:
    f, i, c = _flow()
    c.capture()
    with pytest.raises(dd.InvalidValueError) as ei:
        dd._core.Engine(f.builder.plan.dumps(1), 10**9, lambda *a: None)
    assert "workers" in str(ei.value)


@pytest.mark.parametrize("bad", [True, False, 0, -1, 2**63, 2**64, 1.0, "3"])
def test_max_iterations_validated(bad: Any) -> None:
    """max_iterations must be a positive int64 (not a bool, float or str); anything else is a
    PlanError naming the value, and the plan is left as it was."""
    f, i, c = _flow()
    with pytest.raises(dd.PlanError) as ei:
        c.iterate(lambda x: x, max_iterations=bad)
    assert "max_iterations" in str(ei.value) and repr(bad) in str(ei.value)
    assert [n["op"] for n in f.plan()["nodes"]] == ["input"]


@pytest.mark.parametrize("bad", [True, 0, -3, 1.5, "2"])
def test_plan_reader_rejects_bad_max_iterations(bad: Any) -> None:
    f, i, c = _flow()
    c.iterate(lambda x: x, max_iterations=3).capture()
    plan = f.plan()
    plan["scopes"][1]["max_iterations"] = bad
    with pytest.raises(dd.PlanError) as ei:
        dd._core.Engine(json.dumps(plan), 1, lambda *a: None)
    assert "max_iterations" in str(ei.value)


def test_max_iterations_bounds_the_loop() -> None:
    f, i, c = _flow()
    out = c.iterate(lambda x: x.select(k=dd.col("k") + 1), max_iterations=5).capture()
    i.update_at((0,), 0)
    i.advance_to(1)
    f.run_until(1)
    assert _rows(out.at(0)) == [{"k": 5, "diff": 1}]  # the body applied 5 times


# -- clear errors ---------------------------------------------------------------------------


def test_iterate_body_from_another_dataflow() -> None:
    """An iterate body returning (or joining with) a collection of another dataflow is a
    PlanError, and neither plan is changed."""
    f, i, c = _flow()
    g, j, d = _flow()
    before_f, before_g = f.plan(), g.plan()
    with pytest.raises(dd.PlanError) as ei:
        c.iterate(lambda x: d)
    assert "another dataflow" in str(ei.value)
    with pytest.raises(dd.PlanError):
        c.iterate(lambda x: x.join(d, on="k").select("k"))
    assert f.plan() == before_f and g.plan() == before_g
    out = c.iterate(lambda x: x.distinct()).capture()
    i.update_at((5,), 0)
    i.advance_to(1)
    f.run_until(1)
    assert _rows(out.at(0)) == [{"k": 5, "diff": 1}]


@pytest.mark.parametrize("call", ["run_until", "advance_to", "updates", "step", "update_batch"])
def test_callback_calling_back_into_running_dataflow(call: str) -> None:
    """Calling run_until/advance_to/updates()/step()/update_batch from inside a callback
    raises ReentrancyError naming the running call; the dataflow runs on afterwards."""
    f, i, c = _flow()
    calls = {"n": 0}
    holder: dict[str, Any] = {}

    def fn(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        calls["n"] += 1
        if calls["n"] == 1:
            if call == "run_until":
                f.run_until(5)
            elif call == "advance_to":
                i.advance_to(5)
            elif call == "updates":
                holder["out"].updates()
            elif call == "step":
                f.step()
            else:
                i.update_batch({"k": [9]}, times=3)
        return cols

    holder["out"] = out = c.map(fn, columns=["k"]).capture()
    i.update_at((1,), 0)
    i.advance_to(1)
    with pytest.raises(dd.ReentrancyError) as ei:
        f.run_until(1)
    assert "running" in str(ei.value) and "run_until(1)" in str(ei.value)
    f.run_until(1)
    assert _rows(out.at(0)) == [{"k": 1, "diff": 1}]


# -- errors reported early ------------------------------------------------------------------


def test_time_dims_checked_at_construction() -> None:
    for bad in (0, 5, True, 2.0):
        with pytest.raises(dd.InvalidValueError) as ei:
            dd.Dataflow(time_dims=bad)
        assert "time_dims" in str(ei.value)


def test_iterate_nesting_checked_when_built() -> None:
    f, i, c = _flow()

    def nest(x: dd.Collection, depth: int) -> dd.Collection:
        return x if depth == 0 else x.iterate(lambda y: nest(y, depth - 1))

    nest(c, 3)  # 1 outer coordinate + 3 iterations = 4: fine
    with pytest.raises(dd.PlanError) as ei:
        nest(c, 4)
    assert "nested 4 deep" in str(ei.value)
    g = dd.Dataflow(time_dims=2)
    _, d = g.new_input(("k",))
    nest(d, 2)
    with pytest.raises(dd.PlanError):
        nest(d, 3)


def test_time_shape_checked_against_nesting() -> None:
    f, i, c = _flow()
    c.iterate(lambda y: y.iterate(lambda z: z.iterate(lambda w: w))).capture()
    with pytest.raises(dd.InvalidValueError) as ei:
        i.update_at((1,), (0, 0))
    assert "nested iterate" in str(ei.value)


def test_kernel_arguments_and_strings_name_the_argument() -> None:
    """Kernel argument errors are InvalidValueErrors naming the row or argument: a lone
    surrogate in kernels.consolidate, Trace(["int64"], -1), exert(-1)."""
    from ddflow import kernels as K

    with pytest.raises(dd.InvalidValueError) as ei:
        K.consolidate([np.array(["ok", "\ud800"], dtype=object)], np.zeros(2, np.int64), [1, 1])
    assert "row 1" in str(ei.value)
    with pytest.raises(dd.InvalidValueError) as ei:
        K.Trace(["int64"], -1)
    assert "key_columns" in str(ei.value)
    with pytest.raises(dd.InvalidValueError) as ei:
        K.Trace(["int64"], 1).exert(-1)
    assert "fuel" in str(ei.value)


def test_join_diff_product_outside_int64_is_an_error_update() -> None:
    """Join diffs multiply: 2**62 x 2**62 does not fit int64, which is an error update for
    that key (the run goes on), retracted with the record."""
    f, i, c = _flow()
    out = c.join(c, on="k").capture()
    i.update_at((1,), 0, BIG)
    i.update_at((2,), 0, 3)
    i.advance_to(1)
    f.run_until(1)
    with pytest.raises(dd.DataError) as ei:
        out.at(0)
    assert "join@" in str(ei.value) and "k=1" in str(ei.value)
    i.update_at((1,), 1, -BIG)
    i.advance_to(2)
    f.run_until(2)
    assert _rows(out.at(1)) == [{"k": 2, "diff": 9}]
