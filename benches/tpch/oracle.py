"""DuckDB as the oracle: each query recomputed from scratch on the typed tables, its result
encoded like ddflow's, and the two compared as multisets.

:func:`expected` runs a query's SQL (:mod:`benches.tpch.sql`) on Arrow tables with their
original TPC-H types and returns sorted rows in the encodings of
:mod:`benches.tpch.encoding`; :func:`actual` turns a ddflow ``capture().at(t)`` table into
rows the same way (each record repeated by its count); :func:`difference` compares them,
floats with a relative tolerance, everything else exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa
from benches.tpch.encoding import decode_value
from benches.tpch.refresh import Refresh
from benches.tpch.sql import ORACLE, sql_text

__all__ = [
    "FLOAT_TOLERANCE",
    "Row",
    "actual",
    "apply_refresh",
    "connect",
    "difference",
    "expected",
]

FLOAT_TOLERANCE = 1e-9
"""Relative tolerance of float columns (averages and ratios)."""

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


def columns_of(name: str, con: duckdb.DuckDBPyConnection, sf: float) -> list[str]:
    """The result columns of query ``name``, in its ``SELECT`` order."""
    return [d[0] for d in con.execute(sql_text(name, sf) + " limit 0").description or []]


def expected(name: str, con: duckdb.DuckDBPyConnection, sf: float) -> tuple[list[str], list[Row]]:
    """Query ``name`` run by DuckDB: its column names and its sorted, encoded rows."""
    oracle = ORACLE[name]
    cursor = con.execute(sql_text(name, sf))
    columns = [d[0] for d in cursor.description or []]
    rows = cursor.fetchall()
    if oracle.global_agg and rows and all(all(v is None for v in row) for row in rows):
        rows = []
    scales = [oracle.scales.get(c) for c in columns]
    floats = [c in oracle.floats for c in columns]
    out = []
    for row in rows:
        encoded = []
        for value, scale, is_float in zip(row, scales, floats, strict=True):
            if value is None:
                raise ValueError(f"{name}: NULL in DuckDB's result has no encoding: {row}")
            encoded.append(float(value) if is_float else decode_value(value, scale))
        out.append(tuple(encoded))
    return columns, sorted(out)


def actual(table: pa.Table, columns: Sequence[str]) -> list[Row]:
    """A ddflow result (record columns and ``diff``) as sorted rows of ``columns``, each
    record repeated by its count; a negative count is an error."""
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ValueError(f"result lacks columns {missing}; it has {table.column_names}")
    data = [table[c].to_pylist() for c in columns]
    out: list[Row] = []
    for i, diff in enumerate(table["diff"].to_pylist()):
        row = tuple(column[i] for column in data)
        if diff < 0:
            raise ValueError(f"record {row} has count {diff}")
        out.extend([row] * diff)
    return sorted(out)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, int | float) or not isinstance(b, int | float):
            return False
        return math.isclose(a, b, rel_tol=FLOAT_TOLERANCE, abs_tol=1e-12)
    return bool(a == b) and type(a) is type(b)


def difference(
    want: list[Row], got: list[Row], columns: Sequence[str], limit: int = 5
) -> str | None:
    """``None`` when the sorted multisets agree, else a description of the first
    differences."""
    if len(want) == len(got) and all(
        len(w) == len(g) and all(_same(x, y) for x, y in zip(w, g, strict=True))
        for w, g in zip(want, got, strict=True)
    ):
        return None
    lines = [f"columns {list(columns)}: DuckDB has {len(want)} rows, ddflow {len(got)}"]
    shown = 0
    for i in range(max(len(want), len(got))):
        w = want[i] if i < len(want) else None
        g = got[i] if i < len(got) else None
        if w is None or g is None or not all(_same(x, y) for x, y in zip(w, g, strict=True)):
            lines.append(f"  row {i}: DuckDB {w} / ddflow {g}")
            shown += 1
            if shown >= limit:
                break
    return "\n".join(lines)
