"""A sample of the SQL corpus runs on Spark (``run_on_spark``, the local session of
``tests/spark/conftest.py``) with exactly the embedded engine's output history, which the
corpus tests check against DuckDB after every batch.

The corpus, in a fixed order: the hand-written queries of ``test_select``, ``test_joins``,
``test_subqueries`` and ``test_ranking``, then the generated ones of ``test_generated``
(:func:`~tests.sql.generated.generate` seeds 0-9 and
:func:`~tests.sql.generated.generate_ranked` seeds 0-4).

The sample (:func:`sample`, deterministic) is chosen by what the queries' plans contain, not
by position: every plan feature of the corpus (:func:`features`: each operator, each
operator with each of its expression functions, aggregate kinds and literal types, each
operator feeding another) is in at least one sampled query, greedily, the query adding most
new features per plan operator first (Spark's time goes with the operators); then every
:data:`STEP`-th corpus query for breadth. That is 43 queries with 351 operators in all,
covering all 134 plan features of the corpus, where every eighth query (104 queries, 1,132
operators) missed 24 of them (string and date functions in projections, decimals, Python
aggregates).

They run in a few dataflows (one ``run_on_spark`` each, on two key partitions: Spark's time
here goes to its stages, hundreds per run, not to the data) over four random insert /
delete batches with nulls.
Every operator the sample reaches is also tested on Spark by ``tests/spark`` on its own.
"""

from __future__ import annotations

import functools
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


@functools.cache
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


STEP = 64
"""Besides the feature cover, the sample takes every ``STEP``-th corpus query."""

_FEATURE_KEYS = frozenset({"op", "kind", "how", "fn", "function", "dtype", "mode", "unit"})
"""The keys of a plan node's arguments whose values name what the node computes."""


def _argument_features(obj: Any, node_op: str, out: set[str]) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if (
                key in _FEATURE_KEYS
                and isinstance(value, str | int)
                and not isinstance(value, bool)
            ):
                out.add(f"{node_op}:{key}={value}")
            _argument_features(value, node_op, out)
    elif isinstance(obj, list):
        for value in obj:
            _argument_features(value, node_op, out)


@functools.cache
def plan_nodes(query: str) -> tuple[dict[str, Any], ...]:
    """The plan nodes of the corpus query ``query`` (built once per query)."""
    text = corpus()[query]
    flow = dd.Dataflow()
    tables = {n: flow.new_input(dict(s), name=n)[1] for n, s in SCHEMAS.items()}
    dd.sql(text if isinstance(text, str) else text[0], tables)
    return tuple(flow.plan()["nodes"])


def features(query: str) -> frozenset[str]:
    """What the plan of the corpus query ``query`` contains: its operators, each operator's
    expression functions, aggregate kinds and literal types (``select:op=str.slice``), and
    each operator feeding another (``join->reduce``)."""
    nodes = plan_nodes(query)
    out: set[str] = set()
    for node in nodes:
        op = node["op"]
        if op == "input":
            continue
        out.add(op)
        out.update(f"{nodes[i]['op']}->{op}" for i in node["inputs"])
        _argument_features({k: v for k, v in node.items() if k != "op"}, op, out)
    return frozenset(out)


@functools.cache
def corpus_features() -> dict[str, frozenset[str]]:
    """:func:`features` of every corpus query."""
    return {q: features(q) for q in corpus()}


def plan_size(query: str) -> int:
    """The operators (nodes but inputs) of the corpus query ``query``'s plan."""
    return sum(1 for node in plan_nodes(query) if node["op"] != "input")


@functools.cache
def sample() -> dict[str, str]:
    """The sampled queries (ddflow's text), in corpus order: a greedy cover of every plan
    feature of the corpus, then every :data:`STEP`-th query."""
    found = corpus_features()
    wanted = frozenset().union(*found.values())
    covered: set[str] = set()
    chosen: set[str] = set()
    while covered != wanted:
        # The most new features per plan operator (Spark's time goes with the operators);
        # the first of equals.
        best = max(found, key=lambda q: len(found[q] - covered) / plan_size(q))
        chosen.add(best)
        covered |= found[best]
    chosen.update(list(found)[::STEP])
    return {q: t if isinstance(t, str) else t[0] for q, t in corpus().items() if q in chosen}


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
    return sessions, [dd.sql(sample()[q], tables) for q in names]


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


def test_sample_covers_every_plan_feature_of_the_corpus() -> None:
    found = corpus_features()
    assert len(found) >= 650
    every = frozenset().union(*found.values())
    assert len(every) >= 100  # operators, expression functions, aggregates, types, edges
    assert frozenset().union(*(found[q] for q in sample())) == every
    assert len(sample()) < len(found) // 8


@pytest.mark.parametrize("group", range(GROUPS))
def test_corpus_sample_on_spark_equals_embedded(spark: SparkSession, group: int) -> None:  # noqa: F811
    names = list(sample())[group::GROUPS]
    want = _embedded(names)
    got = _on_spark(spark, names)
    differ = [q for q, w, g in zip(names, want, got, strict=True) if w != g]
    assert not differ, "\n".join(f"{q}: {sample()[q]}" for q in differ)
    assert sum(1 for w in want if w) > len(names) // 2  # most queries have output
