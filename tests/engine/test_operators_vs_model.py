"""Every operator agrees with the brute-force model at every time.

Random small collections with 1-D and 2-D times go through each operator (and a few chains);
the engine's consolidated ``updates()`` must equal the model's, and ``at(t)`` must equal the
model's accumulation at every time of a grid covering the lattice the input times generate
(so inputs at ``(0, 1)`` and ``(1, 0)`` are checked at ``(1, 1)``). Inputs are fed one
``update_at`` at a time or as one ``update_batch``, and the flow is finished either by closing
the inputs and ``run()`` or by ``advance_to`` + ``run_until``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from . import model as m
from .conftest import (
    assert_matches_model,
    ddflow,
    engine_time,
    feed,
    new_flow,
    python_reducer,
    random_multiset_history,
    random_set_history,
    reduce_python,
    requires_engine,
    top_k,
)

pytestmark = requires_engine

INPUTS: dict[str, tuple[str, ...]] = {
    "a": ("k", "v"),
    "b": ("k", "w"),
    "c": ("k",),
    "e": ("src", "dst"),
    "r": ("node",),
}
MAX_TIME = {1: 5, 2: 2}


@dataclass(frozen=True)
class Case:
    """One operator (or chain): how to build it with ddflow and how the model computes it."""

    name: str
    inputs: tuple[str, ...]
    build: Callable[[ModuleType, dict[str, Any]], Any]
    model: Callable[[dict[str, m.Rel]], m.Rel]
    sets: bool = False
    """Feed set-valued histories (counts 0/1), for bodies that must converge."""
    ordered: bool = True
    """Whether the output column order is specified (else only the names are checked)."""


def _pos_summary(group: list[tuple[m.Record, int]]) -> list[m.Record]:
    """Per key: (number of positive values, their total count), nothing if none."""
    pos = [c for _, c in group if c > 0]
    return [(len(pos), sum(pos))] if pos else []


def _py_summary(group: list[tuple[m.Record, int]]) -> list[tuple[m.Record, int]]:
    return [(row, 1) for row in _pos_summary(group)]


def _size(group: list[tuple[m.Record, int]]) -> list[m.Record]:
    """Per key: the number of distinct values, a row even when there are none (the engine
    must not call a reducer for a key whose input is empty, so (0,) must never appear)."""
    return [(len(group),)]


def _py_size(group: list[tuple[m.Record, int]]) -> list[tuple[m.Record, int]]:
    return [(row, 1) for row in _size(group)]


def _flat(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    reps = np.maximum(cols["v"], 0)
    rows = np.repeat(np.arange(len(cols["k"]), dtype=np.int64), reps)
    return {"k": cols["k"][rows], "x": cols["v"][rows] * 10 + cols["k"][rows], "__row__": rows}


def _reach(dd: ModuleType, edges: Any, roots: Any) -> Any:
    def body(reach: Any) -> Any:
        step = reach.join(edges, left_on="node", right_on="src").select(node=dd.col("dst"))
        return step.concat(roots).distinct()

    return roots.iterate(body)


def _reach_model(edges: m.Rel, roots: m.Rel) -> m.Rel:
    def body(reach: m.Rel) -> m.Rel:
        step = m.select(
            m.join(reach, edges, left_on="node", right_on="src"), node=lambda w: w["dst"]
        )
        return m.distinct(m.concat(step, roots))

    return m.iterate(roots, body)


def _closure(dd: ModuleType, edges: Any) -> Any:
    hop = edges.select(mid=dd.col("src"), to=dd.col("dst"))

    def body(paths: Any) -> Any:
        longer = paths.join(hop, left_on="dst", right_on="mid")
        return longer.select(src=dd.col("src"), dst=dd.col("to")).concat(edges).distinct()

    return edges.distinct().iterate(body)


def _closure_model(edges: m.Rel) -> m.Rel:
    hop = m.select(edges, mid=lambda w: w["src"], to=lambda w: w["dst"])

    def body(paths: m.Rel) -> m.Rel:
        longer = m.join(paths, hop, left_on="dst", right_on="mid")
        stepped = m.select(longer, src=lambda w: w["src"], dst=lambda w: w["to"])
        return m.distinct(m.concat(stepped, edges))

    return m.iterate(m.distinct(edges), body)


def _labels(dd: ModuleType, edges: Any, nodes: Any) -> Any:
    start = nodes.select(node=dd.col("node"), label=dd.col("node"))

    def body(labels: Any) -> Any:
        sent = labels.join(edges, left_on="node", right_on="src")
        proposals = sent.select(node=dd.col("dst"), label=dd.col("label"))
        return proposals.concat(start).reduce(by="node", agg=dd.min("label"))

    return start.iterate(body)


def _labels_model(edges: m.Rel, nodes: m.Rel) -> m.Rel:
    start = m.select(nodes, node=lambda w: w["node"], label=lambda w: w["node"])

    def body(labels: m.Rel) -> m.Rel:
        sent = m.join(labels, edges, left_on="node", right_on="src")
        proposals = m.select(sent, node=lambda w: w["dst"], label=lambda w: w["label"])
        return m.reduce(m.concat(proposals, start), "node", m.Min("label"))

    return m.iterate(start, body)


CASES: list[Case] = [
    Case(
        "select",
        ("a",),
        lambda dd, i: i["a"].select(k=dd.col("k"), s=dd.col("v") * 2 + dd.col("k")),
        lambda r: m.select(r["a"], k=lambda w: w["k"], s=lambda w: w["v"] * 2 + w["k"]),
    ),
    Case(
        "select_positional",
        ("a",),
        lambda dd, i: i["a"].select(dd.col("v"), (dd.col("k") - dd.col("v")).alias("d")),
        lambda r: m.select(r["a"], v=lambda w: w["v"], d=lambda w: w["k"] - w["v"]),
    ),
    Case(
        "with_columns",
        ("a",),
        lambda dd, i: i["a"].with_columns(v=dd.col("v") + 1, z=dd.col("k") * dd.col("v")),
        lambda r: m.with_columns(r["a"], v=lambda w: w["v"] + 1, z=lambda w: w["k"] * w["v"]),
    ),
    Case(
        "filter_expr",
        ("a",),
        lambda dd, i: i["a"].filter((dd.col("v") > 1) & (dd.col("k") != 2)),
        lambda r: m.filter_rows(r["a"], lambda w: w["v"] > 1 and w["k"] != 2),
    ),
    Case(
        "filter_fn",
        ("a",),
        lambda dd, i: i["a"].filter(lambda c: (c["k"] + c["v"]) % 2 == 0),
        lambda r: m.filter_rows(r["a"], lambda w: (w["k"] + w["v"]) % 2 == 0),
    ),
    Case(
        "map_fn",
        ("a",),
        lambda dd, i: i["a"].map(lambda c: {"k": c["k"], "s": c["k"] * 7 + c["v"]}),
        lambda r: m.map_rows(r["a"], lambda w: (w["k"], w["k"] * 7 + w["v"]), ("k", "s")),
    ),
    Case(
        "flat_map_fn",
        ("a",),
        lambda dd, i: i["a"].flat_map(_flat),
        lambda r: m.flat_map(
            r["a"], lambda w: [(w["k"], w["v"] * 10 + w["k"])] * w["v"], ("k", "x")
        ),
    ),
    Case(
        "concat",
        ("a", "b"),
        lambda dd, i: i["a"].concat(i["b"].select(k=dd.col("k"), v=dd.col("w"))),
        lambda r: m.concat(r["a"], m.select(r["b"], k=lambda w: w["k"], v=lambda w: w["w"])),
    ),
    Case("negate", ("a",), lambda dd, i: i["a"].negate(), lambda r: m.negate(r["a"])),
    Case(
        "scale",
        ("a",),
        lambda dd, i: i["a"].scale(-3),
        lambda r: m.Rel(r["a"].columns, {k: -3 * c for k, c in r["a"].counts.items()}),
    ),
    Case("consolidate", ("a",), lambda dd, i: i["a"].consolidate(), lambda r: r["a"]),
    Case(
        "join_on",
        ("a", "b"),
        lambda dd, i: i["a"].join(i["b"], on="k"),
        lambda r: m.join(r["a"], r["b"], on="k"),
    ),
    Case(
        "join_left_right_on",
        ("a", "e"),
        lambda dd, i: i["a"].join(i["e"], left_on="v", right_on="src"),
        lambda r: m.join(r["a"], r["e"], left_on="v", right_on="src"),
    ),
    Case(
        "join_multi_key",
        ("a", "e"),
        lambda dd, i: i["a"].join(
            i["e"].with_columns(z=dd.col("src") + dd.col("dst")),
            left_on=["k", "v"],
            right_on=["src", "dst"],
        ),
        lambda r: m.join(
            r["a"],
            m.with_columns(r["e"], z=lambda w: w["src"] + w["dst"]),
            left_on=["k", "v"],
            right_on=["src", "dst"],
        ),
    ),
    Case(
        "semijoin",
        ("a", "c"),
        lambda dd, i: i["a"].semijoin(i["c"], on="k"),
        lambda r: m.semijoin(r["a"], r["c"], on="k"),
        ordered=False,
    ),
    Case(
        "antijoin",
        ("a", "c"),
        lambda dd, i: i["a"].antijoin(i["c"], on="k"),
        lambda r: m.antijoin(r["a"], r["c"], on="k"),
        ordered=False,
    ),
    Case(
        "reduce_min",
        ("a",),
        lambda dd, i: i["a"].reduce(by="k", agg=dd.min("v")),
        lambda r: m.reduce(r["a"], "k", m.Min("v")),
    ),
    Case(
        "reduce_max",
        ("a",),
        lambda dd, i: i["a"].reduce(by="k", agg=dd.max("v")),
        lambda r: m.reduce(r["a"], "k", m.Max("v")),
    ),
    Case(
        "reduce_sum",
        ("a",),
        lambda dd, i: i["a"].reduce(by="k", agg=dd.sum("v")),
        lambda r: m.reduce(r["a"], "k", m.Sum("v")),
    ),
    Case(
        "reduce_count",
        ("a",),
        lambda dd, i: i["a"].reduce(by="k", agg=dd.count()),
        lambda r: m.reduce(r["a"], "k", m.Count()),
    ),
    Case(
        "reduce_distinct",
        ("a",),
        lambda dd, i: i["a"].reduce(by="k", agg=dd.distinct()),
        lambda r: m.reduce(r["a"], "k", m.Distinct()),
    ),
    Case(
        "reduce_top_k",
        ("a",),
        lambda dd, i: i["a"].reduce(by="k", agg=top_k(2, "v")),
        lambda r: m.reduce(r["a"], "k", m.TopK("v", 2)),
    ),
    Case(
        "reduce_top_k_descending",
        ("a",),
        lambda dd, i: i["a"].reduce(by="k", agg=top_k(2, "v", descending=True)),
        lambda r: m.reduce(r["a"], "k", m.TopK("v", 2, descending=True)),
    ),
    Case(
        "reduce_python",
        ("a",),
        lambda dd, i: reduce_python(
            i["a"], "k", python_reducer(_pos_summary, ("v",), ("n", "total")), ("n", "total")
        ),
        lambda r: m.reduce(r["a"], "k", m.PyReduce(_py_summary, ("n", "total"))),
    ),
    Case(
        "reduce_python_never_sees_an_empty_key",
        ("a",),
        lambda dd, i: reduce_python(i["a"], "k", python_reducer(_size, ("v",), ("n",)), ("n",)),
        lambda r: m.reduce(r["a"], "k", m.PyReduce(_py_size, ("n",))),
    ),
    Case(
        "count_by",
        ("a",),
        lambda dd, i: i["a"].count(by="v"),
        lambda r: m.count(r["a"], "v"),
    ),
    Case(
        "count_by_all",
        ("a",),
        lambda dd, i: i["a"].count(by=["k", "v"]),
        lambda r: m.count(r["a"], ["k", "v"]),
    ),
    Case("distinct", ("a",), lambda dd, i: i["a"].distinct(), lambda r: m.distinct(r["a"])),
    Case(
        "threshold",
        ("a",),
        lambda dd, i: i["a"].threshold(lambda c: c * c - c),
        lambda r: m.threshold(r["a"], lambda c: c * c - c),
    ),
    Case(
        "chain_count_join_filter",
        ("a", "b"),
        lambda dd, i: i["a"].count(by="k").join(i["b"], on="k").filter(dd.col("count") > 1),
        lambda r: m.filter_rows(
            m.join(m.count(r["a"], "k"), r["b"], on="k"), lambda w: w["count"] > 1
        ),
    ),
    Case(
        "chain_arranged_twice",
        ("a", "b"),
        lambda dd, i: i["a"]
        .join(i["b"], on="k")
        .concat(i["a"].join(i["b"].negate().distinct(), on="k")),
        lambda r: m.concat(
            m.join(r["a"], r["b"], on="k"), m.join(r["a"], m.distinct(m.negate(r["b"])), on="k")
        ),
    ),
    Case(
        "iterate_reachability",
        ("e", "r"),
        lambda dd, i: _reach(dd, i["e"], i["r"]),
        lambda r: _reach_model(r["e"], r["r"]),
        sets=True,
    ),
    Case(
        "iterate_transitive_closure",
        ("e",),
        lambda dd, i: _closure(dd, i["e"]),
        lambda r: _closure_model(r["e"]),
        sets=True,
    ),
    Case(
        "iterate_label_propagation",
        ("e", "r"),
        lambda dd, i: _labels(dd, i["e"], i["r"]),
        lambda r: _labels_model(r["e"], r["r"]),
        sets=True,
    ),
]


def _histories(case: Case, dims: int, seed: int) -> dict[str, list[m.Update]]:
    rng = random.Random(f"{case.name}/{dims}/{seed}")
    out = {}
    for name in case.inputs:
        cols = INPUTS[name]
        if case.sets:
            domain = 5 if len(cols) == 2 else 4
            hist = random_set_history(
                rng, cols, dims=dims, domain=domain, max_time=MAX_TIME[dims], density=0.25
            )
        else:
            hist = random_multiset_history(
                rng, cols, dims=dims, n=12, domain=4, max_time=MAX_TIME[dims]
            )
        if not hist:  # every input sees at least one update (fixes its dtypes)
            hist = [(tuple(0 for _ in cols), (MAX_TIME[dims],) * dims, 1)]
        out[name] = hist
    return out


def run_case(case: Case, dims: int, seed: int, workers: int = 1) -> tuple[Any, m.ModelResult]:
    """Build, feed and run ``case``; return its capture and the model's result."""
    dd = ddflow()
    hists = _histories(case, dims, seed)
    flow = new_flow(dims, workers=workers)
    sessions, colls = {}, {}
    for name in case.inputs:
        sessions[name], colls[name] = flow.new_input(INPUTS[name])
    cap = case.build(dd, colls).capture()
    for name, hist in hists.items():
        feed(sessions[name], hist, columns=INPUTS[name], batch=seed % 2 == 1)
    if seed % 2 == 0:
        for s in sessions.values():
            s.close()
        flow.run()
    else:
        end = engine_time((MAX_TIME[dims] + 1,) * dims)
        for s in sessions.values():
            s.advance_to(end)
        flow.run_until(end)
    res = m.evaluate({n: (INPUTS[n], h) for n, h in hists.items()}, case.model)
    return cap, res


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_operator_matches_model(case: Case, dims: int, seed: int) -> None:
    cap, res = run_case(case, dims, seed)
    assert_matches_model(cap, res, upto=MAX_TIME[dims], ordered_columns=case.ordered)


def test_time_column_types() -> None:
    case = CASES[0]
    cap1, _ = run_case(case, 1, 0)
    assert str(cap1.updates().schema.field("time").type) == "int64"
    cap2, _ = run_case(case, 2, 0)
    assert str(cap2.updates().schema.field("time").type) == "fixed_size_list<item: int64>[2]"


def test_incomparable_inputs_meet_at_their_join() -> None:
    """A join of updates at (0, 1) and (1, 0) produces its output at (1, 1) only."""
    flow = new_flow(2)
    a_in, a = flow.new_input(("k", "v"))
    b_in, b = flow.new_input(("k", "w"))
    cap = a.join(b, on="k").capture()
    a_in.update_at((1, 10), time=(0, 1), diff=1)
    b_in.update_at((1, 20), time=(1, 0), diff=1)
    a_in.close()
    b_in.close()
    flow.run()
    table = cap.updates()
    assert table.to_pydict() == {"k": [1], "v": [10], "w": [20], "time": [[1, 1]], "diff": [1]}
    for t in m.grid(2, 2):
        expected = 1 if m.leq((1, 1), t) else 0
        assert len(cap.at(t)) == expected, f"at({t})"
