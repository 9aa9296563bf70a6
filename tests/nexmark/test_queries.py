"""Nexmark q0-q9 and q15-q20 (``benches/nexmark/queries.py``) through ``dd.sql``: after every
batch of events, each query's output equals DuckDB's answer to the same SQL text over the
events so far. 20,000 events (200 s of event time, so many 10 s windows and auction lifetimes close
inside it) in batches at increasing logical times: five even batches on 1 worker, and
random cuts (an empty batch and a single event among them) on 2 workers."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest
from benches.nexmark import feed, generate, oracle
from benches.nexmark.queries import QUERIES

import ddflow as dd

EVENTS = 20_000


@pytest.fixture(scope="module")
def events() -> dict[str, pa.Table]:
    return generate.generate(EVENTS, seed=3)


def check(tables: dict[str, pa.Table], cuts: list[int], workers: int, queries: list[str]) -> int:
    """Feeds the events cut at ``cuts`` (event numbers) and checks every query after every
    batch; returns the number of batches."""
    flow = dd.Dataflow(workers=workers)
    sessions, results = feed.build(flow, queries)
    captures = {q: c.capture() for q, c in results.items()}
    con = duckdb.connect()
    failures: list[str] = []
    bounds = [0, *cuts, EVENTS]
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        feed.feed(sessions, feed.between(tables, lo, hi), i)
        flow.run_until(i + 1)
        upto = feed.between(tables, 0, hi)
        oracle.load_tables(con, upto)
        for q in queries:
            got = oracle.ddflow_answer(captures[q].at(i))
            want = oracle.duckdb_answer(con, QUERIES[q])
            if failure := oracle.compare(q, f"after event {hi} (batch {i})", got, want):
                failures.append(failure)
    assert not failures, "\n".join(failures)
    return len(bounds) - 1


def test_even_batches(events: dict[str, pa.Table]) -> None:
    cuts = list(range(4_000, EVENTS, 4_000))
    assert check(events, cuts, 1, list(QUERIES)) == 5


def test_random_batches(events: dict[str, pa.Table]) -> None:
    rng = random.Random(11)
    cuts = sorted({rng.randrange(1, EVENTS) for _ in range(2)} | {7_000, 7_001})
    cuts.insert(2, cuts[1])  # an empty batch
    check(events, cuts, 2, list(QUERIES))
