"""Typed aggregate specs: every aggregate the builder writes into a ``reduce`` node is one of
the TypedDicts of ``ddflow.plan`` (exactly its keys, values of its types), equal to what the
engine's serde plan types (``engine::plan::Agg``) read and write back, and runs through the
engine to the expected output."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ddflow as dd
from ddflow import _core
from ddflow import aggregates as agg
from ddflow.plan import (
    AGG_KINDS,
    ColumnAgg,
    CountAgg,
    DistinctAgg,
    GroupAgg,
    PythonAgg,
    RankAgg,
    ThresholdAgg,
    TopKAgg,
)
from ddflow.sql.ranking import RankAggregate, SortKey

pytestmark = pytest.mark.timeout(30)

FN = object()
"""Stands for the registered function id in an expected spec."""


def _totals(batch: Any) -> dict[str, np.ndarray]:
    """Per key: the sum of its values' counts (one output row per key)."""
    counts = np.asarray(batch.counts, dtype=np.int64)
    offsets = np.asarray(batch.offsets)
    n = [int(counts[offsets[j] : offsets[j + 1]].sum()) for j in range(len(offsets) - 1)]
    return {"offsets": np.arange(len(n) + 1, dtype=np.int64), "n": np.array(n, dtype=np.int64)}


Build = Callable[[dd.Collection], dd.Collection]

# (id, build, spec class, expected agg JSON, expected output at time 0) over the input
# (k, v): (1, 5) twice, (1, 7), (2, 9).
CASES: list[tuple[str, Build, type, dict[str, Any], list[dict[str, Any]]]] = [
    (
        "min",
        lambda c: c.reduce(by="k", agg=agg.min("v")),
        ColumnAgg,
        {"kind": "min", "column": 0},
        [{"k": 1, "v": 5, "diff": 1}, {"k": 2, "v": 9, "diff": 1}],
    ),
    (
        "max_alias",
        lambda c: c.reduce(by="k", agg=agg.max("v").alias("top")),
        ColumnAgg,
        {"kind": "max", "column": 0},
        [{"k": 1, "top": 7, "diff": 1}, {"k": 2, "top": 9, "diff": 1}],
    ),
    (
        "sum",
        lambda c: c.reduce(by="k", agg=agg.sum("v")),
        ColumnAgg,
        {"kind": "sum", "column": 0},
        [{"k": 1, "v": 17, "diff": 1}, {"k": 2, "v": 9, "diff": 1}],
    ),
    (
        "count",
        lambda c: c.reduce(by="k", agg=agg.count()),
        CountAgg,
        {"kind": "count"},
        [{"k": 1, "count": 3, "diff": 1}, {"k": 2, "count": 1, "diff": 1}],
    ),
    (
        "count_by",
        lambda c: c.count(by="k"),
        CountAgg,
        {"kind": "count"},
        [{"k": 1, "count": 3, "diff": 1}, {"k": 2, "count": 1, "diff": 1}],
    ),
    (
        "distinct",
        lambda c: c.reduce(by="k", agg=agg.distinct()),
        DistinctAgg,
        {"kind": "distinct"},
        [{"k": 1, "v": 5, "diff": 1}, {"k": 1, "v": 7, "diff": 1}, {"k": 2, "v": 9, "diff": 1}],
    ),
    (
        "top_k",
        lambda c: c.reduce(by="k", agg=agg.top_k("v", 1)),
        TopKAgg,
        {"kind": "top_k", "k": 1, "column": 0, "descending": False},
        [{"k": 1, "v": 5, "diff": 1}, {"k": 2, "v": 9, "diff": 1}],
    ),
    (
        "top_k_desc",
        lambda c: c.reduce(by="k", agg=agg.top_k("v", 2, descending=True)),
        TopKAgg,
        {"kind": "top_k", "k": 2, "column": 0, "descending": True},
        [{"k": 1, "v": 5, "diff": 1}, {"k": 1, "v": 7, "diff": 1}, {"k": 2, "v": 9, "diff": 1}],
    ),
    (
        "rank",
        lambda c: c.reduce(
            by="k", agg=RankAggregate((SortKey("v", descending=True),), "row_number", 2, 3, "rn")
        ),
        RankAgg,
        {
            "kind": "rank",
            "order": [{"column": 0, "descending": True, "nulls_first": False}],
            "function": "row_number",
            "min_rank": 2,
            "max_rank": 3,
            "emit": True,
        },
        [{"k": 1, "v": 5, "rn": 2, "diff": 1}, {"k": 1, "v": 5, "rn": 3, "diff": 1}],
    ),
    (
        "threshold",
        lambda c: c.threshold(lambda n: n + 1),
        ThresholdAgg,
        {"kind": "threshold_py", "fn": FN},
        [{"k": 1, "v": 5, "diff": 3}, {"k": 1, "v": 7, "diff": 2}, {"k": 2, "v": 9, "diff": 2}],
    ),
    (
        "python",
        lambda c: c.reduce(by="k", agg=_totals, columns=("n",)),
        PythonAgg,
        {"kind": "python", "fn": FN, "columns": 1},
        [{"k": 1, "n": 3, "diff": 1}, {"k": 2, "n": 1, "diff": 1}],
    ),
    (
        "reducer_discovered",
        lambda c: c.reduce(by="k", agg=agg.reducer(_totals)),
        PythonAgg,
        {"kind": "python", "fn": FN, "columns": 1},
        [{"k": 1, "n": 3, "diff": 1}, {"k": 2, "n": 1, "diff": 1}],
    ),
    (
        "group",
        lambda c: c.group_by("k").agg(n=agg.count(), s=agg.sum("v"), m=agg.mean("v")),
        GroupAgg,
        {
            "kind": "group",
            "aggs": [
                {"kind": "count", "name": "n"},
                {"kind": "sum", "column": 0, "name": "s"},
                {"kind": "mean", "column": 0, "name": "m"},
            ],
        },
        [
            {"k": 1, "n": 3, "s": 17, "m": 17 / 3, "diff": 1},
            {"k": 2, "n": 1, "s": 9, "m": 9.0, "diff": 1},
        ],
    ),
]


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value has the type of a TypedDict field (``int``, ``bool``,
    ``Literal[...]``)."""
    if typing.get_origin(hint) is typing.Literal:
        return value in typing.get_args(hint)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if typing.get_origin(hint) is list:  # a list of TypedDicts: check each item's keys
        items = typing.get_args(typing.get_args(hint)[0]) or typing.get_args(hint)
        return isinstance(value, list) and all(
            any(t.__required_keys__ <= set(v) <= set(typing.get_type_hints(t)) for t in items)
            for v in value
        )
    return isinstance(value, hint)


@pytest.mark.parametrize(
    ("build", "spec", "expected", "rows"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_builder_writes_the_typed_spec_the_engine_reads(
    build: Build, spec: type, expected: dict[str, Any], rows: list[dict[str, Any]]
) -> None:
    flow = dd.Dataflow(time_dims=1)
    inp, c = flow.new_input(("k", "v"))
    cap = build(c).capture()
    plan = flow.plan()
    (node,) = [n for n in plan["nodes"] if n["op"] == "reduce"]
    written = node["agg"]

    # the builder's spec, exactly: its kind's TypedDict, every key, values of its types
    assert AGG_KINDS[written["kind"]] is spec
    assert set(written) == spec.__required_keys__ | spec.__optional_keys__
    assert spec.__required_keys__ <= set(written)
    hints = typing.get_type_hints(spec)
    assert all(_conforms(v, hints[k]) for k, v in written.items()), written
    if "fn" in expected:
        expected = {**expected, "fn": written["fn"]}
    assert written == expected

    # the engine's serde types read it and write back the same JSON
    again = json.loads(_core._plan_round_trip(json.dumps(plan)))
    assert again["nodes"][node["id"]] == node

    # and it runs: (1, 5) twice, (1, 7), (2, 9)
    inp.update_batch(
        {"k": np.array([1, 1, 2]), "v": np.array([5, 7, 9])}, times=0, diffs=np.array([2, 1, 1])
    )
    inp.advance_to(1)
    flow.run_until(1)
    assert cap.at(0).to_pylist() == rows


def _round_trip_agg(agg_json: dict[str, Any]) -> str:
    """The engine's plan round trip of a one-reduce plan whose aggregate is ``agg_json``."""
    flow = dd.Dataflow(time_dims=1)
    _, c = flow.new_input(("k", "v"))
    c.reduce(by="k", agg=agg.min("v")).capture()
    plan = flow.plan()
    (node,) = [n for n in plan["nodes"] if n["op"] == "reduce"]
    node["agg"] = agg_json
    return _core._plan_round_trip(json.dumps(plan))


def test_every_kind_of_the_engine_has_a_spec_and_a_case() -> None:
    """The builder's kinds are exactly the engine's (serde lists them when a kind is unknown),
    and each is tested above."""
    with pytest.raises(dd.PlanError, match="unknown variant") as ei:
        _round_trip_agg({"kind": "?"})
    engine_kinds = set(re.findall(r"`(\w+)`", str(ei.value).split("expected one of")[1]))
    assert engine_kinds == set(AGG_KINDS)
    assert {expected["kind"] for _, _, _, expected, _ in CASES} == set(AGG_KINDS)


@pytest.mark.parametrize(
    ("agg_json", "message"),
    [
        ({"kind": "min"}, "missing field `column`"),
        ({"kind": "top_k", "column": 0}, "missing field `k`"),
        ({"kind": "threshold_py"}, "missing field `fn`"),
        ({"kind": "python", "fn": 0}, "missing field `columns`"),
        ({"kind": "sum", "column": -1}, "integer `-1`, expected usize"),
    ],
)
def test_the_engine_refuses_what_the_specs_do_not_allow(
    agg_json: dict[str, Any], message: str
) -> None:
    """A field the TypedDicts require, the engine requires too."""
    with pytest.raises(dd.PlanError, match=message):
        _round_trip_agg(agg_json)
