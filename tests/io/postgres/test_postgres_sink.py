"""``dd.io.postgres.write`` against a real server: the table it keeps equals the collection's
final state (upserts and deletes by primary key, one transaction per completed time), and
it creates the table with column types from the collection's.
"""

from __future__ import annotations

import datetime
import decimal
import random
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from tests.io.postgres.helpers import sql

import ddflow as dd

pytestmark = pytest.mark.timeout(60)


def test_the_table_equals_the_collection_at_every_completed_time(conninfo: str) -> None:
    flow = dd.Dataflow()
    sales_in, sales = flow.new_input({"shop": "str", "item": "int64", "qty": "int64"})
    per_shop = sales.group_by("shop").agg(qty=dd.sum("qty"), items=dd.count())
    sink = dd.io.postgres.write(per_shop, conninfo, "public.per_shop", primary_key=["shop"])
    state = per_shop.capture()
    rng = random.Random(11)
    live: list[tuple[str, int, int]] = []
    for t in range(12):
        for _ in range(rng.randint(0, 6)):
            if live and rng.random() < 0.35:
                row = live.pop(rng.randrange(len(live)))
                sales_in.update_at(row, time=t, diff=-1)
            else:
                row = (f"s{rng.randint(0, 4)}", rng.randint(0, 99), rng.randint(1, 9))
                live.append(row)
                sales_in.update_at(row, time=t, diff=+1)
        sales_in.advance_to(t + 1)
        flow.run_until(t + 1)
        expected = Counter(
            {(r["shop"], r["qty"], r["items"]): r["diff"] for r in state.at(t).to_pylist()}
        )
        table = Counter(tuple(r) for r in sql(conninfo, "select shop, qty, items from per_shop"))
        assert table == expected, t
    times_with_updates = {u["time"] for u in state.updates().to_pylist()}
    assert sink.transactions == len(times_with_updates)
    key = sql(
        conninfo,
        "select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid "
        "and a.attnum = any(i.indkey) where i.indrelid = 'per_shop'::regclass "
        "and i.indisprimary",
    )
    assert key == [("shop",)]


TYPED = pa.schema(
    [
        ("id", pa.int32()),
        ("name", pa.string()),
        ("amount", pa.decimal128(12, 2)),
        ("ratio", pa.float64()),
        ("ok", pa.bool_()),
        ("day", pa.date32()),
        ("at", pa.timestamp("us", tz="UTC")),
        ("blob", pa.binary()),
    ]
)


def test_the_table_is_created_with_the_collection_types(conninfo: str) -> None:
    flow = dd.Dataflow()
    rows_in, rows = flow.new_input(TYPED)
    dd.io.postgres.write(rows, conninfo, "typed_out", primary_key=["id"])
    first: tuple[Any, ...] = (
        1,
        "a",
        decimal.Decimal("12.50"),
        0.5,
        True,
        datetime.date(2024, 5, 1),
        datetime.datetime(2024, 5, 1, 8, 30, tzinfo=datetime.UTC),
        b"\x00\x01",
    )
    second = (2,) + (None,) * 7
    batch = [dict(zip(TYPED.names, row, strict=True)) for row in (first, second)]
    rows_in.update_batch(pa.Table.from_pylist(batch, schema=TYPED), times=0)
    rows_in.close()
    flow.run()
    types = sql(
        conninfo,
        "select column_name, data_type from information_schema.columns "
        "where table_name = 'typed_out'",
    )
    assert dict(types) == {
        "id": "integer",
        "name": "text",
        "amount": "numeric",
        "ratio": "double precision",
        "ok": "boolean",
        "day": "date",
        "at": "timestamp with time zone",
        "blob": "bytea",
    }
    assert sql(conninfo, "select * from typed_out order by id") == [first, second]


def test_a_primary_key_must_name_columns(conninfo: str) -> None:
    flow = dd.Dataflow()
    _, rows = flow.new_input({"k": "int64"})
    with pytest.raises(dd.PlanError, match="not columns"):
        dd.io.postgres.write(rows, conninfo, "nope", primary_key=["id"])
