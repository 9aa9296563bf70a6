"""TPC-H Q1, Q3, Q13 and Q18 written in SQL (:mod:`tests.sql.tpch_sql`, which
``test_tpch_sql`` checks against DuckDB) and built by ``dd.sql`` run on Spark
(``run_on_spark``) with exactly the embedded engine's output history at SF 0.01 over the
load (time 0) and two refresh pairs (times 1, 2); so does Q3 with its ``ORDER BY ... LIMIT
10`` (a maintained top-k). The five queries share one dataflow (one Spark run); the tables
enter Spark as Parquet files of TPC-H's types, as in ``tests/spark/test_tpch_spark.py``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from benches.tpch import generate, refresh
from pyspark.sql import SparkSession
from tests.spark.conftest import spark  # noqa: F401 (the session fixture)
from tests.sql.tpch_sql import limited, query

import ddflow as dd
from ddflow.spark import run_on_spark

pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]

SF = 0.01
BATCHES = 2
TEXTS = {q: query(q, SF) for q in ("q1", "q3", "q13", "q18")} | {"q3_limit": limited("q3", SF)}

Rows = list[tuple[Any, ...]]


def _build(
    flow: dd.Dataflow, schemas: dict[str, pa.Schema]
) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    sessions: dict[str, dd.InputSession] = {}
    tables: dict[str, dd.Collection] = {}
    for name in ("lineitem", "orders", "customer"):
        sessions[name], tables[name] = flow.new_input(schemas[name], name=name)
    return sessions, [dd.sql(text, tables) for text in TEXTS.values()]


def _timed(table: pa.Table, t: int, diff: int) -> pa.Table:
    n = table.num_rows
    return table.append_column("time", pa.array([t] * n, pa.int64())).append_column(
        "diff", pa.array([diff] * n, pa.int64())
    )


def test_tpch_sql_on_spark_equals_embedded(spark: SparkSession, tmp_path: Path) -> None:  # noqa: F811
    tables = generate.load_tables(SF)
    batches = refresh.make_refreshes(tables, SF, BATCHES, seed=7)
    schemas = {n: t.schema for n, t in tables.items()}
    histories: dict[str, pa.Table] = {}
    for name in ("lineitem", "orders", "customer"):
        parts = [_timed(tables[name], 0, 1)]
        for b in batches:
            if name in b.deletes:
                parts.append(_timed(b.deletes[name], b.index, -1))
            if name in b.inserts:
                parts.append(_timed(b.inserts[name], b.index, 1))
        histories[name] = pa.concat_tables(parts, promote_options="permissive")

    flow = dd.Dataflow()
    sessions, outputs = _build(flow, schemas)
    captures = [o.capture() for o in outputs]
    for name, history in histories.items():
        sessions[name].update_batch(
            history.drop_columns(["time", "diff"]),
            times=history["time"].to_numpy(),
            diffs=history["diff"].to_numpy(),
        )
        sessions[name].close()
    flow.run()
    want = [
        sorted((tuple(r.values()) for r in c.updates().to_pylist()), key=repr) for c in captures
    ]

    flow = dd.Dataflow()
    sessions, outputs = _build(flow, schemas)
    frames = {}
    for name, history in histories.items():
        pq.write_table(history, tmp_path / f"{name}.parquet")
        frames[sessions[name]] = spark.read.parquet(str(tmp_path / f"{name}.parquet"))
    start = time.perf_counter()
    result = run_on_spark(spark, flow, frames, outputs, partitions=2)
    got = [sorted((tuple(r) for r in result[o].collect()), key=repr) for o in outputs]
    print(f"\nTPC-H SQL on Spark: {time.perf_counter() - start:.1f} s", file=sys.stderr)

    for name, w, g in zip(TEXTS, want, got, strict=True):
        assert len(w) > 0, name
        assert g == w, name
    assert {r[-2] for w in want for r in w} == set(range(BATCHES + 1))  # refreshes reach them
