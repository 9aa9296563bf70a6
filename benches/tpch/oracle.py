"""DuckDB as the oracle: each query recomputed from scratch on the same typed tables and
compared with ddflow's result exactly, as multisets, types included.

:func:`expected` runs a query's SQL (:mod:`benches.tpch.sql`) and returns its result as an
Arrow table, each quotient column (``c__num`` / ``c__den``) divided exactly as ddflow divides:
to the stated scale, rounded half away from zero. :func:`difference` compares it with a
ddflow ``capture().at(t)`` table (each record repeated by its count): the same column names
(in any order), compatible types (:func:`same_type`) and equal rows. There is no tolerance
anywhere: every value is an exact decimal, date, integer or string.
"""

from __future__ import annotations

import decimal
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import duckdb
import pyarrow as pa
from benches.tpch.refresh import Refresh
from benches.tpch.sql import ORACLE, sql_text

__all__ = [
    "Row",
    "apply_refresh",
    "connect",
    "difference",
    "divide",
    "divided",
    "expected",
    "rows_of",
    "same_type",
]

Row = tuple[Any, ...]


def connect(tables: Mapping[str, pa.Table], threads: int = 1) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection holding a copy of each table in DuckDB's own storage
    (queries over registered Arrow views are avoided: DuckDB 1.1 pushed some DECIMAL
    filters into Arrow scans wrongly)."""
    con = duckdb.connect(config={"threads": threads})
    for name, table in tables.items():
        con.register("_arrow", table)
        con.execute(f"create table {name} as select * from _arrow")
        con.unregister("_arrow")
    return con


def apply_refresh(con: duckdb.DuckDBPyConnection, refresh: Refresh) -> None:
    """Applies a refresh pair to the tables of ``con`` (RF2's deletes, then RF1's inserts)."""
    con.register("_gone", refresh.deletes["orders"].select(["o_orderkey"]))
    con.execute("delete from lineitem where l_orderkey in (select o_orderkey from _gone)")
    con.execute("delete from orders where o_orderkey in (select o_orderkey from _gone)")
    con.unregister("_gone")
    for name in ("orders", "lineitem"):
        con.register("_new", refresh.inserts[name])
        con.execute(f"insert into {name} select * from _new")
        con.unregister("_new")


def divide(num: Any, den: Any, scale: int) -> decimal.Decimal | None:
    """``num / den`` exactly, rounded half away from zero to ``scale`` decimal places (as
    ddflow's decimal ``/`` and ``mean``); NULL if either is NULL."""
    if num is None or den is None:
        return None
    q = Fraction(num) / Fraction(den) * 10**scale
    whole, rest = divmod(abs(q.numerator), q.denominator)
    if 2 * rest >= q.denominator:
        whole += 1
    unscaled = -whole if q < 0 else whole
    return decimal.Decimal(unscaled).scaleb(-scale)


def expected(name: str, con: duckdb.DuckDBPyConnection, sf: float) -> pa.Table:
    """Query ``name`` run by DuckDB, its quotient columns divided (see the module
    docstring); an all-NULL row of a global aggregate is dropped."""
    result = divided(name, con.execute(sql_text(name, sf)).fetch_arrow_table())
    if ORACLE[name].global_agg:
        rows = rows_of(result)
        if rows and all(all(v is None for v in row) for row in rows):
            result = result.slice(0, 0)
    return result


def divided(name: str, table: pa.Table) -> pa.Table:
    """``table`` (a result of query ``name``'s SQL text, DuckDB's or ``dd.sql``'s) with each
    quotient column pair ``c__num`` / ``c__den`` replaced by ``c``, divided exactly at the
    query's scale for it; other columns (``diff`` too) as they are."""
    oracle = ORACLE[name]
    columns: dict[str, pa.Array] = {}
    for column in table.column_names:
        if column.endswith("__den"):
            continue
        if column.endswith("__num"):
            out = column.removesuffix("__num")
            scale = oracle.quotients[out]
            nums = table[column].to_pylist()
            dens = table[out + "__den"].to_pylist()
            values = [divide(n, d, scale) for n, d in zip(nums, dens, strict=True)]
            columns[out] = pa.array(values, pa.decimal128(38, scale))
        else:
            columns[column] = table[column].combine_chunks()
    return pa.table(columns)


def same_type(ours: pa.DataType, duck: pa.DataType) -> bool:
    """Whether a ddflow column type matches DuckDB's: a decimal with the same scale (the
    precision differs: ddflow's ``sum`` is ``decimal128(38, s)`` where DuckDB narrows
    products); an integer for an integer or for DuckDB's ``decimal128(38, 0)`` (HUGEINT, the
    type of its ``sum`` of integers); strings for strings; otherwise the same type."""
    if pa.types.is_decimal(ours):
        return bool(pa.types.is_decimal(duck) and ours.scale == duck.scale)
    if pa.types.is_integer(ours):
        return bool(pa.types.is_integer(duck) or (pa.types.is_decimal(duck) and duck.scale == 0))
    if pa.types.is_string(ours) or pa.types.is_large_string(ours):
        return bool(pa.types.is_string(duck) or pa.types.is_large_string(duck))
    return bool(ours == duck)


def _value(value: Any) -> Any:
    """A value as compared: an integral decimal of scale 0 (a HUGEINT) as an int."""
    if isinstance(value, decimal.Decimal) and value.as_tuple().exponent == 0:
        return int(value)
    return value


def rows_of(table: pa.Table, counts: bool = False) -> list[Row]:
    """The sorted rows of ``table``'s record columns; with ``counts``, each repeated by its
    ``diff`` (a negative count is an error)."""
    names = [c for c in table.column_names if not (counts and c == "diff")]
    data = [[_value(v) for v in table[c].to_pylist()] for c in names]
    diffs = table["diff"].to_pylist() if counts else [1] * table.num_rows
    out: list[Row] = []
    for i, diff in enumerate(diffs):
        row = tuple(column[i] for column in data)
        if diff < 0:
            raise ValueError(f"record {row} has count {diff}")
        out.extend([row] * diff)
    return sorted(out, key=repr)


def difference(want: pa.Table, got: pa.Table, limit: int = 5) -> str | None:
    """``None`` when DuckDB's result ``want`` and ddflow's ``got`` (with ``diff``) have the
    same columns (in any order), compatible types and equal rows as multisets; else what
    differs."""
    names = want.column_names
    if sorted(c for c in got.column_names if c != "diff") != sorted(names):
        return f"columns: DuckDB {names}, ddflow {got.column_names}"
    got = got.select([*names, "diff"])
    # Types are checked on empty results too: a capture with no row types its columns off
    # the plan (tests/tpch/test_empty_result_dtypes.py).
    for name in names:
        ours, duck = got.schema.field(name).type, want.schema.field(name).type
        if not same_type(ours, duck):
            return f"column {name}: DuckDB {duck}, ddflow {ours}"
    w, g = rows_of(want), rows_of(got, counts=True)
    if w == g:
        return None
    lines = [f"columns {names}: DuckDB has {len(w)} rows, ddflow {len(g)}"]
    extra, missing = sorted(set(g) - set(w), key=repr), sorted(set(w) - set(g), key=repr)
    lines += [f"  only DuckDB: {row}" for row in missing[:limit]]
    lines += [f"  only ddflow: {row}" for row in extra[:limit]]
    if not extra and not missing:
        lines.append("  the same rows with other multiplicities")
    return "\n".join(lines)
