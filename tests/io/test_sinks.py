"""File sinks: every sink's files, read back, hold exactly the updates of the collection.

A group-by over a directory of CSV files runs to the end into a CSV, a JSON lines and a
Parquet sink; each sink's files must tile the completed times, and the updates they hold must
accumulate to what DuckDB computes from all the files. Driven by hand (``run_until``), a sink
writes one file per completed range that holds updates.
"""

from __future__ import annotations

import datetime
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from tests.io.sinkfiles import final_state, read_sink

import ddflow as dd
from ddflow.io.filesink import END

pytestmark = pytest.mark.timeout(60)


def _orders(directory: Path, files: int = 3, rows: int = 50) -> None:
    directory.mkdir()
    for f in range(files):
        lines = ["region,qty,price"]
        lines += [f"r{(f * rows + i) % 7},{i % 5 + 1},{(i * 37) % 100 / 4}" for i in range(rows)]
        (directory / f"part{f}.csv").write_text("\n".join(lines) + "\n")


def _expected(directory: Path) -> Counter[tuple[Any, ...]]:
    query = f"""
        select region, sum(qty)::bigint as qty, count(*)::bigint as n
        from read_csv('{directory}/*.csv', header=true) group by region
    """
    return Counter({row: 1 for row in duckdb.sql(query).fetchall()})


@pytest.mark.parametrize("fmt", ["csv", "jsonlines", "parquet"])
def test_sink_holds_the_recompute_of_the_sources_final_state(tmp_path: Path, fmt: str) -> None:
    _orders(tmp_path / "in")
    flow = dd.Dataflow()
    orders = dd.io.csv.read(flow, tmp_path / "in")
    per_region = orders.group_by("region").agg(qty=dd.sum("qty"), n=dd.count())
    sink = getattr(dd.io, fmt).write(per_region, tmp_path / "out")
    flow.run()
    ranges, rows = read_sink(tmp_path / "out")
    assert ranges[-1][1] == END
    assert [f.name for f in sink.files] == sorted(p.name for p in (tmp_path / "out").iterdir())
    assert final_state(rows) == _expected(tmp_path / "in")


def test_a_sink_driven_by_hand_writes_one_file_per_completed_range(tmp_path: Path) -> None:
    flow = dd.Dataflow()
    schema = {"k": "str", "d": "date32", "x": "float64"}
    session, c = flow.new_input(schema)
    dd.io.parquet.write(c, tmp_path / "out")
    day = datetime.date(2024, 5, 1)
    session.update_batch(pa.table({"k": ["a", "b"], "d": [day, day], "x": [1.0, None]}), times=3)
    session.advance_to(5)
    flow.run_until(5)
    session.advance_to(9)
    flow.run_until(9)  # nothing new: no file
    session.update_batch(pa.table({"k": ["a"], "d": [day], "x": [1.0]}), times=10, diffs=-1)
    session.advance_to(12)
    flow.run_until(12)
    ranges, rows = read_sink(tmp_path / "out")
    assert ranges == [(0, 5), (5, 12)]
    assert rows == [
        {"k": "a", "d": day, "x": 1.0, "time": 3, "diff": 1},
        {"k": "b", "d": day, "x": None, "time": 3, "diff": 1},
        {"k": "a", "d": day, "x": 1.0, "time": 10, "diff": -1},
    ]
    session.close()
    flow.run()
    ranges, _ = read_sink(tmp_path / "out")
    assert ranges[-1] == (12, END)


def test_jsonlines_sink_round_trips_through_the_jsonlines_source(tmp_path: Path) -> None:
    flow = dd.Dataflow()
    session, c = flow.new_input({"s": "str", "n": "int64", "t": "timestamp[ms]"})
    dd.io.jsonlines.write(c, tmp_path / "out")
    when = datetime.datetime(2024, 1, 2, 3, 4, 5)
    strings = pa.array(['quote " and \\ and\nline', None])
    stamps = pa.array([when, None], pa.timestamp("ms"))
    session.update_batch(pa.table({"s": strings, "n": [1, 2], "t": stamps}))
    session.close()
    flow.run()
    flow2 = dd.Dataflow()
    schema = {"s": "str", "n": "int64", "t": "timestamp[ms]"}
    back = dd.io.jsonlines.read(flow2, tmp_path / "out", schema=schema).capture()
    flow2.run()
    assert [(r["s"], r["n"], r["t"]) for r in back.state().to_pylist()] == [
        ('quote " and \\ and\nline', 1, when),
        (None, 2, None),
    ]
