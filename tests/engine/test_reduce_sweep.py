"""The reduce's accumulation sweep (``reduce_index.rs``), taken by keys with many history
entries x times. At the default threshold the suite's small inputs scan instead, so here
``DDFLOW_REDUCE_SWEEP_MIN=0`` makes every key with 2-D times take the sweep: every reduce
case and BFS under random edge changes must still match the model at every time and give the
same consolidated updates as the default path.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import assert_matches_model, captured_at, requires_engine
from .test_bfs_random import _run, edge_changes, expected_dists
from .test_join_fuel import _consolidated
from .test_operators_vs_model import CASES, MAX_TIME, run_case

pytestmark = requires_engine

REDUCE_CASES = [
    c
    for c in CASES
    if any(
        w in c.name
        for w in ("count", "sum", "min", "max", "distinct", "top_k", "threshold", "reduce")
    )
    or c.name.startswith("iterate_")
]


def test_cases_cover_reduces() -> None:
    assert len(REDUCE_CASES) >= 8, [c.name for c in REDUCE_CASES]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("case", REDUCE_CASES, ids=lambda c: c.name)
def test_sweep_matches_model_and_scan(
    case: Any, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DDFLOW_REDUCE_SWEEP_MIN", raising=False)
    default, _ = run_case(case, 2, seed)
    monkeypatch.setenv("DDFLOW_REDUCE_SWEEP_MIN", "0")
    cap, res = run_case(case, 2, seed)
    assert_matches_model(cap, res, upto=MAX_TIME[2], ordered_columns=case.ordered)
    assert _consolidated(cap) == _consolidated(default)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", [0, 1])
def test_bfs_with_sweep(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    edges, roots = edge_changes(seed, 12, 14, 25)
    monkeypatch.delenv("DDFLOW_REDUCE_SWEEP_MIN", raising=False)
    _, default = _run(edges, roots, 25, stepwise=False, batch=True)
    monkeypatch.setenv("DDFLOW_REDUCE_SWEEP_MIN", "0")
    _, cap = _run(edges, roots, 25, stepwise=False, batch=True)
    for t in range(26):
        assert captured_at(cap, (t,), ("node", "dist")) == expected_dists(edges, roots, t), t
    assert _consolidated(cap) == _consolidated(default)
