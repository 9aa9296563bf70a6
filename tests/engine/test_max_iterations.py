"""``iterate(max_iterations=n)`` against the brute-force model at the engine level.

The model's ``iterate`` returns ``v_n`` (``v_0`` the input, ``v_{i+1} = body(v_i)``) or the
fixed point if it comes first. A counter body (``{0} ∪ {x + 1}`` below a cap) makes every
iteration visible in the output, so an iteration counter that steps by 2 or a limit that is
ignored (or off by one) changes the answer; reachability over random changing graphs, with 1-D
and 2-D times, checks the limit under incremental updates at every time of the lattice.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from . import model as m
from .conftest import (
    assert_matches_model,
    ddflow,
    engine_time,
    feed,
    new_flow,
    random_set_history,
    requires_engine,
)

pytestmark = requires_engine

CAP = 40


def _count_model(seed: m.Rel, limit: int | None) -> m.Rel:
    def body(x: m.Rel) -> m.Rel:
        up = m.select(x, n=lambda w: w["n"] + 1)
        up = m.Rel(up.columns, {r: c for r, c in up.counts.items() if r[0] < CAP})
        return m.distinct(m.concat(up, seed))

    return m.iterate(seed, body, max_iterations=limit)


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 7, None])
def test_counter_stops_after_exactly_max_iterations(limit: int | None) -> None:
    dd = ddflow()
    flow = new_flow(1)
    inp, seed = flow.new_input(("n",))

    def body(x: Any) -> Any:
        up = x.select(n=dd.col("n") + 1).filter(dd.col("n") < CAP)
        return up.concat(seed).distinct()

    cap = seed.iterate(body, max_iterations=limit).capture()
    hist: list[m.Update] = [((0,), (0,), 1), ((10,), (1,), 1), ((0,), (2,), -1)]
    feed(inp, hist, columns=("n",))
    inp.advance_to(3)
    flow.run_until(3)
    res = m.evaluate({"seed": (("n",), hist)}, lambda r: _count_model(r["seed"], limit))
    assert_matches_model(cap, res, upto=2)
    # The answer itself, so a model bug cannot hide an engine bug.
    steps = CAP if limit is None else limit
    assert {r for (r,), c in res.at((0,)).items()} == set(range(min(steps + 1, CAP)))


def _reach(dd: Any, edges: Any, roots: Any, limit: int) -> Any:
    def body(reach: Any) -> Any:
        step = reach.join(edges, left_on="node", right_on="src").select(node=dd.col("dst"))
        return step.concat(roots).distinct()

    return roots.iterate(body, max_iterations=limit)


def _reach_model(edges: m.Rel, roots: m.Rel, limit: int) -> m.Rel:
    def body(reach: m.Rel) -> m.Rel:
        step = m.select(
            m.join(reach, edges, left_on="node", right_on="src"), node=lambda w: w["dst"]
        )
        return m.distinct(m.concat(step, roots))

    return m.iterate(roots, body, max_iterations=limit)


@pytest.mark.parametrize("limit", [1, 2, 3])
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("seed", range(3))
def test_reach_with_a_limit_matches_the_model(limit: int, dims: int, seed: int) -> None:
    dd = ddflow()
    rng = random.Random(seed)
    max_time = 3 if dims == 1 else 2
    edges = random_set_history(
        rng, ("src", "dst"), dims=dims, domain=7, max_time=max_time, density=0.3
    )
    roots: list[m.Update] = [((0,), (0,) * dims, 1), ((3,), (1,) * dims, 1)]
    flow = new_flow(dims)
    e_in, e = flow.new_input(("src", "dst"))
    r_in, r = flow.new_input(("node",))
    cap = _reach(dd, e, r, limit).capture()
    feed(e_in, edges, columns=("src", "dst"))
    feed(r_in, roots, columns=("node",))
    end = engine_time((max_time + 1,) * dims)
    e_in.advance_to(end)
    r_in.advance_to(end)
    flow.run_until(end)
    res = m.evaluate(
        {"e": (("src", "dst"), edges), "r": (("node",), roots)},
        lambda rel: _reach_model(rel["e"], rel["r"], limit),
    )
    assert_matches_model(cap, res, upto=max_time)
