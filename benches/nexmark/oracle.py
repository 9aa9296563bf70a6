"""DuckDB as the Nexmark oracle: a query's answer over the events so far, and the
comparison with what ddflow holds at the same point.

Both answers become multisets of rows (a ``Counter``); numbers compare by value (an
integral float as an int, others to 9 significant digits) so that DuckDB's doubles and
HUGEINT sums meet ddflow's float64 and int64.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import duckdb
import pyarrow as pa

__all__ = ["Answer", "compare", "ddflow_answer", "duckdb_answer", "load_tables"]

Answer = tuple[list[str], Counter[tuple[Any, ...]]]
"""Column names and rows with their counts."""


def _norm(value: Any) -> Any:
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        return float(f"{value:.9g}")
    return value


def _rows(table: pa.Table, names: list[str]) -> list[tuple[Any, ...]]:
    columns = [table[c].to_pylist() for c in names]
    return [tuple(_norm(v) for v in row) for row in zip(*columns, strict=True)]


def load_tables(con: duckdb.DuckDBPyConnection, tables: dict[str, pa.Table]) -> None:
    """Makes ``tables`` DuckDB's tables of the same names (replacing earlier ones): views
    that scan the Arrow tables in place."""
    for name, table in tables.items():
        con.register(name, table)


def duckdb_answer(con: duckdb.DuckDBPyConnection, sql: str) -> Answer:
    """DuckDB's answer to ``sql`` over the tables loaded."""
    table = con.execute(sql).fetch_arrow_table()
    return table.column_names, Counter(_rows(table, table.column_names))


def ddflow_answer(table: pa.Table) -> Answer:
    """A capture's ``at(t)`` (records and their ``diff``) as an answer."""
    names = [c for c in table.column_names if c != "diff"]
    rows: Counter[tuple[Any, ...]] = Counter()
    for row, diff in zip(_rows(table, names), table["diff"].to_pylist(), strict=True):
        rows[row] += diff
    return names, +rows


def compare(query: str, where: str, got: Answer, want: Answer) -> str | None:
    """``None`` when the answers agree, else what differs (a few rows of each side)."""
    if got[0] != want[0]:
        return f"{query} {where}: columns {got[0]}, DuckDB {want[0]}"
    if got[1] == want[1]:
        return None
    only_ours = list((got[1] - want[1]).items())[:3]
    only_theirs = list((want[1] - got[1]).items())[:3]
    return (
        f"{query} {where}: {got[1].total()} rows, DuckDB {want[1].total()}; "
        f"only ddflow {only_ours}, only DuckDB {only_theirs}"
    )
