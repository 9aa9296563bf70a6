"""An incrementally maintained sales dashboard over a stream of orders and cancellations.

``python -m ddflow.examples.orders_dashboard [--rounds R] [--orders N] [--seed S]``

A ``customers`` table (id, name, region) is loaded at time 0; then each round ``t`` brings
``N`` new orders (id, customer, day as ``date32``, amount as ``decimal128(10, 2)``) and
cancels a few earlier ones (a cancellation is the order's retraction, diff -1). Some orders
name a customer missing from the table: the left join keeps them, with a null region shown
as ``unknown``, until one of those customers signs up halfway through, which moves their
earlier orders to the customer's region. The dashboard is revenue, order count, distinct
customers and mean amount per region and month; after every round the example prints the
rows that changed (``-`` a row retracted, ``+`` its new value), and at the end the whole
dashboard and a check of its total revenue against the open orders. Amounts stay exact
decimals throughout.
"""

from __future__ import annotations

import argparse
import datetime
import random
from collections.abc import Sequence
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

import ddflow as dd

__all__ = ["CUSTOMERS", "ORDERS", "build", "main", "orders_for_round"]

CUSTOMERS = pa.schema([("customer_id", pa.int64()), ("name", pa.string()), ("region", pa.string())])
"""The customers table's schema."""

ORDERS = pa.schema(
    [
        ("order_id", pa.int64()),
        ("customer_id", pa.int64()),
        ("day", pa.date32()),
        ("amount", pa.decimal128(10, 2)),
    ]
)
"""The order stream's schema: an order is inserted once and cancelled by retracting it."""

_REGIONS = ("north", "south", "east", "west")
_FIRST_DAY = datetime.date(2025, 1, 1)


def customer_table(count: int) -> pa.Table:
    """``count`` customers spread over four regions."""
    ids = list(range(count))
    return pa.table(
        {
            "customer_id": ids,
            "name": [f"customer-{i}" for i in ids],
            "region": [_REGIONS[i % len(_REGIONS)] for i in ids],
        },
        schema=CUSTOMERS,
    )


def orders_for_round(
    rng: random.Random, round_: int, count: int, first_id: int, customers: int
) -> pa.Table:
    """``count`` new orders of round ``round_`` (ids from ``first_id``), spread over the
    round's week; one customer id in twenty is unknown to the customers table."""
    days = [
        _FIRST_DAY + datetime.timedelta(days=7 * round_ + rng.randrange(7)) for _ in range(count)
    ]
    return pa.table(
        {
            "order_id": list(range(first_id, first_id + count)),
            "customer_id": [rng.randrange(customers + customers // 20 + 1) for _ in range(count)],
            "day": days,
            "amount": [Decimal(rng.randrange(500, 50_000)) / 100 for _ in range(count)],
        },
        schema=ORDERS,
    )


def build(
    flow: dd.Dataflow,
) -> tuple[dd.InputSession, dd.InputSession, dd.Capture]:
    """The dashboard's dataflow: the customers and orders inputs and the dashboard's capture
    (columns ``region, year, month, revenue, orders, customers, avg_amount``)."""
    customers_in, customers = flow.new_input(CUSTOMERS)
    orders_in, orders = flow.new_input(ORDERS)
    enriched = orders.join(customers, on="customer_id", how="left").with_columns(
        region=dd.col("region").fill_null("unknown"),
        year=dd.col("day").dt.year(),
        month=dd.col("day").dt.month(),
    )
    dashboard = enriched.group_by("region", "year", "month").agg(
        revenue=dd.sum("amount"),
        orders=dd.count(),
        customers=dd.count_distinct("customer_id"),
        avg_amount=dd.mean("amount"),
    )
    return customers_in, orders_in, dashboard.capture()


def _row(row: dict[str, object]) -> str:
    return (
        f"{row['region']:<8} {row['year']}-{row['month']:02d}  revenue {row['revenue']:>10}  "
        f"orders {row['orders']:>4}  customers {row['customers']:>4}  "
        f"avg {Decimal(str(row['avg_amount'])).quantize(Decimal('0.01'))}"
    )


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.orders_dashboard", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=6, help="rounds of orders (default 6)")
    parser.add_argument("--orders", type=int, default=200, help="new orders per round")
    parser.add_argument("--customers", type=int, default=40, help="customers in the table")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.orders < 1 or args.customers < 1:
        parser.error("--rounds, --orders and --customers must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; prints each round's dashboard changes, then the final dashboard."""
    args = _parse(argv)
    rng = random.Random(args.seed)
    flow = dd.Dataflow()
    customers_in, orders_in, dashboard = build(flow)
    customers_in.update_batch(customer_table(args.customers), times=0)
    placed: list[dict[str, object]] = []
    for t in range(args.rounds):
        new = orders_for_round(rng, t, args.orders, len(placed), args.customers)
        orders_in.update_batch(new, times=t)
        cancelled = rng.sample(placed, min(len(placed), args.orders // 10))
        if cancelled:
            orders_in.update_batch(pa.Table.from_pylist(cancelled, ORDERS), times=t, diffs=-1)
        placed = [o for o in placed if o not in cancelled] + new.to_pylist()
        signup = ""
        if t == args.rounds // 2:
            # A late sign-up: orders placed earlier by this customer move out of "unknown".
            late = {"customer_id": args.customers, "name": "late-signup", "region": "north"}
            customers_in.update_batch(pa.Table.from_pylist([late], CUSTOMERS), times=t)
            signup = f", customer {args.customers} signed up (north)"
        for session in (customers_in, orders_in):
            session.advance_to(t + 1)
        flow.run_until(t + 1)
        updates = dashboard.updates()
        changes = updates.filter(pc.equal(updates["time"], t))
        print(
            f"round {t}: {args.orders} orders, {len(cancelled)} cancelled{signup}; "
            "dashboard changes:"
        )
        for row in sorted(
            changes.to_pylist(), key=lambda r: (r["region"], r["year"], r["month"], r["diff"])
        ):
            print(f"  {'+' if row['diff'] > 0 else '-'} {_row(row)}")
    final = dashboard.at(args.rounds - 1).to_pylist()
    print(f"dashboard after {args.rounds} rounds ({len(placed)} open orders):")
    for row in sorted(final, key=lambda r: (r["region"], r["year"], r["month"])):
        print(f"  {_row(row)}")
    total = sum((Decimal(str(r["revenue"])) for r in final), Decimal(0))
    expected = sum((Decimal(str(o["amount"])) for o in placed), Decimal(0))
    print(f"total revenue {total} (the open orders sum to {expected})")
    return 0 if total == expected else 1


if __name__ == "__main__":
    raise SystemExit(main())
