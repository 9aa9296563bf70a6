"""The expression library on Spark: the functions compiled to Spark Column expressions give
exactly the Rust evaluator's values on random and tricky inputs, the others are refused
(and run in Rust in ``mapInArrow``), and a dataflow mixing both equals the embedded engine's
output under ``run_on_spark``."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from tests.spark.conftest import Data, embedded, frames, on_spark
from tests.spark.test_errors_collect import check as check_collected

import ddflow as dd
from ddflow import _core
from ddflow.expr import Expr, col
from ddflow.spark import run_on_spark
from ddflow.spark.driver.columns import NotCompilable, compile_expr

pytestmark = pytest.mark.timeout(600)

ALPHABET = list("aAbz09 _%.\t\n\r\x1c") + ["é", "ß", "Σ", "😀", "\u2003", "\u0085", "\u00a0"]

COMPILED: dict[str, Expr] = {
    "in_i": col("i").is_in([1, 3, -2]),
    "in_f": col("x").is_in([0.0, 2.5, math.nan, 1, -0.0]),
    "in_if": col("i").is_in([1.5, 2]),
    "in_s": col("s").is_in(["a", "é", ""]),
    "between": col("x").is_between(-1, col("i")),
    "abs_i": col("i").abs(),
    "abs_f": col("x").abs(),
    "round_i": col("i").round(2) + col("i").floor() + col("i").ceil(),
    "sqrt": col("x").sqrt() + col("i").sqrt(),
    "rem_f": col("x").rem(col("j")),
    "rem_i": dd.when(col("j") != 0).then(col("i").rem(col("j"))).otherwise(0),
    "len": col("s").str.len_chars(),
    "strip": col("s").str.strip_chars(),
    "starts": col("s").str.starts_with("a"),
    "ends": col("s").str.ends_with("é"),
    "has_lit": col("s").str.contains(".", literal=True),
    "has_re": col("s").str.contains("a[ _]|^z+|(b|0)9?"),
    "like": col("s").str.like("%a_%"),
    "like_esc": col("s").str.like("\\_%"),
    "slice_a": col("s").str.slice(1, 2),
    "slice_b": col("s").str.slice(-3, None),
    "slice_c": col("s").str.slice(-9, 4),
    "repl": col("s").str.replace("a", "<>", literal=True),
    "repl_empty": col("s").str.replace("", "^", literal=True),
    "cat": dd.concat_str([col("s"), "|", col("t")], separator="-"),
}

NATIVE: dict[str, Expr] = {
    "round_f": col("x").round(1),
    "floor_f": col("x").floor(),
    "log": col("x").log(),
    "exp": col("x").exp(),
    "pow": col("x").pow(2),
    "lower": col("s").str.to_lowercase(),
    "upper": col("s").str.to_uppercase(),
    "re_dot": col("s").str.contains("a.b"),
    "re_dollar": col("s").str.contains("a$"),
    "re_class": col("s").str.contains(r"\s"),
    "repl_re": col("s").str.replace("a+", "b"),
}


def _strings(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randrange(7))) for _ in range(n)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return bool(a == b)


def test_compiled_functions_equal_the_rust_evaluator(spark: SparkSession) -> None:
    rng = random.Random(20261125)
    n = 400
    i = [rng.randrange(-5, 6) for _ in range(n)]
    j = [rng.choice([0, 2, -3, 7]) for _ in range(n)]
    x = [rng.choice([rng.uniform(-9, 9), 0.0, -0.0, 2.5, math.nan, math.inf]) for _ in range(n)]
    s, t = _strings(rng, n), _strings(rng, n)
    df = spark.createDataFrame(
        list(zip(i, j, x, s, t, strict=True)), "i long, j long, x double, s string, t string"
    )
    schema = [("i", "int64"), ("j", "int64"), ("x", "float64"), ("s", "str"), ("t", "str")]
    typed = {c: (F.col(c), d) for c, d in schema}
    compiled = {k: compile_expr(e.to_json(), typed, "test", True) for k, e in COMPILED.items()}
    rows = df.select(*[c.alias(k) for k, (c, _) in compiled.items()]).collect()
    native_cols: dict[str, Any] = {
        "i": np.array(i, dtype=np.int64),
        "j": np.array(j, dtype=np.int64),
        "x": np.array(x),
        "s": np.array(s, dtype=object),
        "t": np.array(t, dtype=object),
    }
    for k, e in COMPILED.items():
        want = _core.eval_expr(json.dumps(e.to_json()), native_cols).tolist()
        got = [r[k] for r in rows]
        bad = [(s[r], g, w) for r, (g, w) in enumerate(zip(got, want, strict=True))
               if not _same(g, w)]  # fmt: skip
        assert not bad, f"{k}: {e!r}: {bad[:5]}"
        assert compiled[k][1] == _core.expr_dtype(json.dumps(e.to_json()), schema)


def test_inexact_functions_are_left_to_rust() -> None:
    typed = {c: (F.col(c), d) for c, d in [("x", "float64"), ("s", "str")]}
    for k, e in NATIVE.items():
        with pytest.raises(NotCompilable):
            compile_expr(e.to_json(), typed, "test", True)
        assert k
    # Collect mode: an int64 rem that can fail must produce error rows, which only Rust does.
    with pytest.raises(NotCompilable):
        compile_expr(col("i").rem(col("i")).to_json(), {"i": (F.col("i"), "int64")}, "t", False)


def test_dataflow_with_the_library_equals_the_embedded_engine(spark: SparkSession) -> None:
    rng = random.Random(7)
    rows = [
        (rng.randrange(-4, 5), rng.uniform(-3, 3), rng.choice(_strings(rng, 8)),
         rng.randrange(4), rng.choice((1, -1, 2)))
        for _ in range(60)
    ]  # fmt: skip

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("i", "x", "s"), name="a")
        spark_side = a.select(
            n=col("s").str.len_chars() + col("i").abs(),
            m=col("s").str.slice(0, 3).str.replace("a", "A", literal=True),
            k=col("i").is_in([0, 1, 2]) & col("s").str.like("%a%"),
        )
        rust_side = a.select(
            u=col("s").str.to_uppercase(),
            r=col("x").round(2),
            e=col("x").exp() + col("x").abs().log(),
        )
        kept = a.filter(col("s").str.contains("^a|b") | col("x").is_between(0, 1)).select("s")
        counted = a.select(w=dd.concat_str([col("s").str.strip_chars(), "!"])).count(by="w")
        return {"a": ai}, [spark_side, rust_side, kept, counted]

    data = {"a": (("i", "x", "s"), rows)}
    got, result = on_spark(spark, build, data)
    assert got == embedded(build, data)
    plan = result.explain()
    assert plan.count("Spark Column expressions") >= 2, plan  # spark_side, kept
    assert "Rust expression evaluator in mapInArrow" in plan, plan  # rust_side


I64_LEAST = -(2**63) + 1
"""The least int64 value a record may hold (-2**63 is the engine's null word)."""


def test_failing_rows_are_error_updates_on_spark(spark: SparkSession) -> None:
    data: Data = {
        "a": (
            ("k", "v"),
            [
                (0, 7, 0, 1),
                (2, I64_LEAST, 0, 1),
                (3, 5, 1, 1),
                (0, 7, 2, -1),
                (2, I64_LEAST, 3, -1),
            ],
        )
    }

    def build(flow: dd.Dataflow) -> Any:
        ai, a = flow.new_input(("k", "v"), name="a")
        return {"a": ai}, [a.select(r=col("v").rem(col("k")), b=(col("v") - 1).abs(), k="k")]

    errors = check_collected(spark, build, data)
    messages = sorted({e[1] for e in errors})
    assert any("7.rem(0)" in m for m in messages), messages
    assert any("overflow" in m and '(col("v") - 1)' in m for m in messages), messages


def test_compiled_overflow_fails_the_job_without_collect(spark: SparkSession) -> None:
    # v - 1 reaches -2**63, the engine's null word: an overflow on both backends.
    flow = dd.Dataflow()
    ai, a = flow.new_input(("v",), name="a")
    out = a.select(b=(col("v") - 1).abs())
    df = frames(spark, {"a": (("v",), [(1, 0, 1), (I64_LEAST, 0, 1)])}, 1)["a"]
    result = run_on_spark(spark, flow, {ai: df}, [out])
    assert "Spark Column expressions" in result.explain()
    with pytest.raises(Exception, match="int64 overflow in sub"):
        result[out].collect()
