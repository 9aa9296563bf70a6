"""A watched CSV directory and a followed Postgres table feed one dataflow (a join, then a
group-by) whose results land in a Postgres sink and a Parquet sink; both sinks are checked
against DuckDB's recompute from the final CSV files and the table's final state.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from tests.io.postgres.helpers import Watched, run_while, sql
from tests.io.sinkfiles import final_state, read_sink

import ddflow as dd

pytestmark = pytest.mark.timeout(90)


def _drop(directory: Path, name: str, rows: list[tuple[int, int]]) -> None:
    """Writes a CSV file under a temporary name and renames it into place."""
    text = "product,qty\n" + "".join(f"{p},{q}\n" for p, q in rows)
    (directory / f".{name}.tmp").write_text(text)
    os.replace(directory / f".{name}.tmp", directory / name)


def test_csv_and_postgres_sources_into_postgres_and_parquet_sinks(
    conninfo: str, tmp_path: Path
) -> None:
    sql(
        conninfo,
        "create table products (id int primary key, category text not null)",
        "insert into products select i, 'c' || (i % 4) from generate_series(1, 30) i",
    )
    orders_dir = tmp_path / "orders"
    orders_dir.mkdir()
    _drop(orders_dir, "0.csv", [(i % 35 + 1, i % 6 + 1) for i in range(100)])

    flow = dd.Dataflow()
    orders = dd.io.csv.read(
        flow, orders_dir, schema={"product": "int64", "qty": "int64"}, watch=True
    )
    # The table's int (int32) read as int64, the dtype of the CSV column it joins with.
    products = dd.io.postgres.read(
        flow, conninfo, "products", schema={"id": "int64", "category": None}
    )
    per_category = (
        orders.join(products, left_on="product", right_on="id")
        .group_by("category")
        .agg(qty=dd.sum("qty"), n=dd.count())
    )
    dd.io.postgres.write(per_category, conninfo, "per_category", primary_key=["category"])
    dd.io.parquet.write(per_category, tmp_path / "per_category")
    watched = Watched(per_category)
    expected: Counter[tuple[Any, ...]] = Counter()

    def work() -> None:
        deadline = time.monotonic() + 20
        while not watched.updates:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sql(conninfo, "update products set category = 'c9' where id % 7 = 0")
        _drop(orders_dir, "1.csv", [(i % 40 + 1, 2) for i in range(60)])
        sql(
            conninfo,
            "delete from products where id = 3",
            "insert into products values (31, 'c1'), (32, 'c5')",
        )
        _drop(orders_dir, "2.csv", [(31, 5), (32, 1), (3, 4)])
        db = duckdb.connect()
        db.register(
            "products_now",
            pa.Table.from_pylist(
                [{"id": i, "category": c} for i, c in sql(conninfo, "select * from products")]
            ),
        )
        rows = db.sql(
            f"""select p.category, sum(o.qty)::bigint, count(*)::bigint
            from read_csv('{orders_dir}/*.csv', header=true) o
            join products_now p on o.product = p.id group by p.category"""
        ).fetchall()
        expected.update({tuple(r): 1 for r in rows})

    run_while(flow, work, lambda: bool(expected) and watched.contents() == expected)
    assert watched.contents() == expected
    assert Counter(tuple(r) for r in sql(conninfo, "select * from per_category")) == expected
    _, updates = read_sink(tmp_path / "per_category")
    assert final_state(updates) == expected
    assert flow.errors().num_rows == 0
