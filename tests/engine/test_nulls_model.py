"""SQL nulls against the brute-force model (``model.py``, nulls as ``None``): random
multiset histories (counts may go negative; 1-D and 2-D times) whose columns are null on some
rows go through joins, semijoins, antijoins, ``group_by(...).agg`` and single aggregates; at
every time of the grid the engine's ``at(t)`` must equal the model's accumulation.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

from . import model as m
from .conftest import ddflow, engine_time, new_flow, random_time, requires_engine

pytestmark = [requires_engine, pytest.mark.timeout(120)]

COLUMNS = ("k", "x")
MAX_TIME = {1: 4, 2: 2}
PARTS: tuple[tuple[str, str, str | None], ...] = (
    ("n", "count", None),
    ("nx", "count", "x"),
    ("s", "sum", "x"),
    ("avg", "mean", "x"),
    ("lo", "min", "x"),
    ("hi", "max", "x"),
)


def _history(rng: random.Random, dims: int, n: int) -> list[m.Update]:
    def value() -> int | None:
        return None if rng.random() < 0.3 else rng.randrange(4)

    return [
        ((value(), value()), random_time(rng, dims, MAX_TIME[dims]), rng.choice((1, 1, 2, -1)))
        for _ in range(n)
    ]


def _feed(inp: Any, hist: list[m.Update]) -> None:
    dims = len(hist[0][1])
    inp.update_batch(
        {c: pa.array([r[i] for r, _, _ in hist], pa.int64()) for i, c in enumerate(COLUMNS)},
        times=[t[0] if dims == 1 else list(t) for _, t, _ in hist],
        diffs=[d for _, _, d in hist],
    )


def _at(cap: Any, t: m.Time, columns: tuple[str, ...]) -> Counter[tuple[Any, ...]]:
    out: Counter[tuple[Any, ...]] = Counter()
    for row in cap.at(engine_time(t)).to_pylist():
        out[tuple(row[c] for c in columns)] += row["diff"]
    return Counter({r: c for r, c in out.items() if c})


def _model_at(rel: m.Rel) -> Counter[tuple[Any, ...]]:
    return Counter({r: c for r, c in rel.counts.items() if c})


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("dims", [1, 2])
def test_joins_and_aggregates_with_nulls_match_the_model(dims: int, seed: int) -> None:
    dd = ddflow()
    rng = random.Random(seed * 13 + dims)
    left, right = _history(rng, dims, 24), _history(rng, dims, 24)
    flow = new_flow(dims)
    a_in, a = flow.new_input({"k": "int64", "x": "int64"})
    b_in, b = flow.new_input({"k": "int64", "x": "int64"})
    b2 = b.select("k", y="x")
    caps = {
        "join": a.join(b2, on="k").capture(),
        "join_eq": a.join(b2, on="k", nulls_equal=True).capture(),
        "semi": a.semijoin(b, on="k").capture(),
        "anti": a.antijoin(b, on="k").capture(),
        "agg": a.group_by("k")
        .agg(
            n=dd.count(),
            nx=dd.count("x"),
            s=dd.sum("x"),
            avg=dd.mean("x"),
            lo=dd.min("x"),
            hi=dd.max("x"),
        )
        .capture(errors="collect"),
        "sum": a.reduce("k", dd.sum("x")).capture(),
        "min": a.reduce("k", dd.min("x")).capture(),
    }
    _feed(a_in, left)
    _feed(b_in, right)
    a_in.close()
    b_in.close()
    flow.run()
    for t in m.grid(dims, MAX_TIME[dims]):
        ra = m.Rel(COLUMNS, m.accumulate(left, t))
        rb = m.Rel(COLUMNS, m.accumulate(right, t))
        rb2 = m.select(rb, k=lambda r: r["k"], y=lambda r: r["x"])
        want = {
            "join": m.join(ra, rb2, "k"),
            "join_eq": m.join(ra, rb2, "k", nulls_equal=True),
            "semi": m.semijoin(ra, rb, "k"),
            "anti": m.antijoin(ra, rb, "k"),
            "sum": m.reduce(ra, "k", m.Sum("x")),
            "min": m.reduce(ra, "k", m.Min("x")),
        }
        for name, rel in want.items():
            assert _at(caps[name], t, rel.columns) == _model_at(rel), (name, t)
        # group_by: the groups whose parts are all defined (the others are error updates).
        aggs = m.Aggs(PARTS)
        model = m.reduce(ra, "k", aggs)
        assert _at(caps["agg"], t, model.columns) == _model_at(model), ("agg", t)
