"""Plan building: node structure, column names out of operators, scopes, sharing, freezing."""

from __future__ import annotations

import numpy as np
import pytest

import ddflow as dd

from .conftest import check_plan_invariants, node, ops


def _graph() -> tuple[dd.Dataflow, dd.Collection, dd.Collection]:
    flow = dd.Dataflow()
    _, edges = flow.new_input(("src", "dst"), name="edges")
    _, roots = flow.new_input(("node",), name="roots")
    return flow, edges, roots


def test_bfs_plan_structure() -> None:
    flow, edges, roots = _graph()
    dists = dd.algorithms.bfs(edges, roots)
    assert dists.columns == ("node", "dist")
    assert dists.scope == 0
    out = dists.select(dist=dd.col("dist")).consolidate().capture()
    plan = flow.plan()
    check_plan_invariants(plan)
    assert plan["version"] == 1 and plan["time_dims"] == 1
    assert plan["scopes"] == [
        {"id": 0, "parent": None},
        {"id": 1, "parent": 0, "max_iterations": None},
    ]
    names = ops(flow)
    assert names.count("variable") == 1 and names.count("leave") == 1
    assert names.count("reduce") == 1 and names.count("join") == 1
    # edges are arranged at the top level and entered without a copy
    (enter_arr,) = [n for n in plan["nodes"] if n["op"] == "enter_arrangement"]
    assert node(flow, enter_arr["inputs"][0])["inputs"] == [0]
    (reduce,) = [n for n in plan["nodes"] if n["op"] == "reduce"]
    assert reduce["agg"] == {"kind": "min", "column": 0}
    assert reduce["columns"] == ["node", "dist"]
    (join,) = [n for n in plan["nodes"] if n["op"] == "join"]
    assert join["kind"] == "join" and join["columns"] == ["node", "dist", "dst"]
    # no operator of bfs calls Python
    assert not any(op.endswith("_py") for op in names)
    assert node(flow, out.node)["op"] == "capture"


def test_select_names_and_errors() -> None:
    flow, edges, _ = _graph()
    s = edges.select("dst", dd.col("src").alias("s"), one=1, w=dd.col("src") + 1)
    assert s.columns == ("dst", "s", "one", "w")
    n = node(flow, s.node)
    assert n["op"] == "select" and len(n["exprs"]) == 4
    assert n["exprs"][0] == dd.col("dst").to_json()
    with pytest.raises(dd.ColumnNotFoundError, match=r"select@test_plan\.py:\d+.*'nope'"):
        edges.select(x=dd.col("nope"))
    assert edges.select(dd.col("src") + 1, dd.lit(2) * dd.col("dst")).columns == ("src", "dst")
    with pytest.raises(dd.PlanError, match="expected an expression"):
        edges.select(x=[1, 2])
    with pytest.raises(dd.PlanError, match="duplicate"):
        edges.select("src", src=dd.col("dst"))
    with pytest.raises(dd.ColumnNotFoundError, match="filter.*'nope'"):
        edges.filter(dd.col("nope") == 1)


def test_with_columns_and_rename_keep_order() -> None:
    _, edges, _ = _graph()
    w = edges.with_columns(src=dd.col("dst"), z=dd.col("src"))
    assert w.columns == ("src", "dst", "z")
    assert edges.rename(src="a").columns == ("a", "dst")
    with pytest.raises(dd.ColumnNotFoundError):
        edges.rename(nope="a")


def test_join_columns() -> None:
    flow, edges, roots = _graph()
    j = roots.join(edges, left_on="node", right_on="src")
    assert j.columns == ("node", "dst")
    j2 = edges.join(edges.select(src="dst", w="src"), on="src")
    assert j2.columns == ("src", "dst", "w")
    with pytest.raises(dd.PlanError, match=r"\['dst'\].*suffixes"):
        edges.join(edges, on="src")
    j3 = edges.join(edges, on="src", suffixes=("_l", "_r"))
    assert j3.columns == ("src", "dst_l", "dst_r")
    with pytest.raises(dd.PlanError, match="either on= or left_on="):
        edges.join(edges, on="src", left_on="src")
    with pytest.raises(dd.PlanError, match="key columns"):
        edges.join(roots)
    check_plan_invariants(flow.plan())


def test_joins_share_arrangements() -> None:
    flow, edges, roots = _graph()
    roots.join(edges, left_on="node", right_on="src")
    roots.join(edges, left_on="node", right_on="src")
    assert ops(flow).count("arrange") == 2
    arr = edges.arrange_by_key("src")
    assert ops(flow).count("arrange") == 2, "arrange_by_key reuses the join's arrangement"
    assert arr.key == ("src",) and arr.vals == ("dst",)
    a = roots.join(arr, left_on="node")
    assert a.columns == ("node", "dst")
    assert node(flow, a.node)["inputs"][1] == arr.node
    by_dst = edges.arrange_by_key("dst")
    assert by_dst.columns == ("dst", "src")
    check_plan_invariants(flow.plan())


def test_semijoin_and_antijoin_keep_left_columns() -> None:
    flow, edges, roots = _graph()
    s = edges.semijoin(roots, left_on="dst", right_on="node")
    assert s.columns == ("src", "dst")
    assert node(flow, s.node)["op"] == "select", "reordered back to the left's order"
    join = node(flow, node(flow, s.node)["inputs"][0])
    assert join["kind"] == "semijoin" and join["columns"] == ["dst", "src"]
    a = edges.antijoin(roots, left_on="src", right_on="node")
    assert a.columns == ("src", "dst")
    assert node(flow, a.node)["kind"] == "antijoin"
    # the right side is reduced to its keys with positive count (set semantics): a count
    # per key, kept where positive, projected to the keys and arranged by them
    flow, edges, roots = _graph()
    s2 = roots.semijoin(edges, left_on="node", right_on="src")
    right_arr = node(flow, node(flow, s2.node)["inputs"][1])
    assert right_arr["op"] == "arrange" and right_arr["columns"] == ["src"]
    keys = node(flow, right_arr["inputs"][0])
    positive = node(flow, keys["inputs"][0])
    counted = node(flow, positive["inputs"][0])
    assert (keys["op"], positive["op"], counted["op"]) == ("select", "filter", "reduce")
    assert counted["agg"] == {"kind": "count"}
    # an existing arrangement of the right side by the keys is counted, not arranged again
    shared = edges.arrange_by_key("dst")
    s3 = roots.semijoin(edges, left_on="node", right_on="dst")
    keys = node(flow, node(flow, node(flow, s3.node)["inputs"][1])["inputs"][0])
    counted = node(flow, node(flow, keys["inputs"][0])["inputs"][0])
    assert counted["inputs"] == [shared.node]
    check_plan_invariants(flow.plan())


def test_reduce_columns() -> None:
    flow, edges, _ = _graph()
    assert edges.reduce(by="src", agg=dd.min("dst")).columns == ("src", "dst")
    assert edges.reduce(by="src", agg=dd.max("dst").alias("m")).columns == ("src", "m")
    assert edges.reduce(by=["src"], agg=dd.sum("dst")).columns == ("src", "dst")
    assert edges.reduce(by="src", agg=dd.count()).columns == ("src", "count")
    assert edges.count(by="dst").columns == ("dst", "count")
    assert edges.count().columns == ("src", "dst", "count")
    assert edges.distinct().columns == ("src", "dst")
    t = edges.reduce(by="src", agg=dd.top_k("dst", 2, descending=True))
    assert t.columns == ("src", "dst")
    assert node(flow, t.node)["agg"] == {"kind": "top_k", "k": 2, "column": 0, "descending": True}
    th = edges.threshold(lambda c: 1 if c > 0 else 0)
    assert th.columns == ("src", "dst")
    assert node(flow, th.node)["agg"]["kind"] == "threshold_py"
    arr = node(flow, node(flow, th.node)["inputs"][0])
    assert arr["key"] == [0, 1]
    with pytest.raises(dd.ColumnNotFoundError, match=r"reduce@.*'nope'"):
        edges.reduce(by="src", agg=dd.sum("nope"))
    with pytest.raises(dd.ColumnNotFoundError, match=r"reduce@.*'nope'"):
        edges.reduce(by="nope", agg=dd.count())
    with pytest.raises(dd.PlanError, match="key column"):
        edges.reduce(by="src", agg=dd.min("src"))
    with pytest.raises(dd.PlanError, match="clashes"):
        edges.reduce(by="src", agg=dd.min("dst").alias("src"))
    with pytest.raises(dd.PlanError):
        dd.top_k("dst", 0)
    check_plan_invariants(flow.plan())


def test_python_reducer_columns() -> None:
    flow, edges, _ = _graph()

    def first(batch: dd.ReduceBatch) -> dict[str, np.ndarray]:
        return {"offsets": np.arange(len(batch) + 1), "first": batch.values["dst"][:0]}

    r = edges.reduce(by="src", agg=first)
    assert r.columns == ("src", "first")
    agg = node(flow, r.node)["agg"]
    assert agg["kind"] == "python" and agg["columns"] == 1
    r2 = edges.reduce(by="src", agg=lambda b: 1 / 0, columns=("a", "b"))
    assert r2.columns == ("src", "a", "b")
    with pytest.raises(dd.PlanError, match="columns="):
        edges.reduce(by="src", agg=lambda b: 1 / 0)
    with pytest.raises(dd.PlanError, match="only to Python reducers"):
        edges.reduce(by="src", agg=dd.count(), columns=("x",))


def test_map_columns() -> None:
    flow, edges, _ = _graph()
    m = edges.map(lambda b: {"s": b["src"] + b["dst"], "d": b["dst"]})
    assert m.columns == ("s", "d")
    assert node(flow, m.node)["op"] == "map_py"
    fm = edges.flat_map(lambda b: {"x": b["src"], "__row__": np.arange(len(b["src"]))})
    assert fm.columns == ("x",)
    assert edges.map(lambda b: (b["src"],), columns=["only"]).columns == ("only",)
    with pytest.raises(dd.PlanError, match="columns="):
        edges.map(lambda b: (b["src"],))
    assert edges.map_rows(lambda r: (r[1], r[0])).columns == ("src", "dst")
    assert edges.flat_map_rows(lambda r: [r], columns=("a", "b")).columns == ("a", "b")
    assert node(flow, edges.filter(lambda b: b["src"] > 0).node)["op"] == "filter_py"
    assert node(flow, edges.filter_rows(lambda r: r[0] > 0).node)["op"] == "filter_py"
    ids = [n["fn"] for n in flow.plan()["nodes"] if "fn" in n]
    assert ids == sorted(set(ids)), "each function has its own id"


def test_concat_reorders_and_checks_columns() -> None:
    flow, edges, roots = _graph()
    c = edges.concat(edges.select("dst", "src"))
    assert c.columns == ("src", "dst")
    cat = node(flow, c.node)
    assert cat["op"] == "concat" and len(cat["inputs"]) == 2
    assert node(flow, cat["inputs"][1])["op"] == "select"
    with pytest.raises(dd.PlanError, match="differ"):
        edges.concat(roots)
    other = dd.Dataflow()
    _, foreign = other.new_input(("src", "dst"))
    with pytest.raises(dd.PlanError, match="different dataflows"):
        edges.concat(foreign)


def test_iterate_scopes_and_implicit_enter() -> None:
    flow, edges, roots = _graph()
    nodes = roots.select("node")

    def body(inner: dd.Collection) -> dd.Collection:
        assert inner.scope == 1
        step = inner.join(edges, left_on="node", right_on="src").select(node=dd.col("dst"))
        return step.concat(nodes).distinct()

    reach = nodes.iterate(body, max_iterations=5)
    plan = flow.plan()
    check_plan_invariants(plan)
    assert plan["scopes"][1]["max_iterations"] == 5
    enters = [n for n in plan["nodes"] if n["op"] == "enter"]
    assert len(enters) == 1, "the source and the body's use of `nodes` share one enter"
    assert reach.scope == 0 and reach.columns == ("node",)


def test_nested_iterate() -> None:
    flow, edges, roots = _graph()
    nodes = roots.select("node")

    def inner_body(x: dd.Collection) -> dd.Collection:
        return x.join(edges, left_on="node", right_on="src").select(node="dst").concat(x)

    def outer_body(y: dd.Collection) -> dd.Collection:
        return y.iterate(lambda z: inner_body(z).distinct(), max_iterations=2).concat(y).distinct()

    nodes.iterate(outer_body)
    plan = flow.plan()
    check_plan_invariants(plan)
    assert [s["parent"] for s in plan["scopes"]] == [None, 0, 1]
    assert sum(n["op"] == "enter_arrangement" for n in plan["nodes"]) == 2


def test_iterate_errors_roll_back() -> None:
    flow, edges, _ = _graph()
    before = flow.plan()
    with pytest.raises(dd.PlanError, match="columns"):
        edges.iterate(lambda x: x.select("src"))
    with pytest.raises(ZeroDivisionError):
        edges.iterate(lambda x: x.select(s=1 / 0))
    assert flow.plan() == before
    leaked: list[dd.Collection] = []

    def body(x: dd.Collection) -> dd.Collection:
        leaked.append(x)
        return x.distinct()

    edges.iterate(body)
    with pytest.raises(dd.PlanError, match="finished iterate"):
        leaked[0].select("src")
    with pytest.raises(dd.PlanError, match="top-level"):
        edges.iterate(lambda x: (x.capture(), x)[1])


def test_iterate_identity_body_and_reordered_result() -> None:
    flow, edges, _ = _graph()
    edges.iterate(lambda x: x)
    edges.iterate(lambda x: x.select("dst", "src"))
    check_plan_invariants(flow.plan())


def test_arrangement_inside_iterate_is_entered() -> None:
    flow, edges, roots = _graph()
    by_src = edges.arrange_by_key("src")
    nodes = roots.select("node")
    nodes.iterate(
        lambda x: by_src.join(x, right_on="node").select(node="dst").concat(nodes).distinct()
    )
    plan = flow.plan()
    check_plan_invariants(plan)
    (ea,) = [n for n in plan["nodes"] if n["op"] == "enter_arrangement"]
    assert ea["inputs"] == [by_src.node]


def test_capture_and_probe_checks() -> None:
    _, edges, _ = _graph()
    with pytest.raises(dd.PlanError, match="'time'"):
        edges.rename(src="time").capture()
    p = edges.probe()
    assert p.done(0) is False


def test_plan_freezes_once_data_arrives(engines: list) -> None:
    flow, edges, _ = _graph()
    inp = flow._inputs[0]
    inp.update_at((1, 2), time=0)
    with pytest.raises(dd.PlanError, match="already received data"):
        edges.distinct()
    assert not engines, "buffering a record does not start the engine"
    flow.step()
    assert len(engines) == 1


def test_bad_arguments() -> None:
    with pytest.raises(dd.PlanError):
        dd.Dataflow(workers=0)
    flow = dd.Dataflow()
    with pytest.raises(dd.DdflowError):
        flow.new_input(("a", "a"))
    with pytest.raises(dd.DdflowError):
        flow.new_input(())
    _, c = flow.new_input({"a": "int64", "b": float, "s": "str"})
    assert c.columns == ("a", "b", "s")
    with pytest.raises(dd.SchemaTypeError):
        flow.new_input({"a": "complex"})


def test_scale_node_and_factor_check() -> None:
    flow, edges, _ = _graph()
    s = edges.scale(3)
    n = node(flow, s.node)
    assert n["op"] == "scale" and n["factor"] == 3 and s.columns == ("src", "dst")
    for bad in (1.5, True, 2**63):
        with pytest.raises(dd.PlanError, match="factor must be an int64"):
            edges.scale(bad)  # type: ignore[arg-type]
