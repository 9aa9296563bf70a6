"""300 generated queries (:mod:`tests.sql.generated`), 50 per dataflow, each equal to DuckDB's
answer after each of four random insert / delete batches."""

from __future__ import annotations

import pytest
from tests.sql.generated import generate
from tests.sql.harness import check_queries


@pytest.mark.parametrize("seed", range(6))
def test_generated_queries_match_duckdb(seed: int) -> None:
    check_queries(generate(50, seed), seed=100 + seed)
