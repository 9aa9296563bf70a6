"""A PostgreSQL table followed by a dataflow, its aggregate kept in another table.

``python -m ddflow.examples.postgres_mirror --conninfo CONNINFO [--rounds R] [--rows N]``

The example creates the table ``ddflow_example_items`` (id, category, qty ``int``, price
``numeric(10, 2)``) on the server of ``CONNINFO`` (a libpq connection string; empty: libpq's
defaults and ``PG*`` variables) with ``N`` rows, follows it with ``dd.io.postgres.read``
(logical replication: the server needs ``wal_level = logical``) and keeps the view per
category (item count, total quantity, value ``sum(qty * price)``, lowest and highest price)
in the table ``ddflow_example_items_per_category`` with ``dd.io.postgres.write``. Meanwhile a
writer commits ``R`` rounds of changes, one transaction each: new items, updated quantities
and prices, items moved to another category, deleted items, one category emptied and a new
one started. After each round the example waits until the view has taken the transaction
and prints the view's rows that changed (``-`` a row retracted, ``+`` its new value); at the
end it checks the sink table against the same aggregate computed by SQL on the source table.
Both tables are dropped and created again at the start (``--table`` names them).
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

import ddflow as dd

if TYPE_CHECKING:
    import psycopg

__all__ = ["CATEGORIES", "View", "build", "main"]

CATEGORIES = ("books", "games", "garden", "music", "tools")
"""The categories of the initial rows; ``garden`` is emptied halfway and ``toys`` starts."""

_AGGREGATE = (
    "select category, count(*), sum(qty), sum(qty * price), min(price), max(price) "
    "from {table} group by category"
)
"""The view as SQL (the recompute the sink table is checked against)."""

_COLUMNS = ("category", "items", "qty", "value", "min_price", "max_price")

Row = tuple[Any, ...]


class View:
    """The view's rows and its updates not printed yet, kept by a ``dd.subscribe`` callback
    (thread-safe: the run calls it, the writer reads it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: Counter[Row] = Counter()
        self._pending: list[tuple[int, Row]] = []

    def on_change(self, updates: pa.Table) -> None:
        """Takes a batch of the view's updates."""
        with self._lock:
            for row in updates.to_pylist():
                record = tuple(row[c] for c in _COLUMNS)
                self._state[record] += row["diff"]
                self._pending.append((row["diff"], record))
            self._state = +self._state

    def contents(self) -> Counter[Row]:
        """The view's current rows."""
        with self._lock:
            return Counter(self._state)

    def take_changes(self) -> list[tuple[int, Row]]:
        """The updates since the last call, by category, retraction before insertion."""
        with self._lock:
            out, self._pending = self._pending, []
        return sorted(out, key=lambda change: (change[1][0], change[0]))


def build(conninfo: str, table: str) -> tuple[dd.Dataflow, View]:
    """The dataflow: ``table`` followed, its view per category (columns ``category, items,
    qty, value, min_price, max_price``) written to ``<table>_per_category`` and watched."""
    flow = dd.Dataflow()
    items = dd.io.postgres.read(flow, conninfo, table)
    view = items.group_by("category").agg(
        items=dd.count(),
        qty=dd.sum("qty"),
        value=dd.sum(dd.col("qty") * dd.col("price")),
        min_price=dd.min("price"),
        max_price=dd.max("price"),
    )
    dd.io.postgres.write(view, conninfo, f"{table}_per_category", ["category"])
    watched = View()
    dd.subscribe(view, watched.on_change)
    return flow, watched


def _connect(conninfo: str) -> psycopg.Connection[Any]:
    import psycopg

    return psycopg.connect(conninfo, autocommit=True, connect_timeout=10)


def _aggregate(conn: psycopg.Connection[Any], table: str) -> Counter[Row]:
    """The view computed by SQL on the source table."""
    return Counter(conn.execute(_AGGREGATE.format(table=table)).fetchall())


def _sink_rows(conn: psycopg.Connection[Any], table: str) -> Counter[Row]:
    """The sink table's rows (none while it does not exist yet)."""
    exists = conn.execute("select to_regclass(%s) is not null", [table]).fetchone()
    if not exists or not exists[0]:
        return Counter()
    columns = ", ".join(_COLUMNS)
    return Counter(conn.execute(f"select {columns} from {table}").fetchall())


def _create(conninfo: str, table: str, rows: int, rng: random.Random) -> None:
    """(Re)creates the source table with ``rows`` items and drops the sink table."""
    with _connect(conninfo) as conn, conn.transaction():
        conn.execute(f"drop table if exists {table}, {table}_per_category")
        conn.execute(
            f"create table {table} (id int primary key, category text not null, "
            "qty int not null, price numeric(10, 2) not null)"
        )
        with conn.cursor() as cur:
            cur.executemany(
                f"insert into {table} values (%s, %s, %s, %s)",
                [(i, CATEGORIES[i % len(CATEGORIES)], *_qty_price(rng)) for i in range(rows)],
            )


def _qty_price(rng: random.Random) -> tuple[int, Decimal]:
    return rng.randrange(1, 20), Decimal(rng.randrange(100, 10_000)) / 100


def _round(conninfo: str, table: str, rng: random.Random, round_: int, rounds: int) -> str:
    """Round ``round_``'s changes, in one transaction; a line saying what they were."""
    with _connect(conninfo) as conn, conn.transaction():
        ids = [r[0] for r in conn.execute(f"select id from {table} order by id").fetchall()]
        first = (max(ids) + 1) if ids else 0
        count = max(1, len(ids) // 10)
        half = (rounds + 1) // 2
        categories = [c for c in CATEGORIES if c != "garden" or round_ < half]
        if round_ >= half:
            categories.append("toys")
        new = [(first + i, rng.choice(categories), *_qty_price(rng)) for i in range(count)]
        with conn.cursor() as cur:
            cur.executemany(f"insert into {table} values (%s, %s, %s, %s)", new)
        changed = rng.sample(ids, min(len(ids), count))
        moved = 0
        for i in changed:
            qty, price = _qty_price(rng)
            conn.execute(f"update {table} set qty = %s, price = %s where id = %s", [qty, price, i])
            if rng.random() < 0.3:
                moved += 1
                conn.execute(
                    f"update {table} set category = %s where id = %s", [rng.choice(categories), i]
                )
        gone = rng.sample([i for i in ids if i not in changed], min(len(ids) // 20, len(ids)))
        conn.execute(f"delete from {table} where id = any(%s)", [gone])
        text = (
            f"+{len(new)} items, {len(changed)} updated ({moved} moved to another category), "
            f"-{len(gone)} items"
        )
        if round_ == half:
            emptied = conn.execute(f"delete from {table} where category = 'garden'").rowcount
            text += f", garden emptied (-{emptied})"
    return text


def _row(change: tuple[int, Row]) -> str:
    diff, (category, items, qty, value, low, high) = change
    return (
        f"  {'+' if diff > 0 else '-'} {category:<7} items {items:>3}  qty {qty:>4}  "
        f"value {value:>9}  price {low}..{high}"
    )


def _wait(until: Callable[[], bool], timeout: float, ended: threading.Event) -> bool:
    deadline = time.monotonic() + timeout
    while not until():
        if ended.is_set() or time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m ddflow.examples.postgres_mirror", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--conninfo", default="", help="libpq connection string (default: libpq's defaults)"
    )
    parser.add_argument("--rounds", type=int, default=4, help="transactions of changes (4)")
    parser.add_argument("--rows", type=int, default=40, help="rows of the table at first (40)")
    parser.add_argument("--table", default="ddflow_example_items", help="the source table")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait a round")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.rows < 20:
        parser.error("--rounds must be at least 1 and --rows at least 20")
    if not args.table.isidentifier():
        parser.error(f"--table {args.table!r} is not a plain SQL name")
    return args


def _write_rounds(
    conn: psycopg.Connection[Any],
    view: View,
    args: argparse.Namespace,
    rng: random.Random,
    ended: threading.Event,
) -> None:
    """The writer: prints the snapshot's view, then commits each round and prints its
    changes once the view and the sink table have taken it (``conn`` reads both)."""
    sink = f"{args.table}_per_category"

    def caught_up() -> bool:
        want = _aggregate(conn, args.table)
        return view.contents() == want and _sink_rows(conn, sink) == want

    if not _wait(caught_up, args.timeout, ended):
        print("the snapshot did not reach the view in time")
        return
    print(f"snapshot: {args.rows} items; view:")
    print("\n".join(_row(c) for c in view.take_changes()))
    for r in range(1, args.rounds + 1):
        text = _round(args.conninfo, args.table, rng, r, args.rounds)
        if not _wait(caught_up, args.timeout, ended):
            print(f"round {r}: {text}; the view did not catch up in time")
            return
        print(f"round {r}: {text}; view changes:")
        print("\n".join(_row(c) for c in view.take_changes()))


def _follow(flow: dd.Dataflow, view: View, args: argparse.Namespace, rng: random.Random) -> None:
    """Runs ``flow`` in this thread while a writer thread commits the rounds; the writer
    stops the run after the last one (or when one does not arrive within ``--timeout``).
    Re-raises a failure of the writer."""
    failures: list[BaseException] = []
    ended = threading.Event()

    def writer() -> None:
        try:
            with _connect(args.conninfo) as conn:
                _write_rounds(conn, view, args, rng, ended)
        except BaseException as e:
            failures.append(e)
        finally:
            flow.stop()

    thread = threading.Thread(target=writer, name="postgres_mirror writer")
    thread.start()
    try:
        flow.run()
    finally:
        ended.set()
        thread.join()
    if failures:
        raise failures[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the example; exit status 0 when the sink table matches the SQL aggregate, 1 when
    not, 2 without psycopg or a reachable server that supports logical replication."""
    args = _parse(argv)
    try:
        import psycopg
    except ImportError:
        print("postgres_mirror: needs psycopg: pip install 'ddflow[postgres]'", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    try:
        _create(args.conninfo, args.table, args.rows, rng)
        flow, view = build(args.conninfo, args.table)
    except (psycopg.Error, dd.SourceError) as e:
        print(f"postgres_mirror: the server of --conninfo {args.conninfo!r}: {e}", file=sys.stderr)
        return 2
    # A stopped run keeps its replication slot, to go on later; closing the dataflow drops it.
    with flow:
        _follow(flow, view, args, rng)
    sink = f"{args.table}_per_category"
    with _connect(args.conninfo) as conn:
        want, got = _aggregate(conn, args.table), _sink_rows(conn, sink)
    same = want == got
    print(f"{sink} ({sum(got.values())} rows) equals the aggregate by SQL on {args.table}: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
