"""``consolidate`` sums updates per (record, time) across every message, on any number of
workers: a record and its negation cancel to nothing, and a loop whose only consolidation is
``consolidate`` reaches its fixed point."""

from __future__ import annotations

from typing import Any

import pytest

import ddflow as dd


def _seen(collection: dd.Collection) -> list[tuple[Any, ...]]:
    seen: list[tuple[Any, ...]] = []
    collection.inspect(lambda rec, time, diff: seen.append((rec, time, diff)))
    return seen


@pytest.mark.parametrize("workers", [1, 2])
def test_record_and_its_negation_emit_nothing(workers: int) -> None:
    flow = dd.Dataflow(workers=workers)
    inp, x = flow.new_input(("a",))
    both = x.concat(x.negate()).consolidate()
    seen = _seen(both)
    out = both.capture()
    for t in range(3):
        inp.update_batch({"a": list(range(50))}, times=[t] * 50)
        inp.advance_to(t + 1)
        flow.run_until(t + 1)
    assert seen == []
    assert out.updates().num_rows == 0


@pytest.mark.parametrize("workers", [1, 2])
def test_updates_from_separate_messages_are_summed(workers: int) -> None:
    flow = dd.Dataflow(workers=workers)
    a_in, a = flow.new_input(("k",))
    b_in, b = flow.new_input(("k",))
    summed = a.concat(b).consolidate()
    seen = _seen(summed)
    for k in range(20):
        a_in.update_at((k,), time=0, diff=2)
        b_in.update_at((k,), time=0, diff=-1 if k % 2 else 3)
    a_in.advance_to(1)
    b_in.advance_to(1)
    flow.run_until(1)
    want = sorted(((k,), 0, 1 if k % 2 else 5) for k in range(20))
    assert sorted(seen) == want


@pytest.mark.timeout(60)
@pytest.mark.parametrize("workers", [1, 2])
def test_iterate_with_only_consolidate_reaches_its_fixed_point(workers: int) -> None:
    # body(x) = x - x + roots: the fixed point is roots, reached only if the pair (x, -x)
    # cancels inside consolidate although the two halves arrive as separate messages.
    flow = dd.Dataflow(workers=workers)
    roots_in, roots = flow.new_input(("node",))
    fixed = roots.iterate(
        lambda x: x.concat(x.negate()).concat(roots).consolidate(), max_iterations=1000
    ).capture()
    for node in range(10):
        roots_in.update_at((node,), time=0)
    roots_in.advance_to(1)
    flow.run_until(1)
    assert sorted(fixed.at(0).column("node").to_pylist()) == list(range(10))


@pytest.mark.timeout(60)
@pytest.mark.parametrize("workers", [1, 2])
def test_path_counts_on_a_dag_converge_with_consolidate(workers: int) -> None:
    # Paths from node 0 over a DAG of diamonds: node 2k is reached by 2**k paths.
    flow = dd.Dataflow(workers=workers)
    edges_in, edges = flow.new_input(("src", "dst"))
    roots_in, roots = flow.new_input(("node",))

    def body(x: dd.Collection) -> dd.Collection:
        step = x.join(edges, left_on="node", right_on="src").select(node=dd.col("dst"))
        return step.concat(roots).consolidate()

    paths = roots.iterate(body).capture()
    for k in range(5):
        a, b = 2 * k, 2 * k + 2
        edges_in.update_batch({"src": [a, a, 100 + k, 200 + k], "dst": [100 + k, 200 + k, b, b]})
    roots_in.update_at((0,), time=0)
    edges_in.advance_to(1)
    roots_in.advance_to(1)
    flow.run_until(1)
    counts = dict(zip(*(paths.at(0).column(c).to_pylist() for c in ("node", "diff")), strict=True))
    assert {k: counts[2 * k] for k in range(6)} == {k: 2**k for k in range(6)}
