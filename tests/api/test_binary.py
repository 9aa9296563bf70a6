"""``binary`` columns on the embedded engine: Arrow's binary layouts in, ``binary`` out, with
nulls; grouping, joins, ``min``/``max`` and ``<``/``>=`` by the bytes (checked against
Python's own byte order on random values); casts to and from ``str``; literals; clear
refusals.
"""

from __future__ import annotations

import random
from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ddflow as dd

SCHEMA = pa.schema([("b", pa.binary()), ("v", pa.int64())])


def _run(
    table: pa.Table, build: dict[str, dd.Collection] | None = None
) -> tuple[dd.Dataflow, dict[str, pa.Table]]:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    outs = {
        "all": c,
        "groups": c.group_by("b").agg(n=dd.count(), total=dd.sum("v")),
        "extremes": c.group_by("v").agg(lo=dd.min("b"), hi=dd.max("b"), k=dd.count_distinct("b")),
    }
    caps = {name: coll.capture() for name, coll in outs.items()}
    inp.update_batch(table, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    return flow, {name: cap.at(0) for name, cap in caps.items()}


@pytest.mark.parametrize("layout", [pa.binary(), pa.large_binary(), pa.binary_view()])
def test_every_binary_layout_round_trips_with_nulls(layout: pa.DataType) -> None:
    values = [b"", b"\x00", b"\xff\xfe", None, "é".encode(), b"plain"]
    table = pa.table(
        {"b": pa.array(values, pa.binary()).cast(layout), "v": list(range(len(values)))}
    )
    _, out = _run(table)
    got = zip(out["all"]["b"].to_pylist(), out["all"]["v"].to_pylist(), strict=True)
    assert out["all"].schema.field("b").type == pa.binary()
    assert sorted(got, key=lambda r: r[1]) == list(zip(values, range(len(values)), strict=True))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), st.binary(max_size=6)), st.integers(0, 3)),
        min_size=1,
        max_size=40,
    )
)
def test_grouping_and_extremes_follow_byte_order(rows: list[tuple[bytes | None, int]]) -> None:
    table = pa.table({"b": pa.array([b for b, _ in rows], pa.binary()), "v": [v for _, v in rows]})
    _, out = _run(table)
    counts = Counter(b for b, _ in rows)
    got = dict(zip(out["groups"]["b"].to_pylist(), out["groups"]["n"].to_pylist(), strict=True))
    assert got == dict(counts)
    by_v: dict[int, list[bytes]] = {}
    for b, v in rows:
        by_v.setdefault(v, [])
        if b is not None:
            by_v[v].append(b)
    ext = out["extremes"].to_pylist()
    assert {r["v"] for r in ext} == set(by_v)
    for r in ext:
        present = by_v[r["v"]]
        assert r["lo"] == (min(present) if present else None)
        assert r["hi"] == (max(present) if present else None)
        assert r["k"] == len(set(present))


def test_joins_match_equal_bytes_only() -> None:
    flow = dd.Dataflow()
    left_in, left = flow.new_input(SCHEMA)
    right_in, right = flow.new_input(pa.schema([("b", pa.binary()), ("w", pa.string())]))
    out = left.join(right, on="b").capture()
    left_in.update_batch(
        pa.table({"b": pa.array([b"\xc3\xa9", b"e", None], pa.binary()), "v": [1, 2, 3]}),
        times=0,
    )
    right_in.update_batch(
        pa.table({"b": pa.array(["é".encode(), b"E", None], pa.binary()), "w": ["x", "y", "z"]}),
        times=0,
    )
    left_in.advance_to(1)
    right_in.advance_to(1)
    flow.run_until(1)
    assert out.at(0).select(["b", "v", "w"]).to_pylist() == [{"b": b"\xc3\xa9", "v": 1, "w": "x"}]


def test_casts_literals_and_single_updates() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    text = c.select("v", s=dd.col("b").cast("str", strict=False)).capture()
    back = c.select("v", r=dd.col("b").cast("str", strict=False).cast("binary")).capture()
    hits = c.filter(dd.col("b").is_in([b"\x00\x01", b"ok"]) | (dd.col("b") == b"\xff")).capture()
    inp.update_at((b"ok", 1), time=0)
    inp.update_at((b"\xff", 2), time=0)
    inp.update_at((b"\x00\x01", 3), time=0)
    inp.update_at((None, 4), time=0)
    inp.update_at(("h\u00e9".encode(), 5), time=0)
    inp.advance_to(1)
    flow.run_until(1)
    rows = {r["v"]: r["s"] for r in text.at(0).to_pylist()}
    assert rows == {1: "ok", 2: None, 3: "\x00\x01", 4: None, 5: "h\u00e9"}
    assert {r["v"]: r["r"] for r in back.at(0).to_pylist()}[5] == "h\u00e9".encode()
    assert sorted(hits.at(0)["v"].to_pylist()) == [1, 2, 3]


def test_a_strict_cast_of_bytes_that_are_not_text_is_an_error_update() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    c.select(s=dd.col("b").cast("str")).capture()
    inp.update_batch(pa.table({"b": pa.array([b"\xff\x00"], pa.binary()), "v": [1]}), times=0)
    inp.advance_to(1)
    flow.run_until(1)
    errors = flow.errors().to_pylist()
    assert len(errors) == 1
    assert "b'\\xff\\x00' is not UTF-8 text" in errors[0]["message"]


def test_string_functions_on_binary_are_error_updates() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    c.select(n=dd.col("b").str.len_chars()).capture()
    inp.update_at((b"x", 1), time=0)
    inp.advance_to(1)
    flow.run_until(1)
    messages = [e["message"] for e in flow.errors().to_pylist()]
    assert messages == [
        'type error: str.len_chars needs a str operand, got binary in col("b").str.len_chars()'
    ]


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.binary(max_size=4)), min_size=1, max_size=30),
    st.binary(max_size=4),
)
def test_ordering_comparisons_follow_byte_order(values: list[bytes | None], pivot: bytes) -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    out = c.select(
        "v",
        lt=dd.col("b") < pivot,
        ge=dd.col("b") >= dd.lit(pivot),
        gt=dd.lit(pivot) > dd.col("b"),
    ).capture()
    inp.update_batch(
        pa.table({"b": pa.array(values, pa.binary()), "v": list(range(len(values)))}), times=0
    )
    inp.advance_to(1)
    flow.run_until(1)
    got = {r["v"]: (r["lt"], r["ge"], r["gt"]) for r in out.at(0).to_pylist()}
    for i, b in enumerate(values):
        want = (None, None, None) if b is None else (b < pivot, b >= pivot, pivot > b)
        assert got[i] == want, (b, pivot)


def test_a_column_of_random_bytes_survives_many_batches() -> None:
    rng = random.Random(7)
    flow = dd.Dataflow()
    inp, c = flow.new_input(SCHEMA)
    cap = c.capture()
    live: Counter[bytes] = Counter()
    for t in range(5):
        values = [bytes(rng.randrange(256) for _ in range(rng.randrange(8))) for _ in range(50)]
        live.update(values)
        inp.update_batch(pa.table({"b": pa.array(values, pa.binary()), "v": [0] * 50}), times=t)
    inp.advance_to(5)
    flow.run_until(5)
    got: Counter[bytes] = Counter()
    for r in cap.updates().to_pylist():
        got[r["b"]] += r["diff"]
    assert +got == +live
