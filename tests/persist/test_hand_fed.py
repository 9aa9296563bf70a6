"""Inputs fed by hand in a persistent dataflow: what ``inp.frontier()`` says after a
restart (nothing logged, a log, a checkpoint), that what was fed before it comes back and
what was fed at or after it does not (the program feeds it again), mixed with a source, and
every dtype through the log and a checkpoint.

The oracle is the same dataflow without persistence, fed the same updates once: its
collection at every time from the restart's checkpoint on must equal the restored one's. A
random test crashes a program at random points (the dataflow dropped mid-way: what the log
holds is what a SIGKILL leaves; ``test_hand_fed_crash.py`` kills real processes).
"""

from __future__ import annotations

import datetime
import random
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from tests.io.sinkfiles import final_state, read_sink

import ddflow as dd
from ddflow.sources import Source, SourceBatch

pytestmark = pytest.mark.timeout(120)

Update = tuple[int, int, int, int]
"""An update of input ``a`` or ``b``: (k, v, time, diff)."""
History = dict[int, tuple[list[Update], list[Update]]]
"""Per time, the updates of ``a`` and of ``b``."""


class Program:
    """Two inputs fed by hand into a join and an aggregate, captured."""

    def __init__(
        self, state: Path | str | None, interval: str = "1h", filesystem: Any = None
    ) -> None:
        persistence = (
            None if state is None else dd.Persistence(state, interval, filesystem=filesystem)
        )
        self.flow = dd.Dataflow(persistence=persistence, log=False)
        self.a_in, a = self.flow.new_input({"k": "int64", "v": "int64"}, name="a")
        self.b_in, b = self.flow.new_input({"k": "int64", "w": "int64"}, name="b")
        joined = a.join(b, on="k")
        self.out = joined.group_by("k").agg(n=dd.count(), t=dd.sum("v"), u=dd.sum("w")).capture()

    def feed(self, which: str, updates: list[Update], by_record: bool = False) -> None:
        """Feeds updates to input ``which`` (``update_batch``, or ``update_at`` each)."""
        session = self.a_in if which == "a" else self.b_in
        if not updates:
            return
        if by_record:
            for k, v, t, d in updates:
                session.update_at((k, v), time=t, diff=d)
            return
        k, v, t, d = (np.array(c, dtype=np.int64) for c in zip(*updates, strict=True))
        session.update_batch([k, v], times=t, diffs=d)

    def step(self, time: int) -> None:
        """Advances both inputs to ``time`` and runs until it."""
        self.a_in.advance_to(time)
        self.b_in.advance_to(time)
        self.flow.run_until(time)

    def at(self, time: int) -> list[dict[str, object]]:
        """The captured collection at ``time``."""
        return self.out.at(time).to_pylist()


def _updates(rng: random.Random, time: int, n: int = 6) -> list[Update]:
    """``n`` random updates at ``time``, retractions among them."""
    return [
        (rng.randint(0, 5), rng.randint(-9, 99), time, rng.choice([1, 1, 2, -1])) for _ in range(n)
    ]


def _history(seed: int, times: int) -> History:
    """Per time, the updates of ``a`` and of ``b`` (a function of the seed only)."""
    rng = random.Random(seed)
    return {t: (_updates(rng, t), _updates(rng, t, 2)) for t in range(times)}


def _reference(history: History, until: int) -> Program:
    ref = Program(None)
    for t in range(until):
        a, b = history[t]
        ref.feed("a", a)
        ref.feed("b", b)
        ref.step(t + 1)
    return ref


def _feed_from(program: Program, history: History, until: int) -> None:
    start_a, start_b = program.a_in.frontier(), program.b_in.frontier()
    assert isinstance(start_a, int) and isinstance(start_b, int)
    for t in range(min(start_a, start_b), until):
        a, b = history[t]
        if t >= start_a:
            program.feed("a", a)
        if t >= start_b:
            program.feed("b", b, by_record=True)
        program.step(t + 1)


def test_a_new_directory_starts_at_zero_and_so_does_a_restart_with_nothing_fed(
    tmp_path: Path,
) -> None:
    first = Program(tmp_path / "state")
    assert first.a_in.frontier() == 0 and first.b_in.frontier() == 0
    assert any(p.name.startswith("manifest-") for p in (tmp_path / "state").iterdir())
    again = Program(tmp_path / "state")
    assert again.a_in.frontier() == 0 and again.b_in.frontier() == 0
    assert again.flow.resumed_since == 0


def test_a_restart_restores_what_was_fed_before_the_frontier(tmp_path: Path) -> None:
    history = _history(1, 15)
    first = Program(tmp_path / "state")
    _feed_from(first, history, 10)
    restarted = Program(tmp_path / "state")
    assert restarted.a_in.frontier() == 10 and restarted.b_in.frontier() == 10
    reference = _reference(history, 15)
    restarted.flow.run_until(10)
    assert restarted.at(9) == reference.at(9)
    _feed_from(restarted, history, 15)
    for t in range(15):
        assert restarted.at(t) == reference.at(t), t


def test_a_restart_after_checkpoints(tmp_path: Path) -> None:
    history = _history(2, 30)
    first = Program(tmp_path / "state", interval="1ms")  # a checkpoint at every run_until
    _feed_from(first, history, 20)
    names = [p.name for p in (tmp_path / "state").iterdir()]
    assert any(n.startswith("snap-") for n in names), names  # the inputs' snapshot layers
    restarted = Program(tmp_path / "state", interval="1ms")
    assert restarted.a_in.frontier() == 20 and restarted.b_in.frontier() == 20
    since = restarted.flow.resumed_since
    assert 0 < since <= 20
    _feed_from(restarted, history, 30)
    reference = _reference(history, 30)
    for t in range(since - 1, 30):
        assert restarted.at(t) == reference.at(t), t


def test_updates_at_or_after_the_frontier_are_fed_again_not_restored(tmp_path: Path) -> None:
    history = _history(3, 8)
    first = Program(tmp_path / "state")
    _feed_from(first, history, 5)
    # Updates at 5, 6 and 7 fed, then advances to 6 only: those at 6 and 7 are logged (an
    # advance logs everything fed) but at or after the frontier.
    for t in (5, 6, 7):
        first.feed("a", history[t][0])
        first.feed("b", history[t][1])
    first.step(6)
    restarted = Program(tmp_path / "state")
    assert restarted.a_in.frontier() == 6
    _feed_from(restarted, history, 8)
    reference = _reference(history, 8)
    for t in range(8):
        assert restarted.at(t) == reference.at(t), t


def test_an_advance_of_one_input_leaves_the_other_behind(tmp_path: Path) -> None:
    history = _history(4, 6)
    first = Program(tmp_path / "state")
    _feed_from(first, history, 3)
    first.feed("a", history[3][0])
    first.feed("b", history[3][1])
    first.a_in.advance_to(4)  # the crash comes before b's advance
    restarted = Program(tmp_path / "state")
    assert (restarted.a_in.frontier(), restarted.b_in.frontier()) == (4, 3)
    _feed_from(restarted, history, 6)
    reference = _reference(history, 6)
    for t in range(6):
        assert restarted.at(t) == reference.at(t), t


@pytest.mark.parametrize("seed", range(6))
def test_crashes_at_random_points_then_feeding_from_the_frontier(tmp_path: Path, seed: int) -> None:
    """A program feeding each time's updates over the three steps before it (so updates at
    times past the frontier are in flight) crashes after a random number of operations,
    several times; each restart feeds again what is at or after each input's frontier."""
    rng = random.Random(seed)
    times = 25
    history = _history(100 + seed, times)
    # Each time's updates are split over the step of that time and the two before it.
    parts = {t: [(t - rng.randint(0, 2), u) for u in history[t][0]] for t in range(times)}
    interval = rng.choice(["1ms", "30ms", "1h"])

    def run(program: Program, budget: int) -> bool:
        """Feeds until the end (True) or until ``budget`` operations are done (a crash)."""
        start_a, start_b = program.a_in.frontier(), program.b_in.frontier()
        assert isinstance(start_a, int) and isinstance(start_b, int)
        ops = 0

        def tick() -> bool:
            nonlocal ops
            ops += 1
            return ops >= budget

        first = min(start_a, start_b)
        # What the crashed run had fed early for times at or after the frontier, again.
        early = [u for t in range(start_a, times) for s, u in parts[t] if s < start_a]
        program.feed("a", early)
        for s in range(first, times):
            if s >= start_a:
                program.feed("a", [u for t in range(s, times) for q, u in parts[t] if q == s])
                if tick():
                    return False
            if s >= start_b:
                program.feed("b", history[s][1], by_record=True)
                if tick():
                    return False
            program.a_in.advance_to(s + 1)
            if tick():
                return False
            program.b_in.advance_to(s + 1)
            if tick():
                return False
            program.flow.run_until(s + 1)
            if tick():
                return False
        return True

    state = tmp_path / "state"
    for _ in range(4):
        run(Program(state, interval), rng.randint(1, 4 * times))
    program = Program(state, interval)
    assert run(program, 10**9)
    reference = _reference(history, times)
    since = program.flow.resumed_since
    for t in range(max(since - 1, 0), times):
        assert program.at(t) == reference.at(t), (t, since)


def _typed_batch(rng: np.random.Generator, n: int) -> pa.Table:
    nulls = rng.random(n) < 0.3
    ints = rng.integers(-5, 5, n)
    floats = rng.choice([0.5, -0.0, float("nan"), 2.25], n)
    return pa.table(
        {
            "i": pa.array(ints, pa.int64(), mask=nulls),
            "f": pa.array(floats, pa.float64(), mask=np.roll(nulls, 1)),
            "b": pa.array(ints > 0, pa.bool_(), mask=np.roll(nulls, 2)),
            "s": pa.array([f"é{x}" for x in ints], pa.string(), mask=np.roll(nulls, 3)),
            "y": pa.array([bytes([x % 256, 0]) for x in ints], pa.binary()),
            "d": pa.array(
                [datetime.date(2024, 1, 1) + datetime.timedelta(days=int(x)) for x in ints],
                pa.date32(),
            ),
        }
    )


@pytest.mark.parametrize("interval", ["1ms", "1h"])
def test_every_dtype_comes_back_through_the_log_and_checkpoints(
    tmp_path: Path, interval: str
) -> None:
    rng = np.random.default_rng(5)
    batches = [_typed_batch(rng, 20) for _ in range(6)]

    def build(state: Path | None) -> tuple[dd.Dataflow, dd.InputSession, dd.Capture]:
        persistence = None if state is None else dd.Persistence(state, interval=interval)
        flow = dd.Dataflow(persistence=persistence, log=False)
        schema = {"i": "int64", "f": "float64", "b": "bool", "s": "str", "y": "binary", "d": "date"}
        session, rows = flow.new_input(schema, name="typed")
        return flow, session, rows.capture()

    def feed(session: dd.InputSession, flow: dd.Dataflow, t: int) -> None:
        session.update_batch(batches[t], times=t, diffs=1 if t % 2 else 2)
        if t == 3:  # single records too, a null among them
            session.update_at((None, 1.5, True, None, b"\x00", datetime.date(2020, 2, 29)), time=t)
        session.advance_to(t + 1)
        flow.run_until(t + 1)

    flow, session, _ = build(tmp_path / "state")
    for t in range(4):
        feed(session, flow, t)
    flow, session, restored = build(tmp_path / "state")
    assert session.frontier() == 4
    for t in range(4, 6):
        feed(session, flow, t)
    ref_flow, ref_session, reference = build(None)
    for t in range(6):
        feed(ref_session, ref_flow, t)
    for t in range(max(flow.resumed_since - 1, 0), 6):
        # repr: NaN equals NaN, -0.0 is told from 0.0.
        assert repr(restored.at(t).to_pylist()) == repr(reference.at(t).to_pylist()), t


def test_a_source_and_an_input_fed_by_hand_together(tmp_path: Path) -> None:
    src, sink, state = tmp_path / "in", tmp_path / "out", tmp_path / "state"
    src.mkdir()
    (src / "a.csv").write_text("k,v\n1,10\n2,20\n1,5\n")

    def build() -> tuple[dd.Dataflow, dd.InputSession]:
        flow = dd.Dataflow(persistence=dd.Persistence(state, interval="1h"), log=False)
        rows = dd.io.csv.read(flow, src, schema={"k": "int64", "v": "int64"})
        names_in, names = flow.new_input({"k": "int64", "name": "str"}, name="names")
        per_name = rows.join(names, on="k").group_by("name").agg(t=dd.sum("v"))
        dd.io.parquet.write(per_name, sink)
        return flow, names_in

    flow, names_in = build()
    assert names_in.frontier() == 0
    names_in.update_batch({"k": [1, 2], "name": ["one", "two"]}, times=0)
    flow.run()
    after_first = names_in.frontier()
    assert isinstance(after_first, int) and after_first > 0  # the run loop advanced it

    (src / "b.csv").write_text("k,v\n2,1\n3,7\n")
    flow, names_in = build()
    start = names_in.frontier()
    assert start == after_first  # restored, with "one" and "two"
    assert isinstance(start, int)
    names_in.update_batch({"k": [2, 3], "name": ["two", "three"]}, times=start, diffs=[-1, 1])
    names_in.update_at((2, "deux"), time=start)
    flow.run()

    _, rows = read_sink(sink)
    assert final_state(rows) == {("one", 15): 1, ("deux", 21): 1, ("three", 7): 1}


def test_a_closed_input_stays_closed(tmp_path: Path) -> None:
    first = Program(tmp_path / "state")
    first.feed("a", [(1, 2, 0, 1)])
    first.feed("b", [(1, 3, 0, 1)])
    first.a_in.close()
    first.b_in.advance_to(1)
    first.flow.run_until(1)
    restarted = Program(tmp_path / "state")
    assert restarted.a_in.frontier() is None and restarted.a_in.closed
    assert restarted.b_in.frontier() == 1
    restarted.flow.run_until(1)
    assert restarted.at(0) == [{"k": 1, "n": 1, "t": 2, "u": 3, "diff": 1}]


def test_another_plan_is_still_refused_when_fed_by_hand(tmp_path: Path) -> None:
    Program(tmp_path / "state").a_in.frontier()
    flow = dd.Dataflow(persistence=dd.Persistence(tmp_path / "state"))
    session, rows = flow.new_input({"k": "int64"}, name="a")
    rows.capture()
    with pytest.raises(dd.PersistenceError, match="another plan"):
        session.update_batch({"k": [1]}, times=0)
    with pytest.raises(dd.PersistenceError, match="another plan"):  # and again: never fed
        session.update_at((1,), time=0)


@pytest.mark.parametrize("interval", ["1ms", "1h"])
def test_columns_no_operator_reads_go_through_the_log_as_nulls(
    tmp_path: Path, interval: str
) -> None:
    """Arrow columns no operator reads reach the engine as nulls (``read_columns``): logged
    and compacted as nulls of their dtype, next to batches whose columns are read."""

    def build(state: Path | None) -> tuple[dd.Dataflow, dd.InputSession, dd.Capture]:
        persistence = None if state is None else dd.Persistence(state, interval=interval)
        flow = dd.Dataflow(persistence=persistence, log=False)
        session, rows = flow.new_input({"k": "int64", "s": "str", "y": "binary"}, name="wide")
        return flow, session, rows.group_by("k").agg(n=dd.count()).capture()

    def feed(session: dd.InputSession, flow: dd.Dataflow, t: int) -> None:
        batch = pa.table(
            {
                "k": pa.array([t % 3, 1], pa.int64()),
                "s": pa.array(["x", None], pa.string()),
                "y": pa.array([b"\x01", b""], pa.binary()),
            }
        )
        session.update_batch(batch, times=t)
        session.update_at((2, "z", b"\x02"), time=t)  # a record: its columns as they are
        session.advance_to(t + 1)
        flow.run_until(t + 1)

    flow, session, _ = build(tmp_path / "state")
    for t in range(3):
        feed(session, flow, t)
    flow, session, restored = build(tmp_path / "state")
    assert session.frontier() == 3
    for t in range(3, 5):
        feed(session, flow, t)
    ref_flow, ref_session, reference = build(None)
    for t in range(5):
        feed(ref_session, ref_flow, t)
    for t in range(max(flow.resumed_since - 1, 0), 5):
        assert restored.at(t).to_pylist() == reference.at(t).to_pylist(), t


def test_a_checkpoint_after_a_restart_keeps_what_only_the_log_held(tmp_path: Path) -> None:
    """A restart replays the log; a checkpoint before anything new is fed compacts it (with
    its dtypes), and the next restart reads that checkpoint."""
    history = _history(6, 9)
    _feed_from(Program(tmp_path / "state", interval="1h"), history, 3)  # the log only
    second = Program(tmp_path / "state", interval="1ms")
    time.sleep(0.01)
    assert second.a_in.frontier() == 3  # restores, runs until 3: a checkpoint is due
    assert any(p.name.startswith("snap-") for p in (tmp_path / "state").iterdir())
    last = Program(tmp_path / "state", interval="1h")
    assert last.a_in.frontier() == 3
    _feed_from(last, history, 9)
    reference = _reference(history, 9)
    for t in range(last.flow.resumed_since - 1, 9):
        assert last.at(t) == reference.at(t), t


def test_no_operator_can_be_added_once_the_directory_is_open(tmp_path: Path) -> None:
    """``frontier()`` opens the directory for the plan as it is: an operator added after
    it is refused (the directory would hold another plan's state)."""
    program = Program(tmp_path / "state")
    assert program.a_in.frontier() == 0
    with pytest.raises(dd.PlanError, match="add every operator before"):
        program.flow.new_input({"x": "int64"}, name="late")


class _Counter(Source):
    """Sends the numbers ``0..n-1``, one per poll, resuming after the last one sent."""

    def __init__(self, n: int) -> None:
        self.n, self.sent = n, 0
        self.name = "counting source"

    def poll(self) -> list[SourceBatch]:
        if self.sent >= self.n:
            return []
        self.sent += 1
        return [SourceBatch(pa.table({"x": [self.sent - 1]}), "count")]

    @property
    def ended(self) -> bool:
        return self.sent >= self.n

    def offset(self) -> Any:
        return self.sent

    def resume(self, offset: Any) -> None:
        self.sent = int(offset)


def test_an_input_a_source_feeds_cannot_be_fed_by_hand_too(tmp_path: Path) -> None:
    """A persistent dataflow restores that input from what its source read: updates fed
    by hand beside them could not be restored, so they are refused, naming the source."""

    def build() -> tuple[dd.Dataflow, dd.InputSession, dd.Capture]:
        flow = dd.Dataflow(persistence=dd.Persistence(tmp_path / "state"), log=False)
        session, numbers = flow.new_input({"x": "int64"}, name="numbers")
        flow.attach_source(session, _Counter(3))
        return flow, session, numbers.capture()

    flow, session, captured = build()
    flow.run()
    with pytest.raises(dd.PersistenceError, match="'numbers' is fed by counting source"):
        session.update_batch({"x": [7]})
    with pytest.raises(dd.PersistenceError, match="'numbers' is fed by counting source"):
        session.update_at((7,), time=10**15)
    flow, session, captured = build()
    flow.run()  # restored from the log: the numbers, each once
    assert sorted(r["x"] for r in captured.state().to_pylist()) == [0, 1, 2]
