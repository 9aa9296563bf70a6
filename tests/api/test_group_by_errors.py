"""``group_by(...).agg(...)`` refuses bad definitions with errors naming the operator and the
column, before adding any node; dtype errors (known only once data arrives) name them when
the dataflow runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ddflow as dd

pytestmark = pytest.mark.timeout(30)

Build = Callable[[dd.Collection], Any]

CASES: list[tuple[str, Build, type[Exception], str]] = [
    ("unknown_key", lambda c: c.group_by("nope"), dd.ColumnNotFoundError, "'nope' not found"),
    ("repeated_key", lambda c: c.group_by("k", "k"), dd.PlanError, "repeat"),
    (
        "unknown_column",
        lambda c: c.group_by("k").agg(s=dd.sum("nope")),
        dd.ColumnNotFoundError,
        "s: column 'nope' not found",
    ),
    (
        "unknown_column_in_expression",
        lambda c: c.group_by("k").agg(s=dd.sum(dd.col("x") * dd.col("nope"))),
        dd.ColumnNotFoundError,
        "column 'nope' not found in expression",
    ),
    (
        "no_aggregates",
        lambda c: c.group_by("k").agg(),
        dd.PlanError,
        "at least one aggregate",
    ),
    (
        "duplicate_name",
        lambda c: c.group_by("k").agg(dd.sum("x"), x=dd.max("y")),
        dd.PlanError,
        "'x' is used twice",
    ),
    (
        "duplicate_count",
        lambda c: c.group_by("k").agg(dd.count(), dd.count()),
        dd.PlanError,
        "'count' is used twice",
    ),
    (
        "name_is_a_key",
        lambda c: c.group_by("k", "y").agg(k=dd.sum("x")),
        dd.PlanError,
        "'k' clashes with a key column",
    ),
    (
        "not_a_row_aggregate",
        lambda c: c.group_by("k").agg(d=dd.distinct()),
        dd.PlanError,
        "expected dd.sum, dd.count(), dd.mean, dd.min, dd.max or dd.count_distinct",
    ),
    (
        "expression_in_reduce",
        lambda c: c.reduce(by="k", agg=dd.sum(dd.col("x") + 1)),
        dd.PlanError,
        "an expression argument needs group_by",
    ),
]


@pytest.mark.parametrize(
    ("build", "error", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_definitions_are_refused(build: Build, error: type[Exception], message: str) -> None:
    flow = dd.Dataflow()
    _, c = flow.new_input(("k", "x", "y"))
    before = len(flow.plan()["nodes"])
    with pytest.raises(error, match=re.escape(message)) as info:
        build(c)
    assert (
        "group_by" in str(info.value) or "reduce" in str(info.value) or "count(" in str(info.value)
    )
    assert len(flow.plan()["nodes"]) == before, "a refused operator leaves no nodes"


@pytest.mark.parametrize("kind", ["sum", "mean"])
def test_sum_or_mean_of_a_string_column_fails_naming_operator_and_part(kind: str) -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input({"k": "int64", "s": "str"})
    c.group_by("k").agg(bad=getattr(dd, kind)("s")).capture()
    inp.update_batch({"k": np.array([1]), "s": np.array(["a"], dtype=object)}, times=0)
    inp.advance_to(1)
    with pytest.raises(dd.SchemaTypeError, match=f"group_by.agg@.*{kind} 'bad' needs a numeric"):
        flow.run_until(1)


def test_sum_overflow_is_an_error_update() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input({"k": "int64", "x": "int64"})
    cap = c.group_by("k").agg(n=dd.count(), s=dd.sum("x")).capture(errors="collect")
    inp.update_at((1, 2**62), time=0, diff=2)
    inp.update_at((1, 2**62 - 1), time=1, diff=-1)
    inp.advance_to(2)
    flow.run_until(2)
    assert cap.at(0).num_rows == 0
    (err,) = cap.errors_at(0)
    assert "sum 's' overflows int64" in err["message"]
    assert cap.at(1).to_pylist() == [{"k": 1, "n": 1, "s": 2**62 + 1, "diff": 1}]
    assert cap.errors_at(1) == []


def test_mean_works_in_reduce_and_aggregates_of_keys_and_aliases() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input({"k": "int64", "x": "int64"})
    mean = c.reduce(by="k", agg=dd.mean("x").alias("avg")).capture()
    keys = (
        c.group_by("k").agg(dd.max("k").alias("top"), dd.sum(dd.col("x") + dd.col("k"))).capture()
    )
    inp.update_batch({"k": np.array([1, 1, 2]), "x": np.array([1, 2, 5])}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert mean.at(0).to_pylist() == [
        {"k": 1, "avg": 1.5, "diff": 1},
        {"k": 2, "avg": 5.0, "diff": 1},
    ]
    assert keys.at(0).to_pylist() == [
        {"k": 1, "top": 1, "x": 5, "diff": 1},
        {"k": 2, "top": 2, "x": 7, "diff": 1},
    ]
