"""The Delta Lake source and sink on their own: a snapshot read to the end, bad rows as error
updates naming the table, version, row and column, ``time_column=``, a table that cannot be
followed, and the keyed state shared with the Postgres sink against a brute-force model."""

from __future__ import annotations

import datetime
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from tests.io.deltalake.helpers import Steps, accumulate, multiset, table_at, times_sorted

import ddflow as dd
from ddflow.io.keyed import KeyedState

pytestmark = pytest.mark.timeout(60)


def test_a_snapshot_read_to_the_end(tmp_path: Path) -> None:
    uri, out = str(tmp_path / "t"), str(tmp_path / "out")
    write_deltalake(uri, pa.table({"k": ["a", "b", "a"], "x": [1, 2, 3]}))
    write_deltalake(uri, pa.table({"k": ["c", "a"], "x": [4, 5]}), mode="append")
    flow = dd.Dataflow()
    rows = dd.io.deltalake.read(flow, uri)
    sink = dd.io.deltalake.write(rows.group_by("k").agg(s=dd.sum("x")), out)
    flow.run()
    assert accumulate(table_at(out), ["k", "s"]) == Counter({("a", 9): 1, ("b", 2): 1, ("c", 4): 1})
    assert sink.commits == 1 and sink.lower is None
    assert times_sorted(table_at(out))
    (commit,) = [h for h in DeltaTable(out).history() if h["operation"] == "WRITE"]
    assert commit["ddflow.upper"] == str(2**63 - 1)


def test_schema_picks_and_types_columns(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"k": ["a", "b"], "x": [1, 2], "y": [0.5, 1.5]}))
    flow = dd.Dataflow()
    rows = dd.io.deltalake.read(flow, uri, schema={"x": "float64", "k": "str"})
    assert rows.columns == ("x", "k")
    cap = rows.capture()
    flow.run()
    assert multiset(cap.state(), ["x", "k"]) == Counter({(1.0, "a"): 1, (2.0, "b"): 1})


def test_bad_rows_are_errors_naming_table_version_row_and_column(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"k": ["a", "b"], "x": ["1", "2"]}))
    flow = dd.Dataflow()

    def check(version: int) -> None:
        pass

    steps = [
        lambda: write_deltalake(
            uri, pa.table({"k": ["c", "d", "e"], "x": ["3", "oops", "5"]}), mode="append"
        )
    ]
    Steps(flow, uri, steps, check)
    rows = dd.io.deltalake.read(flow, uri, schema={"k": "str", "x": "int64"}, watch=True)
    cap = rows.capture(errors="collect")
    flow.run()
    assert multiset(cap.state(), ["k", "x"]) == Counter(
        {("a", 1): 1, ("b", 2): 1, ("c", 3): 1, ("e", 5): 1}
    )
    (error,) = flow.errors().to_pylist()
    assert f"deltalake table {uri!r}, version 1, file " in error["message"]
    assert "row 2, column 'x'" in error["message"]
    assert "'oops' does not convert to int64" in error["message"]
    assert error["values"] == "x='oops'" and error["diff"] == 1


def test_time_column_gives_times_and_refuses_removals(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"k": ["a", "b"], "t": [5, 7]}))
    flow = dd.Dataflow()
    steps = [
        lambda: write_deltalake(uri, pa.table({"k": ["c"], "t": [9]}), mode="append"),
        lambda: DeltaTable(uri).delete("k = 'a'"),
    ]
    Steps(flow, uri, steps, lambda version: None)
    rows = dd.io.deltalake.read(flow, uri, watch=True, time_column="t")
    cap = rows.capture(errors="collect")
    with pytest.raises(dd.io.SourceError, match=r"version 2: the version removes rows"):
        flow.run()
    updates = cap.updates()
    assert sorted(zip(updates["k"].to_pylist(), updates["time"].to_pylist(), strict=True)) == [
        ("a", 5),
        ("b", 7),
        ("c", 9),
    ]


def test_a_missing_table_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(dd.io.SourceError, match=r"deltalake.read\(.*nothing"):
        dd.io.deltalake.read(dd.Dataflow(), str(tmp_path / "nothing"))


def test_keyed_sink_upserts_and_deletes_by_key(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    flow = dd.Dataflow()
    session, c = flow.new_input({"id": "int64", "v": "str"})
    sink = dd.io.deltalake.write(c, out, primary_key=["id"])
    history = [
        [((1, "a"), 1), ((2, "b"), 1)],
        [((1, "a"), -1), ((1, "A"), 1), ((3, "c"), 1)],
        [((2, "b"), -1)],
        [((3, "c"), 1)],  # a second row for key 3: the key stays while either is there
        [((3, "c"), -1)],
        [((3, "c"), -1)],
    ]
    expected: list[set[tuple[int, str]]] = [
        {(1, "a"), (2, "b")},
        {(1, "A"), (2, "b"), (3, "c")},
        {(1, "A"), (3, "c")},
        {(1, "A"), (3, "c")},
        {(1, "A"), (3, "c")},
        {(1, "A")},
    ]
    for t, (updates, want) in enumerate(zip(history, expected, strict=True)):
        for record, diff in updates:
            session.update_at(record, time=t, diff=diff)
        session.advance_to(t + 1)
        flow.run_until(t + 1)
        got = {(r["id"], r["v"]) for r in table_at(out).to_pylist()}
        assert got == want, t
    assert sink.commits == len(history) - 1  # time 3 changes no row of the table


def _model(
    history: list[list[tuple[tuple[Any, ...], int]]],
) -> list[dict[Any, tuple[Any, ...] | None]]:
    """Per time, each touched key's row after it (None: deleted), by brute force."""
    counts: Counter[Any] = Counter()
    out = []
    for updates in history:
        changes: dict[Any, tuple[Any, ...] | None] = {}
        for record, diff in updates:
            counts[record[0]] += diff
        for record, diff in updates:
            if diff > 0 and counts[record[0]] > 0:
                changes[record[0]] = record
        for record, _ in updates:
            if counts[record[0]] <= 0 and record[0] not in changes:
                changes[record[0]] = None
        out.append(changes)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_keyed_state_matches_a_model(seed: int) -> None:
    rng = random.Random(seed)
    live: Counter[tuple[int, str]] = Counter()
    history = []
    for _ in range(30):
        updates: list[tuple[tuple[int, str], int]] = []
        for _ in range(rng.randint(0, 6)):
            if +live and rng.random() < 0.4:
                record = rng.choice(sorted(+live))
                updates.append((record, -1))
                live[record] -= 1
            else:
                record = (rng.randint(0, 8), rng.choice("xyz"))
                updates.append((record, 1))
                live[record] += 1
        net: Counter[tuple[int, str]] = Counter()
        for record, diff in updates:
            net[record] += diff
        # Consolidated, as a capture delivers them (a record's diffs at one time summed).
        history.append([(r, d) for r, d in net.items() if d != 0])
    state = KeyedState(["k"], ["k", "v"])
    was_live: set[int] = set()
    for updates, changes in zip(history, _model(history), strict=True):
        table = pa.table(
            {
                "k": pa.array([r[0] for r, _ in updates], pa.int64()),
                "v": pa.array([r[1] for r, _ in updates], pa.string()),
                "diff": pa.array([d for _, d in updates], pa.int64()),
            }
        )
        upserts, deletes = state.apply(table)
        want_up = {k: v for k, v in changes.items() if v is not None}
        got_up = {r["k"]: (r["k"], r["v"]) for r in upserts.to_pylist()}
        assert got_up == want_up
        want_del = {k for k, v in changes.items() if v is None and k in was_live}
        assert set(deletes["k"].to_pylist()) == want_del
        was_live = (was_live | set(want_up)) - want_del
        assert {k for (k,) in state.counts} == was_live


def test_a_column_delta_cannot_hold_is_a_clear_error(tmp_path: Path) -> None:
    flow = dd.Dataflow()
    session, c = flow.new_input({"k": "int64", "d": "duration[us]"})
    dd.io.deltalake.write(c, str(tmp_path / "out"))
    session.update_at((1, datetime.timedelta(seconds=3)), time=0)
    session.advance_to(1)
    with pytest.raises(dd.SchemaTypeError, match=r"column 'd' is duration\[us\], which Delta"):
        flow.run_until(1)


def test_partition_values_that_need_escaping(tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"k": [1, 2, 3], "p": ["a b", "c/d", "é%"]}), partition_by=["p"])
    flow = dd.Dataflow()
    captures: list[dd.Capture] = []

    def check(version: int) -> None:
        expected = multiset(table_at(uri, version), ["k", "p"])
        assert multiset(captures[0].state(), ["k", "p"]) == expected, version

    steps = [
        lambda: write_deltalake(uri, pa.table({"k": [4], "p": ["a b"]}), mode="append"),
        lambda: DeltaTable(uri).delete("k = 1 or k = 3"),
    ]
    Steps(flow, uri, steps, check)
    captures.append(dd.io.deltalake.read(flow, uri, watch=True).capture())
    flow.run()
    assert multiset(captures[0].state(), ["k", "p"]) == Counter({(2, "c/d"): 1, (4, "a b"): 1})


def test_a_null_key_is_one_key(tmp_path: Path) -> None:
    out = str(tmp_path / "out")
    flow = dd.Dataflow()
    session, c = flow.new_input({"k": "str", "v": "int64"})
    dd.io.deltalake.write(c, out, primary_key=["k"])
    steps = [
        [((None, 1), 1), (("a", 1), 1)],
        [((None, 1), -1), ((None, 2), 1)],
        [((None, 2), -1)],
    ]
    expected = [{(None, 1), ("a", 1)}, {(None, 2), ("a", 1)}, {("a", 1)}]
    for t, (updates, want) in enumerate(zip(steps, expected, strict=True)):
        for record, diff in updates:
            session.update_at(record, time=t, diff=diff)
        session.advance_to(t + 1)
        flow.run_until(t + 1)
        rows = [(r["k"], r["v"]) for r in table_at(out).to_pylist()]
        assert len(rows) == len(want) and set(rows) == want, t
