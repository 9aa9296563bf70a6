"""SQL nulls on Spark: every case runs on the embedded engine and through ``run_on_spark`` and
the outputs must be identical (nulls come back as nulls, never as the engine's null words).

Cases: nulls passed through; expressions compiled to Spark Columns and the same expressions
in the Rust evaluator (``mapInArrow``): arithmetic, comparisons (NaN beside a null), Kleene
``&``/``|``/``~``, ``when``, casts, ``min_of``/``max_of``, ``is_null``/``is_not_null``/
``fill_null``/``coalesce`` and library functions; filters (a null predicate drops the row);
joins (null keys never match unless ``nulls_equal``), semijoin, antijoin and outer joins
(padded with untyped nulls); ``group_by``
with null keys and aggregates that skip nulls, ``distinct``, ``count``; keyed operators run
as one key-local region (the engine's operators in one ``mapInArrow``); Python functions
(a ``str`` null is ``None``, an int64 null is an error); loops over null-keyed edges, fused
and general; ``errors="collect"``; and what the input refuses (int64's null word ``-2**63``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession

import ddflow as dd
from ddflow.expr import col
from ddflow.spark import run_on_spark

from .conftest import REMOTE, Build, Data, embedded, frames, on_spark
from .test_errors_collect import check as check_collected

pytestmark = pytest.mark.timeout(180)

A_COLS = ("k", "v", "f", "s", "b")
# (k, v, f, s, b, time, diff): nulls in every column, NaN beside nulls, retractions.
ROWS_WITH_NAN = [
    (1, 5, 1.5, "ant", True, 0, 1),
    (1, None, 2.0, "bee", False, 0, 1),
    (None, 3, None, "cat", None, 0, 1),
    (2, None, float("nan"), None, True, 1, 1),
    (None, None, None, None, None, 1, 2),
    (2, 7, -0.5, "ant", None, 1, 1),
    (3, 0, 4.0, "", False, 2, 1),
    (1, None, 2.0, "bee", False, 2, -1),
    (None, 3, None, "cat", None, 3, -1),
    (3, -4, None, "dog", True, 3, 1),
    (None, 8, 0.0, None, False, 3, 1),
]
B_ROWS = [
    (1, "one", 0, 1),
    (None, "nobody", 0, 1),
    (2, None, 1, 1),
    (None, None, 2, 1),
    (3, "three", 2, 1),
    (1, "one", 3, -1),
]
A_ROWS = [r if r[2] == r[2] else (*r[:2], 9.5, *r[3:]) for r in ROWS_WITH_NAN]
"""The rows without the NaN (outputs are compared as Python tuples: NaN != NaN)."""
DATA: Data = {"a": (A_COLS, A_ROWS), "b": (("k", "w"), B_ROWS)}


EXPRS: dict[str, dd.expr.Expr] = {
    "add": col("v") + col("k"),
    "sub": col("v") - 1,
    "neg": -col("v"),
    "fadd": col("f") + col("v"),
    "lt": col("v") < col("k"),
    "flt": col("f") < 1.75,
    "fne": col("f") != col("f"),
    "seq": col("s") == "ant",
    "and": (col("v") > 2) & col("b"),
    "or": (col("v") > 2) | col("b"),
    "not": ~col("b"),
    "when": dd.when(col("b")).then(col("v")).otherwise(col("k")),
    "cast": col("v").cast("float64"),
    "tobool": col("k").cast("bool"),
    "lo": dd.min_of(col("v"), col("k")),
    "hi": dd.max_of(col("v"), col("k"), 2),
    "isnull": col("v").is_null(),
    "notnull": col("s").is_not_null(),
    "fbnull": col("f").is_null(),
    "fill": col("v").fill_null(0),
    "fillb": col("b").fill_null(False),
    "coal": dd.coalesce(col("f"), col("v"), -1),
    "coals": dd.coalesce(col("s"), "none"),
    "isin": col("k").is_in([1, 3]),
    "rem": col("v").rem(col("k")),
    "len": col("s").str.len_chars(),
    "starts": col("s").str.starts_with("a"),
    "cat": dd.concat_str([col("s"), col("s")], separator="-"),
    "abs": col("v").abs(),
    "nullit": dd.when(col("k") > 1).then(dd.lit(None, "int64")).otherwise(col("k")),
}
"""Expressions the Spark compiler translates (every one of them, with nulls)."""


def _select_all(a: dd.Collection, native: bool) -> dd.Collection:
    named: dict[str, Any] = dict(EXPRS)
    if native:
        named["mul"] = col("v") * col("k")  # int64 * is never compiled: all of it runs in Rust
        # Null where a value does not convert (the evaluator's kernel would not say which).
        named["lax"] = (col("f") * 1e300).cast("int64", strict=False)
    return a.select(**named)


def _one(fn: Callable[[dd.Collection, dd.Collection], list[dd.Collection]]) -> Build:
    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(
            {"k": "int64", "v": "int64", "f": "float64", "s": "str", "b": "bool"}, name="a"
        )
        bi, b = flow.new_input({"k": "int64", "w": "str"}, name="b")
        return {"a": ai, "b": bi}, fn(a, b)

    return build


def _lax_region(a: dd.Collection) -> dd.Collection:
    """Keyed operators over a lax cast (null where a value does not convert): nulls made
    inside a key-local region of non-null keys."""
    lax = a.filter(col("k").is_not_null()).select(
        "k", x=(col("f") * 1e300).cast("int64", strict=False)
    )
    sums = lax.group_by("k").agg(sx=dd.sum("x"), nx=dd.count("x"))
    return sums.join(lax.group_by("k").agg(n=dd.count()), on="k")


CASES: dict[str, Callable[[dd.Collection, dd.Collection], list[dd.Collection]]] = {
    "passthrough": lambda a, b: [a, b],
    "filters": lambda a, b: [
        a.filter(col("v") > 2),
        a.filter(col("b")),
        a.filter(~col("b") | col("k").is_null()),
        a.filter(col("v") * col("k") > 2),  # the Rust evaluator
    ],
    "joins": lambda a, b: [
        a.join(b, on="k"),
        a.join(b, on="k", nulls_equal=True),
        a.semijoin(b, on="k"),
        a.antijoin(b, on="k"),
        a.join(b.rename(k="kb"), left_on="s", right_on="w"),
        a.join(b, left_on=["k", "s"], right_on=["k", "w"], nulls_equal=True),
    ],
    "outer_joins": lambda a, b: [
        a.join(b, on="k", how="left"),
        a.join(b, on="k", how="right"),
        a.join(b, on="k", how="outer"),
        a.join(b, on="k", how="outer", nulls_equal=True),
        a.join(b.rename(k="kb"), left_on="s", right_on="w", how="outer"),
        b.join(a.select("k", "v"), on="k", how="left").group_by("k").agg(n=dd.count("v")),
    ],
    "group_by": lambda a, b: [
        a.group_by("k").agg(
            n=dd.count(),
            nv=dd.count("v"),
            sv=dd.sum("v"),
            sf=dd.sum("f"),
            mv=dd.mean("v"),
            lo=dd.min("s"),
            hi=dd.max("v"),
        ),
        a.group_by("s", "b").agg(dd.max("v"), n=dd.count()),
        a.group_by().agg(nv=dd.count("v"), sv=dd.sum("v"), mk=dd.min("k"), ms=dd.max("s")),
        a.select("k", "s").distinct(),
        a.count(by="s"),
        b.count(by="w"),
    ],
    # Keyed operators on the same columns of one source: one key-local region on Spark.
    "key_region": lambda a, b: [
        a.group_by("k")
        .agg(sv=dd.sum("v"), lo=dd.min("s"))
        .join(a.group_by("k").agg(n=dd.count("f")), on="k", nulls_equal=True),
    ],
    "lax_region": lambda a, b: [_lax_region(a)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_null_case_on_spark_equals_embedded(spark: SparkSession, case: str) -> None:
    build = _one(CASES[case])
    want = embedded(build, DATA)
    got, _ = on_spark(spark, build, DATA)
    assert got == want
    assert any(None in r for r in want)  # the case's outputs hold nulls


@pytest.mark.parametrize("native", [False, True])
def test_expressions_with_nulls_on_spark_equal_embedded(spark: SparkSession, native: bool) -> None:
    build = _one(lambda a, b: [_select_all(a, native)])
    want = embedded(build, DATA)
    got, result = on_spark(spark, build, DATA)
    assert got == want
    how = result.explain()
    assert ("Rust expression evaluator" in how) == native
    assert ("Spark Column expressions" in how) != native
    # Every expression that can be null is null on some row.
    never_null = {"isnull", "notnull", "fbnull", "fill", "fillb", "coals", "coal"}
    for i, name in enumerate(EXPRS):
        assert (name in never_null) != any(r[1 + i] is None for r in want), name


def test_nan_beside_null_compares_as_on_embedded(spark: SparkSession) -> None:
    build = _one(lambda a, b: [a.select("k", lt=col("f") < col("v"), ne=col("f") != 0.0)])
    data: Data = {"a": (A_COLS, ROWS_WITH_NAN), "b": DATA["b"]}
    assert on_spark(spark, build, data)[0] == embedded(build, data)


def _bfs(edges: list[tuple[Any, ...]]) -> tuple[Build, Data]:
    def build(flow: dd.Dataflow) -> Any:
        ei, e = flow.new_input({"src": "int64", "dst": "int64"}, name="edges")
        ri, r = flow.new_input({"node": "int64"}, name="roots")
        dist = dd.algorithms.bfs(e, r)
        return {"edges": ei, "roots": ri}, [dist, dist.count(by="dist")]

    data: Data = {
        "edges": (("src", "dst"), edges),
        "roots": (("node",), [(0, 0, 1), (None, 0, 1), (5, 1, 1)]),
    }
    return build, data


EDGES = [
    (0, 1, 0, 1),
    (1, None, 0, 1),
    (None, 2, 0, 1),
    (1, 2, 1, 1),
    (2, 3, 1, 1),
    (None, None, 2, 1),
    (5, 0, 2, 1),
    (1, 2, 3, -1),
]


@pytest.mark.parametrize("reduce_state", ["store", "shuffle"])
def test_loop_over_null_keys_on_spark_equals_embedded(
    spark: SparkSession, reduce_state: str
) -> None:
    """BFS with null nodes: a null node is reached (its distance is a group like any other)
    but its edges never join (null keys never match); fused and general supersteps."""
    build, data = _bfs(EDGES)
    want = embedded(build, data)
    got, result = on_spark(spark, build, data, reduce_state=reduce_state)
    assert got == want
    assert any(r[0] == 0 and r[1] is None for r in want)
    fused = reduce_state == "store" and not REMOTE  # a Connect session never fuses
    assert ("fused superstep:" in result.explain()) == fused


def test_python_functions_see_str_nulls_as_none(spark: SparkSession) -> None:
    def starts_a(cols: dict[str, Any]) -> Any:
        return np.array([s is not None and s.startswith("a") for s in cols["s"]])

    def tag(cols: dict[str, Any]) -> Any:
        return {"t": np.array(["-" if s is None else s.upper() for s in cols["s"]], object)}

    build = _one(lambda a, b: [a.select("s").filter(starts_a), a.select("s").map(tag)])
    assert on_spark(spark, build, DATA)[0] == embedded(build, DATA)


def test_python_function_on_an_int64_null_is_an_error(spark: SparkSession) -> None:
    build = _one(lambda a, b: [a.select("v").map(lambda cols: {"w": cols["v"] + 1})])
    data: Data = {"a": DATA["a"], "b": DATA["b"]}
    errors = check_collected(spark, build, data)
    assert errors and all("null" in e[1] for e in errors)


def test_errors_collected_beside_nulls(spark: SparkSession) -> None:
    """``v // k``: null where an operand is (never an error), an error for k = 0."""
    rows = [(7, 0, 0, 1), (None, 0, 0, 1), (8, None, 1, 1), (9, 3, 1, 1), (7, 0, 2, -1)]

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input({"v": "int64", "k": "int64"}, name="a")
        return {"a": ai}, [a.select(q=col("v") // col("k"), k="k")]

    errors = check_collected(spark, build, {"a": (("v", "k"), rows)})
    assert [(e[3], e[5]) for e in errors] == [((0,), 1), ((2,), -1)]


def test_int64_null_word_in_an_input_fails_naming_the_column(spark: SparkSession) -> None:
    build = _one(lambda a, b: [b])
    data: Data = {"a": DATA["a"], "b": (("k", "w"), [(-(2**63), "x", 0, 1)])}
    dfs = frames(spark, data, 1)
    flow = dd.Dataflow()
    sessions, outputs = build(flow)
    with pytest.raises(Exception, match="column 'k'.*reserved null word"):
        result = run_on_spark(spark, flow, {sessions[n]: df for n, df in dfs.items()}, outputs)
        result[outputs[0]].collect()


def test_a_null_advance_iteration_value_fails_on_both(spark: SparkSession) -> None:
    """The engine reads a null value's word as negative (an error); Spark's ``greatest``
    would skip the null, so the backend fails on it explicitly."""

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input({"x": "int64", "v": "int64"}, name="xs")
        out = a.iterate(lambda it: it.advance_iteration("v").concat(it).distinct())
        return {"xs": ai}, [out]

    data: Data = {"xs": (("x", "v"), [(9, 1, 0, 1), (2, None, 1, 1)])}
    with pytest.raises(dd.DataError, match="advance_iteration"):
        embedded(build, data)
    with pytest.raises(dd.DataError, match=r"advance_iteration@.*value is null"):
        on_spark(spark, build, data)
