"""File sources: schemas (given or inferred), bad rows as error updates, ``time_column``.

Each test writes small files, reads them with ``dd.io.<format>.read`` inside a dataflow,
runs it to the end (``flow.run()``: every source ends, inputs close) and checks the captured
collection against the files' rows, and ``flow.errors()`` against the rows that do not fit.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ddflow as dd

pytestmark = pytest.mark.timeout(60)


def _run(collection: dd.Collection) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Runs the collection's dataflow to the end; its final rows and the error updates."""
    capture = collection.capture(errors="collect")
    flow = collection.flow
    assert isinstance(flow, dd.Dataflow)
    flow.run()
    return capture.state().to_pylist(), flow.errors().to_pylist()


def _csv(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_csv_types_inferred_from_the_first_file(tmp_path: Path) -> None:
    _csv(tmp_path / "a.csv", "k,x,y,d\nu,1,1.5,2024-01-02\nv,2,,2024-01-03\n")
    _csv(tmp_path / "b.csv", "k,x,y,d\nw,3,2.5,2024-01-04\n")
    flow = dd.Dataflow()
    rows = dd.io.csv.read(flow, tmp_path)
    state, errors = _run(rows)
    assert errors == []
    assert rows.columns == ("k", "x", "y", "d")
    assert state == [
        {"k": "u", "x": 1, "y": 1.5, "d": datetime.date(2024, 1, 2), "diff": 1},
        {"k": "v", "x": 2, "y": None, "d": datetime.date(2024, 1, 3), "diff": 1},
        {"k": "w", "x": 3, "y": 2.5, "d": datetime.date(2024, 1, 4), "diff": 1},
    ]


def test_schema_as_names_types_or_a_pyarrow_schema(tmp_path: Path) -> None:
    path = _csv(tmp_path / "a.csv", "a,b,c\n1,x,7\n2,y,8\n")
    for schema in [("c", "a"), {"c": "int32", "a": "float64"}, pa.schema([("c", pa.int16())])]:
        flow = dd.Dataflow()
        rows = dd.io.csv.read(flow, path, schema=schema)
        state, errors = _run(rows)
        assert errors == []
        assert rows.columns == tuple(schema.names if isinstance(schema, pa.Schema) else schema)
        assert [r["c"] for r in state] == [7, 8]
    assert state[0] == {"c": 7, "diff": 1}


def test_csv_bad_rows_are_error_updates_naming_file_row_and_column(tmp_path: Path) -> None:
    path = _csv(tmp_path / "a.csv", "k,v\na,1\nb,oops\nc,3,extra\nd,4\ne,-9223372036854775808\n")
    flow = dd.Dataflow()
    rows = dd.io.csv.read(flow, path, schema={"k": "str", "v": "int64"})
    state, errors = _run(rows)
    assert [(r["k"], r["v"]) for r in state] == [("a", 1), ("d", 4)]
    messages = sorted(e["message"] for e in errors)
    assert len(messages) == 3
    assert f"{path}, row 2, column 'v': 'oops' does not convert to int64" in messages[0]
    assert f"{path}, row 3: 3 values, the header has 2" in messages[1]
    # A value the input refuses (int64's null word) names the row, the input and the column.
    assert f"{path}, row 5:" in messages[2] and "column 'v'" in messages[2]
    assert all(e["diff"] == 1 for e in errors)
    by_row = {e["message"].split(", row ")[1][0]: e["values"] for e in errors}
    assert by_row["2"] == "v='oops'"


def test_errors_are_data_downstream(tmp_path: Path) -> None:
    path = _csv(tmp_path / "a.csv", "v\n1\nx\n")
    flow = dd.Dataflow()
    rows = dd.io.csv.read(flow, path, schema={"v": "int64"})
    counted = rows.group_by().agg(n=dd.count()).capture()
    flow.run()
    with pytest.raises(dd.DataError, match="row 2, column 'v'"):
        counted.state()
    assert counted.errors().num_rows == 1


def test_a_column_missing_from_a_file_is_one_error_for_its_rows(tmp_path: Path) -> None:
    _csv(tmp_path / "a.csv", "k,v\na,1\n")
    _csv(tmp_path / "b.csv", "k\nb\nc\n")
    flow = dd.Dataflow()
    state, errors = _run(dd.io.csv.read(flow, tmp_path))
    assert state == [{"k": "a", "v": 1, "diff": 1}]
    (error,) = errors
    assert "b.csv, row 1, column 'v': column 'v' is missing (rows 1-2)" in error["message"]
    assert error["diff"] == 2


def test_jsonlines_types_bad_lines_and_columns(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    lines = [
        {"k": "a", "v": 1, "d": "2024-01-02"},
        {"k": "b", "v": "two", "d": "2024-01-03"},
        {"k": "c", "d": "2024-01-04", "ignored": [1]},
        {"k": "d", "v": 4, "d": "not a date"},
    ]
    text = "\n".join(json.dumps(line) for line in lines[:2]) + "\n\n{nope\n"
    path.write_text(text + "\n".join(json.dumps(line) for line in lines[2:]) + "\n")
    flow = dd.Dataflow()
    schema = {"k": "str", "v": "int64", "d": "date32"}
    state, errors = _run(dd.io.jsonlines.read(flow, path, schema=schema))
    assert [(r["k"], r["v"], r["d"]) for r in state] == [
        ("a", 1, datetime.date(2024, 1, 2)),
        ("c", None, datetime.date(2024, 1, 4)),
    ]
    messages = sorted(e["message"] for e in errors)
    assert len(messages) == 3
    assert f"{path}, row 2, column 'v':" in messages[0]
    assert f"{path}, row 4: not JSON" in messages[1]
    assert f"{path}, row 6, column 'd': 'not a date' does not convert to date32" in messages[2]


def test_jsonlines_inferred_schema(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_text('{"k": "a", "v": 1.5, "n": 2, "b": true}\n')
    flow = dd.Dataflow()
    state, errors = _run(dd.io.jsonlines.read(flow, tmp_path / "a.jsonl"))
    assert errors == []
    assert state == [{"k": "a", "v": 1.5, "n": 2, "b": True, "diff": 1}]


def test_parquet_schema_cast_and_bad_values(tmp_path: Path) -> None:
    pq.write_table(pa.table({"k": ["a", "b", "c"], "v": ["1", "x", "3"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"k": ["d"], "v": ["4"]}), tmp_path / "b.parquet")
    flow = dd.Dataflow()
    rows = dd.io.parquet.read(flow, tmp_path, schema={"k": "str", "v": "int64"})
    state, errors = _run(rows)
    assert [(r["k"], r["v"]) for r in state] == [("a", 1), ("c", 3), ("d", 4)]
    (error,) = errors
    assert "a.parquet, row 2, column 'v': 'x' does not convert to int64" in error["message"]


def test_parquet_inferred_schema_keeps_logical_types(tmp_path: Path) -> None:
    table = pa.table(
        {
            "ts": pa.array([datetime.datetime(2024, 1, 2, 3)], pa.timestamp("us")),
            "n": pa.array([5], pa.int32()),
        }
    )
    pq.write_table(table, tmp_path / "a.parquet")
    flow = dd.Dataflow()
    state, errors = _run(dd.io.parquet.read(flow, tmp_path / "a.parquet"))
    assert errors == []
    assert state == [{"ts": datetime.datetime(2024, 1, 2, 3), "n": 5, "diff": 1}]


def test_time_column_gives_each_rows_time(tmp_path: Path) -> None:
    path = _csv(tmp_path / "a.csv", "t,v\n1,10\n3,30\n2,20\n,40\n-1,50\n")
    flow = dd.Dataflow()
    rows = dd.io.csv.read(flow, path, schema={"t": "int64", "v": "int64"}, time_column="t")
    capture = rows.capture(errors="collect")
    flow.run()
    assert [(r["v"], r["time"]) for r in capture.updates().to_pylist()] == [
        (10, 1),
        (20, 2),
        (30, 3),
    ]
    messages = sorted(e["message"] for e in flow.errors().to_pylist())
    assert len(messages) == 2
    assert "row 4, column 't': the time column holds None" in messages[0]
    assert "row 5, column 't': the time column holds -1" in messages[1]


def test_time_column_timestamps_are_milliseconds(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text('{"ts": "2024-01-01 00:00:01", "v": 1}\n')
    flow = dd.Dataflow()
    schema = {"ts": "timestamp[us]", "v": "int64"}
    rows = dd.io.jsonlines.read(flow, path, schema=schema, time_column="ts")
    capture = rows.capture()
    flow.run()
    (update,) = capture.updates().to_pylist()
    assert update["time"] == 1704067201000


def test_late_rows_of_a_timed_source_are_errors(tmp_path: Path) -> None:
    _csv(tmp_path / "1.csv", "t,v\n5,1\n7,2\n")
    _csv(tmp_path / "2.csv", "t,v\n6,3\n9,4\n")
    flow = dd.Dataflow()
    rows = dd.io.csv.read(flow, tmp_path, time_column="t")
    capture = rows.capture(errors="collect")
    source = flow._loop.sources[0]
    source.rows_per_poll = 1  # type: ignore[attr-defined]
    flow.run()
    assert sorted(r["v"] for r in capture.state().to_pylist()) == [1, 2, 4]
    (error,) = flow.errors().to_pylist()
    assert "2.csv, row 1: time 6 is behind the frontier 7 (a late row)" in error["message"]
    assert error["time"] == 7


def test_reader_arguments_are_checked(tmp_path: Path) -> None:
    flow = dd.Dataflow()
    with pytest.raises(dd.InvalidValueError, match="no such file"):
        dd.io.csv.read(flow, tmp_path / "missing.csv")
    with pytest.raises(dd.InvalidValueError, match="watch=True needs a directory"):
        dd.io.csv.read(flow, tmp_path / "missing", watch=True)
    with pytest.raises(dd.SchemaTypeError, match="no file to infer the schema from"):
        dd.io.csv.read(flow, tmp_path, watch=True)
    _csv(tmp_path / "a.csv", "k\nx\n")
    with pytest.raises(dd.PlanError, match="time_column 't' is not a column"):
        dd.io.csv.read(flow, tmp_path, time_column="t")
    with pytest.raises(dd.SchemaTypeError, match="it must be an integer, timestamp or date"):
        dd.io.csv.read(flow, tmp_path, time_column="k")


def test_text_that_is_not_utf8_is_an_error_for_its_row(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_bytes(b"k,v\na,1\n\xff\xfe,2\nc,3\n")
    flow = dd.Dataflow()
    state, errors = _run(dd.io.csv.read(flow, tmp_path, schema={"k": "str", "v": "int64"}))
    assert [r["k"] for r in state] == ["a", "c"]
    (error,) = errors
    assert "a.csv, row 2, column 'k': text that is not valid UTF-8" in error["message"]
    assert error["values"] == "k=b'\\xff\\xfe', v=2"


def test_a_file_that_does_not_read_stops_the_run_naming_it(tmp_path: Path) -> None:
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "a.parquet")
    (tmp_path / "b.parquet").write_bytes(b"not parquet at all")
    flow = dd.Dataflow()
    rows = dd.io.parquet.read(flow, tmp_path)
    capture = rows.capture()
    with pytest.raises(dd.SourceError, match=f"parquet source .*reading {tmp_path}/b.parquet"):
        flow.run()
    assert [r["x"] for r in capture.state().to_pylist()] == [1, 2]


def test_a_source_knows_its_size_and_progress(tmp_path: Path) -> None:
    _csv(tmp_path / "a.csv", "v\n1\n2\n")
    _csv(tmp_path / "b.csv", "v\n3\n")
    flow = dd.Dataflow()
    rows = dd.io.csv.read(flow, tmp_path)
    (source,) = flow._loop.sources
    size = sum(p.stat().st_size for p in tmp_path.iterdir())
    assert (source.size(), source.progress(), source.ended) == (size, 0, False)
    state, _ = _run(rows)
    assert (source.size(), source.progress(), source.ended) == (size, size, True)
    flow.run()  # every source has ended: nothing more to do
    assert len(state) == 3
