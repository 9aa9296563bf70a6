"""Type rules TPC-H in its own types needs, each as the smallest case: a decimal beside an
integer in ``when``, ``is_in`` on a narrow integer column, and an empty capture that keeps
its declared dtypes (all three were gaps once; ``benches/tpch`` may still carry their
workarounds, which stay correct).
"""

from __future__ import annotations

import decimal

import pyarrow as pa

import ddflow as dd

D = decimal.Decimal


def _run(schema: pa.Schema, table: pa.Table, expr: dd.Expr) -> pa.Table:
    flow = dd.Dataflow()
    inp, c = flow.new_input(schema)
    out = c.select(x=expr).capture()
    inp.update_batch(table, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    return out.at(0)


def test_when_unifies_a_decimal_with_an_integer_literal() -> None:
    """SQL's ``CASE WHEN c THEN price ELSE 0 END`` (TPC-H Q8, Q14): DuckDB casts the 0 to
    the decimal. ddflow makes every row a type error update ('then() and otherwise() have
    incompatible dtypes decimal128(15, 2) and int64'), even for ``otherwise(dd.lit(
    Decimal("0.00")))`` (decimal128(2, 2)). Workaround: ``price * when(c).then(1).otherwise(0)``."""
    schema = pa.schema([("c", pa.bool_()), ("p", pa.decimal128(15, 2))])
    table = pa.table({"c": [True, False], "p": pa.array([D("1.50"), D("2.00")], schema[1].type)})
    out = _run(schema, table, dd.when(dd.col("c")).then(dd.col("p")).otherwise(0))
    assert sorted(out["x"].to_pylist()) == [D("0.00"), D("1.50")]


def test_is_in_takes_integer_literals_on_a_narrow_integer_column() -> None:
    """SQL's ``p_size in (49, 14, ...)`` on TPC-H's int32 ``p_size`` (Q16): ddflow makes every
    row a type error update ('is_in values must match the operand's dtype int32, got
    [int64, ...]'), while ``p_size == 15`` works. Workaround: ``cast("int64").is_in(...)``."""
    schema = pa.schema([("s", pa.int32())])
    out = _run(schema, pa.table({"s": pa.array([3, 4], pa.int32())}), dd.col("s").is_in([3, 9]))
    assert sorted(out["x"].to_pylist()) == [False, True]


def test_an_empty_capture_keeps_the_declared_dtypes() -> None:
    """A capture with no rows (TPC-H Q17 at SF 0.01) reports int64 for a declared
    ``decimal128(15, 2)`` column passed through a filter, where a non-empty one reports the
    decimal; the TPC-H oracle checks types on non-empty results only."""
    schema = pa.schema([("k", pa.int64()), ("p", pa.decimal128(15, 2))])
    flow = dd.Dataflow()
    inp, c = flow.new_input(schema)
    out = c.filter(dd.col("k") > 5).select("p").capture()
    inp.update_batch(pa.table({"k": [1], "p": pa.array([D("1.00")], schema[1].type)}), times=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert out.at(0).schema.field("p").type == pa.decimal128(15, 2)
