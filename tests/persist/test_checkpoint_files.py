"""A persistent dataflow's directory: what it refuses, what it detects, what it keeps.

Checkpoint files are checked before use (a flipped byte or a cut file is a
``CorruptCheckpointError`` naming the file), a tick a crash cut short at the end of the log
is dropped with a warning, another plan is refused naming the node that differs, and inputs
times that are not ints are refused. A restart resumes a watched directory after the files it read,
taking only new files.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from tests.io.sinkfiles import final_state, read_sink

import ddflow as dd
from ddflow.persist.journal import Journal
from ddflow.persist.records import Tick
from ddflow.persist.segment import Segment, decode, encode

pytestmark = pytest.mark.timeout(120)


def _write(directory: Path, name: str, rows: list[tuple[int, int]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = "k,v\n" + "".join(f"{k},{v}\n" for k, v in rows)
    (directory / name).write_text(text)


def _flow(
    src: Path, out: Path, state: Path, *, watch: bool = False, agg: str = "sum"
) -> dd.Dataflow:
    flow = dd.Dataflow(persistence=dd.Persistence(state, interval="1h"))
    rows = dd.io.csv.read(flow, src, schema={"k": "int64", "v": "int64"}, watch=watch)
    part = dd.sum("v") if agg == "sum" else dd.max("v")
    dd.io.parquet.write(rows.group_by("k").agg(total=part), out)
    return flow


def test_a_restart_after_a_clean_end_writes_nothing_more(tmp_path: Path) -> None:
    _write(tmp_path / "in", "a.csv", [(1, 2), (1, 3), (2, 5)])
    _flow(tmp_path / "in", tmp_path / "out", tmp_path / "state").run(progress=False)
    first = sorted(p.name for p in (tmp_path / "out").iterdir())
    _flow(tmp_path / "in", tmp_path / "out", tmp_path / "state").run(progress=False)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == first
    _, rows = read_sink(tmp_path / "out")
    assert final_state(rows) == {(1, 5): 1, (2, 5): 1}


def test_a_watched_directory_resumes_with_only_the_new_files(tmp_path: Path) -> None:
    src, out, state = tmp_path / "in", tmp_path / "out", tmp_path / "state"
    _write(src, "a.csv", [(1, 2), (2, 5)])

    def run_once(rows: int) -> None:
        """Runs until the source has read ``rows`` rows in this run, then stops."""
        flow = _flow(src, out, state, watch=True)

        def stop_when_read() -> None:
            deadline = time.monotonic() + 60
            while flow._loop.rows_read < rows and time.monotonic() < deadline:
                time.sleep(0.02)
            flow.stop()

        stopper = threading.Thread(target=stop_when_read)
        stopper.start()
        flow.run(progress=False)
        stopper.join()
        assert flow._loop.rows_read == rows

    run_once(2)
    _write(src, "b.csv", [(1, 10), (3, 1)])
    run_once(2)
    _, rows = read_sink(out)
    assert final_state(rows) == {(1, 12): 1, (2, 5): 1, (3, 1): 1}


def test_another_plan_is_refused_naming_the_node(tmp_path: Path) -> None:
    _write(tmp_path / "in", "a.csv", [(1, 2)])
    _flow(tmp_path / "in", tmp_path / "out", tmp_path / "state").run(progress=False)
    flow = _flow(tmp_path / "in", tmp_path / "out2", tmp_path / "state", agg="max")
    with pytest.raises(dd.PersistenceError, match=r"another plan: node \d+ was .*sum"):
        flow.run(progress=False)


def test_times_that_are_not_ints_are_refused(tmp_path: Path) -> None:
    flow = dd.Dataflow(time_dims=2, persistence=dd.Persistence(tmp_path / "state"))
    session, rows = flow.new_input({"k": "int64"}, name="by_hand")
    rows.capture()
    with pytest.raises(dd.PersistenceError, match="int times"):
        session.frontier()


@pytest.mark.parametrize("interval", ["", "10 parsecs", -1, 0, "0s", True])
def test_bad_intervals_are_refused(tmp_path: Path, interval: object) -> None:
    with pytest.raises(dd.PlanError, match="interval"):
        dd.Persistence(tmp_path, interval=interval)  # type: ignore[arg-type]


def test_intervals_read_as_seconds(tmp_path: Path) -> None:
    assert dd.Persistence(tmp_path, "500ms").seconds == 0.5
    assert dd.Persistence(tmp_path, "2m").seconds == 120
    assert dd.Persistence(tmp_path, 3).seconds == 3


def _state_after_a_run(tmp_path: Path) -> Path:
    _write(tmp_path / "in", "a.csv", [(1, 2), (2, 3)])
    _flow(tmp_path / "in", tmp_path / "out", tmp_path / "state").run(progress=False)
    return tmp_path / "state"


@pytest.mark.parametrize("damage", ["flip", "truncate", "append"])
def test_a_damaged_snapshot_is_detected(tmp_path: Path, damage: str) -> None:
    state = _state_after_a_run(tmp_path)
    (snapshot,) = state.glob("snap-*.seg")
    data = bytearray(snapshot.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x40
    elif damage == "truncate":
        data = data[: len(data) - 7]
    else:
        data += b"\x00"
    snapshot.write_bytes(bytes(data))
    flow = _flow(tmp_path / "in", tmp_path / "out", state)
    with pytest.raises(dd.CorruptCheckpointError, match=snapshot.name):
        flow.run(progress=False)


def test_a_damaged_manifest_is_detected(tmp_path: Path) -> None:
    state = _state_after_a_run(tmp_path)
    (manifest,) = state.glob("manifest-*.seg")
    data = bytearray(manifest.read_bytes())
    data[20] ^= 0x01
    manifest.write_bytes(bytes(data))
    with pytest.raises(dd.CorruptCheckpointError, match="manifest"):
        _flow(tmp_path / "in", tmp_path / "out", state).run(progress=False)


def _journal_with_two_ticks(state: Path) -> tuple[Path, int]:
    """A journal holding two logged ticks; the log file and the first tick's size."""
    plan = {"version": 1, "nodes": []}
    journal = Journal(dd.Persistence(state), plan, 1)
    first = Tick(0, 5, 0, 6, [], [{"at": 1}])
    journal.append(first)
    journal.append(Tick(0, 7, 6, 8, [], [{"at": 2}]))
    journal.close()
    (log,) = (state / "log").glob("*.log")
    return log, len(encode(first.segment()))


def test_a_tick_cut_short_at_the_end_of_the_log_is_dropped(tmp_path: Path) -> None:
    """The tick a crash interrupted mid-append was never acted on: a restart drops it with a
    warning (its rows are read again from the source's offset before it)."""
    log, first = _journal_with_two_ticks(tmp_path)
    log.write_bytes(log.read_bytes()[:-3])
    with pytest.warns(UserWarning, match="truncated"):
        restored = Journal(dd.Persistence(tmp_path), {"version": 1, "nodes": []}, 1).restore()
    assert [t.seq for t in restored.ticks] == [1]
    assert restored.offsets == [{"at": 1}] and restored.target == 6
    assert log.stat().st_size == first


def test_a_damaged_tick_before_the_end_is_detected(tmp_path: Path) -> None:
    log, first = _journal_with_two_ticks(tmp_path)
    data = bytearray(log.read_bytes())
    data[first - 2] ^= 0x10  # inside the first tick's data checksum
    log.write_bytes(bytes(data))
    journal = Journal(dd.Persistence(tmp_path), {"version": 1, "nodes": []}, 1)
    with pytest.raises(dd.CorruptCheckpointError, match="checksum"):
        journal.restore()


def test_segments_round_trip_and_name_the_version(tmp_path: Path) -> None:
    import pyarrow as pa

    segment = Segment({"kind": "x", "n": 1}, [pa.table({"a": [1, None, 3]})])
    back = decode(encode(segment), "memory")
    assert back.header == {"kind": "x", "n": 1}
    assert back.parts[0].equals(segment.parts[0])
    data = bytearray(encode(segment))
    data[9] = 99  # the version field
    with pytest.raises(dd.PersistenceError, match="format version 99"):
        decode(bytes(data), "memory")


def test_a_restart_replays_every_snapshot_layer_at_the_last_checkpoint(tmp_path: Path) -> None:
    """Each checkpoint writes a layer compacted to its own frontier; a restart advances every
    layer to the last checkpoint's frontier, so the engine rebuilds its state at one time
    (not one pass per layer), with the same accumulation."""
    import pyarrow as pa

    from ddflow.sources import SourceBatch

    plan = {"version": 1, "nodes": []}
    journal = Journal(dd.Persistence(tmp_path), plan, 1)
    for seq, frontier in enumerate((5, 9, 14)):
        table = pa.table({"k": [seq, 7], "v": [1, 2]})
        tick = Tick(seq, frontier - 1, frontier - 2, frontier, [(0, SourceBatch(table, "f"))], [])
        journal.append(tick)
        journal.checkpoint(frontier, [{"at": seq}])
    journal.close()
    stored = sorted(tmp_path.glob("snap-*.seg"))
    assert len(stored) == 3  # one layer per checkpoint, each at its own time
    restored = Journal(dd.Persistence(tmp_path), plan, 1).restore()
    assert restored.since == 14
    accumulated: dict[tuple[int, int], int] = {}
    for snapshot in restored.snapshots:
        assert snapshot.times.tolist() == [13] * snapshot.table.num_rows
        for row, d in zip(snapshot.table.to_pylist(), snapshot.diffs.tolist(), strict=True):
            key = (row["k"], row["v"])
            accumulated[key] = accumulated.get(key, 0) + d
    assert accumulated == {(0, 1): 1, (1, 1): 1, (2, 1): 1, (7, 2): 3}


def test_a_restored_snapshot_row_the_input_refuses_is_named_and_the_rest_go_in_once() -> None:
    """A snapshot goes into its input as one batch; when the input refuses a row, the
    snapshot is pushed again origin by origin (nothing of the refused batch went in), the
    refused row is returned naming its file and row, and every other row goes in once."""
    import numpy as np
    import pyarrow as pa

    from ddflow.persist.records import Snapshot
    from ddflow.runloop import _push_snapshot

    flow = dd.Dataflow(log=False)
    inp, rows = flow.new_input({"k": "int64", "s": "str"})
    capture = rows.capture()
    text = pa.array([b"ok", b"\xff\xfe", b"fine"], pa.binary()).view(pa.string())
    table = pa.table({"k": pa.array([1, 2, 3], pa.int64()), "s": text})
    one = np.ones(3, np.int64)
    snapshot = Snapshot(
        0, table, ["a.csv", "b.csv"], np.array([0, 1, 0], np.int32),
        np.array([1, 7, 2], np.int64), 4 * one, one, [],
    )  # fmt: skip
    (error,) = _push_snapshot(inp, snapshot)
    assert (error.origin, error.row, error.column) == ("b.csv", 7, "s")
    inp.advance_to(5)
    flow.run_until(5)
    got = capture.updates().to_pylist()
    assert got == [
        {"k": 1, "s": "ok", "time": 4, "diff": 1},
        {"k": 3, "s": "fine", "time": 4, "diff": 1},
    ]
