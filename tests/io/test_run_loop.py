"""``flow.run()`` with sources: watching a directory, stopping, Ctrl-C, failing sources,
several sources on one frontier, and ``dd.subscribe``.

Tests that run until ``flow.stop()`` drive the stop from a thread that first waits (with a
deadline) for what it added to show up in a subscription; every such test then checks that
the sinks hold complete files only, accumulating to a recompute of everything read.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from tests.io.sinkfiles import final_state, read_sink

import ddflow as dd
from ddflow.sources import Source, SourceBatch

pytestmark = pytest.mark.timeout(60)


def _wait(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def _write_csv(path: Path, rows: list[tuple[str, int]], atomic: bool) -> None:
    text = "k,v\n" + "".join(f"{k},{v}\n" for k, v in rows)
    if atomic:
        temp = path.with_name(f".{path.name}.tmp")
        temp.write_text(text)
        os.replace(temp, path)
    else:
        path.write_text(text)


class _Totals:
    """Per-key totals of a subscribed ``group_by("k").agg(total=sum("v"))``."""

    def __init__(self) -> None:
        self.state: Counter[tuple[Any, ...]] = Counter()
        self.frontiers: list[int | None] = []

    def on_change(self, updates: pa.Table) -> None:
        for row in updates.to_pylist():
            self.state[(row["k"], row["total"])] += row["diff"]

    def on_time_end(self, t: int | None) -> None:
        self.frontiers.append(t)

    def total(self, key: str) -> int | None:
        live = [total for (k, total), n in list(self.state.items()) if k == key and n]
        return live[0] if live else None


def test_watch_picks_up_new_files_each_once_until_stop(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    _write_csv(inbox / "0.csv", [("a", 1), ("b", 2)], atomic=False)
    flow = dd.Dataflow(log=False)
    rows = dd.io.csv.read(flow, inbox, watch=True)
    totals = rows.group_by("k").agg(total=dd.sum("v"))
    dd.io.parquet.write(totals, tmp_path / "out")
    seen = _Totals()
    dd.subscribe(totals, seen.on_change, seen.on_time_end)

    def feed() -> None:
        _wait(lambda: seen.total("b") == 2)
        _write_csv(inbox / "1.csv", [("a", 10), ("c", 5)], atomic=True)
        _wait(lambda: seen.total("c") == 5)
        _write_csv(inbox / "2.csv", [("c", 1)], atomic=False)
        (inbox / "_ignored.csv").write_text("k,v\nz,1\n")
        _wait(lambda: seen.total("c") == 6)
        flow.stop()

    feeder = threading.Thread(target=feed)
    feeder.start()
    flow.run()
    feeder.join()
    assert seen.total("a") == 11 and seen.total("z") is None
    ranges, updates = read_sink(tmp_path / "out")
    expected = duckdb.sql(
        f"select k, sum(v)::bigint from read_csv(['{inbox}/0.csv', '{inbox}/1.csv', "
        f"'{inbox}/2.csv'], header=true) group by k"
    ).fetchall()
    assert final_state(updates) == Counter({row: 1 for row in expected})
    assert final_state(updates) == +seen.state
    # on_time_end saw the frontier rise to the sink's last upper, never back
    assert seen.frontiers == sorted(seen.frontiers)
    assert seen.frontiers[-1] == ranges[-1][1]


def test_stop_from_a_callback_leaves_only_complete_sink_files(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    for i in range(20):
        _write_csv(inbox / f"{i:02}.csv", [(f"k{i % 3}", i)], atomic=False)
    flow = dd.Dataflow(log=False)
    rows = dd.io.csv.read(flow, inbox)
    flow._loop.sources[0].rows_per_poll = 1  # type: ignore[attr-defined]
    sink = dd.io.csv.write(rows, tmp_path / "out")
    changes: list[int] = []

    def on_change(updates: pa.Table) -> None:
        changes.append(updates.num_rows)
        if len(changes) == 5:
            flow.stop()

    dd.subscribe(rows, on_change)
    flow.run()
    ranges, updates = read_sink(tmp_path / "out")
    assert sum(changes) == len(updates) == 5  # one file per tick, every pushed row complete
    assert len(sink.files) == len(ranges)
    # Running again goes on where it stopped: every file read once.
    flow.run()
    _, updates = read_sink(tmp_path / "out")
    assert sorted(u["v"] for u in updates) == list(range(20))


def test_ctrl_c_stops_cleanly_then_raises(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    _write_csv(inbox / "0.csv", [("a", 1)], atomic=False)
    flow = dd.Dataflow(log=False)
    rows = dd.io.csv.read(flow, inbox, watch=True)
    sink = dd.io.jsonlines.write(rows, tmp_path / "out")
    got: list[int] = []
    dd.subscribe(rows, lambda u: got.append(u.num_rows))

    def interrupt() -> None:
        _wait(lambda: sum(got) == 1)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=interrupt)
    thread.start()
    with pytest.raises(KeyboardInterrupt):
        flow.run()
    thread.join()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    ranges, updates = read_sink(tmp_path / "out")
    assert [(u["k"], u["v"], u["diff"]) for u in updates] == [("a", 1, 1)]
    assert [ranges[-1][1]] == sink.capture.frontier()


class _Listed(Source):
    """Sends one table per poll; raises ``fail`` after them if given."""

    def __init__(
        self,
        tables: list[pa.Table],
        times: list[list[int]] | None = None,
        fail: Exception | None = None,
    ) -> None:
        self.tables = list(tables)
        self.times = times
        self.timed = times is not None
        self.fail = fail
        self.name = "listed source"
        self.polls = 0

    def poll(self) -> list[SourceBatch]:
        self.polls += 1
        if not self.tables:
            if self.fail is not None:
                raise self.fail
            return []
        table = self.tables.pop(0)
        rows = np.arange(1, table.num_rows + 1, dtype=np.int64)
        times = None
        if self.times is not None:
            times = np.asarray(self.times.pop(0), dtype=np.int64)
        return [SourceBatch(table, "memory", rows, times)]

    @property
    def ended(self) -> bool:
        return not self.tables and self.fail is None


def test_a_failing_source_stops_cleanly_and_names_itself(tmp_path: Path) -> None:
    flow = dd.Dataflow(log=False)
    session, c = flow.new_input({"x": "int64"})
    source = _Listed([pa.table({"x": [1, 2]})], fail=OSError("disk gone"))
    flow.attach_source(session, source)
    dd.io.parquet.write(c, tmp_path / "out")
    with pytest.raises(dd.SourceError, match="listed source .*input 'input0'.* disk gone"):
        flow.run()
    _, updates = read_sink(tmp_path / "out")
    assert [u["x"] for u in updates] == [1, 2]


def test_several_sources_advance_one_frontier() -> None:
    flow = dd.Dataflow(log=False)
    clock = iter(range(100, 10_000, 100))
    flow._loop.clock = lambda: next(clock)
    a_in, a = flow.new_input({"k": "int64", "x": "int64"})
    b_in, b = flow.new_input({"k": "int64", "y": "int64"})
    manual_in, manual = flow.new_input({"k": "int64"})
    joined = a.join(b, on="k").join(manual, on="k").capture()
    manual_in.update_at((1,), 0)
    flow.attach_source(a_in, _Listed([pa.table({"k": [1], "x": [10]})] * 3))
    flow.attach_source(b_in, _Listed([pa.table({"k": [1], "y": [20]})]))
    flow.run()
    # Both sources' first rows at the first tick (t=100), a's next ones at 200 and 300.
    assert [(r["x"], r["y"], r["time"]) for r in joined.updates().to_pylist()] == [
        (10, 20, 100),
        (10, 20, 200),
        (10, 20, 300),
    ]
    assert a_in.closed and b_in.closed and manual_in.time == 301


def test_a_timed_source_holds_the_frontier_at_its_greatest_time() -> None:
    flow = dd.Dataflow(log=False)
    session, c = flow.new_input({"x": "int64"})
    tables = [pa.table({"x": [1, 2]}), pa.table({"x": [3]})]
    flow.attach_source(session, _Listed(tables, times=[[5, 8], [8]]))
    frontiers: list[int | None] = []
    capture = dd.subscribe(c, lambda u: None, frontiers.append)
    flow.run()
    assert frontiers == [8, None]
    assert capture.state().to_pylist() == [{"x": x, "diff": 1} for x in (1, 2, 3)]


def test_subscribe_under_run_until_and_attach_checks() -> None:
    flow = dd.Dataflow()
    session, c = flow.new_input({"x": "int64"})
    got: list[list[dict[str, Any]]] = []
    ends: list[int | None] = []
    dd.subscribe(c, lambda u: got.append(u.to_pylist()), ends.append)
    session.update_at((7,), 1)
    session.advance_to(3)
    flow.run_until(3)
    assert got == [[{"x": 7, "time": 1, "diff": 1}]] and ends == [3]
    with pytest.raises(dd.PlanError, match="already has a source"):
        flow.attach_source(session, _Listed([]))
        flow.attach_source(session, _Listed([]))


class _Endless(Source):
    """A source that never ends and counts its ``close()`` calls."""

    name = "endless source"

    def __init__(self) -> None:
        self.polls = 0
        self.closes = 0

    def poll(self) -> list[SourceBatch]:
        assert not self.closes, "polled after close()"
        self.polls += 1
        table = pa.table({"x": [self.polls]})
        return [SourceBatch(table, "memory", np.arange(1, 2, dtype=np.int64), None)]

    @property
    def ended(self) -> bool:
        return False

    def close(self) -> None:
        self.closes += 1


def test_close_after_a_stopped_run_closes_each_source_once_and_refuses_runs() -> None:
    source = _Endless()
    with dd.Dataflow(log=False) as flow:
        session, c = flow.new_input({"x": "int64"})
        flow.attach_source(session, source)
        out = c.capture()
        refused: list[BaseException] = []

        def stop_after_three(final: bool) -> None:
            if source.polls >= 3:
                try:
                    flow.close()  # from the run's own thread: refused, not a deadlock
                except dd.errors.ReentrancyError as exc:
                    refused.append(exc)
                flow.stop()

        flow.on_progress(stop_after_three)
        flow.run()
        # A stopped run leaves its source open: a later run goes on reading it.
        assert source.closes == 0 and refused and "call stop()" in str(refused[0])
        flow.run()
        assert source.closes == 0 and source.polls >= 4
    assert source.closes == 1
    flow.close()
    assert source.closes == 1
    with pytest.raises(dd.errors.PlanError, match="closed"):
        flow.run()
    # What was read stays readable.
    assert sorted(r["x"] for r in out.state().to_pylist()) == list(range(1, source.polls + 1))


def test_close_from_another_thread_stops_the_run_before_closing() -> None:
    source = _Endless()
    flow = dd.Dataflow(log=False)
    session, c = flow.new_input({"x": "int64"})
    flow.attach_source(session, source)
    out = c.capture()
    failures: list[BaseException] = []

    def run() -> None:
        try:
            flow.run()
        except BaseException as exc:
            failures.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    _wait(lambda: source.polls >= 3)
    flow.close()  # stops the run, waits for its clean stop, then closes the source once
    thread.join(timeout=20)
    assert not thread.is_alive() and not failures, failures
    assert source.closes == 1
    assert sorted(r["x"] for r in out.state().to_pylist()) == list(range(1, source.polls + 1))
