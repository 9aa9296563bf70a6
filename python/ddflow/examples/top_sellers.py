"""Top-k per key, kept up to date: the best-selling products of each category over a stream of
sales and returns.

``python -m ddflow.examples.top_sellers [--rounds R] [--sales N] [--k K] [--seed S]``

Each round ``t`` brings ``N`` sales lines (category, product, quantity) at time ``t`` and
returns a few earlier ones (a return retracts its line, diff -1). Units sold are summed per
product (``group_by(...).agg``) and ``top_k`` keeps the ``K`` products with the most units in
each category. After every round the example prints the categories whose leaderboard
changed, old and new, and at the end checks the leaderboards against a recount in Python.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

import ddflow as dd

__all__ = ["SALES", "build", "leaderboards", "main"]

SALES = pa.schema([("category", pa.string()), ("product", pa.string()), ("qty", pa.int64())])
"""A sales line: a sale is inserted, a return retracts it."""

_CATEGORIES = {
    "books": ("atlas", "biography", "cookbook", "novel", "poetry", "thriller"),
    "garden": ("hose", "rake", "seeds", "shears", "spade"),
    "kitchen": ("kettle", "knife", "mug", "pan", "toaster", "whisk"),
}


def build(flow: dd.Dataflow, k: int) -> tuple[dd.InputSession, dd.Capture]:
    """The sales input and a capture of each category's ``k`` best sellers (columns
    ``category, product, units``)."""
    sales_in, sales = flow.new_input(SALES)
    units = sales.group_by("category", "product").agg(units=dd.sum("qty"))
    top = units.reduce(by="category", agg=dd.top_k("units", k, descending=True))
    return sales_in, top.capture()


def leaderboards(table: pa.Table) -> dict[str, list[tuple[str, int]]]:
    """``{category: [(product, units), ...]}``, best first, from a capture's rows."""
    boards: dict[str, list[tuple[str, int]]] = {}
    for row in table.to_pylist():
        for _ in range(row["diff"]):
            boards.setdefault(row["category"], []).append((row["product"], row["units"]))
    return {c: sorted(b, key=lambda pu: (-pu[1], pu[0])) for c, b in sorted(boards.items())}


def _board(board: list[tuple[str, int]]) -> str:
    return ", ".join(f"{product} {units}" for product, units in board) or "(empty)"


def _sale(rng: random.Random) -> dict[str, object]:
    category = rng.choice(sorted(_CATEGORIES))
    products = _CATEGORIES[category]
    # Skewed popularity: the first products of a category sell more often.
    product = products[min(int(rng.expovariate(0.6)), len(products) - 1)]
    return {"category": category, "product": product, "qty": rng.randint(1, 3)}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.top_sellers", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds of sales (default 5)")
    parser.add_argument("--sales", type=int, default=100, help="sales lines per round")
    parser.add_argument("--k", type=int, default=3, help="leaderboard length (default 3)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.sales < 1 or args.k < 1:
        parser.error("--rounds, --sales and --k must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; prints each round's leaderboard changes and checks the final ones."""
    args = _parse(argv)
    rng = random.Random(args.seed)
    flow = dd.Dataflow()
    sales_in, top = build(flow, args.k)
    kept: list[dict[str, object]] = []
    before: dict[str, list[tuple[str, int]]] = {}
    for t in range(args.rounds):
        new = [_sale(rng) for _ in range(args.sales)]
        sales_in.update_batch(pa.Table.from_pylist(new, SALES), times=t)
        returned = rng.sample(range(len(kept)), min(len(kept), args.sales // 20))
        if returned:
            lines = [kept[i] for i in returned]
            sales_in.update_batch(pa.Table.from_pylist(lines, SALES), times=t, diffs=-1)
        kept = [s for i, s in enumerate(kept) if i not in set(returned)] + new
        sales_in.advance_to(t + 1)
        flow.run_until(t + 1)
        after = leaderboards(top.at(t))
        updates = top.updates()
        changed = sorted(set(updates.filter(pc.equal(updates["time"], t))["category"].to_pylist()))
        print(f"round {t}: {len(new)} sales, {len(returned)} returns")
        for category in changed:
            print(f"  {category:<8} {_board(before.get(category, []))}")
            print(f"  {'':<8} -> {_board(after.get(category, []))}")
        before = after
    units: Counter[tuple[str, str]] = Counter()
    for sale in kept:
        units[(str(sale["category"]), str(sale["product"]))] += int(str(sale["qty"]))
    expected: dict[str, list[tuple[str, int]]] = {}
    for (category, product), n in units.items():
        expected.setdefault(category, []).append((product, n))
    expected = {
        c: sorted(b, key=lambda pu: (-pu[1], pu[0]))[: args.k] for c, b in sorted(expected.items())
    }
    # Ties at the k-th place may pick another product of equal units: compare the units.
    same = {c: [u for _, u in b] for c, b in before.items()} == {
        c: [u for _, u in b] for c, b in expected.items()
    }
    print(f"leaderboards after {args.rounds} rounds match a recount: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
