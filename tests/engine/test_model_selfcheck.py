"""Tests of the brute-force model itself (no engine needed).

A wrong oracle makes every engine test meaningless, so the model is checked here against
independent definitions: the update-level bilinear join, a textbook BFS, hand-worked examples
with negative counts, and round trips between histories and accumulated collections.
"""

from __future__ import annotations

import random

import pytest

from . import model as m
from .conftest import (
    antichain,
    entry_dims,
    interval_contains,
    random_graph,
    random_multiset_history,
    random_set_history,
    rounds_covered,
)


def test_lattice_operations() -> None:
    assert m.leq((0, 1), (1, 1))
    assert not m.leq((0, 1), (1, 0))
    assert m.lattice_join((0, 1), (1, 0)) == (1, 1)
    assert m.meet((0, 1), (1, 0)) == (0, 0)
    assert m.join_closure([(0, 1), (1, 0)]) == [(0, 1), (1, 0), (1, 1)]
    assert m.join_closure([(2, 0, 1), (0, 3, 0), (1, 1, 1)]) == [
        (0, 3, 0),
        (1, 1, 1),
        (1, 3, 1),
        (2, 0, 1),
        (2, 1, 1),
        (2, 3, 1),
    ]
    assert m.join_closure([(3,), (1,)]) == [(1,), (3,)]
    with pytest.raises(ValueError):
        m.leq((1,), (1, 2))


def test_accumulate_and_consolidate() -> None:
    ups = [(("a",), (0, 1), 1), (("a",), (1, 0), 1), (("b",), (1, 1), -2), (("a",), (0, 1), -1)]
    assert m.consolidate(ups) == [(("a",), (1, 0), 1), (("b",), (1, 1), -2)]
    assert m.accumulate(ups, (0, 1)) == {}
    assert m.accumulate(ups, (1, 1)) == {("a",): 1, ("b",): -2}
    assert m.accumulate(ups, (5, 0)) == {("a",): 1}


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("seed", range(5))
def test_to_updates_round_trip(dims: int, seed: int) -> None:
    rng = random.Random(seed)
    ups = random_multiset_history(rng, ("x",), dims=dims, n=15, domain=4, max_time=3)
    times = m.join_closure(t for _, t, _ in ups)
    outputs = {t: m.accumulate(ups, t) for t in times}
    back = m.to_updates(outputs)
    assert back == m.consolidate(ups)
    for t in m.grid(dims, 4):
        assert m.accumulate(back, t) == m.accumulate(ups, t)


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("seed", range(5))
def test_membership_histories_are_sets(dims: int, seed: int) -> None:
    rng = random.Random(seed)
    members = {t: {(rng.randrange(4),) for _ in range(3)} for t in m.grid(dims, 2)}
    ups = m.updates_from_membership(members)
    for t, records in members.items():
        assert m.accumulate(ups, t) == dict.fromkeys(records, 1)
    hist = random_set_history(rng, ("a", "b"), dims=dims, domain=3, max_time=3)
    for t in m.grid(dims, 3):
        assert set(m.accumulate(hist, t).values()) <= {1}


def test_evaluate_checks_joins_of_incomparable_times() -> None:
    left = [((1, "x"), (0, 1), 1)]
    right = [((1, "y"), (1, 0), 1)]
    res = m.evaluate(
        {"l": (("k", "v"), left), "r": (("k", "w"), right)},
        lambda rel: m.join(rel["l"], rel["r"], on="k"),
    )
    assert res.times == [(0, 1), (1, 0), (1, 1)]
    assert res.columns == ("k", "v", "w")
    assert res.updates == [((1, "x", "y"), (1, 1), 1)]
    assert res.at((5, 5)) == {(1, "x", "y"): 1}
    assert res.at((5, 0)) == {}


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("seed", range(8))
def test_join_agrees_with_bilinear_definition(dims: int, seed: int) -> None:
    rng = random.Random(seed)
    left = random_multiset_history(rng, ("k", "v"), dims=dims, n=10, domain=3, max_time=3)
    right = random_multiset_history(rng, ("k", "w"), dims=dims, n=10, domain=3, max_time=3)
    res = m.evaluate(
        {"l": (("k", "v"), left), "r": (("k", "w"), right)},
        lambda rel: m.join(rel["l"], rel["r"], on="k"),
    )
    assert res.updates == m.bilinear_join_updates(left, right)


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("seed", range(5))
def test_linear_operators_act_per_update(dims: int, seed: int) -> None:
    rng = random.Random(seed)
    ups = random_multiset_history(rng, ("a", "b"), dims=dims, n=12, domain=4, max_time=3)
    inputs = {"x": (("a", "b"), ups)}
    res = m.evaluate(inputs, lambda r: m.negate(m.select(r["x"], s=lambda w: w["a"] + w["b"])))
    assert res.updates == m.consolidate([((a + b,), t, -d) for (a, b), t, d in ups])
    res = m.evaluate(
        inputs,
        lambda r: m.flat_map(r["x"], lambda w: [(w["a"],)] * w["b"], ("a",)),
    )
    assert res.updates == m.consolidate([((a,), t, d * b) for (a, b), t, d in ups])
    res = m.evaluate(inputs, lambda r: m.concat(r["x"], r["x"]))
    assert res.updates == m.consolidate([(rec, t, 2 * d) for rec, t, d in ups])


def test_reduce_semantics_with_negative_counts() -> None:
    rel = m.Rel(("k", "v"), {(1, 5): 1, (1, 3): -1, (1, 7): 2, (2, 4): -1, (3, 9): 1, (3, 1): -1})
    assert m.reduce(rel, "k", m.Min("v")).counts == {(1, 5): 1, (3, 9): 1}
    assert m.reduce(rel, "k", m.Max("v")).counts == {(1, 7): 1, (3, 9): 1}
    assert m.reduce(rel, "k", m.Sum("v")).counts == {(1, 16): 1, (2, -4): 1, (3, 8): 1}
    assert m.reduce(rel, "k", m.Count()).counts == {(1, 2): 1, (2, -1): 1}
    assert m.reduce(rel, "k", m.Count()).columns == ("k", "count")
    assert m.reduce(rel, "k", m.Distinct()).counts == {(1, 5): 1, (1, 7): 1, (3, 9): 1}
    assert m.reduce(rel, "k", m.TopK("v", 1)).counts == {(1, 5): 1, (3, 9): 1}
    assert m.reduce(rel, "k", m.TopK("v", 1, descending=True)).counts == {(1, 7): 1, (3, 9): 1}
    assert m.count(rel, "k") == m.reduce(rel, "k", m.Count())
    assert m.distinct(rel).counts == {(1, 5): 1, (1, 7): 1, (3, 9): 1}
    assert m.threshold(rel, lambda c: c * c - c).counts == {
        (1, 3): 2,
        (1, 7): 2,
        (2, 4): 2,
        (3, 1): 2,
    }
    assert m.reduce(m.Rel(("k", "v"), {(1, 2): 1, (1, -2): 1}), "k", m.Sum("v")).counts == {
        (1, 0): 1
    }


def test_semijoin_and_antijoin_have_set_semantics() -> None:
    left = m.Rel(("k", "v"), {(1, "a"): 1, (1, "b"): 2, (2, "c"): 1, (3, "d"): -1})
    right = m.Rel(("k",), {(1,): 2, (2,): -1})
    assert m.semijoin(left, right, on="k").counts == {(1, "a"): 1, (1, "b"): 2}
    assert m.antijoin(left, right, on="k").counts == {(2, "c"): 1, (3, "d"): -1}


def test_join_column_naming() -> None:
    left = m.Rel(("a", "x"), {(1, 10): 1})
    right = m.Rel(("b", "y"), {(1, 20): 1})
    assert m.join(left, right, left_on="a", right_on="b").columns == ("a", "x", "y")
    with pytest.raises(ValueError):
        m.join(m.Rel(("k", "x")), m.Rel(("k", "x")), on="k")


def test_iterate_transitive_closure_and_bound() -> None:
    edges = m.Rel(("src", "dst"), {(0, 1): 1, (1, 2): 1, (2, 3): 1})
    hop = m.select(edges, mid=lambda r: r["src"], to=lambda r: r["dst"])

    def body(paths: m.Rel) -> m.Rel:
        longer = m.join(paths, hop, left_on="dst", right_on="mid")
        stepped = m.select(longer, src=lambda r: r["src"], dst=lambda r: r["to"])
        return m.distinct(m.concat(stepped, edges))

    closure = m.iterate(edges, body)
    assert set(closure.counts) == {(a, b) for a in range(4) for b in range(a + 1, 4)}
    assert set(m.iterate(edges, body, max_iterations=1).counts) == set(edges.counts) | {
        (0, 2),
        (1, 3),
    }
    with pytest.raises(RuntimeError):
        m.iterate(m.Rel(("x",), {(0,): 1}), lambda r: m.select(r, x=lambda w: w["x"] + 1))


SEED_EDGES: list[m.Update] = [
    ((0, 3), (0,), 1),
    ((0, 2), (5,), 1),
    ((2, 3), (10,), 1),
    ((0, 3), (11,), -1),
]


def test_four_edge_bfs_example_in_the_model() -> None:
    res = m.evaluate(
        {"edges": (("src", "dst"), SEED_EDGES), "roots": (("node",), [((0,), (0,), 1)])},
        lambda r: m.select(m.bfs(r["edges"], r["roots"]), dist=lambda w: w["dist"]),
    )
    assert res.updates == [
        ((0,), (0,), 1),
        ((1,), (0,), 1),
        ((1,), (5,), 1),
        ((1,), (11,), -1),
        ((2,), (11,), 1),
    ]


@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("seed", range(6))
def test_model_bfs_equals_plain_bfs(dims: int, seed: int) -> None:
    rng = random.Random(seed)
    edges = random_set_history(rng, ("src", "dst"), dims=dims, domain=6, max_time=3, density=0.3)
    roots = [((0,), (0,) * dims, 1)]
    res = m.evaluate(
        {"edges": (("src", "dst"), edges), "roots": (("node",), roots)},
        lambda r: m.bfs(r["edges"], r["roots"]),
    )
    assert res.columns == ("node", "dist")
    for t in m.grid(dims, 4):
        graph = m.accumulate(edges, t)
        assert set(graph.values()) <= {1}
        expected = {(n, d): 1 for n, d in m.plain_bfs(graph, [0]).items()}
        assert res.at(t) == expected


def test_plain_bfs() -> None:
    assert m.plain_bfs([(0, 1), (1, 2), (0, 2), (5, 6)], [0]) == {0: 0, 1: 1, 2: 1}
    assert m.plain_bfs([(0, 1), (1, 2)], [0, 2]) == {0: 0, 1: 1, 2: 0}
    assert m.plain_bfs([], []) == {}


def test_random_graph_is_deterministic() -> None:
    assert random_graph(7, 20, 30) == random_graph(7, 20, 30)
    assert len(random_graph(7, 20, 30)) == 30


def test_log_interval_helpers() -> None:
    """The helpers that read ``flow.log()`` intervals (times as ints, tuples or antichains)."""
    one_round = {"lower": [[3, 0]], "upper": [[4, 0]]}
    assert rounds_covered(one_round, range(10)) == {3}
    many = {"lower": [[0, 2]], "upper": [[0, 3], [11, 0]]}
    assert entry_dims(many) == 2
    assert rounds_covered(many, range(12)) == set(range(11))
    assert interval_contains(many, (5, 2)) and not interval_contains(many, (5, 3))
    flat = {"lower": 2, "upper": 5}
    assert entry_dims(flat) == 1 and rounds_covered(flat, range(10)) == {2, 3, 4}
    single = {"lower": [1, 1], "upper": []}
    assert antichain(single["lower"]) == [(1, 1)] and antichain([]) == []
    assert rounds_covered(single, range(4)) == {1, 2, 3}
