"""``dd.io.postgres.read`` against a real server: a table's snapshot and then its changes,
followed through logical replication, checked against a recompute from the table's final
state; values that do not fit; commit order and atomicity of transactions; column types.
"""

from __future__ import annotations

import datetime
import decimal
import gc
import random
import time
from collections import Counter
from typing import Any

import psycopg
import pytest
from tests.io.postgres.helpers import Watched, run_while, sql
from tests.io.postgres.server import find_bin_dir, start

import ddflow as dd

pytestmark = pytest.mark.timeout(90)


def _wait_for(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_snapshot_then_changes_feed_a_group_by_equal_to_a_recompute(conninfo: str) -> None:
    sql(
        conninfo,
        "create table orders (id int primary key, region text not null, qty int8, "
        "price numeric(12, 2))",
        "insert into orders select i, 'r' || (i % 5), i % 7, i * 1.25 "
        "from generate_series(1, 200) i",
    )
    flow = dd.Dataflow()
    orders = dd.io.postgres.read(flow, conninfo, "orders")
    per_region = orders.group_by("region").agg(
        qty=dd.sum("qty"), n=dd.count(), price=dd.sum("price")
    )
    watched = Watched(per_region)
    dd.io.postgres.write(per_region, conninfo, "orders_per_region", primary_key=["region"])
    rng = random.Random(7)
    expected: Counter[tuple[Any, ...]] = Counter()

    def work() -> None:
        _wait_for(lambda: bool(watched.updates))  # the snapshot is in: the rest is streamed
        next_id = 201
        with psycopg.connect(conninfo, autocommit=True) as conn:
            for _ in range(40):
                with conn.transaction():
                    for _ in range(rng.randint(1, 5)):
                        op = rng.random()
                        target = rng.randint(1, next_id)
                        if op < 0.4:
                            conn.execute(
                                "insert into orders values (%s, %s, %s, %s)",
                                (next_id, f"r{rng.randint(0, 7)}", rng.randint(0, 9), 2.5),
                            )
                            next_id += 1
                        elif op < 0.8:
                            conn.execute(
                                "update orders set qty = qty + 1, region = %s where id = %s",
                                (f"r{rng.randint(0, 7)}", target),
                            )
                        else:
                            conn.execute("delete from orders where id = %s", (target,))
                if rng.random() < 0.3:
                    time.sleep(0.06)  # some transactions in polls of their own
        rows = sql(
            conninfo,
            "select region, sum(qty)::int8, count(*)::int8, sum(price) from orders "
            "group by region",
        )
        expected.update({tuple(r): 1 for r in rows})

    run_while(flow, work, lambda: bool(expected) and watched.contents() == expected)
    assert watched.contents() == expected
    sink = sql(conninfo, "select region, qty, n, price from orders_per_region")
    assert Counter(tuple(r) for r in sink) == expected
    assert flow.errors().num_rows == 0


def test_a_value_that_does_not_fit_is_an_error_update_naming_table_key_and_column(
    conninfo: str,
) -> None:
    sql(
        conninfo,
        "create table readings (sensor text, seq int, v int8, amount numeric(30, 2), "
        "primary key (sensor, seq))",
        "insert into readings values ('a', 1, 5, 1.00), ('a', 2, 10000000000, 2.00), "
        "('b', 1, 7, 3.00)",
    )
    flow = dd.Dataflow()
    readings = dd.io.postgres.read(
        flow,
        conninfo,
        "readings",
        schema={"sensor": "str", "seq": None, "v": "int32", "amount": None},
    )
    watched = Watched(readings)

    def work() -> None:
        _wait_for(lambda: bool(watched.updates))
        sql(conninfo, "insert into readings values ('b', 2, 8, 1e20)")  # 22 digits
        sql(conninfo, "update readings set v = 9 where sensor = 'a' and seq = 2")  # now fits
        sql(conninfo, "update readings set v = -3000000000 where sensor = 'a' and seq = 1")
        sql(conninfo, "insert into readings values ('c', 1, 1, 1.50)")

    expected = Counter(
        {
            ("a", 2, 9, decimal.Decimal("2.00")): 1,
            ("b", 1, 7, decimal.Decimal("3.00")): 1,
            ("c", 1, 1, decimal.Decimal("1.50")): 1,
        }
    )
    run_while(flow, work, lambda: watched.contents() == expected)
    assert watched.contents() == expected
    messages = sorted(flow.errors().column("message").to_pylist())
    assert len(messages) == 3, messages
    assert all("public.readings" in m for m in messages)
    assert any("key (sensor, seq)=(a, 2)" in m and "column 'v'" in m for m in messages)
    assert any("key (sensor, seq)=(a, 1)" in m and "column 'v'" in m for m in messages)
    assert any("key (sensor, seq)=(b, 2)" in m and "column 'amount'" in m for m in messages)


def test_transactions_keep_commit_order_and_one_time_each(conninfo: str) -> None:
    # Transfers between accounts, and runs of transactions on the same row: the collection
    # at every logical time must be the table after some prefix of the commits, later times
    # after longer prefixes (a transaction is never split, commits never reorder).
    sql(
        conninfo,
        "create table accounts (id int primary key, balance int8 not null)",
        "insert into accounts select i, 100 from generate_series(1, 4) i",
    )
    flow = dd.Dataflow()
    accounts = dd.io.postgres.read(flow, conninfo, "accounts")
    history = accounts.capture()
    watched = Watched(accounts)
    rng = random.Random(3)
    balances = {i: 100 for i in range(1, 5)}
    states = [Counter({(i, 100): 1 for i in balances})]

    def commit(conn: psycopg.Connection[Any], changes: dict[int, int]) -> None:
        with conn.transaction():
            for account, delta in changes.items():
                conn.execute(
                    "update accounts set balance = balance + %s where id = %s", (delta, account)
                )
                balances[account] += delta
        states.append(Counter({(i, b): 1 for i, b in balances.items()}))

    def work() -> None:
        _wait_for(lambda: bool(watched.updates))
        with psycopg.connect(conninfo, autocommit=True) as conn:
            for i in range(40):
                a, b = rng.sample(range(1, 5), 2)
                commit(conn, {a: -1, b: +1})
                commit(conn, {1: +1})  # the same row in consecutive transactions
                commit(conn, {1: -1})
                if i % 8 == 0:
                    time.sleep(0.06)

    run_while(flow, work, lambda: len(states) > 1 and watched.contents() == states[-1])
    assert watched.contents() == states[-1]
    times = sorted({u["time"] for u in watched.updates})
    assert len(times) >= 3
    prefix = 0
    for t in times:
        state = Counter({(r["id"], r["balance"]): r["diff"] for r in history.at(t).to_pylist()})
        later = [i for i in range(prefix, len(states)) if states[i] == state]
        assert later, f"the state at {t} is no prefix of the commits after #{prefix}: {state}"
        prefix = later[0]


def test_column_types_and_nulls(conninfo: str) -> None:
    sql(
        conninfo,
        "create table typed (id int8 primary key, s smallint, i int, f4 real, f8 float8, "
        "n numeric(10, 3), t text, vc varchar(5), ok bool, d date, ts timestamp, "
        "tz timestamptz, b bytea, u uuid)",
        "insert into typed values (1, 2, 3, 1.5, 2.25, 12.345, 'x', 'héé', true, "
        "'2024-02-29', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56+02', '\\x00ff', "
        "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')",
        "insert into typed (id) values (2)",
    )
    flow = dd.Dataflow()
    typed = dd.io.postgres.read(flow, conninfo, "typed")
    watched = Watched(typed)

    def work() -> None:
        _wait_for(lambda: bool(watched.updates))
        sql(conninfo, "insert into typed (id, d, b) values (3, 'infinity', '\\x01')")
        sql(conninfo, "update typed set t = 'y' where id = 1")

    def done() -> bool:  # the update commits after the refused insert: both were read
        return any(r[0] == 1 and r[6] == "y" for r in watched.contents())

    run_while(flow, work, done)
    rows = {r[0]: r for r in watched.contents()}
    assert rows[1] == (
        1,
        2,
        3,
        1.5,
        2.25,
        decimal.Decimal("12.345"),
        "y",
        "héé",
        True,
        datetime.date(2024, 2, 29),
        datetime.datetime(2024, 2, 29, 12, 34, 56, 789000),
        datetime.datetime(2024, 2, 29, 10, 34, 56, tzinfo=datetime.UTC),
        b"\x00\xff",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
    )
    assert rows[2] == (2,) + (None,) * 13
    (message,) = flow.errors().column("message").to_pylist()
    assert "key (id)=(3)" in message and "column 'd'" in message and "infinity" in message


def test_a_server_without_logical_wal_is_refused_saying_what_to_set() -> None:
    bin_dir = find_bin_dir()
    if bin_dir is None:
        pytest.skip("no PostgreSQL server binaries")
    server = start(bin_dir, wal_level="replica")
    try:
        sql(server.conninfo, "create table t (x int)")
        with pytest.raises(dd.SourceError, match="wal_level = logical"):
            dd.io.postgres.read(dd.Dataflow(), server.conninfo, "t")
    finally:
        server.stop()


def test_unknown_tables_and_types_are_refused_at_read(conninfo: str) -> None:
    sql(conninfo, "create table odd (id int, span interval, amount numeric)")
    with pytest.raises(dd.SourceError, match="no table 'nothere'"):
        dd.io.postgres.read(dd.Dataflow(), conninfo, "nothere")
    with pytest.raises(dd.SchemaTypeError, match="column 'span' is interval"):
        dd.io.postgres.read(dd.Dataflow(), conninfo, "odd")
    flow = dd.Dataflow()
    odd = dd.io.postgres.read(
        flow, conninfo, "odd", schema={"id": None, "span": "str", "amount": "float64"}
    )
    sql(conninfo, "insert into odd values (1, '1 day', 2.5)")
    watched = Watched(odd)
    run_while(flow, lambda: None, lambda: bool(watched.contents()))
    assert watched.contents() == Counter({(1, "1 day", 2.5): 1})


def _slots(conninfo: str) -> list[str]:
    return [r[0] for r in sql(conninfo, "select slot_name from pg_replication_slots")]


def test_a_stopped_run_resumes_and_the_slot_goes_with_the_dataflow(conninfo: str) -> None:
    sql(conninfo, "create table steps (id int primary key)", "insert into steps values (1)")
    flow = dd.Dataflow()
    watched = Watched(dd.io.postgres.read(flow, conninfo, "steps"))
    run_while(flow, lambda: None, lambda: watched.contents() == Counter({(1,): 1}))
    assert "ddflow_public_steps" in _slots(conninfo)
    sql(conninfo, "insert into steps values (2)")  # while stopped: kept by the slot
    expected = Counter({(1,): 1, (2,): 1, (3,): 1})
    run_while(
        flow,
        lambda: sql(conninfo, "insert into steps values (3)"),
        lambda: watched.contents() == expected,
    )
    assert watched.contents() == expected
    flow.close()  # the stopped run's source drops the slot
    assert "ddflow_public_steps" not in _slots(conninfo)
    flow = watched = None  # and once the dataflow is garbage, nothing is dropped twice
    gc.collect()


def test_a_truncate_stops_the_run_naming_the_source(conninfo: str) -> None:
    sql(conninfo, "create table gone (id int primary key)", "insert into gone values (1)")
    flow = dd.Dataflow()
    watched = Watched(dd.io.postgres.read(flow, conninfo, "gone"))

    def work() -> None:
        _wait_for(lambda: bool(watched.updates))
        sql(conninfo, "insert into gone values (2)")  # handed over before the failure
        sql(conninfo, "truncate gone")

    with pytest.raises(dd.SourceError, match="postgres source 'public.gone'.*truncated"):
        run_while(flow, work, lambda: False, timeout=10)
    assert watched.contents() == Counter({(1,): 1, (2,): 1})
    assert "ddflow_public_gone" not in _slots(conninfo)


def test_an_update_leaving_a_toasted_value_unchanged_keeps_it(conninfo: str) -> None:
    # A large value stored out of line is not sent again by an update that leaves it as it
    # is; the source takes it from the old row (the replica identity is FULL).
    big = "".join(random.Random(5).choice("abcdefghij") for _ in range(200_000))
    sql(
        conninfo,
        "create table docs (id int primary key, n int, body text)",
        "alter table docs alter column body set storage external",
    )
    sql(conninfo, "insert into docs values (1, 0, %s)", params=(big,))
    flow = dd.Dataflow()
    watched = Watched(dd.io.postgres.read(flow, conninfo, "docs"))

    def work() -> None:
        _wait_for(lambda: bool(watched.updates))
        sql(conninfo, "update docs set n = 1 where id = 1")

    run_while(flow, work, lambda: watched.contents() == Counter({(1, 1, big): 1}))
    assert watched.contents() == Counter({(1, 1, big): 1})
    assert flow.errors().num_rows == 0
