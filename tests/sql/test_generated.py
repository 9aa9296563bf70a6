"""500 generated queries (:mod:`tests.sql.generated`), 50 per dataflow, each equal to DuckDB's
answer after each of four random insert / delete batches; 50 of them also on two workers.
And 150 generated top-k / ranking-window queries, 30 per dataflow, after six batches."""

from __future__ import annotations

import pytest
from tests.sql.generated import generate, generate_ranked
from tests.sql.harness import check_queries


@pytest.mark.parametrize("seed", range(10))
def test_generated_queries_match_duckdb(seed: int) -> None:
    check_queries(generate(50, seed), seed=100 + seed)


def test_generated_queries_match_duckdb_on_two_workers() -> None:
    check_queries(generate(50, 10), seed=110, workers=2)


@pytest.mark.parametrize("seed", range(5))
def test_generated_top_k_and_ranking_queries_match_duckdb(seed: int) -> None:
    check_queries(generate_ranked(30, seed), seed=200 + seed, batches=6)
