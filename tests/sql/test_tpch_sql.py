"""The 22 TPC-H queries written in SQL (:mod:`tests.sql.tpch_sql`) and run by ``dd.sql``
equal DuckDB's answers on the SF 0.01 tables after the initial load and after each of two
refresh pairs (RF1 inserts, RF2 deletes), as :mod:`tests.tpch.test_tpch` checks the
hand-written plans; so do the five with their ``LIMIT`` (maintained top-k)."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import pyarrow as pa
import pytest
from benches.tpch import generate, oracle, refresh
from tests.sql.tpch_sql import GLOBAL, LIMITS, QUERIES, limited, query

import ddflow as dd

SF = 0.01
BATCHES = 2


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None or isinstance(a, str | bool | datetime.date):
        return bool(a == b)
    if isinstance(a, int | decimal.Decimal) and isinstance(b, int | decimal.Decimal):
        return bool(a == b)
    # A DOUBLE quotient of DuckDB against ddflow's exact decimal rounded to its scale.
    unit = max(
        (10.0 ** int(v.as_tuple().exponent) for v in (a, b) if isinstance(v, decimal.Decimal)),
        default=0.0,
    )
    x, y = float(a), float(b)
    return abs(x - y) <= unit or math.isclose(x, y, rel_tol=1e-12)


def _sort_key(row: tuple[Any, ...]) -> str:
    return repr(
        tuple(f"{float(v):.4g}" if isinstance(v, float | decimal.Decimal) else v for v in row)
    )


def _difference(name: str, want: pa.Table, got: pa.Table) -> str | None:
    names = want.column_names
    if [c for c in got.column_names if c != "diff"] != names:
        return f"columns: DuckDB {names}, ddflow {got.column_names}"
    w = [tuple(r.values()) for r in want.to_pylist()]
    g: list[tuple[Any, ...]] = []
    for r in got.to_pylist():
        diff = r.pop("diff")
        g += [tuple(r.values())] * diff
    if name in GLOBAL and len(g) != 1:
        return f"a global aggregate with {len(g)} rows (SQL's is one, also over no rows)"
    w.sort(key=_sort_key)
    g.sort(key=_sort_key)
    if len(w) != len(g):
        return f"DuckDB {len(w)} rows, ddflow {len(g)}"
    for a, b in zip(w, g, strict=True):
        if not all(_close(x, y) for x, y in zip(a, b, strict=True)):
            return f"row differs: DuckDB {a}, ddflow {b}"
    return None


@pytest.fixture(scope="module")
def outcomes() -> dict[str, list[tuple[int, str | None]]]:
    tables = generate.load_tables(SF)
    batches = refresh.make_refreshes(tables, SF, BATCHES, seed=7)
    flow = dd.Dataflow()
    sessions: dict[str, dd.InputSession] = {}
    inputs: dict[str, dd.Collection] = {}
    for name, table in tables.items():
        sessions[name], inputs[name] = flow.new_input(table.schema, name=name)
    texts = {q: query(q, SF) for q in QUERIES} | {f"{q}_limit": limited(q, SF) for q in LIMITS}
    captures = {q: dd.sql(text, inputs).capture() for q, text in texts.items()}
    for name, session in sessions.items():
        session.update_batch(tables[name], times=0)
    con = oracle.connect(tables)
    out: dict[str, list[tuple[int, str | None]]] = {q: [] for q in texts}
    for time in range(BATCHES + 1):
        if time:
            batch = batches[time - 1]
            for name, session in sessions.items():
                deletes, inserts = batch.deletes.get(name), batch.inserts.get(name)
                if deletes is not None and deletes.num_rows:
                    session.update_batch(deletes, times=time, diffs=-1)
                if inserts is not None and inserts.num_rows:
                    session.update_batch(inserts, times=time, diffs=1)
            oracle.apply_refresh(con, batch)
        for session in sessions.values():
            session.advance_to(time + 1)
        flow.run_until(time + 1)
        for q, text in texts.items():
            want = con.execute(text).fetch_arrow_table()
            got = captures[q].at(time)
            out[q].append((got.num_rows, _difference(q, want, got)))
    return out


@pytest.mark.parametrize("name", [*QUERIES, *(f"{q}_limit" for q in LIMITS)])
def test_tpch_sql_matches_duckdb(
    name: str, outcomes: dict[str, list[tuple[int, str | None]]]
) -> None:
    for time, (_, difference) in enumerate(outcomes[name]):
        assert difference is None, f"{name} at time {time}: {difference}"


def test_results_are_not_vacuous(outcomes: dict[str, list[tuple[int, str | None]]]) -> None:
    """Every query has rows (Q17's is SQL's one row of a global aggregate over no rows: no
    part qualifies at SF 0.01; ``test_tpch_sql_matches_duckdb`` checks it is DuckDB's)."""
    empty = sorted(q for q, o in outcomes.items() if o[0][0] == 0)
    assert empty == []
    assert [n for n, _ in outcomes["q17"]] == [1] * (BATCHES + 1)
    # The limits cut: each top-k holds fewer rows than its whole result at some time.
    for q, (_, n) in LIMITS.items():
        assert all(o[0] <= n for o in outcomes[f"{q}_limit"])
    assert any(outcomes[q][0][0] > n for q, (_, n) in LIMITS.items())


def test_no_plan_holds_a_cross_product() -> None:
    """Every join of the 22 plans is on keys the query equates: no cross product (a join on
    a ``cross_`` constant key); constant ``one_`` keys join only a one-row aggregate or a
    flag (the uncorrelated scalar subqueries of Q11, Q15 and Q22, Q16's NOT IN)."""
    schemas = {name: table.schema for name, table in generate.load_tables(SF).items()}
    constant: dict[str, int] = {}
    for name in QUERIES:
        flow = dd.Dataflow()
        inputs = {n: flow.new_input(schema, name=n)[1] for n, schema in schemas.items()}
        dd.sql(query(name, SF), inputs)
        keys = [n["columns"][0] for n in flow.plan()["nodes"] if n["op"] == "join"]
        assert not [k for k in keys if k.startswith("cross_")], name
        if any(k.startswith("one_") for k in keys):
            constant[name] = 1
    assert sorted(constant) == ["q11", "q15", "q16", "q22"]
