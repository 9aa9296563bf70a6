"""Errors as data: a record that makes an operator fail becomes an error update.

The error flows to every output downstream and retracts like data: reading an output at a
time where it is live raises ``DataError`` naming the operator, the message and the values;
``capture(errors="collect")`` reads the data anyway with the errors beside it; unrelated
outputs keep advancing; nothing wedges.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ddflow as dd


def _rows(table: Any) -> list[dict[str, Any]]:
    return list(table.to_pylist())


def test_division_by_zero_retracted() -> None:
    """10 // k with k = 0 inserted at time 0 is a live error at 0 and gone once k = 0 is
    retracted at 1."""
    f = dd.Dataflow()
    i, c = f.new_input(("k",))
    u, other = f.new_input(("x",))
    quot = c.select(k="k", q=dd.lit(10) // dd.col("k")).capture()
    unrelated = other.select(y=dd.col("x") * 2).capture()
    i.update_at((0,), 0)
    i.update_at((5,), 0)
    u.update_at((1,), 0)
    i.advance_to(1)
    u.advance_to(1)
    f.run_until(1)
    assert _rows(unrelated.at(0)) == [{"y": 2, "diff": 1}]
    with pytest.raises(dd.DataError) as ei:
        quot.at(0)
    msg = str(ei.value)
    assert "select@" in msg and "division by zero" in msg and "k=0" in msg, msg
    assert ei.value.errors[0]["values"] == "k=0" and ei.value.errors[0]["count"] == 1
    i.update_at((0,), 1, -1)
    u.update_at((3,), 1)
    i.advance_to(3)
    u.advance_to(3)
    f.run_until(3)
    assert _rows(quot.at(2)) == [{"k": 5, "q": 2, "diff": 1}]
    assert _rows(unrelated.at(2)) == [{"y": 2, "diff": 1}, {"y": 6, "diff": 1}]
    # The whole history still holds the error at time 0.
    with pytest.raises(dd.DataError):
        quot.updates()
    errs = f.errors()
    assert errs.column("time").to_pylist() == [0, 1]
    assert errs.column("diff").to_pylist() == [1, -1]
    assert f.errors_at(0)[0]["values"] == "k=0" and f.errors_at(2) == []


def test_collect_mode_returns_data_beside_errors() -> None:
    f = dd.Dataflow()
    i, c = f.new_input(("k",))
    cap = c.select(q=dd.lit(10) // dd.col("k")).capture(errors="collect")
    i.update_batch({"k": [0, 2, 5, 0]}, times=0)
    i.advance_to(1)
    f.run_until(1)
    assert _rows(cap.at(0)) == [{"q": 2, "diff": 1}, {"q": 5, "diff": 1}]
    live = cap.errors_at(0)
    assert [(e["values"], e["count"]) for e in live] == [("k=0", 2)]
    assert cap.errors().num_rows == 1


def test_errors_flow_downstream_through_join_reduce_and_iterate() -> None:
    f = dd.Dataflow()
    i, c = f.new_input(("k", "v"))
    bad = c.select(k="k", v=dd.col("v") // dd.col("k"))
    counted = bad.count(by="k").capture()
    looped = bad.iterate(lambda x: x.concat(x).distinct()).capture()
    joined = bad.join(c.select(k="k", w="v"), on="k").capture()
    plain = c.count(by="k").capture()
    i.update_batch({"k": [0, 1, 1], "v": [3, 4, 5]}, times=0)
    i.advance_to(1)
    f.run_until(1)
    for cap in (counted, looped, joined):
        with pytest.raises(dd.DataError):
            cap.at(0)
    assert _rows(plain.at(0)) == [{"k": 0, "count": 1, "diff": 1}, {"k": 1, "count": 2, "diff": 1}]
    i.update_at((0, 3), 1, -1)
    i.advance_to(2)
    f.run_until(2)
    assert _rows(counted.at(1)) == [{"k": 1, "count": 2, "diff": 1}]
    assert _rows(looped.at(1)) == [{"k": 1, "v": 4, "diff": 1}, {"k": 1, "v": 5, "diff": 1}]


@pytest.mark.parametrize("kind", ["map", "filter", "flat_map", "inspect"])
def test_user_function_that_raises_is_data(kind: str) -> None:
    """A user function that always raised wedged the dataflow for good."""
    f = dd.Dataflow()
    i, c = f.new_input(("k",))

    def check(cols: dict[str, np.ndarray]) -> None:
        if (cols["k"] == 13).any():
            raise ValueError("unlucky")

    if kind == "map":
        out = c.map(lambda cols: (check(cols), {"k": cols["k"] + 1})[1], columns=["k"])
    elif kind == "filter":
        out = c.filter(lambda cols: (check(cols), cols["k"] > 0)[1])
    elif kind == "flat_map":
        out = c.flat_map(
            lambda cols: (check(cols), {"k": cols["k"], "__row__": np.arange(len(cols["k"]))})[1],
            columns=["k"],
        )
    else:
        out = c.inspect_batch(lambda cols: check(cols))
    cap = out.capture()
    i.update_batch({"k": np.arange(1, 40)}, times=0)
    i.advance_to(1)
    f.run_until(1)
    with pytest.raises(dd.DataError) as ei:
        cap.at(0)
    msg = str(ei.value)
    op = {"inspect": "inspect_batch"}.get(kind, kind)
    assert "ValueError: unlucky" in msg and "k=13" in msg and f"{op}@" in msg, msg
    assert len(ei.value.errors) == 1
    i.update_at((13,), 1, -1)
    i.advance_to(2)
    f.run_until(2)
    expect = sorted(k + (1 if kind == "map" else 0) for k in range(1, 40) if k != 13)
    got = cap.at(1)
    assert sorted(got.column("k").to_pylist()) == expect


@pytest.mark.parametrize("kind", ["reducer", "threshold"])
def test_python_aggregate_beside_an_overflowing_count_is_data(kind: str) -> None:
    """A Python reducer or threshold where one key's counts sum past int64 beside other keys:
    the key is an error and the function sees only the others (the engine used to panic,
    its groups misaligned with the values gathered for the callback)."""
    f = dd.Dataflow()
    i, c = f.new_input(("k",))
    seen: list[int] = []

    def sizes(batch: Any) -> dict[str, np.ndarray]:
        seen.extend(np.asarray(batch.keys["k"]).tolist())
        offsets = np.asarray(batch.offsets)
        totals = [
            int(batch.counts[offsets[j] : offsets[j + 1]].sum()) for j in range(len(offsets) - 1)
        ]
        return {"offsets": np.arange(len(totals) + 1), "n": np.array(totals, dtype=np.int64)}

    if kind == "reducer":
        out = c.reduce(by="k", agg=sizes, columns=["n"])
    else:
        out = c.threshold(lambda n: seen.append(n) or n + 1)
    cap = out.capture(errors="collect")
    i.update_at((1,), 0, 2**62)
    i.update_at((1,), 0, 2**62)
    i.update_at((2,), 0, 3)
    i.update_at((5,), 0, 1)
    i.advance_to(1)
    f.run_until(1)
    if kind == "reducer":
        assert _rows(cap.at(0)) == [{"k": 2, "n": 3, "diff": 1}, {"k": 5, "n": 1, "diff": 1}]
        assert sorted(seen) == [2, 5]
    else:
        assert _rows(cap.at(0)) == [{"k": 2, "diff": 4}, {"k": 5, "diff": 2}]
        assert sorted(seen) == [1, 3]
    errors = cap.errors_at(0)
    assert [e["values"] for e in errors] == ["k=1"] and "overflow" in errors[0]["message"]
    i.update_at((1,), 1, -(2**62))
    i.advance_to(2)
    f.run_until(2)
    assert cap.errors_at(1) == []
    n1 = {"reducer": {"k": 1, "n": 2**62, "diff": 1}, "threshold": {"k": 1, "diff": 2**62 + 1}}
    assert n1[kind] in _rows(cap.at(1))


def test_expression_overflow_is_data() -> None:
    f = dd.Dataflow()
    i, c = f.new_input(("k",))
    cap = c.select(y=dd.col("k") * 2).capture()
    i.update_batch({"k": [1, 2**62, 3]}, times=0)
    i.advance_to(1)
    f.run_until(1)
    with pytest.raises(dd.DataError) as ei:
        cap.at(0)
    assert f"k={2**62}" in str(ei.value) and "overflow" in str(ei.value)
    i.update_at((2**62,), 1, -1)
    i.advance_to(2)
    f.run_until(2)
    assert _rows(cap.at(1)) == [{"y": 2, "diff": 1}, {"y": 6, "diff": 1}]


def test_undeclared_str_column_in_arithmetic_is_data_not_a_wedge() -> None:
    """col("s") + 1 on a str column whose dtype is only known at run time."""
    f = dd.Dataflow()
    i, c = f.new_input(("s",))
    u, other = f.new_input(("x",))
    cap = c.select(y=dd.col("s") + 1).capture()
    fine = other.capture()
    i.update_at(("a",), 0)
    u.update_at((1,), 0)
    i.advance_to(1)
    u.advance_to(1)
    f.run_until(1)
    with pytest.raises(dd.DataError) as ei:
        cap.at(0)
    assert "s='a'" in str(ei.value) or 's="a"' in str(ei.value)
    assert _rows(fine.at(0)) == [{"x": 1, "diff": 1}]


def test_error_inside_iterate_does_not_cancel_across_iterations() -> None:
    """A record failing in iteration 0 is gone from iteration 1 on: its error must stay live
    at the outer time (never cancelled by the loop), and retract with the record."""
    f = dd.Dataflow()
    i, c = f.new_input(("k",))
    cap = c.iterate(lambda x: x.filter(dd.lit(10) // dd.col("k") > 0).distinct()).capture()
    i.update_batch({"k": [0, 3]}, times=0)
    i.advance_to(1)
    f.run_until(1)
    with pytest.raises(dd.DataError) as ei:
        cap.at(0)
    assert [e["values"] for e in ei.value.errors] == ["k=0"]
    i.update_at((0,), 1, -1)
    i.advance_to(2)
    f.run_until(2)
    assert _rows(cap.at(1)) == [{"k": 3, "diff": 1}]
    assert f.errors().column("iteration").to_pylist()[0] == [0]
