"""Runs SQL queries through ddflow under random insert / delete batches and checks each
against DuckDB run from scratch on the same tables after every batch.

:func:`random_batches` makes the batches: a first load, then batches that insert new rows
and delete rows present at that time (nulls included, tables never emptied, so a global
aggregate always has rows). :func:`check_queries` builds one dataflow with every query
(``dd.sql``), feeds batch ``i`` at time ``i``, and after each compares every query's
``capture().at(i)`` (each row repeated by its count) with DuckDB's result as multisets,
output column names included. Numbers compare by value (an integral float as an int, others
to 9 significant digits), so DuckDB's HUGEINT sums and DOUBLE averages match ddflow's int64
and float64 / decimal results.
"""

from __future__ import annotations

import datetime
import decimal
import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import duckdb
import pyarrow as pa

import ddflow as dd
from ddflow.sql.translate import translate

Row = tuple[Any, ...]
Schema = Mapping[str, str]
"""Column name -> ddflow dtype."""

SCHEMAS: dict[str, dict[str, str]] = {
    "t": {"k": "int64", "x": "int64", "f": "float64", "s": "str", "d": "date32"},
    "u": {"k": "int64", "y": "int64", "g": "float64", "s": "str"},
    "v": {"k": "int64", "x": "int64", "w": "str"},
}
"""The random tables the corpus queries read."""

_ARROW = {
    "int64": pa.int64(),
    "float64": pa.float64(),
    "str": pa.string(),
    "date32": pa.date32(),
    "bool": pa.bool_(),
}
_WORDS = ["a", "b", "ab", "ba", "abc", "x%", "A", ""]


def _value(dtype: str, rng: random.Random, null_rate: float) -> Any:
    if rng.random() < null_rate:
        return None
    if dtype == "int64":
        return rng.randint(-3, 6)
    if dtype == "float64":
        return rng.choice([-1.5, 0.0, 0.25, 1.0, 2.5, 3.75])
    if dtype == "str":
        return rng.choice(_WORDS)
    if dtype == "date32":
        return datetime.date(1994, 1, 1) + datetime.timedelta(days=rng.randint(0, 800))
    if dtype == "bool":
        return rng.random() < 0.5
    raise AssertionError(dtype)


def random_batches(
    schemas: Mapping[str, Schema],
    seed: int,
    batches: int = 4,
    rows: int = 14,
    null_rate: float = 0.15,
) -> list[dict[str, list[tuple[Row, int]]]]:
    """Batch 0 loads ``rows`` rows per table; later batches insert a few rows and delete a
    few present ones (never the last ones), with repeated rows now and then."""
    rng = random.Random(seed)
    live: dict[str, list[Row]] = {name: [] for name in schemas}
    out: list[dict[str, list[tuple[Row, int]]]] = []
    for b in range(batches):
        batch: dict[str, list[tuple[Row, int]]] = {}
        for name, schema in schemas.items():
            updates: list[tuple[Row, int]] = []
            inserts = rows if b == 0 else rng.randint(1, 5)
            for _ in range(inserts):
                if live[name] and rng.random() < 0.15:
                    row = rng.choice(live[name])  # a duplicate row
                else:
                    row = tuple(_value(t, rng, null_rate) for t in schema.values())
                updates.append((row, 1))
            if b:
                for _ in range(min(rng.randint(0, 4), len(live[name]) - 3)):
                    row = live[name].pop(rng.randrange(len(live[name])))
                    updates.append((row, -1))
            live[name] += [r for r, d in updates if d > 0]
            batch[name] = updates
        out.append(batch)
    return out


def normalize(value: Any) -> Any:
    """A value as compared (see the module docs)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float | decimal.Decimal):
        f = float(value)
        if math.isnan(f):
            return "NaN"
        if f.is_integer() and abs(f) < 2**53:
            return int(f)
        return float(f"{f:.9g}")
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def _multiset(rows: Sequence[Row]) -> list[Row]:
    return sorted((tuple(normalize(v) for v in r) for r in rows), key=repr)


def _table(schema: Schema, rows: Counter[Row]) -> pa.Table:
    flat = [r for r, n in rows.items() for _ in range(n)]
    columns = list(zip(*flat, strict=True)) if flat else [[] for _ in schema]
    return pa.table(
        {
            name: pa.array(list(values), _ARROW[dtype])
            for (name, dtype), values in zip(schema.items(), columns, strict=True)
        }
    )


Query = str | tuple[str, str]
"""A query's SQL, or ``(ddflow's SQL, DuckDB's SQL)`` where DuckDB needs another text for
the same answer (a DuckDB bug to work around, named where it is used)."""


def check_queries(
    queries: Mapping[str, Query],
    seed: int = 0,
    schemas: Mapping[str, Schema] = SCHEMAS,
    batches: int = 4,
    rows: int = 14,
    check_names: bool = True,
    workers: int = 1,
    feed: Sequence[Mapping[str, list[tuple[Row, int]]]] | None = None,
    unit: bool = False,
) -> None:
    """Every query equals DuckDB's answer after every batch (see the module docs).
    ``feed``: these batches instead of random ones. ``unit``: the queries get a one-row
    constant collection for global aggregates over no rows (:mod:`ddflow.sql.unit`), here
    an input of the test's fed once at time 0."""
    flow = dd.Dataflow(workers=workers)
    sessions: dict[str, dd.InputSession] = {}
    tables: dict[str, dd.Collection] = {}
    for name, schema in schemas.items():
        sessions[name], tables[name] = flow.new_input(dict(schema), name=name)
    ours = {q: text if isinstance(text, str) else text[0] for q, text in queries.items()}
    theirs = {q: text if isinstance(text, str) else text[1] for q, text in queries.items()}
    unit_in, one = flow.new_input({"unit": "int64"}, name="unit") if unit else (None, None)
    captures = {q: translate(text, tables, "duckdb", one).capture() for q, text in ours.items()}
    if unit_in is not None:
        unit_in.update_at((0,), time=0)
        unit_in.close()
    con = duckdb.connect()
    state: dict[str, Counter[Row]] = {name: Counter() for name in schemas}
    failures: list[str] = []
    if feed is None:
        feed = random_batches(schemas, seed, batches, rows)
    for time, batch in enumerate(feed):
        for name, updates in batch.items():
            for row, diff in updates:
                sessions[name].update_at(row, time=time, diff=diff)
                state[name][row] += diff
        for session in sessions.values():
            session.advance_to(time + 1)
        flow.run_until(time + 1)
        for name, schema in schemas.items():
            con.register("_rows", _table(schema, +state[name]))
            con.execute(f"create or replace table {name} as select * from _rows")
            con.unregister("_rows")
        for q, text in theirs.items():
            result = con.execute(text)
            want_names = [d[0] for d in result.description]
            want = _multiset(result.fetchall())
            got_table = captures[q].at(time)
            names = [c for c in got_table.column_names if c != "diff"]
            got_rows: list[Row] = []
            diffs = got_table["diff"].to_pylist()
            cols = [got_table[c].to_pylist() for c in names]
            for i, diff in enumerate(diffs):
                got_rows += [tuple(c[i] for c in cols)] * diff
            got = _multiset(got_rows)
            if check_names and names != want_names:
                failures.append(f"{q} at {time}: columns {names}, DuckDB {want_names}")
            elif got != want:
                only_g = [r for r in got if r not in want][:4]
                only_w = [r for r in want if r not in got][:4]
                failures.append(
                    f"{q} at {time}: {len(got)} rows, DuckDB {len(want)}; only ddflow "
                    f"{only_g}, only DuckDB {only_w}\n  {text}"
                )
    assert not failures, "\n".join(failures)
