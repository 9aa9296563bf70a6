"""TPC-H on Spark: Q1, Q3, Q5, Q13, Q18 and Q22 (``benches/tpch/queries.py``) through
``run_on_spark`` at SF 0.01 over the initial load (time 0) and three refresh pairs (times 1
to 3) give exactly the embedded engine's complete output histories, which
``tests/tpch/test_tpch.py`` checks against DuckDB at every time. Q13 is written as the SQL
writes it, with ``join(how="left")`` and ``count(o_orderkey)`` skipping the padded nulls.

Both sides run TPC-H's own types (DATE as ``date32``, DECIMAL as ``decimal128(15, 2)``,
INTEGER as ``int32``), declared by the tables' Arrow schemas. The tables enter Spark as
Parquet files of those types (``date``, ``decimal(15,2)``, ``int``), one file per table with
``time`` and ``diff`` (load +1 at 0, RF2 deletes -1 and RF1 inserts +1 at their pair's time).
Each query is its own ``run_on_spark`` (its own dataflow), timed, so a slow one says which.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.spark import run_on_spark

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from benches.tpch import generate, refresh  # noqa: E402
from benches.tpch.queries import build  # noqa: E402
from benches.tpch.workload import Workload  # noqa: E402

pytestmark = pytest.mark.timeout(240)

SF = 0.01
BATCHES = 3
QUERIES = ("q1", "q3", "q5", "q13", "q18", "q22")


SECONDS: dict[str, float] = {}
"""Each query's ``run_on_spark`` and output collection, for the report at the end."""


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The tables' update histories as Parquet files (by table), their columns, and the
    embedded engine's output history of every query."""
    tables = generate.load_tables(SF)
    batches = refresh.make_refreshes(tables, SF, BATCHES, seed=7)
    schemas = {n: t.schema for n, t in tables.items()}
    workload = Workload(list(QUERIES), SF, schemas)
    workload.load(tables)
    for batch in batches:
        workload.refresh(batch)
    want = {q: _rows(workload.captures[q].updates().to_pylist()) for q in QUERIES}
    out = tmp_path_factory.mktemp("tpch")
    paths = {}
    for name, table in tables.items():
        parts = [_timed(table, 0, 1)]
        for b in batches:
            if name in b.deletes:
                parts.append(_timed(b.deletes[name], b.index, -1))
            if name in b.inserts:
                parts.append(_timed(b.inserts[name], b.index, 1))
        paths[name] = str(out / f"{name}.parquet")
        pq.write_table(pa.concat_tables(parts, promote_options="permissive"), paths[name])
    yield {"paths": paths, "schemas": schemas, "want": want}
    if SECONDS:
        print("\nTPC-H SF 0.01 on Spark, seconds per query:", SECONDS, file=sys.stderr)


def _timed(table: pa.Table, t: int, diff: int) -> pa.Table:
    n = table.num_rows
    return table.append_column("time", pa.array([t] * n, pa.int64())).append_column(
        "diff", pa.array([diff] * n, pa.int64())
    )


def _rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(r.values()) for r in rows), key=repr)


@pytest.mark.parametrize("query", QUERIES)
def test_tpch_query_on_spark_equals_embedded(
    spark: SparkSession, histories: dict[str, Any], query: str
) -> None:
    flow = dd.Dataflow()
    sessions: dict[str, dd.InputSession] = {}

    class Tables(dict[str, dd.Collection]):
        def __missing__(self, name: str) -> dd.Collection:
            sessions[name], self[name] = flow.new_input(histories["schemas"][name], name=name)
            return self[name]

    tables = Tables()
    out = build(query, tables, SF)  # Q13 is the LEFT OUTER JOIN with count(o_orderkey)
    start = time.perf_counter()
    frames = {sessions[n]: spark.read.parquet(histories["paths"][n]) for n in sessions}
    result = run_on_spark(spark, flow, frames, [out])
    rows = [r.asDict() for r in result[out].collect()]
    SECONDS[query] = round(time.perf_counter() - start, 1)
    got = _rows(rows)
    want = histories["want"][query]
    assert len(want) > 0
    assert got == want
