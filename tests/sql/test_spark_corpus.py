"""An eighth of the SQL corpus runs on Spark (``run_on_spark``, the local session of
``tests/spark/conftest.py``) with exactly the embedded engine's output history, which the
corpus tests check against DuckDB after every batch.

The corpus, in a fixed order: the hand-written queries of ``test_select``, ``test_joins``,
``test_subqueries`` and ``test_ranking``, then the generated ones of ``test_generated``
(:func:`~tests.sql.generated.generate` seeds 0-9 and
:func:`~tests.sql.generated.generate_ranked` seeds 0-4). :data:`SAMPLE` is every
:data:`STEP`-th of them, a deterministic sample. They run in a few dataflows (one
``run_on_spark`` each, on two key partitions: Spark's time here goes to its stages, hundreds
per run, not to the data) over four random insert / delete batches with nulls. With every
fourth query, the four runs took 378, 335, 262 and 263 s on the shared 2-core machine at
load average 11-13, and the first 130 s at load average 4-7: over half of the main test
pass, so CI takes every eighth.
Every operator the sample reaches is also tested on Spark by ``tests/spark`` on its own.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from tests.spark.conftest import spark  # noqa: F401 (the session fixture)
from tests.sql import test_joins, test_ranking, test_select, test_subqueries
from tests.sql.generated import generate, generate_ranked
from tests.sql.harness import SCHEMAS, Query, random_batches

import ddflow as dd
from ddflow.spark import run_on_spark

pytestmark = [
    pytest.mark.timeout(1200),
    pytest.mark.filterwarnings("ignore:unclosed <socket.socket:ResourceWarning"),
]


def corpus() -> dict[str, Query]:
    """Every corpus query over :data:`~tests.sql.harness.SCHEMAS`, in a fixed order."""
    out: dict[str, Query] = {}
    for module, names in [
        (test_select, ["QUERIES"]),
        (test_joins, ["JOINS", "SETS", "WITH"]),
        (test_subqueries, ["QUERIES"]),
        (test_ranking, ["TOP_K", "WINDOWS"]),
    ]:
        for name in names:
            queries: dict[str, Query] = getattr(module, name)
            out |= {f"{module.__name__.rsplit('.', 1)[-1]}.{q}": t for q, t in queries.items()}
    for seed in range(10):
        out |= generate(50, seed)
    for seed in range(5):
        out |= generate_ranked(30, seed)
    return out


STEP = 8
"""The sample takes every ``STEP``-th corpus query."""

SAMPLE: dict[str, str] = {
    q: t if isinstance(t, str) else t[0] for q, t in list(corpus().items())[::STEP]
}
"""Every :data:`STEP`-th corpus query (ddflow's text)."""

GROUPS = 4
"""Dataflows the sample is split into (each one ``run_on_spark``)."""

SEED = 900
"""The random batches' seed."""

_SPARK_TYPES = {"int64": "long", "float64": "double", "str": "string", "date32": "date"}

SECONDS: list[float] = []


Rows = list[tuple[Any, ...]]


def _build(
    flow: dd.Dataflow, names: list[str]
) -> tuple[dict[str, dd.InputSession], list[dd.Collection]]:
    sessions: dict[str, dd.InputSession] = {}
    tables: dict[str, dd.Collection] = {}
    for name, schema in SCHEMAS.items():
        sessions[name], tables[name] = flow.new_input(dict(schema), name=name)
    return sessions, [dd.sql(SAMPLE[q], tables) for q in names]


def _updates() -> dict[str, list[tuple[tuple[Any, ...], int, int]]]:
    """Per table: (row, time, diff) of every batch."""
    out: dict[str, list[tuple[tuple[Any, ...], int, int]]] = {n: [] for n in SCHEMAS}
    for t, batch in enumerate(random_batches(SCHEMAS, SEED)):
        for name, updates in batch.items():
            out[name] += [(row, t, diff) for row, diff in updates]
    return out


def _embedded(names: list[str]) -> list[Rows]:
    flow = dd.Dataflow()
    sessions, outputs = _build(flow, names)
    captures = [o.capture() for o in outputs]
    for name, updates in _updates().items():
        for row, t, diff in updates:
            sessions[name].update_at(row, time=t, diff=diff)
    for session in sessions.values():
        session.close()
    flow.run()
    return [
        sorted((tuple(r.values()) for r in c.updates().to_pylist()), key=repr) for c in captures
    ]


def _frame(spark: SparkSession, name: str, updates: list[Any]) -> DataFrame:  # noqa: F811
    fields = [f"`{c}` {_SPARK_TYPES[t]}" for c, t in SCHEMAS[name].items()]
    body = [(*row, t, diff) for row, t, diff in updates]
    return spark.createDataFrame(body, ", ".join([*fields, "time long", "diff long"]))


def _on_spark(spark: SparkSession, names: list[str]) -> list[Rows]:  # noqa: F811
    flow = dd.Dataflow()
    sessions, outputs = _build(flow, names)
    frames = {sessions[n]: _frame(spark, n, u) for n, u in _updates().items()}
    start = time.perf_counter()
    result = run_on_spark(spark, flow, frames, outputs, partitions=2)
    out = [
        sorted((tuple(r) for r in result[o].collect()), key=repr)  # columns, time, diff
        for o in outputs
    ]
    SECONDS.append(round(time.perf_counter() - start, 1))
    return out


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    if SECONDS:
        print(f"\nSQL corpus sample on Spark, seconds per run: {SECONDS}", file=sys.stderr)


def test_sample_is_an_eighth_of_the_corpus() -> None:
    assert len(SAMPLE) * STEP >= len(corpus()) >= 650
    assert len(SAMPLE) >= 80


@pytest.mark.parametrize("group", range(GROUPS))
def test_corpus_sample_on_spark_equals_embedded(spark: SparkSession, group: int) -> None:  # noqa: F811
    names = list(SAMPLE)[group::GROUPS]
    want = _embedded(names)
    got = _on_spark(spark, names)
    differ = [q for q, w, g in zip(names, want, got, strict=True) if w != g]
    assert not differ, "\n".join(f"{q}: {SAMPLE[q]}" for q in differ)
    assert sum(1 for w in want if w) > len(names) // 2  # most queries have output
