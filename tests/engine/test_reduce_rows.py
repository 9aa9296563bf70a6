"""The reduce's row sweep (``reduce_rows.rs``), taken by keys of built-in aggregates with a
large (history x candidate times) product; ``DDFLOW_REDUCE_ROWS_MIN=0`` makes every key take
it. Random histories on a few keys at 2-D and 3-D times (3-D keys are sliced by their first
coordinate, then swept by rows), with retractions and multiplicities, fed in several batches
with partial frontiers between them (so later batches meet input history, output history and
pending times): at every time of the grid the output equals the model's recompute from
scratch, and the consolidated updates equal the general path's (a threshold no key passes).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import model as m
from .conftest import assert_matches_model, feed, new_flow, requires_engine
from .test_join_fuel import _consolidated

pytestmark = requires_engine

COLUMNS = ("k", "v")
UPTO = 4  # every coordinate below; the grid checked is 0..=UPTO
# Input frontiers between batches: a chain, each partial (times not above it complete).
FRONTIERS = {2: [(1, 1), (2, 1), (2, 3)], 3: [(1, 0, 1), (1, 2, 1), (3, 2, 2)]}

GROUP_PARTS = (("n", "count", None), ("s", "sum", "v"), ("lo", "min", "v"), ("hi", "max", "v"))
Build = Callable[[Any, Any], Any]
CASES: dict[str, tuple[Build, Callable[[m.Rel], m.Rel], bool]] = {
    # name: (engine, model, whether every record's count must stay non-negative)
    "count": (
        lambda dd, c: c.reduce(by="k", agg=dd.count()),
        lambda r: m.reduce(r, "k", m.Count()),
        False,
    ),
    "sum": (
        lambda dd, c: c.reduce(by="k", agg=dd.sum("v")),
        lambda r: m.reduce(r, "k", m.Sum("v")),
        False,
    ),
    "min": (
        lambda dd, c: c.reduce(by="k", agg=dd.min("v")),
        lambda r: m.reduce(r, "k", m.Min("v")),
        False,
    ),
    "max": (
        lambda dd, c: c.reduce(by="k", agg=dd.max("v")),
        lambda r: m.reduce(r, "k", m.Max("v")),
        False,
    ),
    "distinct": (
        lambda dd, c: c.reduce(by="k", agg=dd.distinct()),
        lambda r: m.reduce(r, "k", m.Distinct()),
        False,
    ),
    "count_by": (
        lambda dd, c: c.count(by="k"),
        lambda r: m.count(r, "k"),
        False,
    ),
    "group": (
        lambda dd, c: c.group_by("k").agg(
            n=dd.count(), s=dd.sum("v"), lo=dd.min("v"), hi=dd.max("v")
        ),
        lambda r: m.reduce(
            r,
            "k",
            m.Aggs(GROUP_PARTS),
        ),
        True,
    ),
}


THRESHOLDS = ("DDFLOW_REDUCE_SWEEP_MIN", "DDFLOW_REDUCE_ROWS_MIN")


@contextmanager
def sweep_min(value: str) -> Iterator[None]:
    """Both reduce thresholds set to ``value`` while reduces are built (0: every key with
    input takes the row sweep; huge: none does)."""
    old = {name: os.environ.get(name) for name in THRESHOLDS}
    os.environ.update(dict.fromkeys(THRESHOLDS, value))
    try:
        yield
    finally:
        for name, was in old.items():
            if was is None:
                del os.environ[name]
            else:
                os.environ[name] = was


@st.composite
def histories(draw: st.DrawFn, dims: int, non_negative: bool) -> list[m.Update]:
    """Inserts on keys 0..2 with multiplicities; some retracted (part or all) at a time at or
    after the insert (so no record's count goes negative), others with any sign unless
    ``non_negative``."""
    coord = st.integers(0, UPTO - 1)
    time = st.tuples(*[coord] * dims)
    out: list[m.Update] = []
    for _ in range(draw(st.integers(1, 30))):
        rec = (draw(st.integers(0, 2)), draw(st.integers(0, 3)))
        t = draw(time)
        d = draw(st.integers(1, 3))
        if not non_negative and draw(st.booleans()) and draw(st.booleans()):
            d = -d
        out.append((rec, t, d))
        if d > 0 and draw(st.booleans()):
            later = m.lattice_join(t, draw(time))
            out.append((rec, later, -draw(st.integers(1, d))))
    return out


def run(dims: int, case: str, hist: list[m.Update], threshold: str) -> Any:
    """Feeds ``hist`` batch by batch between the partial frontiers; returns the capture."""
    import ddflow as dd

    build, _, _ = CASES[case]
    with sweep_min(threshold):
        flow = new_flow(dims)
        inp, col = flow.new_input(COLUMNS)
        cap = build(dd, col).capture()
        frontiers = [(0,) * dims, *FRONTIERS[dims]]
        for i, f in enumerate(frontiers):
            nxt = frontiers[i + 1] if i + 1 < len(frontiers) else None
            batch = [u for u in hist if m.leq(f, u[1]) and (nxt is None or not m.leq(nxt, u[1]))]
            feed(inp, batch, columns=COLUMNS, batch=True)
            if nxt is not None:
                inp.advance_to(nxt)
                flow.run_until(nxt)
        end = (UPTO + 1,) * dims
        inp.advance_to(end)
        flow.run_until(end)
    return cap


@pytest.mark.timeout(300)
@pytest.mark.parametrize("dims", [2, 3])
@pytest.mark.parametrize("case", list(CASES))
def test_rows_match_model_and_general_path(case: str, dims: int) -> None:
    _, model_fn, non_negative = CASES[case]

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(hist=histories(dims, non_negative))
    def check(hist: list[m.Update]) -> None:
        rows = run(dims, case, hist, "0")
        general = run(dims, case, hist, str(10**15))
        res = m.evaluate({"a": (COLUMNS, hist)}, lambda r: model_fn(r["a"]))
        assert_matches_model(rows, res, upto=UPTO)
        assert _consolidated(rows) == _consolidated(general)

    check()
