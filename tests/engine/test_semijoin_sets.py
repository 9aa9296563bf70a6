"""``semijoin`` and ``antijoin`` have set semantics: a left row keeps its own count while its
key's accumulated count on the right is positive (semijoin) or not (antijoin), however many
times the key occurs on the right, on one or two workers, and against the model."""

from __future__ import annotations

import random

import pytest

import ddflow as dd

from . import model as m


def _state(cap: dd.Capture, t: int) -> dict[tuple[int, int], int]:
    table = cap.at(t).to_pydict()
    return {(k, v): d for k, v, d in zip(table["k"], table["v"], table["diff"], strict=True)}


@pytest.mark.parametrize("workers", [1, 2])
def test_duplicate_right_keys_count_once(workers: int) -> None:
    flow = dd.Dataflow(workers=workers)
    a_in, a = flow.new_input(("k", "v"))
    b_in, b = flow.new_input(("k",))
    semi = a.semijoin(b, on="k").capture()
    anti = a.antijoin(b, on="k").capture()
    a_in.update_at((1, 10), 0, diff=3)
    a_in.update_at((2, 20), 0)
    a_in.update_at((3, 30), 0)
    b_in.update_at((1,), 0, diff=2)  # twice on the right
    b_in.update_at((3,), 0, diff=-1)  # a negative count is not "present"
    a_in.advance_to(1)
    b_in.advance_to(1)
    flow.run_until(1)
    assert _state(semi, 0) == {(1, 10): 3}
    assert _state(anti, 0) == {(2, 20): 1, (3, 30): 1}
    b_in.update_at((1,), 1, diff=-1)  # still once: nothing changes
    b_in.update_at((3,), 1, diff=2)  # now positive
    a_in.advance_to(2)
    b_in.advance_to(2)
    flow.run_until(2)
    assert _state(semi, 1) == {(1, 10): 3, (3, 30): 1}
    assert _state(anti, 1) == {(2, 20): 1}
    times = {t for t in anti.updates().column("time").to_pylist()}
    assert times == {0, 1}


@pytest.mark.parametrize("seed", range(4))
def test_random_histories_match_the_model(seed: int) -> None:
    rng = random.Random(seed)
    left = [
        ((rng.randrange(5), rng.randrange(3)), rng.randrange(6), rng.choice([1, 1, 2, -1]))
        for _ in range(40)
    ]
    right = [((rng.randrange(5),), rng.randrange(6), rng.choice([1, 1, -1, 2])) for _ in range(30)]
    flow = dd.Dataflow(workers=1 + seed % 2)
    a_in, a = flow.new_input(("k", "v"))
    b_in, b = flow.new_input(("k",))
    semi = a.semijoin(b, on="k").capture()
    anti = a.antijoin(b, on="k").capture()
    for rec, t, d in left:
        a_in.update_at(rec, t, diff=d)
    for rec, t, d in right:
        b_in.update_at(rec, t, diff=d)
    a_in.advance_to(6)
    b_in.advance_to(6)
    flow.run_until(6)
    for t in range(6):
        lrel = m.Rel(("k", "v"), m.accumulate([(r, (tt,), d) for r, tt, d in left], (t,)))
        rrel = m.Rel(("k",), m.accumulate([(r, (tt,), d) for r, tt, d in right], (t,)))
        assert _state(semi, t) == m.semijoin(lrel, rrel, on="k").counts, t
        assert _state(anti, t) == m.antijoin(lrel, rrel, on="k").counts, t
