"""``explain()``: a readable listing of the plan."""

from __future__ import annotations

import ddflow as dd


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
