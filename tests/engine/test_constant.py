"""``Dataflow.constant``: rows at the least time, never holding progress back.

Oracles: the rows themselves (what the constant holds at every time), and for a constant
joined with a changing input or entered into an iterate, a recompute from scratch of the
accumulated input at every time (a dict join; a breadth-first search).
"""

from __future__ import annotations

import datetime
import random
from collections import Counter, deque
from typing import Any

import pytest

from .conftest import ddflow, requires_engine

pytestmark = requires_engine

dd = ddflow()


def _rows(table: Any, columns: list[str]) -> Counter[tuple[Any, ...]]:
    """A captured table's rows with their counts (``diff``)."""
    d = table.to_pydict()
    out: Counter[tuple[Any, ...]] = Counter()
    for i, diff in enumerate(d["diff"]):
        out[tuple(d[c][i] for c in columns)] += diff
    return +out


@pytest.mark.parametrize("workers", [1, 2])
def test_rows_at_the_least_time_with_every_dtype(workers: int) -> None:
    flow = dd.Dataflow(workers=workers)
    rows = [
        (1, 1.5, True, "a", datetime.date(2024, 2, 29)),
        (None, float("inf"), False, None, None),
        (-7, None, None, "ü", datetime.date(1970, 1, 1)),
        (1, 1.5, True, "a", datetime.date(2024, 2, 29)),
    ]
    schema = {"i": "int64", "f": "float64", "b": "bool", "s": "str", "d": "date32"}
    out = flow.constant(rows, schema).capture()
    inp, _ = flow.new_input(("x",))
    inp.advance_to(3)
    flow.run_until(3)
    got = out.updates().to_pydict()
    assert set(got["time"]) == {0}
    assert _rows(out.updates(), list(schema)) == Counter(rows)
    assert _rows(out.at(2), list(schema)) == Counter(rows)


def test_columnar_rows_and_inferred_dtypes() -> None:
    flow = dd.Dataflow()
    out = flow.constant({"k": [1, 2], "v": [None, "x"]}, ("k", "v")).capture()
    flow.run()
    assert _rows(out.updates(), ["k", "v"]) == Counter([(1, None), (2, "x")])
    assert flow.plan_dtypes(out.node) == ["int64", "str"]


def test_tuple_times_put_the_rows_at_zero_zero() -> None:
    flow = dd.Dataflow(time_dims=2)
    out = flow.constant([(5,)], {"k": "int64"}).capture()
    inp, _ = flow.new_input(("x",))
    inp.advance_to((2, 2))
    flow.run_until((2, 2))
    got = out.updates().to_pydict()
    assert got["k"] == [5] and got["diff"] == [1]
    assert [tuple(t) for t in got["time"]] == [(0, 0)]


def test_an_empty_constant_is_typed_and_empty() -> None:
    flow = dd.Dataflow()
    out = flow.constant([], {"k": "int64", "s": "str"}).capture()
    flow.run()
    t = out.updates()
    assert t.num_rows == 0
    assert [str(t.schema.field(c).type) for c in ("k", "s")] == ["int64", "string"]


@pytest.mark.parametrize("workers", [1, 2])
def test_joined_with_a_changing_input_matches_a_recompute(workers: int) -> None:
    rng = random.Random(7 + workers)
    flow = dd.Dataflow(workers=workers)
    names = [(k, f"n{k}") for k in range(0, 12, 2)]
    const = flow.constant(names, {"k": "int64", "name": "str"})
    inp, facts = flow.new_input({"k": "int64", "v": "int64"})
    out = facts.join(const, on="k").capture()
    state: Counter[tuple[int, int]] = Counter()
    history: list[Counter[tuple[Any, ...]]] = []
    for t in range(8):
        for _ in range(6):
            rec = (rng.randrange(12), rng.randrange(3))
            diff = -1 if state[rec] > 0 and rng.random() < 0.4 else 1
            state[rec] += diff
            inp.update_at(rec, time=t, diff=diff)
        lookup = dict(names)
        want: Counter[tuple[Any, ...]] = Counter()
        for (k, v), c in state.items():
            if c and k in lookup:
                want[(k, v, lookup[k])] += c
        history.append(+want)
    inp.advance_to(8)
    flow.run_until(8)
    for t, want in enumerate(history):
        assert _rows(out.at(t), ["k", "v", "name"]) == want, f"time {t}"


def _reach(edges: Counter[tuple[int, int]], roots: list[int]) -> dict[int, int]:
    adj: dict[int, list[int]] = {}
    for (a, b), c in edges.items():
        if c > 0:
            adj.setdefault(a, []).append(b)
    dist = {r: 0 for r in roots}
    queue = deque(roots)
    while queue:
        x = queue.popleft()
        for y in adj.get(x, []):
            if y not in dist:
                dist[y] = dist[x] + 1
                queue.append(y)
    return dist


@pytest.mark.parametrize("workers", [1, 2])
def test_entered_into_an_iterate_matches_a_recompute(workers: int) -> None:
    rng = random.Random(3 + workers)
    flow = dd.Dataflow(workers=workers)
    roots = flow.constant([(0,), (5,)], {"node": "int64"})
    inp, edges = flow.new_input({"src": "int64", "dst": "int64"})
    bfs = dd.algorithms.bfs(edges, roots).capture()
    # the constant used inside the body too (entered implicitly): reachability from it
    reach = (
        roots.iterate(
            lambda x: x.join(edges, left_on="node", right_on="src")
            .select(node=dd.col("dst"))
            .concat(roots)
            .distinct()
        )
    ).capture()
    state: Counter[tuple[int, int]] = Counter()
    history = []
    for t in range(6):
        for _ in range(5):
            e = (rng.randrange(10), rng.randrange(10))
            diff = -1 if state[e] > 0 and rng.random() < 0.3 else 1
            state[e] += diff
            inp.update_at(e, time=t, diff=diff)
        history.append(_reach(state, [0, 5]))
    inp.advance_to(6)
    flow.run_until(6)
    for t, dist in enumerate(history):
        assert _rows(bfs.at(t), ["node", "dist"]) == Counter(dist.items()), f"time {t}"
        assert _rows(reach.at(t), ["node"]) == Counter((n,) for n in dist), f"time {t}"


@pytest.mark.parametrize(
    ("rows", "schema", "needle"),
    [
        ([(1, 2), (3,)], ("a", "b"), "row 1 has 1 values"),
        ([(1, "x"), (2, 3)], {"a": "int64", "b": "str"}, "row 1, column 'b'"),
        ([(1,), ("x",)], {"a": "int64"}, "row 1, column 'a'"),
        ([(1,), (300,)], {"a": "int8"}, "row 1, column 'a'"),
        ([(True,)], {"a": "float64"}, "row 0, column 'a'"),
        ([(None,)], ("a",), "column 'a' has no non-null value"),
        ([5], ("a",), "row 0 must be a tuple"),
        ({"a": [1], "b": [1, 2]}, ("a", "b"), "different lengths"),
    ],
)
def test_bad_rows_are_plan_errors_naming_the_row_and_column(
    rows: Any, schema: Any, needle: str
) -> None:
    flow = dd.Dataflow()
    with pytest.raises(dd.PlanError, match="constant@") as e:
        flow.constant(rows, schema)
    assert needle in str(e.value)
    assert flow.plan()["nodes"] == []


def test_the_engine_checks_a_constant_node_itself() -> None:
    flow = dd.Dataflow()
    out = flow.constant([(1,)], {"a": "int64"}).capture()
    node = flow.builder.plan.nodes[out.node - 1]
    assert node["op"] == "constant"
    node["rows"] = [[1], ["x"]]
    with pytest.raises(dd.PlanError, match=r"row 1, column \"a\""):
        flow.run()


@pytest.mark.parametrize("workers", [1, 2])
def test_in_a_dataflow_attached_to_a_running_one(workers: int) -> None:
    """A constant of a dataflow attached later (``import_trace``) is fed when it attaches:
    joined with the imported trace it gives, at every time from then on, a recompute of the
    join over the accumulated edges."""
    rng = random.Random(workers)
    live = dd.Dataflow(workers=workers)
    edges_in, edges = live.new_input({"src": "int64", "dst": "int64"})
    trace = edges.arrange_by_key(on="src").trace()
    state: Counter[tuple[int, int]] = Counter()

    def churn(t: int) -> None:
        for _ in range(4):
            e = (rng.randrange(6), rng.randrange(6))
            diff = -1 if state[e] > 0 and rng.random() < 0.3 else 1
            state[e] += diff
            edges_in.update_at(e, time=t, diff=diff)

    for t in range(3):
        churn(t)
    edges_in.advance_to(3)
    live.run_until(3)
    attached = dd.Dataflow(workers=workers)
    labels = attached.constant([(0, "zero"), (2, "two"), (4, "four")], ("src", "label"))
    out = attached.import_trace(trace).join(labels, on="src").capture()
    lookup = {0: "zero", 2: "two", 4: "four"}
    for t in range(3, 7):
        churn(t)
        edges_in.advance_to(t + 1)
        (attached if t % 2 else live).run_until(t + 1)
        want = Counter({(s, d, lookup[s]): c for (s, d), c in state.items() if c and s in lookup})
        assert _rows(out.at(t), ["src", "dst", "label"]) == want, f"time {t}"
