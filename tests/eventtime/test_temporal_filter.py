"""Temporal filters (``dd.now()``) against a recompute from scratch at every logical time.

For every time ``t`` the oracle takes the input accumulated at ``t`` and keeps the rows whose
predicate holds with ``now = t``; the output accumulated at ``t`` must equal it. Inputs are
random (hypothesis): rows with bounds that may be null, retractions, several predicate
shapes (strict and not, ``now()`` on either side, an ordinary conjunct beside), random
batchings, 1 and 2 workers. A sliding-window count over the filter is checked the same way,
and so are timestamp bounds (milliseconds, compared exactly), the refusals, and that the
operator holds nothing once the frontier has passed every interval's end.
"""

from __future__ import annotations

import datetime
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ddflow as dd
from ddflow.spark.driver.ops import SPARK_OPS

T = 12
"""Input times are ``0..T-1``; bounds reach past them, and outputs are read up to ``END``."""
END = 24

Row = tuple[int, int | None, int | None]
"""``(k, lo, hi)``."""
Update = tuple[Row, int, int]

# Predicate shapes: the dd expression and the same condition in Python (``None`` bound:
# the comparison is not true, so the row never holds).
SHAPES: dict[str, tuple[Callable[[], dd.Expr], Callable[[Row, int], bool]]] = {
    "lo <= now < hi": (
        lambda: (dd.col("lo") <= dd.now()) & (dd.now() < dd.col("hi")),
        lambda r, n: r[1] is not None and r[2] is not None and r[1] <= n < r[2],
    ),
    "now > lo & hi >= now": (
        lambda: (dd.now() > dd.col("lo")) & (dd.col("hi") >= dd.now()),
        lambda r, n: r[1] is not None and r[2] is not None and r[1] < n <= r[2],
    ),
    "now < hi + 2 (no lower bound)": (
        lambda: dd.now() < dd.col("hi") + 2,
        lambda r, n: r[2] is not None and n < r[2] + 2,
    ),
    "now >= lo (no upper bound)": (
        lambda: dd.now() >= dd.col("lo"),
        lambda r, n: r[1] is not None and n >= r[1],
    ),
    "two lower bounds, k even": (
        lambda: (dd.col("lo") <= dd.now())
        & (dd.col("k") % 2 == 0)
        & (dd.now() >= dd.col("k"))
        & (dd.now() <= dd.col("hi")),
        lambda r, n: r[1] is not None
        and r[2] is not None
        and r[0] % 2 == 0
        and max(r[1], r[0]) <= n <= r[2],
    ),
}


def random_history(rng: random.Random, n: int) -> list[Update]:
    """Rows with bounds around ``0..END`` (some null, some empty intervals), inserted at
    random times; some retracted later (or at the same time)."""
    updates: list[Update] = []
    live: list[tuple[Row, int]] = []
    for _ in range(n):
        t = rng.randrange(T)
        if live and rng.random() < 0.2:
            r, t0 = live.pop(rng.randrange(len(live)))
            updates.append((r, rng.randrange(t0, T), -1))
            continue
        lo: int | None = rng.randrange(-3, END - 4)
        hi: int | None = lo + rng.randrange(-2, 10)  # type: ignore[operator]
        if rng.random() < 0.05:
            lo = None
        if rng.random() < 0.05:
            hi = None
        r = (rng.randrange(6), lo, hi)
        updates.append((r, t, 1))
        live.append((r, t))
    return updates


def feed(
    session: dd.InputSession, flow: dd.Dataflow, updates: list[Update], rng: random.Random
) -> None:
    """Random batches: the times below each random cut, shuffled; then the input advances and
    the engine runs. Finally the input advances to ``END``."""
    cuts = sorted(rng.sample(range(1, T), rng.randrange(0, T - 1))) + [T]
    start = 0
    for cut in cuts:
        batch = [u for u in updates if start <= u[1] < cut]
        rng.shuffle(batch)
        for r, t, d in batch:
            session.update_at(r, t, d)
        session.advance_to(cut)
        flow.run_until(cut)
        start = cut
    for stop in sorted({rng.randrange(T, END), END}):
        session.advance_to(stop)
        flow.run_until(stop)


def accumulated(updates: list[Update], t: int) -> Counter[Row]:
    """The input collection at ``t``."""
    acc: Counter[Row] = Counter()
    for r, time, d in updates:
        if time <= t:
            acc[r] += d
    return acc


def rows_at(cap: dd.Capture, t: int) -> Counter[tuple[Any, ...]]:
    """The capture's collection at ``t`` as a multiset (zero counts dropped)."""
    out: Counter[tuple[Any, ...]] = Counter()
    for row in cap.at(t).to_pylist():
        diff = row.pop("diff")
        out[tuple(row.values())] += diff
    return +out if all(v >= 0 for v in out.values()) else out


def new_input(workers: int) -> tuple[dd.Dataflow, dd.InputSession, dd.Collection]:
    flow = dd.Dataflow(workers=workers)
    session, coll = flow.new_input({"k": "int64", "lo": "int64", "hi": "int64"})
    return flow, session, coll


@pytest.mark.timeout(300)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(0, 40),
    shape=st.sampled_from(sorted(SHAPES)),
    workers=st.sampled_from([1, 2]),
)
def test_filter_matches_a_recompute_at_every_time(
    seed: int, n: int, shape: str, workers: int
) -> None:
    rng = random.Random(seed)
    updates = random_history(rng, n)
    predicate, holds = SHAPES[shape]
    flow, session, coll = new_input(workers)
    cap = coll.filter(predicate()).capture()
    feed(session, flow, updates, rng)
    for t in range(END):
        want = Counter({r: c for r, c in accumulated(updates, t).items() if c and holds(r, t)})
        got = rows_at(cap, t)
        assert {k: v for k, v in got.items() if v} == want, f"{shape} at {t}"


@pytest.mark.timeout(300)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 40), width=st.integers(1, 6))
def test_sliding_window_count_matches_a_recompute(seed: int, n: int, width: int) -> None:
    rng = random.Random(seed)
    # lo is the event time; the window keeps a row while lo <= now < lo + width.
    updates = random_history(rng, n)
    flow, session, coll = new_input(1)
    window = coll.filter((dd.col("lo") <= dd.now()) & (dd.col("lo") + width > dd.now()))
    cap = window.group_by("k").agg(n=dd.count()).capture()
    feed(session, flow, updates, rng)
    for t in range(END):
        per_key: Counter[tuple[Any, ...]] = Counter()
        for r, c in accumulated(updates, t).items():
            if r[1] is not None and r[1] <= t < r[1] + width:
                per_key[(r[0],)] += c
        want = Counter({(*k, c): 1 for k, c in per_key.items() if c != 0})
        assert rows_at(cap, t) == want, f"width {width} at {t}"


def test_timestamps_compare_as_exact_milliseconds() -> None:
    # now() < ts + 1.5 ms, for ts in microseconds: holds while now * 1000 < ts + 1500.
    flow = dd.Dataflow()
    session, coll = flow.new_input({"ts": "timestamp[us]", "x": "int64"})
    cap = coll.filter(dd.col("ts") + dd.duration("1500us") > dd.now()).capture()
    micros = [0, 1, 999, 1000, 2500, 3001]
    epoch = datetime.datetime(1970, 1, 1)
    table = pa.table({"ts": pa.array(micros, pa.timestamp("us")), "x": list(range(len(micros)))})
    session.update_batch(table, times=0)
    session.advance_to(10)
    flow.run_until(10)
    for t in range(10):
        want = {x for x, us in enumerate(micros) if t * 1000 < us + 1500}
        got = {row["x"] for row in cap.at(t).to_pylist()}
        assert got == want, t
    assert epoch + datetime.timedelta(microseconds=micros[-1])  # the values are instants


def test_dates_compare_as_the_milliseconds_of_their_midnight() -> None:
    flow = dd.Dataflow()
    session, coll = flow.new_input({"d": "date32"})
    cap = coll.filter(dd.col("d") <= dd.now()).capture()
    day = 86_400_000
    session.update_batch(pa.table({"d": pa.array([datetime.date(1970, 1, 2)])}), times=0)
    session.advance_to(2 * day)
    flow.run_until(2 * day)
    assert cap.at(day - 1).num_rows == 0
    assert cap.at(day).num_rows == 1


def test_the_operator_holds_nothing_once_every_interval_has_closed() -> None:
    flow, session, coll = new_input(1)
    coll.filter((dd.col("lo") <= dd.now()) & (dd.now() < dd.col("hi"))).capture()
    for i in range(1000):
        session.update_at((i, i % 50, i % 50 + 20), 0)
    session.advance_to(1)
    flow.run_until(1)
    held = flow.metrics().heap_bytes
    assert held > 0  # insertions up to 49 and retractions up to 69 wait
    session.advance_to(40)
    flow.run_until(40)
    assert 0 < flow.metrics().heap_bytes < held
    session.advance_to(70)
    flow.run_until(70)
    assert flow.metrics().heap_bytes == 0


def test_a_null_or_empty_interval_never_holds() -> None:
    flow, session, coll = new_input(1)
    cap = coll.filter((dd.col("lo") <= dd.now()) & (dd.now() < dd.col("hi"))).capture()
    for r in [(0, None, 5), (1, 2, None), (2, 4, 4), (3, 5, 2), (4, 1, 3)]:
        session.update_at(r, 0)
    session.advance_to(10)
    flow.run_until(10)
    assert cap.updates().to_pylist() == [
        {"k": 4, "lo": 1, "hi": 3, "time": 1, "diff": 1},
        {"k": 4, "lo": 1, "hi": 3, "time": 3, "diff": -1},
    ]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda c: c.select(t=dd.now()), "usable only in Collection.filter"),
        (lambda c: c.with_columns(t=dd.col("lo") + dd.now()), "usable only in Collection.filter"),
        (lambda c: c.filter((dd.now() > dd.col("lo")) | (dd.col("k") == 1)), "one side of a"),
        (lambda c: c.filter(~(dd.now() > dd.col("lo"))), "one side of a comparison"),
        (lambda c: c.filter(dd.now() == dd.col("lo")), "one side of a comparison"),
        (lambda c: c.filter(dd.now() + 1 > dd.col("lo")), "one side of a comparison"),
        (lambda c: c.filter(dd.now() > dd.now()), "free of now()"),
        (lambda c: c.filter(dd.col("lo") + dd.now() > dd.now()), "free of now()"),
        (lambda c: c.filter(dd.now() > dd.col("missing")), "'missing' not found"),
    ],
)
def test_other_uses_of_now_are_refused_naming_the_operator(build: Any, message: str) -> None:
    _, _, coll = new_input(1)
    refused = (dd.PlanError, dd.ColumnNotFoundError)
    with pytest.raises(refused, match="(filter|select|with_columns)@") as info:
        build(coll)
    assert message in str(info.value)


def test_times_of_more_than_one_coordinate_are_refused() -> None:
    flow = dd.Dataflow(time_dims=2)
    session, coll = flow.new_input({"k": "int64", "lo": "int64"})
    coll.filter(dd.col("lo") <= dd.now()).capture()
    with pytest.raises(dd.PlanError, match="now\\(\\) needs totally ordered times"):
        session.update_at((1, 1), (0, 0))
        session.advance_to((1, 1))
        flow.run_until((1, 1))


def test_a_bound_of_another_dtype_is_an_error_update_naming_it() -> None:
    flow, session, coll = new_input(1)
    cap = coll.filter(dd.col("lo").cast("float64") <= dd.now()).capture()
    session.update_at((1, 2, 3), 0)
    session.advance_to(5)
    flow.run_until(5)
    with pytest.raises(dd.DataError, match="now\\(\\) compared with"):
        cap.at(4)


def test_spark_refuses_the_operator_before_any_job() -> None:
    # The check the Spark driver runs on the plan before it starts a job.
    validate = pytest.importorskip("ddflow.spark.driver.validate")
    flow, _, coll = new_input(1)
    out = coll.filter(dd.col("lo") <= dd.now())
    node = validate.output_node(flow, out)
    needed = validate.needed_nodes(flow.builder.plan.nodes, [node])
    with pytest.raises(dd.DdflowError, match="filter@.*'temporal_filter'.*embedded engine"):
        validate.check_ops(flow, needed)
    assert not SPARK_OPS["temporal_filter"].supported
