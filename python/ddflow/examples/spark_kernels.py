"""Order statuses of a day as published then and as known now: ddflow's kernels called from a
user's own Spark function (``mapInArrow``) on Arrow batches, without a dataflow.

``python -m ddflow.examples.spark_kernels [--rows N] [--days D] [--day DAY] [--partitions P]
[--master local[2]] [--seed S]``

The input is a change feed (CDC) of order statuses, written as Parquet and read by Spark:
rows ``order_id, status, day, version, diff``. A status change of an order is two updates,
``-1`` for the old status and ``+1`` for the new; ``day`` is the business day it takes effect
and ``version`` the day it was recorded, on that day or up to two days later. A time is the
pair ``(day, version)``, ordered as a product: the statuses "of day ``d`` as known at version
``v``" are the sums of the updates at times ``<= (d, v)``.

The job compares two such views of one day: as published that evening, ``(DAY, DAY)``, and
as known now, ``(DAY, latest version)``; orders whose status differs were recorded late.
Partitioned by order, each partition's batches go through :func:`compare_views`: each batch
is consolidated (``ddflow.kernels.consolidate``), the updates that neither view sees are
dropped (``less_equal`` to the ``join`` of the two times), the rest advanced to their
``meet`` (``advance_by``: both views still read exactly) and inserted into a trace, which
merges and compacts them; the trace is then read at each view. The example prints the
statuses counted in both views and the late orders, and checks every count against a
plain-Python recount of the feed (exit status 1 if one differs).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ddflow import kernels as K

__all__ = [
    "FEED_SCHEMA",
    "VIEWS_SCHEMA",
    "Time",
    "Views",
    "feed",
    "compare_views",
    "views_on_spark",
    "recount",
    "main",
]

Time = tuple[int, int]
"""A time ``(day, version)``."""

Views = dict[tuple[int, str], tuple[int, int]]
"""Per ``(order_id, status)``, its count in the first and in the second view (not both 0)."""

FEED_SCHEMA = pa.schema(
    [
        ("order_id", pa.int64()),
        ("status", pa.string()),
        ("day", pa.int64()),
        ("version", pa.int64()),
        ("diff", pa.int64()),
    ]
)
"""The change feed's columns."""

VIEWS_SCHEMA = "order_id long, status string, first long, second long"
"""The Spark schema of :func:`compare_views`' output."""

STEPS = ("placed", "paid", "shipped", "delivered")
"""The statuses an order goes through (or ``cancelled`` after ``placed`` or ``paid``)."""


def feed(rows: int, days: int, seed: int = 0) -> pa.Table:
    """A change feed of at least ``rows`` updates (whole orders), over about ``days`` days."""
    rng = np.random.default_rng(seed)
    out: dict[str, list[Any]] = {name: [] for name in FEED_SCHEMA.names}
    order = 0
    while len(out["diff"]) < rows:
        day = int(rng.integers(0, days))
        version = day
        previous = None
        for step, status in enumerate(STEPS):
            if step in (1, 2) and rng.random() < 0.1:
                status = "cancelled"
            if step:
                day += int(rng.integers(0, 2))  # the next status that day or the day after
            version = max(version, day + int(rng.integers(0, 3)))  # recorded up to 2 days late
            for old_new, diff in ((previous, -1), (status, 1)):
                if old_new is not None:
                    for name, value in zip(
                        FEED_SCHEMA.names, (order, old_new, day, version, diff), strict=True
                    ):
                        out[name].append(value)
            previous = status
            if status == "cancelled":
                break
        order += 1
    return pa.table(out, schema=FEED_SCHEMA)


def compare_views(
    batches: Iterable[pa.RecordBatch], first: Time, second: Time
) -> Iterator[pa.RecordBatch]:
    """The counts of ``(order_id, status)`` at two times, over the feed ``batches`` (all of the
    updates of the orders they hold): one batch of ``order_id, status, first, second``, rows
    where either count is non-zero, sorted by ``order_id``."""
    at = np.array([first, second], dtype=np.int64)
    low = K.meet(at[:1], at[1:])  # both views read exactly from a trace compacted to this
    high = K.join(at[:1], at[1:])  # and see no update at a time not <= this
    trace = K.Trace(["int64", "str"], key_columns=1, time_dims=2)
    trace.advance_compaction(low)
    for batch in batches:
        # The Arrow columns reach the kernel without a copy (order_id and diff as views of
        # their buffers, status as its offsets and bytes); a time is one row of an (n, 2)
        # array, so day and version are interleaved here.
        times = np.column_stack([batch["day"].to_numpy(), batch["version"].to_numpy()])
        cols, times, diffs = K.consolidate(
            [batch["order_id"], batch["status"]], times, batch["diff"]
        )
        seen = K.less_equal(times, high)
        trace.insert([c[seen] for c in cols], K.advance_by(times[seen], low), diffs[seen])
    cols, times, diffs = trace.to_columns()  # merged, consolidated, times advanced to `low`
    in_view = [K.less_equal(times, at[i : i + 1]) for i in range(2)]
    # One consolidation counts both views: view i's updates at time i, then one row per record.
    cols, view, counts = K.consolidate(
        [np.concatenate([c[m] for m in in_view]) for c in cols],
        np.repeat(np.arange(2, dtype=np.int64), [int(m.sum()) for m in in_view]),
        np.concatenate([diffs[m] for m in in_view]),
    )
    order_id, status = cols
    new = np.ones(len(view), dtype=bool)
    new[1:] = (order_id[1:] != order_id[:-1]) | (status[1:] != status[:-1])
    row = np.cumsum(new) - 1
    both = np.zeros((2, int(new.sum())), dtype=np.int64)
    np.add.at(both, (view, row), counts)
    yield pa.record_batch(
        [
            pa.array(order_id[new], pa.int64()),
            pa.array(status[new], pa.string()),
            pa.array(both[0]),
            pa.array(both[1]),
        ],
        names=["order_id", "status", "first", "second"],
    )


def views_on_spark(
    spark: Any, changes: Any, first: Time, second: Time, partitions: int = 2
) -> Views:
    """:func:`compare_views` on the Spark DataFrame ``changes`` (the feed's columns),
    partitioned by order with ``mapInArrow``; collected on the driver."""
    per_partition = partial(compare_views, first=first, second=second)
    rows = (
        changes.repartition(partitions, "order_id")
        .mapInArrow(per_partition, VIEWS_SCHEMA)
        .collect()
    )
    return {(r.order_id, r.status): (r.first, r.second) for r in rows}


def recount(changes: pa.Table, first: Time, second: Time) -> Views:
    """The two views by a plain-Python loop over the feed's rows."""
    counts: dict[tuple[int, str], list[int]] = {}
    for r in changes.to_pylist():
        c = counts.setdefault((r["order_id"], r["status"]), [0, 0])
        for i, (day, version) in enumerate((first, second)):
            if r["day"] <= day and r["version"] <= version:
                c[i] += r["diff"]
    return {k: (a, b) for k, (a, b) in counts.items() if a or b}


def _report(views: Views, day: int, first: Time, second: Time) -> list[str]:
    lines = [
        f"statuses of day {day}: as published (version {first[1]}) and as known now "
        f"(version {second[1]})"
    ]
    for status in sorted({s for _, s in views}):
        a = sum(v[0] for (_, s), v in views.items() if s == status)
        b = sum(v[1] for (_, s), v in views.items() if s == status)
        lines.append(f"  {status:<10} {a:>5} {b:>5}")
    late: dict[int, tuple[list[str], list[str]]] = {}
    for (order, status), (a, b) in sorted(views.items()):
        if a != b:
            was, now = late.setdefault(order, ([], []))
            was.extend([status] * a)
            now.extend([status] * b)
    lines.append(f"{len(late)} orders with a status of day {day} recorded late, e.g.:")
    for order, (was, now) in list(late.items())[:5]:
        lines.append(f"  order {order}: {', '.join(was) or '-'} -> {', '.join(now) or '-'}")
    return lines


def main(argv: Sequence[str] | None = None, spark: Any = None) -> int:
    """Runs the example; returns the exit code. ``spark``: a session to run on (left open);
    by default a session of ``--master`` is started, and stopped at the end."""
    p = argparse.ArgumentParser(prog="python -m ddflow.examples.spark_kernels")
    p.add_argument("--rows", type=int, default=2000, help="change records (at least)")
    p.add_argument("--days", type=int, default=20)
    p.add_argument("--day", type=int, default=None, help="the day to report (default: middle)")
    p.add_argument("--partitions", type=int, default=2)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if args.rows < 1 or args.days < 1 or args.partitions < 1:
        p.error("--rows, --days and --partitions must be at least 1")

    changes = feed(args.rows, args.days, args.seed)
    day = args.days // 2 if args.day is None else args.day
    latest = int(np.max(changes["version"].to_numpy()))
    first, second = (day, day), (day, max(day, latest))
    own = spark is None
    if own:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master(args.master)
            .appName("ddflow spark_kernels")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.adaptive.enabled", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
    master = args.master if own else spark.conf.get("spark.master", "a given session")
    print(
        f"spark_kernels: {changes.num_rows} status changes of "
        f"{len(set(changes['order_id'].to_pylist()))} orders on {master}, "
        f"{args.partitions} partitions",
        flush=True,
    )
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "changes.parquet")
            pq.write_table(changes, path)
            df = spark.read.parquet(path)
            views = views_on_spark(spark, df, first, second, args.partitions)
    finally:
        if own:
            spark.stop()
    for line in _report(views, day, first, second):
        print(line)
    same = views == recount(changes, first, second)
    print(f"both views match a recount: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
