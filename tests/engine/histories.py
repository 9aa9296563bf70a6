"""Random update histories shared by the engine suites: edge sets that change one edge per
time, and a root set with a second root present for an interval.

Every history is a list of ``model.Update`` (record, time, diff) with 1-D times, so the
brute-force model can accumulate it at any time.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable

from . import model as m


def random_history(
    rng: random.Random,
    initial: int,
    changes: int,
    new_record: Callable[[], Hashable],
    delete_p: float,
) -> list[m.Update]:
    """``initial`` distinct records at time 0, then at each time ``1..changes`` either the
    deletion of a present record (with probability ``delete_p``) or the insertion of a new
    one drawn with ``new_record`` (redrawn until it is not present)."""
    present: set[Hashable] = set()
    ups: list[m.Update] = []

    def fresh() -> Hashable:
        while True:
            r = new_record()
            if r not in present:
                return r

    for _ in range(initial):
        r = fresh()
        present.add(r)
        ups.append((r, (0,), 1))
    for t in range(1, changes + 1):
        if present and rng.random() < delete_p:
            r = rng.choice(sorted(present))  # type: ignore[type-var]
            present.remove(r)
            ups.append((r, (t,), -1))
        else:
            r = fresh()
            present.add(r)
            ups.append((r, (t,), 1))
    return ups


def edge_history(
    rng: random.Random,
    nodes: int,
    initial: int,
    changes: int,
    delete_p: float = 0.45,
    max_weight: int | None = None,
) -> list[m.Update]:
    """Random ``(src, dst)`` edges (``(src, dst, w)`` with ``1 <= w <= max_weight`` when a
    weight bound is given), one insertion or deletion per time."""

    def edge() -> Hashable:
        if max_weight is None:
            return (rng.randrange(nodes), rng.randrange(nodes))
        return (rng.randrange(nodes), rng.randrange(nodes), rng.randint(1, max_weight))

    return random_history(rng, initial, changes, edge, delete_p)


def interval_roots(rng: random.Random, nodes: int, changes: int) -> list[m.Update]:
    """Root 0 from time 0, and root ``nodes - 1`` added at a random time in ``1..changes``
    and removed at a later one."""
    start = rng.randrange(1, changes)
    stop = rng.randrange(start + 1, changes + 1)
    return [((0,), (0,), 1), ((nodes - 1,), (start,), 1), ((nodes - 1,), (stop,), -1)]
