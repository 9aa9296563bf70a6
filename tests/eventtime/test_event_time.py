"""Watermarks, late records and windows against a recompute from scratch at every time.

Random event streams (out of order in event time, late records, retractions of earlier
records, null event times) are fed in random batchings, on 1 and 2 workers; at every
logical time the watermarked collection, ``flow.late()``, tumbling, hopping and session
windows (``emit="updates"`` and ``"final"``) are compared with :mod:`.oracle`.
"""

from __future__ import annotations

import datetime
import random
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ddflow as dd

from . import oracle
from .oracle import Record, Update

T = 12
LATENESS = 4
EPOCH = datetime.datetime(2024, 1, 1)


def random_history(rng: random.Random, n: int) -> list[Update]:
    """Updates at times 0..T-1 whose event times drift upwards with noise (some far behind:
    late), keys of a few letters, some retractions of records inserted earlier."""
    updates: list[Update] = []
    live: list[tuple[Record, int]] = []
    for _ in range(n):
        t = rng.randrange(T)
        if live and rng.random() < 0.15:
            r, t0 = live.pop(rng.randrange(len(live)))
            updates.append((r, max(t, t0 + 1) if t0 + 1 < T else t0, -1))
            continue
        ts: int | None = 3 * t + rng.randrange(-8, 6)
        if rng.random() < 0.03:
            ts = None
        r = (ts, rng.choice("ab") if rng.random() < 0.95 else None, rng.randrange(-5, 20))
        updates.append((r, t, 1))
        live.append((r, t))
    return updates


def feed(
    session: dd.InputSession,
    flow: dd.Dataflow,
    updates: list[Update],
    rng: random.Random,
    convert: Any = None,
) -> None:
    """Feeds ``updates`` in random batches: each batch holds the times up to a random cut,
    pushed in random order, then the input advances and the engine runs."""
    cuts = sorted(rng.sample(range(1, T), rng.randrange(0, T - 1))) + [T]
    start = 0
    for cut in cuts:
        batch = [u for u in updates if start <= u[1] < cut]
        rng.shuffle(batch)
        for r, t, d in batch:
            session.update_at(convert(r) if convert else r, t, d)
        session.advance_to(cut)
        flow.run_until(cut)
        start = cut


def rows_at(cap: dd.Capture, t: int, convert: Any = None) -> Counter[tuple[object, ...]]:
    """The capture's collection at ``t`` as a multiset of rows (each row ``count`` times)."""
    table = cap.at(t).to_pylist()
    out: Counter[tuple[object, ...]] = Counter()
    for row in table:
        diff = row.pop("diff")
        values = tuple(row.values())
        out[convert(values) if convert else values] += diff
    return out


def counted(rows: list[tuple[object, ...]]) -> Counter[tuple[object, ...]]:
    return Counter(rows)


def build(flow: dd.Dataflow, c: dd.Collection, lateness: object, spans: dict[str, Any]) -> dict:
    """The captures of every operator under test."""
    w = c.with_watermark("ts", lateness=lateness)
    aggs = {"n": dd.count(), "s": dd.sum("x"), "mx": dd.max("x")}
    caps = {"on_time": w.capture(), "late": flow.late().capture()}
    for emit in ("updates", "final"):
        caps[f"tumbling_{emit}"] = (
            w.group_by_dynamic("ts", every=spans["every"], group_by="k", emit=emit)
            .agg(**aggs)
            .capture()
        )
        caps[f"hopping_{emit}"] = (
            w.group_by_dynamic(
                "ts",
                every=spans["every"],
                period=spans["period"],
                offset=spans["offset"],
                emit=emit,
            )
            .agg(**aggs)
            .capture()
        )
        caps[f"session_{emit}"] = (
            w.group_by_session("ts", gap=spans["gap"], group_by="k", emit=emit)
            .agg(**aggs)
            .capture()
        )
    return caps


def check(caps: dict, updates: list[Update], lateness: int, conv: Any = None) -> None:
    """Every capture at every time against the oracle."""
    sp = oracle.split(updates, lateness, range(T))
    late_rows = {t: oracle.state(sp.late, t) for t in range(T)}
    for t in range(T):
        on = oracle.state(sp.on_time, t)
        assert rows_at(caps["on_time"], t, conv) == Counter(on), f"on_time at {t}"
        want_late = Counter({(*r, "w"): c for r, c in late_rows[t].items()})
        got_late = Counter({k[:3] + ("w",): v for k, v in rows_at(caps["late"], t, conv).items()})
        assert got_late == want_late, f"late at {t}"
        wins = {
            "tumbling": oracle.dynamic(on, 5, 5, 0, keyed=True),
            "hopping": oracle.dynamic(on, 5, 12, 2, keyed=False),
            "session": oracle.sessions(on, 3, keyed=True),
        }
        for name, rows in wins.items():
            got = rows_at(caps[f"{name}_updates"], t, conv)
            assert got == counted(rows), f"{name} updates at {t}"
            got = rows_at(caps[f"{name}_final"], t, conv)
            assert got == counted(oracle.closed(rows, sp.after[t])), f"{name} final at {t}"
    for name in ("tumbling", "hopping", "session"):
        diffs = caps[f"{name}_final"].updates().column("diff").to_pylist()
        assert all(d == 1 for d in diffs), f"{name} final retracted a row"


INT_SPANS = {"every": 5, "period": 12, "offset": 2, "gap": 3}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("seed", range(15))
def test_int_event_times_match_the_oracle_whatever_the_batching(workers: int, seed: int) -> None:
    rng = random.Random(seed)
    updates = random_history(rng, rng.randrange(20, 120))
    for _ in range(2):
        flow = dd.Dataflow(workers=workers)
        session, c = flow.new_input({"ts": "int64", "k": "str", "x": "int64"})
        caps = build(flow, c, LATENESS, INT_SPANS)
        feed(session, flow, updates, rng)
        check(caps, updates, LATENESS)


def _to_ts(r: Record) -> tuple[object, ...]:
    ts = None if r[0] is None else EPOCH + datetime.timedelta(seconds=r[0])
    return (ts, r[1], r[2])


def _from_ts(row: tuple[object, ...]) -> tuple[object, ...]:
    def back(v: object) -> object:
        if isinstance(v, datetime.datetime):
            return int((v - EPOCH).total_seconds())
        return v

    return tuple(back(v) for v in row)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("unit", ["s", "ms", "us"])
def test_timestamp_event_times_match_the_oracle(unit: str) -> None:
    rng = random.Random(f"ts-{unit}")
    updates = random_history(rng, 70)
    flow = dd.Dataflow(workers=2)
    session, c = flow.new_input({"ts": f"timestamp[{unit}]", "k": "str", "x": "int64"})
    spans = {"every": "5s", "period": datetime.timedelta(seconds=12), "offset": "2s", "gap": "3s"}
    caps = build(flow, c, datetime.timedelta(seconds=LATENESS), spans)
    feed(session, flow, updates, rng, convert=_to_ts)
    check(caps, updates, LATENESS, conv=_from_ts)


def test_late_records_carry_the_watermark_name_and_never_raise() -> None:
    flow = dd.Dataflow()
    session, c = flow.new_input({"ts": "int64", "x": "int64"})
    w = c.with_watermark("ts", lateness=2, name="clicks")
    late = flow.late().capture()
    n_late = flow.late("clicks").count(by="operator").capture()
    out = w.capture()
    for t, ts in enumerate([10, 11, 7, 9, 8, 30]):
        session.update_at((ts, t), t)
    session.advance_to(6)
    flow.run_until(6)
    assert [r["ts"] for r in out.at(5).to_pylist()] == [9, 10, 11, 30]
    assert [(r["ts"], r["operator"]) for r in late.at(5).to_pylist()] == [
        (7, "clicks"),
        (8, "clicks"),
    ]
    assert n_late.at(5).to_pylist() == [{"operator": "clicks", "count": 2, "diff": 1}]


def test_records_at_one_time_never_make_each_other_late() -> None:
    flow = dd.Dataflow()
    session, c = flow.new_input({"ts": "int64"})
    out = c.with_watermark("ts", lateness=0).capture()
    for ts in (100, 1, 50):
        session.update_at((ts,), 0)
    session.update_at((2,), 1)
    session.advance_to(2)
    flow.run_until(2)
    assert sorted(r["ts"] for r in out.at(1).to_pylist()) == [1, 50, 100]
    assert flow.late().capture  # the late collection exists before and after running


def test_bad_arguments_are_refused_while_building() -> None:
    flow = dd.Dataflow()
    _, c = flow.new_input({"ts": "int64", "k": "str"})
    with pytest.raises(dd.PlanError, match="event-time column 'nope' not found"):
        c.with_watermark("nope", lateness=1)
    with pytest.raises(dd.PlanError, match="calendar unit 'mo'"):
        c.with_watermark("ts", lateness="1mo")
    with pytest.raises(dd.PlanError, match="not a duration string"):
        c.with_watermark("ts", lateness="5 minutes")
    with pytest.raises(dd.PlanError, match="non-negative"):
        c.with_watermark("ts", lateness=-1)
    with pytest.raises(dd.PlanError, match="every must be positive"):
        c.group_by_dynamic("ts", every=0)
    with pytest.raises(dd.PlanError, match='emit="final" closes windows by a watermark'):
        c.group_by_dynamic("ts", every=5, emit="final")
    with pytest.raises(dd.PlanError, match="has no with_watermark"):
        flow.late()
    w = c.with_watermark("ts", lateness=1)
    with pytest.raises(dd.PlanError, match="both be durations"):
        w.group_by_dynamic("ts", every="5s", emit="final").agg(n=dd.count())
    with pytest.raises(dd.PlanError, match="group_by column 'z' not found"):
        w.group_by_session("ts", gap=2, group_by="z")
    with pytest.raises(dd.PlanError, match="int times"):
        flow2 = dd.Dataflow(time_dims=2)
        _, c2 = flow2.new_input({"ts": "int64"})
        c2.with_watermark("ts", lateness=1)


def test_date_columns_take_whole_day_windows() -> None:
    flow = dd.Dataflow()
    session, c = flow.new_input({"d": "date32", "x": "int64"})
    w = c.with_watermark("d", lateness="1d")
    weekly = w.group_by_dynamic("d", every="7d", emit="final").agg(total=dd.sum("x")).capture()
    day = datetime.date(2024, 1, 1)  # a Monday; 1970-01-01 was a Thursday
    for t, (offset, x) in enumerate([(0, 1), (3, 2), (9, 4), (1, 8), (20, 16)]):
        session.update_at((day + datetime.timedelta(days=offset), x), t)
    session.advance_to(5)
    flow.run_until(5)
    rows = weekly.updates().to_pylist()
    first = datetime.date(2023, 12, 28)
    assert rows == [
        {
            "window_start": first,
            "window_end": first + datetime.timedelta(days=7),
            "total": 1,
            "time": 2,
            "diff": 1,
        },
        {
            "window_start": first + datetime.timedelta(days=7),
            "window_end": first + datetime.timedelta(days=14),
            "total": 6,
            "time": 4,
            "diff": 1,
        },
    ]


def test_a_bridging_record_merges_two_sessions_and_its_retraction_splits_them() -> None:
    flow = dd.Dataflow(workers=2)
    session, c = flow.new_input({"ts": "int64", "x": "int64"})
    out = c.group_by_session("ts", gap=5).agg(n=dd.count(), s=dd.sum("x")).capture()
    session.update_at((0, 1), 0)
    session.update_at((8, 2), 0)
    session.update_at((4, 4), 1)  # 0 .. 4 .. 8: each step below the gap
    session.update_at((4, 4), 2, -1)
    session.advance_to(3)
    flow.run_until(3)
    rows = [(r["window_start"], r["window_end"], r["n"], r["s"]) for r in out.at(0).to_pylist()]
    assert rows == [(0, 5, 1, 1), (8, 13, 1, 2)]
    rows = [(r["window_start"], r["window_end"], r["n"], r["s"]) for r in out.at(1).to_pylist()]
    assert rows == [(0, 13, 3, 7)]
    assert out.at(2).to_pylist() == out.at(0).to_pylist()


def test_several_watermarks_share_flow_late_by_name() -> None:
    flow = dd.Dataflow()
    a_in, a = flow.new_input({"ts": "int64", "x": "int64"})
    b_in, b = flow.new_input({"ts": "int64", "x": "int64"})
    c_in, c = flow.new_input({"other": "int64"})
    a.with_watermark("ts", 0, name="a").capture()
    b.with_watermark("ts", 0, name="b").capture()
    both = flow.late().capture()
    only_b = flow.late("b").capture()
    c.with_watermark("other", 0, name="c")
    with pytest.raises(dd.PlanError, match="different columns; ask for one"):
        flow.late()
    with pytest.raises(dd.PlanError, match="no watermark named 'z'"):
        flow.late("z")
    for session, late_ts in ((a_in, 1), (b_in, 2)):
        session.update_at((10, 0), 0)
        session.update_at((late_ts, 0), 1)
        session.advance_to(2)
    c_in.advance_to(2)
    flow.run_until(2)
    assert [(r["ts"], r["operator"]) for r in both.at(1).to_pylist()] == [(1, "a"), (2, "b")]
    assert [(r["ts"], r["operator"]) for r in only_b.at(1).to_pylist()] == [(2, "b")]


def test_zoned_timestamps_and_expression_aggregates() -> None:
    flow = dd.Dataflow(workers=2)
    session, c = flow.new_input({"ts": "timestamp[ms, tz=Europe/Paris]", "x": "int64"})
    w = c.with_watermark("ts", lateness=datetime.timedelta(minutes=30))
    hourly = w.group_by_dynamic("ts", every="1h", period="2h", emit="final").agg(
        dd.sum(dd.col("x") * 2).alias("double"), n=dd.count()
    )
    out = hourly.capture()
    utc = datetime.UTC
    start = datetime.datetime(2024, 3, 1, 10, 15, tzinfo=utc)
    for t, (minutes, x) in enumerate([(0, 1), (50, 2), (120, 4), (400, 8)]):
        session.update_at((start + datetime.timedelta(minutes=minutes), x), t)
    session.advance_to(4)
    flow.run_until(4)
    got = [
        (r["window_start"].astimezone(utc).hour, r["window_end"].astimezone(utc).hour, r["double"])
        for r in out.updates().to_pylist()
    ]
    # 12:15 brings the watermark to 11:45: [9, 11) UTC is final, holding 10:15 only; 16:55
    # brings it to 16:25: [10, 12), [11, 13) and [12, 14) are final (nothing in 13..16).
    assert got == [(9, 11, 2), (10, 12, 6), (11, 13, 12), (12, 14, 8)]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("bucket_gaps", [1, 2, 5])
@pytest.mark.parametrize("seed", range(4))
def test_sessions_across_many_buckets(
    monkeypatch: pytest.MonkeyPatch, bucket_gaps: int, seed: int
) -> None:
    # Sessions are computed per bucket of event time first, then merged across buckets:
    # narrow buckets make most sessions cross several.
    monkeypatch.setattr(dd.windows, "SESSION_BUCKET_GAPS", bucket_gaps)
    rng = random.Random(f"buckets-{seed}")
    updates = random_history(rng, rng.randrange(30, 120))
    flow = dd.Dataflow(workers=1 + seed % 2)
    session, c = flow.new_input({"ts": "int64", "k": "str", "x": "int64"})
    aggs = {"n": dd.count(), "s": dd.sum("x"), "mx": dd.max("x")}
    out = c.group_by_session("ts", gap=3, group_by="k").agg(**aggs).capture()
    feed(session, flow, updates, rng)
    for t in range(T):
        want = oracle.sessions(oracle.state(updates, t), 3, keyed=True)
        assert rows_at(out, t) == counted(want), f"sessions at {t}"


@pytest.mark.parametrize("workers", [1, 2])
def test_final_windows_drop_the_state_of_closed_windows(workers: int) -> None:
    flow = dd.Dataflow(workers=workers)
    session, c = flow.new_input({"ts": "int64", "k": "str", "x": "int64"})
    w = c.with_watermark("ts", lateness=5)
    final = w.group_by_dynamic("ts", every=10, group_by="k", emit="final").agg(n=dd.count())
    updates = w.group_by_dynamic("ts", every=10, group_by="k").agg(n=dd.count())
    final_cap, updates_cap = final.capture(), updates.capture()
    for t in range(100):
        for j in range(20):
            session.update_at((t * 10 + j % 10, f"k{j % 3}", j), t)
        session.advance_to(t + 1)
        flow.run_until(t + 1)
    # 99 windows of 3 keys are final; the last is open (watermark 994 < its end 1000).
    rows = final_cap.updates().to_pylist()
    assert all(r.pop("diff") == 1 for r in rows)
    got = sorted((r["window_start"], r["k"], r["n"]) for r in rows)
    want = [(r["window_start"], r["k"], r["n"]) for r in updates_cap.at(99).to_pylist()]
    assert got == sorted(r for r in want if r[0] < 990)
    arranged = sorted(
        (m.node, m.arrangement_records or 0) for m in flow.metrics().operators if m.op == "arrange"
    )
    (_, final_held), (_, updates_held) = arranged  # built in this order
    assert final_held <= 3 * 10  # the open window's records: closed ones expired
    assert updates_held >= 100 * 3  # emit="updates" keeps every window


@pytest.mark.parametrize("workers", [1, 2])
def test_a_closed_windows_rows_leave_the_arrangement_the_tick_after_it_closes(
    workers: int,
) -> None:
    """A window's close retracts all its rows from the window arrangement within a tick (a
    timed source: the watermark passes the window's end inside the tick); the next tick
    merges the retractions with the rows they cancel, so the arrangement holds the open
    window's rows and one tick's more, never a closed window's as well (they stayed until
    a quarter of the trace was inserted again: half a window here)."""
    flow = dd.Dataflow(workers=workers)
    session, c = flow.new_input({"ts": "int64", "u": "int64"})
    w = c.with_watermark("ts", lateness=0)
    span, per_tick = 10, 100  # a window spans 10 ticks of 100 distinct rows
    final = w.group_by_dynamic("ts", every=span * 1000, emit="final")
    out = final.agg(users=dd.count_distinct("u")).capture()
    (arrange,) = [n["id"] for n in flow.builder.plan.nodes if n["op"] == "arrange"]
    held = []
    base = 1 << 40  # values far above string ids (the string collector marks conservatively)
    for t in range(5 * span):
        ts = np.arange(t * 1000, (t + 1) * 1000, 1000 // per_tick, dtype=np.int64)
        u = base + t * per_tick + np.arange(per_tick, dtype=np.int64)
        # Each record at its event time (a timed source): a window closes within a tick.
        session.update_batch(pa.table({"ts": ts, "u": u}), times=ts)
        session.advance_to((t + 1) * 1000)
        flow.run_until((t + 1) * 1000)
        held.append(flow.metrics().operator(arrange).arrangement_records or 0)
    assert out.updates().num_rows == 4  # four windows closed, each once
    for t, n in enumerate(held):
        if t % span == 0 and t > 0:  # a close: the closed window, its retractions, a tick
            assert n <= (2 * span + 1) * per_tick, (t, held)
        else:  # the open window's rows, nothing else
            assert n == (t % span + 1) * per_tick, (t, held)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_expiry_holds_each_read_row_once_until_its_window_closes(workers: int) -> None:
    """An open window's records wait in its expiry until it closes. Held without the event
    time and the columns no aggregate reads, records that differ only there are held once
    with their count, and released when the window closes (the test above checks that
    the retraction empties the window's reduce)."""
    flow = dd.Dataflow(workers=workers)
    session, c = flow.new_input({"ts": "int64", "k": "str", "x": "int64", "note": "str"})
    w = c.with_watermark("ts", lateness=0)
    hourly = w.group_by_dynamic("ts", every=1 << 20, group_by="k", emit="final")
    final = hourly.agg(n=dd.count(), s=dd.sum("x"), hi=dd.max(dd.col("x") * 2)).capture()
    n, base = 1 << 14, 1 << 40  # event times far above string ids (marked conservatively)
    rows = [(base + i, "ab"[i % 2], i % 3, f"note {i}") for i in range(n)]
    for i, row in enumerate(rows):  # every record at a time of its own
        session.update_at(row, i)
    session.advance_to(n)
    flow.run_until(n)
    ops = flow.metrics().operators
    (expire,) = [o for o in ops if o.op == "watermark" and o.label.endswith("(expire)")]
    # Six distinct (k, x) in the open window: a few hundred bytes, not 2^14 rows of words.
    assert expire.heap_bytes < 4096
    assert final.updates().num_rows == 0  # the window is open
    session.update_at((base + (1 << 21), "a", 0, "closes"), n)  # the watermark passes its end
    session.advance_to(n + 2)
    flow.run_until(n + 2)
    want = Counter(k for _, k, _, _ in rows)
    got = {
        r["k"]: (r["n"], r["s"], r["hi"], r["window_start"], r["diff"])
        for r in final.updates().to_pylist()
    }
    sums = {k: sum(x for _, kk, x, _ in rows if kk == k) for k in "ab"}
    assert got == {k: (want[k], sums[k], 4, base, 1) for k in "ab"}
    # Released; it holds the new window's one record (in room for 64).
    assert flow.metrics().operator(expire.node).heap_bytes < 4096


def test_a_duration_lateness_on_an_integer_column_is_an_error_update() -> None:
    flow = dd.Dataflow()
    session, c = flow.new_input({"ts": "int64"})
    out = c.with_watermark("ts", "5m").capture()
    session.update_at((1,), 0)
    session.advance_to(1)
    flow.run_until(1)
    with pytest.raises(dd.DataError, match=r"with_watermark@.*dt.epoch needs a date32 or"):
        out.at(0)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("5m", 300), ("1h30m", 5400), ("2d", 172_800), ("1w1d", 691_200)],
)
def test_duration_strings(text: str, seconds: int) -> None:
    span = dd.event_time.parse_span(text, "lateness", "test")
    assert span == dd.event_time.Span(seconds * 10**9, True)
    assert span == dd.event_time.parse_span(datetime.timedelta(seconds=seconds), "x", "test")
