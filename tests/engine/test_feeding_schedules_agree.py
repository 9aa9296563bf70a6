"""Three ways of feeding and running the same BFS give identical consolidated output.

A random 100-node, 100-edge graph, node 0 as root, 10 sliding-window rounds (round ``r`` at
time ``r`` adds ``edges[100 + r - 1]`` and removes ``edges[r - 1]``). Way 1 runs each round
to completion (``run_until`` after every round), Way 2 loads every round first and then runs
once, Way 3 alternates loading a round with a few ``step()`` calls. With everything
preloaded, one invocation of the BFS reduce must cover more than one round ("time last" execution).
"""

from __future__ import annotations

from typing import Any

import pytest

from . import model as m
from .conftest import (
    captured_at,
    captured_updates,
    ddflow,
    entry_dims,
    log_entries,
    random_graph,
    requires_engine,
    rounds_covered,
    sliding_window,
)

pytestmark = requires_engine

NODES, EDGES, ROUNDS = 100, 100, 10


def _workload(seed: int) -> list[m.Update]:
    return sliding_window(random_graph(seed, NODES, EDGES + ROUNDS), EDGES, ROUNDS)


def _build() -> tuple[Any, Any, Any, dict[str, Any]]:
    dd = ddflow()
    flow = dd.Dataflow(workers=1)
    edges_in, edges = flow.new_input(("src", "dst"))
    roots_in, roots = flow.new_input(("node",))
    dists = dd.algorithms.bfs(edges, roots)
    caps = {
        "dists": dists.capture(),
        "multiset": dists.select(dist=dd.col("dist")).consolidate().capture(),
    }
    return flow, edges_in, roots_in, caps


def _round(updates: list[m.Update], r: int) -> list[m.Update]:
    return [u for u in updates if u[1] == (r,)]


def _send(inp: Any, updates: list[m.Update]) -> None:
    for record, t, diff in updates:
        inp.update_at(record, time=t[0], diff=diff)


def _way1(updates: list[m.Update]) -> tuple[Any, dict[str, Any]]:
    flow, edges_in, roots_in, caps = _build()
    roots_in.update_at((0,), time=0, diff=1)
    for r in range(ROUNDS + 1):
        _send(edges_in, _round(updates, r))
        edges_in.advance_to(r + 1)
        roots_in.advance_to(r + 1)
        flow.run_until(r + 1)
    return flow, caps


def _way2(updates: list[m.Update]) -> tuple[Any, dict[str, Any]]:
    flow, edges_in, roots_in, caps = _build()
    roots_in.update_at((0,), time=0, diff=1)
    for r in range(ROUNDS + 1):
        _send(edges_in, _round(updates, r))
        edges_in.advance_to(r + 1)
    roots_in.advance_to(ROUNDS + 1)
    flow.run_until(ROUNDS + 1)
    return flow, caps


def _way3(updates: list[m.Update]) -> tuple[Any, dict[str, Any]]:
    flow, edges_in, roots_in, caps = _build()
    roots_in.update_at((0,), time=0, diff=1)
    for r in range(ROUNDS + 1):
        _send(edges_in, _round(updates, r))
        edges_in.advance_to(r + 1)
        roots_in.advance_to(r + 1)
        for _ in range(3):
            flow.step()
    flow.run_until(ROUNDS + 1)
    return flow, caps


def _expected(updates: list[m.Update]) -> dict[int, dict[m.Record, int]]:
    out = {}
    for t in range(ROUNDS + 1):
        graph = m.accumulate(updates, (t,))
        out[t] = {(n, d): 1 for n, d in m.plain_bfs(graph, [0]).items()}
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_three_feeding_schedules_agree(seed: int) -> None:
    updates = _workload(seed)
    results = {name: way(updates) for name, way in (("1", _way1), ("2", _way2), ("3", _way3))}
    tables = {name: caps["dists"].updates() for name, (_, caps) in results.items()}
    multisets = {name: caps["multiset"].updates() for name, (_, caps) in results.items()}
    for name in ("2", "3"):
        assert tables[name].equals(tables["1"]), f"Way {name} differs from Way 1 (dists)"
        assert multisets[name].equals(multisets["1"]), f"Way {name} differs from Way 1 (dist)"
    expected = _expected(updates)
    caps = results["1"][1]
    for t in range(ROUNDS + 1):
        assert captured_at(caps["dists"], (t,), ("node", "dist")) == expected[t], f"t={t}"
    # The multiset is the dists projected to dist, consolidated.
    projected = m.consolidate(
        [((d,), t, diff) for (_, d), t, diff in captured_updates(caps["dists"], ("node", "dist"))]
    )
    assert captured_updates(caps["multiset"], ("dist",)) == projected


def test_preloaded_reduce_runs_many_rounds_in_one_invocation() -> None:
    updates = _workload(0)
    flow, _ = _way2(updates)
    entries = log_entries(flow)
    assert entries, "flow.log() is empty"
    keys = {"node", "label", "op", "lower", "upper", "updates_in", "updates_out", "nanos"}
    assert keys | {"python"} <= set(entries[0]), f"log entry keys: {sorted(entries[0])}"
    # The BFS reduce runs inside the iterate scope: its times carry an iteration coordinate.
    inner_reduces = [e for e in entries if e["op"] == "reduce" and entry_dims(e) == 2]
    ops = sorted({e["op"] for e in entries})
    assert inner_reduces, f"no reduce inside iterate in the log (ops: {ops})"
    best = max(len(rounds_covered(e, range(ROUNDS + 1))) for e in inner_reduces)
    assert best > 1, "every BFS reduce invocation covered at most one round"
