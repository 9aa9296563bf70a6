"""Fueled joins: a join activation emits at most ``DDFLOW_JOIN_FUEL`` products and
resumes the rest of its delta rule in later passes, holding its output frontier back until
done. With a tiny fuel every join case must still match the model at every time and produce
the same consolidated updates as with the default fuel, and BFS under random edge changes
must give the same distances at every time.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import (
    assert_matches_model,
    captured_at,
    captured_updates,
    log_entries,
    requires_engine,
)
from .test_bfs_random import _run, edge_changes, expected_dists
from .test_operators_vs_model import CASES, MAX_TIME, run_case

pytestmark = requires_engine

JOIN_CASES = [
    c
    for c in CASES
    if "join" in c.name or c.name.startswith("iterate_") or c.name.startswith("chain_")
]


def _consolidated(cap: Any) -> dict[tuple[Any, ...], int]:
    columns = [c for c in cap.updates().column_names if c not in ("time", "diff")]
    acc: dict[tuple[Any, ...], int] = {}
    for record, t, d in captured_updates(cap, columns):
        key = (record, t)
        acc[key] = acc.get(key, 0) + d
    return {k: v for k, v in acc.items() if v != 0}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fuel", [1, 7])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("case", JOIN_CASES, ids=lambda c: c.name)
def test_tiny_fuel_matches_model_and_unbounded(
    case: Any, dims: int, seed: int, fuel: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DDFLOW_JOIN_FUEL", raising=False)
    full, _ = run_case(case, dims, seed)
    monkeypatch.setenv("DDFLOW_JOIN_FUEL", str(fuel))
    cap, res = run_case(case, dims, seed)
    assert_matches_model(cap, res, upto=MAX_TIME[dims], ordered_columns=case.ordered)
    assert _consolidated(cap) == _consolidated(full)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fuel", [1, 7])
@pytest.mark.parametrize(
    ("seed", "nodes", "initial", "changes", "stepwise"),
    [(0, 12, 14, 25, True), (1, 12, 14, 25, False), (2, 20, 30, 40, True)],
)
def test_bfs_with_tiny_fuel(
    seed: int,
    nodes: int,
    initial: int,
    changes: int,
    stepwise: bool,
    fuel: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    edges, roots = edge_changes(seed, nodes, initial, changes)
    monkeypatch.delenv("DDFLOW_JOIN_FUEL", raising=False)
    _, full = _run(edges, roots, changes, stepwise=stepwise, batch=True)
    monkeypatch.setenv("DDFLOW_JOIN_FUEL", str(fuel))
    flow, cap = _run(edges, roots, changes, stepwise=stepwise, batch=seed % 2 == 1)
    for t in range(changes + 1):
        assert captured_at(cap, (t,), ("node", "dist")) == expected_dists(
            edges, roots, t
        ), f"time {t}"
    assert _consolidated(cap) == _consolidated(full)
    # Every join activation emitted at most `fuel` updates.
    joins = [e for e in log_entries(flow) if e["op"] == "join"]
    assert joins
    assert max(e["updates_out"] for e in joins) <= fuel


@pytest.mark.parametrize("kind", ["join", "semijoin", "antijoin"])
def test_pairs_arriving_together_are_emitted_once(kind: str) -> None:
    """Both sides of 1,000 pairs in one batch: the join emits one update per pair (the
    delta rule takes the new right rows out of the histories the new left rows read), not
    ``+1 +1 -1``; and the consolidated output is the pairs."""
    import numpy as np

    import ddflow as dd

    flow = dd.Dataflow()
    left_in, left = flow.new_input({"k": "int64", "a": "int64"})
    right_in, right = flow.new_input({"k": "int64", "b": "int64"})
    joined = getattr(left, kind)(right, on="k")
    cap = joined.capture()
    keys = np.arange(1000, dtype=np.int64)
    left_in.update_batch({"k": keys, "a": keys * 2}, times=0)
    right_in.update_batch({"k": keys[::2], "b": keys[::2]}, times=0)
    left_in.advance_to(1)
    right_in.advance_to(1)
    flow.run_until(1)
    emitted = sum(e["updates_out"] for e in flow.log() if e["op"] == "join")
    expected = 500 if kind != "antijoin" else 1000 + 500  # antijoin: dA, minus the matches
    assert emitted == expected
    assert len(cap.state()) == 500
