"""An incremental dashboard over TPC-H data, kept up to date through refresh pairs.

``python -m ddflow.examples.tpch_dashboard [--sf SF] [--rounds R] [--data DIR] [--seed S]``

The tables come from ``tpchgen-cli`` (``pip install tpchgen-cli``), run once into
``DIR/tpch-sf<SF>/`` (``--data DIR``; by default a temporary directory removed at the end) at
scale factor ``SF`` (default 0.01); they keep TPC-H's types, ``decimal128(15, 2)`` prices,
discounts, taxes and quantities and ``date32`` dates. The dashboard has two views: TPC-H's Q1,
the pricing summary per return flag and line status (exact decimal sums and means), and the
revenue (``l_extendedprice * (1 - l_discount)``), order count and customer count per customer
nation and market segment, a join of lineitems, orders, customers and nations. The tables go in
at time 0; then each round ``i`` is a refresh pair at time ``i``: RF1 inserts ``SF * 1500``
orders with their lineitems (copies of sampled live orders under fresh keys, each with another
live order's customer) and RF2 deletes as many live orders with their lineitems (diff -1). Each
round prints the dashboard rows that changed (``-`` a row retracted, ``+`` its new value); at
the end both views are checked against a recompute from scratch, in plain Python over the final
tables, exact to the decimal scale.
"""

from __future__ import annotations

import argparse
import datetime
import decimal
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from time import process_time
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import ddflow as dd

__all__ = [
    "Refresh",
    "TABLES",
    "apply",
    "build",
    "find_generator",
    "load_tables",
    "main",
    "make_refresh",
    "matches",
    "recompute",
]

TABLES: tuple[str, ...] = ("nation", "customer", "orders", "lineitem")
"""The TPC-H tables the dashboard reads (``tpchgen-cli`` generates only these)."""

CUTOFF = datetime.date(1998, 12, 1) - datetime.timedelta(days=90)
"""Q1's ship date cutoff: ``date '1998-12-01' - interval '90' day`` (the validation value)."""
_MISSING = "tpchgen-cli is not installed: pip install tpchgen-cli"


def find_generator() -> str | None:
    """The ``tpchgen-cli`` executable: beside this interpreter's scripts, else on PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "tpchgen-cli"
    return str(beside) if beside.exists() else shutil.which("tpchgen-cli")


def load_tables(sf: float, root: Path) -> dict[str, pa.Table]:
    """The dashboard's tables at scale factor ``sf``, read from ``root/tpch-sf<SF>/``, where
    ``tpchgen-cli`` first generates those missing (into a temporary directory beside it, each
    file renamed into place once complete); RuntimeError naming the fix without it."""
    data = root / f"tpch-sf{sf:g}"
    missing = [t for t in TABLES if not (data / f"{t}.parquet").exists()]
    if missing:
        generator = find_generator()
        if generator is None:
            raise RuntimeError(_MISSING)
        data.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".tpchgen-", dir=root) as tmp:
            command = [generator, "parquet", "-s", f"{sf:g}", "-o", tmp, "-n", "1", "-q"]
            done = subprocess.run(
                [*command, "-T", ",".join(missing)], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} failed: {done.stderr.strip()}")
            for table in missing:
                os.replace(Path(tmp) / f"{table}.parquet", data / f"{table}.parquet")
    return {t: pq.read_table(data / f"{t}.parquet").combine_chunks() for t in TABLES}


@dataclass(frozen=True)
class Refresh:
    """One refresh pair: the orders and lineitems inserted (RF1) and deleted (RF2)."""

    inserts: Mapping[str, pa.Table]
    deletes: Mapping[str, pa.Table]


def _with_orders(table: pa.Table, column: str, keys: Sequence[int]) -> pa.Table:
    return table.filter(pc.is_in(table[column], value_set=pa.array(keys, pa.int64())))


def make_refresh(
    rng: random.Random, orders: pa.Table, lineitem: pa.Table, count: int, first_key: int
) -> Refresh:
    """A refresh pair over the live ``orders`` and ``lineitem``: RF1 copies ``count`` sampled
    orders and their lineitems under the keys ``first_key, first_key + 1, ...``, each with
    the customer of another sampled order; RF2 deletes ``count`` other orders and their
    lineitems."""
    live = orders["o_orderkey"].to_pylist()
    if len(live) < 2 * count:
        raise ValueError(f"too few orders ({len(live)}) for refresh functions of {count}")
    picked = rng.sample(live, 2 * count)
    templates, deleted = sorted(picked[:count]), sorted(picked[count:])
    fresh = dict(zip(templates, range(first_key, first_key + count), strict=True))
    customers = orders["o_custkey"].to_pylist()
    new_orders = _with_orders(orders, "o_orderkey", templates).sort_by("o_orderkey")
    new_orders = new_orders.set_column(
        new_orders.schema.get_field_index("o_orderkey"),
        "o_orderkey",
        pa.array([fresh[k] for k in new_orders["o_orderkey"].to_pylist()], pa.int64()),
    )
    new_orders = new_orders.set_column(
        new_orders.schema.get_field_index("o_custkey"),
        "o_custkey",
        pa.array([rng.choice(customers) for _ in range(count)], pa.int64()),
    )
    new_lines = _with_orders(lineitem, "l_orderkey", templates)
    new_lines = new_lines.set_column(
        new_lines.schema.get_field_index("l_orderkey"),
        "l_orderkey",
        pa.array([fresh[k] for k in new_lines["l_orderkey"].to_pylist()], pa.int64()),
    )
    return Refresh(
        inserts={
            "orders": new_orders.cast(orders.schema),
            "lineitem": new_lines.cast(lineitem.schema),
        },
        deletes={
            "orders": _with_orders(orders, "o_orderkey", deleted),
            "lineitem": _with_orders(lineitem, "l_orderkey", deleted),
        },
    )


def apply(tables: Mapping[str, pa.Table], refresh: Refresh) -> dict[str, pa.Table]:
    """The tables after ``refresh``."""
    out = dict(tables)
    gone = refresh.deletes["orders"]["o_orderkey"]
    for name, key in (("orders", "o_orderkey"), ("lineitem", "l_orderkey")):
        kept = tables[name].filter(pc.invert(pc.is_in(tables[name][key], value_set=gone)))
        out[name] = pa.concat_tables([kept, refresh.inserts[name]])
    return out


def build(
    flow: dd.Dataflow, schemas: Mapping[str, pa.Schema]
) -> tuple[dict[str, dd.InputSession], dd.Capture, dd.Capture]:
    """The dashboard's dataflow: an input per table of ``TABLES`` (in its TPC-H schema) and
    the captures of the two views, Q1 (``l_returnflag, l_linestatus, sum_qty,
    sum_base_price, sum_disc_price, sum_charge, avg_qty, avg_price, avg_disc, count_order``)
    and the revenue per nation and segment (``n_name, c_mktsegment, revenue, orders,
    customers``)."""
    inputs: dict[str, dd.InputSession] = {}
    tables: dict[str, dd.Collection] = {}
    for name in TABLES:
        inputs[name], tables[name] = flow.new_input(schemas[name])
    col, one = dd.col, dd.lit(Decimal("1"))
    price, disc, tax = col("l_extendedprice"), col("l_discount"), col("l_tax")
    shipped = tables["lineitem"].filter(col("l_shipdate") <= dd.lit(CUTOFF))
    shipped = shipped.select(
        "l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax"
    )
    q1 = shipped.group_by("l_returnflag", "l_linestatus").agg(
        sum_qty=dd.sum("l_quantity"),
        sum_base_price=dd.sum(price),
        sum_disc_price=dd.sum(price * (one - disc)),
        sum_charge=dd.sum(price * (one - disc) * (one + tax)),
        avg_qty=dd.mean("l_quantity"),
        avg_price=dd.mean(price),
        avg_disc=dd.mean(disc),
        count_order=dd.count(),
    )
    sales = tables["lineitem"].select("l_orderkey", rev=price * (one - disc))
    sales = sales.join(
        tables["orders"].select("o_orderkey", "o_custkey"),
        left_on="l_orderkey",
        right_on="o_orderkey",
    )
    sales = sales.join(
        tables["customer"].select("c_custkey", "c_nationkey", "c_mktsegment"),
        left_on="o_custkey",
        right_on="c_custkey",
    )
    sales = sales.join(
        tables["nation"].select("n_nationkey", "n_name"),
        left_on="c_nationkey",
        right_on="n_nationkey",
    )
    segments = sales.group_by("n_name", "c_mktsegment").agg(
        revenue=dd.sum("rev"),
        orders=dd.count_distinct("l_orderkey"),
        customers=dd.count_distinct("o_custkey"),
    )
    return inputs, q1.capture(), segments.capture()


def _mean(total: Decimal, count: int, scale: int) -> Decimal:
    """``total / count`` at ``scale`` places, rounded half away from zero (as ``dd.mean``)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        return (total / count).quantize(Decimal(1).scaleb(-scale), decimal.ROUND_HALF_UP)


def recompute(tables: Mapping[str, pa.Table]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Both views from scratch in plain Python over ``tables``: Q1's rows and the revenue per
    nation and segment, with the scales the dataflow gives (sums keep the scale of their
    terms, means have the argument's scale plus 4)."""
    one = Decimal(1)
    q1: dict[tuple[str, str], list[Any]] = defaultdict(
        lambda: [Decimal(0), Decimal(0), Decimal(0), Decimal(0), Decimal(0), 0]
    )
    lines = tables["lineitem"].select(
        ["l_orderkey", "l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice",
         "l_discount", "l_tax", "l_shipdate"]
    ).to_pylist()  # fmt: skip
    for li in lines:
        if li["l_shipdate"] > CUTOFF:
            continue
        price, disc = li["l_extendedprice"], li["l_discount"]
        acc = q1[li["l_returnflag"], li["l_linestatus"]]
        acc[0] += li["l_quantity"]
        acc[1] += price
        acc[2] += price * (one - disc)
        acc[3] += price * (one - disc) * (one + li["l_tax"])
        acc[4] += disc
        acc[5] += 1
    summary = [
        {
            "l_returnflag": flag,
            "l_linestatus": status,
            "sum_qty": qty,
            "sum_base_price": base,
            "sum_disc_price": disc_price,
            "sum_charge": charge,
            "avg_qty": _mean(qty, n, 6),
            "avg_price": _mean(base, n, 6),
            "avg_disc": _mean(discs, n, 6),
            "count_order": n,
        }
        for (flag, status), (qty, base, disc_price, charge, discs, n) in q1.items()
    ]
    nation = dict(
        zip(
            tables["nation"]["n_nationkey"].to_pylist(),
            tables["nation"]["n_name"].to_pylist(),
            strict=True,
        )
    )
    customer = {
        c["c_custkey"]: (nation[c["c_nationkey"]], c["c_mktsegment"])
        for c in tables["customer"].select(["c_custkey", "c_nationkey", "c_mktsegment"]).to_pylist()
    }
    buyer = dict(
        zip(
            tables["orders"]["o_orderkey"].to_pylist(),
            tables["orders"]["o_custkey"].to_pylist(),
            strict=True,
        )
    )
    revenue: dict[tuple[str, str], Decimal] = defaultdict(Decimal)
    orders: dict[tuple[str, str], set[int]] = defaultdict(set)
    customers: dict[tuple[str, str], set[int]] = defaultdict(set)
    for li in lines:
        custkey = buyer.get(li["l_orderkey"])
        if custkey is None or custkey not in customer:
            continue
        key = customer[custkey]
        revenue[key] += li["l_extendedprice"] * (one - li["l_discount"])
        orders[key].add(li["l_orderkey"])
        customers[key].add(custkey)
    segments = [
        {
            "n_name": name,
            "c_mktsegment": segment,
            "revenue": total,
            "orders": len(orders[name, segment]),
            "customers": len(customers[name, segment]),
        }
        for (name, segment), total in revenue.items()
    ]
    return summary, segments


def _multiset(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> Counter[tuple[Any, ...]]:
    """Rows as a multiset of tuples, decimals by their text (so the scale counts too)."""
    out: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        key = tuple(str(row[c]) if isinstance(row[c], Decimal) else row[c] for c in columns)
        out[key] += int(row.get("diff", 1))
    return +out


def matches(
    q1: dd.Capture, segments: dd.Capture, time: int, tables: Mapping[str, pa.Table]
) -> bool:
    """Whether both views at ``time`` equal :func:`recompute` over ``tables`` (the tables as
    of that time), as multisets, decimals with their scales."""
    want_q1, want_segments = recompute(tables)
    same = True
    for capture, want in ((q1, want_q1), (segments, want_segments)):
        got = capture.at(time)
        columns = [c for c in got.column_names if c != "diff"]
        same = same and _multiset(got.to_pylist(), columns) == _multiset(want, columns)
    return same


def _q1_row(row: Mapping[str, Any]) -> str:
    return (
        f"{row['l_returnflag']} {row['l_linestatus']}  count {row['count_order']:>6}  "
        f"sum_qty {row['sum_qty']:>12}  sum_charge {row['sum_charge']:>19}  "
        f"avg_disc {row['avg_disc']}"
    )


def _segment_row(row: Mapping[str, Any]) -> str:
    return (
        f"{row['n_name']:<14} {row['c_mktsegment']:<10}  revenue {row['revenue']:>16}  "
        f"orders {row['orders']:>4}  customers {row['customers']:>4}"
    )


def _changes(capture: dd.Capture, time: int, keys: Sequence[str]) -> list[dict[str, Any]]:
    """The capture's updates at ``time``, by key, retraction before insertion."""
    updates = capture.updates()
    rows = updates.filter(pc.equal(updates["time"], time)).to_pylist()
    return sorted(rows, key=lambda r: (*(r[k] for k in keys), r["diff"]))


@contextmanager
def _data_dir(path: str | None) -> Iterator[Path]:
    """``--data`` as given (kept), else a temporary directory removed at the end."""
    if path is not None:
        yield Path(path)
        return
    with tempfile.TemporaryDirectory(prefix="ddflow-tpch-") as tmp:
        yield Path(tmp)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.tpch_dashboard", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sf", type=float, default=0.01, help="TPC-H scale factor (0.01)")
    parser.add_argument("--rounds", type=int, default=4, help="refresh pairs (default 4)")
    parser.add_argument(
        "--refresh-orders",
        type=int,
        default=None,
        help="orders each refresh function inserts or deletes (default SF * 1500)",
    )
    parser.add_argument(
        "--data",
        default=None,
        help="directory of the tables, in tpch-sf<SF>/ (generated there when missing)",
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.sf <= 0:
        parser.error("--rounds must be at least 1 and --sf positive")
    if args.refresh_orders is None:
        args.refresh_orders = max(1, round(args.sf * 1500))
    if args.refresh_orders < 1:
        parser.error("--refresh-orders must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; prints each round's dashboard changes, then the check. Exit status
    0 when the dashboard matches the recompute, 1 when not, 2 without ``tpchgen-cli``."""
    args = _parse(argv)
    with _data_dir(args.data) as data:
        try:
            tables = load_tables(args.sf, data)
        except RuntimeError as e:
            print(f"tpch_dashboard: {e}", file=sys.stderr)
            return 2
    flow = dd.Dataflow()
    inputs, q1, segments = build(flow, {n: t.schema for n, t in tables.items()})
    rng = random.Random(args.seed)
    next_key = int(pc.max(tables["orders"]["o_orderkey"]).as_py()) + 1
    cpu: list[float] = []  # seconds of CPU to feed each time and bring the views up to date
    for time in range(args.rounds + 1):
        if time:
            refresh = make_refresh(
                rng, tables["orders"], tables["lineitem"], args.refresh_orders, next_key
            )
            next_key += args.refresh_orders
        started = process_time()
        if time:
            for name in ("orders", "lineitem"):
                inputs[name].update_batch(refresh.inserts[name], times=time)
                inputs[name].update_batch(refresh.deletes[name], times=time, diffs=-1)
        else:
            for name, table in tables.items():
                inputs[name].update_batch(table, times=0)
        for session in inputs.values():
            session.advance_to(time + 1)
        flow.run_until(time + 1)
        cpu.append(process_time() - started)
        if time:
            tables = apply(tables, refresh)
        if time == 0:
            print(
                f"load (SF {args.sf:g}): {tables['orders'].num_rows} orders, "
                f"{tables['lineitem'].num_rows} lineitems"
            )
        else:
            print(
                f"round {time}: +{args.refresh_orders} orders "
                f"({refresh.inserts['lineitem'].num_rows} lineitems), -{args.refresh_orders} "
                f"orders ({refresh.deletes['lineitem'].num_rows} lineitems)"
            )
        print("  pricing summary (Q1):")
        for row in _changes(q1, time, ("l_returnflag", "l_linestatus")):
            print(f"    {'+' if row['diff'] > 0 else '-'} {_q1_row(row)}")
        changed = _changes(segments, time, ("n_name", "c_mktsegment"))
        if time == 0:
            top = sorted(changed, key=lambda r: r["revenue"], reverse=True)[:3]
            print(f"  revenue per nation and segment: {len(changed)} rows, the largest:")
            changed = top
        else:
            keys = {(r["n_name"], r["c_mktsegment"]) for r in changed}
            print(f"  revenue per nation and segment, {len(keys)} rows changed:")
        for row in changed:
            print(f"    {'+' if row['diff'] > 0 else '-'} {_segment_row(row)}")
    started = process_time()
    same = matches(q1, segments, args.rounds, tables)
    check = process_time() - started
    print(
        f"CPU: load {cpu[0] * 1e3:.0f} ms, a refresh pair {statistics.median(cpu[1:]) * 1e3:.1f} ms"
        f" (median); the recompute from scratch and comparison {check * 1e3:.0f} ms"
    )
    pairs = f"{args.rounds} refresh pair{'s' if args.rounds > 1 else ''}"
    print(f"dashboard after {pairs} matches a recompute from scratch: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
