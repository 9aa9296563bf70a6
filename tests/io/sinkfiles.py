"""Reading a file sink's directory back, checking the promises its file names make.

A sink's files are named ``part-<lower>-<upper><suffix>``; together they must cover the times
from 0 to the last ``upper`` without gap or overlap, hold only updates at times inside their
range, and leave no temporary file behind.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

_NAME = re.compile(r"part-(\d{19})-(\d{19})(\.\w+)")


def _read(path: Path, suffix: str) -> pa.Table:
    if suffix == ".parquet":
        return pq.read_table(path)
    if suffix == ".csv":
        return pa_csv.read_csv(path)
    if path.stat().st_size == 0:
        return pa.table({})
    return pa_json.read_json(path)


def read_sink(directory: Path) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
    """The ranges of the sink's files in order and all their rows; asserts that the ranges
    tile ``[0, last upper)``, that each file's times are inside its range and that nothing
    else is in the directory."""
    names = sorted(p.name for p in directory.iterdir())
    assert all(_NAME.fullmatch(n) for n in names), names
    ranges: list[tuple[int, int]] = []
    rows: list[dict[str, Any]] = []
    for name in names:
        m = _NAME.fullmatch(name)
        assert m is not None
        lower, upper, suffix = int(m[1]), int(m[2]), m[3]
        assert lower == (ranges[-1][1] if ranges else 0), (ranges, name)
        assert lower < upper
        ranges.append((lower, upper))
        table = _read(directory / name, suffix)
        for row in table.to_pylist():
            assert lower <= row["time"] < upper, (name, row)
            rows.append(row)
    return ranges, rows


def final_state(rows: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    """The collection the updates accumulate to: record -> count (zero counts dropped)."""
    total: Counter[tuple[Any, ...]] = Counter()
    for row in rows:
        record = tuple(v for k, v in row.items() if k not in ("time", "diff"))
        total[record] += row["diff"]
    return Counter({k: v for k, v in total.items() if v})
