"""The per-partition function of ``ddflow.examples.spark_kernels`` on Arrow batches, without
Spark: equal to a plain-Python recount for any batching, pair of times and partition of the
orders (``tests/spark/test_kernels_in_udf.py`` runs it inside Spark's ``mapInArrow``)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddflow.examples import spark_kernels as ex

PAGE = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "kernels-in-spark.md"


def _views(batches: list[pa.RecordBatch], first: ex.Time, second: ex.Time) -> ex.Views:
    (out,) = ex.compare_views(batches, first, second)
    assert out.schema.names == ["order_id", "status", "first", "second"]
    rows = out.to_pylist()
    assert [r["order_id"] for r in rows] == sorted(r["order_id"] for r in rows)
    views = {(r["order_id"], r["status"]): (r["first"], r["second"]) for r in rows}
    assert len(views) == len(rows)  # one row per (order, status)
    return views


TIMES = st.tuples(st.integers(0, 14), st.integers(0, 16))


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    first=TIMES,
    second=TIMES,
    chunk=st.integers(1, 80),
    string_type=st.sampled_from([pa.string(), pa.large_string()]),
)
def test_views_match_a_recount(
    seed: int, first: ex.Time, second: ex.Time, chunk: int, string_type: pa.DataType
) -> None:
    """Any two times (comparable or not), any batch size, both Arrow string types."""
    changes = ex.feed(120, 10, seed)
    table = changes.cast(changes.schema.set(1, pa.field("status", string_type)))
    assert _views(table.to_batches(max_chunksize=chunk), first, second) == ex.recount(
        changes, first, second
    )


def test_partitions_hold_their_own_orders() -> None:
    """Split by order as Spark's repartition does: the partitions' views add up."""
    changes = ex.feed(300, 12, 7)
    first, second = (6, 6), (6, 20)
    merged: ex.Views = {}
    for p in range(4):
        mine = changes.filter(pc.equal(pc.bit_wise_and(changes["order_id"], 3), p))
        merged.update(_views(mine.to_batches(max_chunksize=50), first, second))
    assert merged == ex.recount(changes, first, second)
    assert any(a != b for a, b in merged.values())  # some statuses were recorded late


def test_no_batches_give_an_empty_batch() -> None:
    (out,) = ex.compare_views([], (1, 1), (2, 2))
    assert out.num_rows == 0
    assert out.schema.types == [pa.int64(), pa.string(), pa.int64(), pa.int64()]


def test_feed_is_a_valid_history() -> None:
    """Every order's statuses, read at any time, are one status at most (never negative)."""
    changes = ex.feed(200, 8, 3)
    assert changes.num_rows >= 200
    for t in [(d, v) for d in range(0, 14, 3) for v in range(0, 14, 3)]:
        per_order: dict[int, int] = {}
        for (order, _), (count, _) in ex.recount(changes, t, t).items():
            assert count in (0, 1)
            per_order[order] = per_order.get(order, 0) + count
        assert set(per_order.values()) <= {1}


def test_report_lists_late_orders() -> None:
    views: ex.Views = {(1, "paid"): (1, 0), (1, "shipped"): (0, 1), (2, "placed"): (1, 1)}
    lines = ex._report(views, 4, (4, 4), (4, 9))
    assert lines[0] == "statuses of day 4: as published (version 4) and as known now (version 9)"
    assert "1 orders with a status of day 4 recorded late, e.g.:" in lines
    assert lines[-1] == "  order 1: paid -> shipped"


def test_bad_arguments_exit() -> None:
    with pytest.raises(SystemExit):
        ex.main(["--rows", "0"])


def test_the_docs_show_this_function() -> None:
    """The how-to page holds the example's per-partition function verbatim (one definition
    to copy from, and the page's code runs in tests/docs)."""
    assert inspect.getsource(ex.compare_views) in PAGE.read_text(encoding="utf-8")
