"""Input columns that no operator reads are taken as nulls (``ddflow.read_columns``): the
results are those of a run that converts every column, whatever the plan; the unread
columns are known from the plan; an arrangement with a trace handle keeps them all.
"""

from __future__ import annotations

import random
from decimal import Decimal

import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.errors import PlanError
from ddflow.read_columns import READ_ALL_ENV

SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("flag", pa.string()),
        ("price", pa.decimal128(12, 2)),
        ("comment", pa.string()),
        ("day", pa.date32()),
    ]
)


def _batches(seed: int, times: int, rows: int) -> list[tuple[pa.Table, int]]:
    """Random inserts and deletes of earlier rows (a row's comment is unique), at times
    0 .. times - 1; a few rows repeat, some fields are null."""
    rng = random.Random(seed)
    live: list[dict[str, object]] = []
    out = []
    serial = 0
    for t in range(times):
        rows_t: list[dict[str, object]] = []
        diffs: list[int] = []
        for _ in range(rows):
            if live and rng.random() < 0.3:
                row = live.pop(rng.randrange(len(live)))
                rows_t.append(row)
                diffs.append(-1)
                continue
            serial += 1
            row = {
                "k": rng.randrange(6),
                "flag": rng.choice(["A", "N", "R", None]),
                "price": None if rng.random() < 0.1 else Decimal(rng.randrange(10**5)) / 100,
                "comment": f"comment {serial} {'x' * rng.randrange(20)}",
                "day": None,
            }
            live.append(row)
            rows_t.append(row)
            diffs.append(1)
        table = pa.Table.from_pylist(rows_t, schema=SCHEMA).append_column(
            "diff", pa.array(diffs, pa.int64())
        )
        out.append((table, t))
    return out


def _run(batches: list[tuple[pa.Table, int]]) -> dict[str, list[pa.Table]]:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    dims, dims_in = flow.new_input(pa.schema([("k", pa.int64()), ("name", pa.string())]))
    kept = c.filter(dd.col("price") > Decimal("10.00"))
    captures = {
        "group_by": kept.group_by("flag").agg(
            total=dd.sum("price"), n=dd.count(), lo=dd.min("price"), ks=dd.count_distinct("k")
        ),
        "join": kept.join(dims_in, on="k").select("name", "price"),
        "left_join": c.join(dims_in, on="k", how="left").select("k", "name"),
        "anti": c.join(dims_in, on="k", how="anti").select("flag"),
        "select": c.select("k", up=dd.col("flag").str.to_lowercase()),
        "count": c.count(by="flag"),
    }
    caps = {name: coll.capture() for name, coll in captures.items()}
    dims.update_batch(
        pa.table({"k": [0, 1, 2, 3], "name": ["zero", "one", "two", "three"]}), times=0
    )
    for table, t in batches:
        inp.update_batch(table.drop_columns(["diff"]), times=t, diffs=table["diff"])
    end = batches[-1][1] + 1
    inp.advance_to(end)
    dims.advance_to(end)
    flow.run_until(end)
    return {name: [cap.at(t) for t in range(end)] for name, cap in caps.items()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_results_equal_a_run_that_reads_every_column(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = _batches(seed, times=4, rows=60)
    pruned = _run(batches)
    monkeypatch.setenv(READ_ALL_ENV, "1")
    full = _run(batches)
    for name in pruned:
        for t, (a, b) in enumerate(zip(pruned[name], full[name], strict=True)):
            key = a.column_names
            assert a.sort_by([(k, "ascending") for k in key]).equals(
                b.sort_by([(k, "ascending") for k in key])
            ), (name, t)


def test_the_plan_names_the_unread_columns() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    c.filter(dd.col("day").is_null()).group_by("flag").agg(n=dd.count()).capture()
    assert inp.unread_columns == ()  # known once the dataflow starts
    inp.advance_to(1)
    flow.run_until(1)
    assert sorted(inp.unread_columns) == ["comment", "k", "price"]


def test_a_capture_of_the_input_reads_every_column() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    cap = c.capture()
    c.count(by="flag").capture()
    table = pa.Table.from_pylist(
        [{"k": 1, "flag": "A", "price": Decimal("1.50"), "comment": "kept", "day": None}],
        schema=SCHEMA,
    )
    inp.update_batch(table, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert cap.at(0).column("comment").to_pylist() == ["kept"]


def test_a_traced_arrangement_keeps_every_column_for_its_importers() -> None:
    host = dd.Dataflow()
    inp, c = host.new_input(SCHEMA)
    arranged = c.arrange_by_key("k")
    handle = arranged.trace()
    arranged.as_collection().count(by="k").capture()
    table = pa.Table.from_pylist(
        [{"k": 1, "flag": "A", "price": Decimal("1.50"), "comment": "kept", "day": None}],
        schema=SCHEMA,
    )
    inp.update_batch(table, times=0)
    inp.advance_to(1)
    host.run_until(1)
    guest = dd.Dataflow()
    keys_in, keys = guest.new_input(pa.schema([("k", pa.int64())]))
    seen = keys.join(guest.import_trace(handle), on="k").select("comment").capture()
    keys_in.update_at((1,), time=1)
    keys_in.advance_to(2)
    inp.advance_to(2)
    guest.run_until(2)
    assert seen.at(1).column("comment").to_pylist() == ["kept"]


def test_trace_after_the_start_of_an_arrangement_missing_columns_is_refused() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    arranged = c.arrange_by_key("k")
    arranged.as_collection().count(by="k").capture()
    inp.advance_to(1)
    flow.run_until(1)
    with pytest.raises(PlanError, match=r"trace\(\) after the dataflow started.*comment"):
        arranged.trace()
