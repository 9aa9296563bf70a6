"""``explain()``: a readable listing of the plan."""

from __future__ import annotations

import re

import pytest

import ddflow as dd
from ddflow.errors import PlanError


def test_explain_lists_nodes_scopes_and_user_lines() -> None:
    flow = dd.Dataflow()
    _, edges = flow.new_input(("src", "dst"), name="edges")
    _, roots = flow.new_input(("node",), name="roots")
    dists = dd.algorithms.bfs(edges, roots)
    dists.filter(dd.col("dist") > 1).capture()
    text = flow.explain()
    assert isinstance(text, str)
    assert repr(text) == str(text)
    lines = text.splitlines()
    assert lines[0].startswith("dataflow plan:")
    assert len([ln for ln in lines if ln.lstrip().startswith("#")]) == len(flow.plan()["nodes"])
    assert any("input 'edges'@test_explain.py:" in ln for ln in lines)
    assert any(ln.lstrip().startswith("scope 1: iterate@graph.py:") for ln in lines)
    reduce_line = next(ln for ln in lines if " reduce " in ln)
    assert "min(dist)" in reduce_line and "by (node)" in reduce_line
    assert reduce_line.startswith("    "), "nodes inside iterate are indented"
    filter_line = next(ln for ln in lines if " filter " in ln)
    assert "filter@test_explain.py:" in filter_line and "dist" in filter_line
    join_line = next(ln for ln in lines if " join " in ln)
    assert "node = src" in join_line and "-> (node, dist, dst)" in join_line


def test_explain_of_time_dims() -> None:
    flow = dd.Dataflow(time_dims=2)
    _, c = flow.new_input(("a",))
    c.iterate(lambda x: x.distinct())
    text = flow.explain()
    assert "time_dims 2" in text and "time coordinate 2" in text


def test_explain_draws_the_plan_as_dot_and_mermaid() -> None:
    """Every node is a box, every input an arrow, the loop's feedback a dashed arrow, and the
    iterate body a box around its nodes, in both formats; an unknown format is refused."""
    flow = dd.Dataflow()
    _, edges = flow.new_input(("src", "dst"))
    _, roots = flow.new_input(("node",))
    dd.algorithms.bfs(edges, roots).count(by="dist").capture()
    nodes = flow.plan()["nodes"]
    arrows = sum(len(n["inputs"]) for n in nodes)
    loops = sum(1 for n in nodes if n["op"] == "variable")
    assert loops >= 1
    dot = flow.explain(format="dot")
    assert dot.startswith("digraph dataflow {") and dot.rstrip().endswith("}")
    assert len(re.findall(r"^\s+n\d+ \[label=", dot, re.M)) == len(nodes)
    assert len(re.findall(r"^  n\d+ -> n\d+;$", dot, re.M)) == arrows
    assert dot.count('style=dashed, label="next iteration"') == loops
    assert dot.count("subgraph cluster_") == len(flow.plan()["scopes"]) - 1
    mermaid = flow.explain(format="mermaid")
    assert mermaid.startswith("flowchart TD")
    assert len(re.findall(r"^\s+n\d+\[\"#\d+ ", mermaid, re.M)) == len(nodes)
    assert len(re.findall(r"^  n\d+ --> n\d+$", mermaid, re.M)) == arrows
    assert mermaid.count("-. next iteration .->") == loops
    ends = sum(1 for line in mermaid.splitlines() if line.strip() == "end")
    assert mermaid.count("subgraph s") == ends == len(flow.plan()["scopes"]) - 1
    with pytest.raises(PlanError, match="format must be"):
        flow.explain(format="svg")
