"""``Capture.updates()`` against a recompute from scratch: the consolidated updates, in the
order pyarrow's own sort gives (time, then record). The history is stored in 32 bits per
word while values fit and sorted in Rust for int64 and bool records, so the cases cover
values on both sides of the 32-bit range, negative values, large diffs, tuple times, and
the dtypes that fall back to the sort in Python (strings, floats, nulls). Reading a capture
must not import pandas (checked in a fresh interpreter)."""

from __future__ import annotations

import random
import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest

import ddflow as dd

BIG = [0, 1, -1, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**40, -(2**62)]


def _value(rng: random.Random, dtype: str, wide: bool) -> Any:
    if dtype == "int64":
        return rng.choice(BIG) if wide and rng.random() < 0.3 else rng.randrange(-3, 4)
    if dtype == "bool":
        return rng.random() < 0.5
    if dtype == "float64":
        return rng.choice([0.5, -1.25, 3.0, 1e300])
    return rng.choice(["a", "bb", "", "c"])


def _feed(
    seed: int, dtypes: list[str], rounds: int, wide: bool, dims: int
) -> list[tuple[tuple[Any, ...], Any, int]]:
    rng = random.Random(seed)
    out = []
    for t in range(rounds):
        for _ in range(rng.randrange(6)):
            rec = tuple(_value(rng, d, wide) for d in dtypes)
            diff = rng.choice([1, -1, 2, 2**40] if wide else [1, -1, 2])
            time = t if dims == 1 else (t, rng.randrange(3))
            out.append((rec, time, diff))
    return out


def _oracle(ups: list[tuple[tuple[Any, ...], Any, int]], names: list[str]) -> list[dict[str, Any]]:
    """Sums per (record, time), zeros dropped, sorted by time then record by pyarrow."""
    acc: dict[tuple[tuple[Any, ...], Any], int] = {}
    for rec, time, diff in ups:
        acc[(rec, time)] = acc.get((rec, time), 0) + diff
    rows = [
        {**dict(zip(names, rec, strict=True)), "time": time, "diff": d}
        for (rec, time), d in acc.items()
        if d != 0
    ]
    if not rows:
        return []
    table = pa.Table.from_pylist(rows)
    keys = [("time", "ascending")] if not isinstance(rows[0]["time"], tuple) else []
    table = table.sort_by(keys + [(n, "ascending") for n in names])
    if isinstance(rows[0]["time"], tuple):
        got = [{**r, "time": tuple(r["time"])} for r in table.to_pylist()]
        return sorted(got, key=lambda r: r["time"])  # stable: record order kept within a time
    return table.to_pylist()


def _run(
    dtypes: list[str], ups: list[tuple[tuple[Any, ...], Any, int]], rounds: int, dims: int
) -> list[dict[str, Any]]:
    names = [f"c{i}" for i in range(len(dtypes))]
    flow = dd.Dataflow()
    inp, coll = flow.new_input(dict(zip(names, dtypes, strict=True)))
    cap = coll.capture()
    for t in range(rounds):
        for rec, time, diff in ups:
            if (time if dims == 1 else time[0]) == t:
                inp.update_at(rec, time, diff)
        inp.advance_to(t + 1 if dims == 1 else (t + 1, 0))
        flow.run_until(t + 1 if dims == 1 else (t + 1, 0))
    rows = cap.updates().to_pylist()
    for r in rows:
        if isinstance(r["time"], list):
            r["time"] = tuple(r["time"])
    return rows


@pytest.mark.parametrize(
    "dtypes",
    [["int64"], ["int64", "int64"], ["bool", "int64"], ["str", "int64"], ["float64"]],
)
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", range(3))
def test_updates_match_a_recompute(dtypes: list[str], wide: bool, seed: int) -> None:
    ups = _feed(seed, dtypes, 15, wide, dims=1)
    names = [f"c{i}" for i in range(len(dtypes))]
    assert _run(dtypes, ups, 15, dims=1) == _oracle(ups, names)


@pytest.mark.parametrize("seed", range(3))
def test_tuple_times_match_a_recompute(seed: int) -> None:
    ups = _feed(seed, ["int64", "bool"], 8, True, dims=2)
    assert _run(["int64", "bool"], ups, 8, dims=2) == _oracle(ups, ["c0", "c1"])


def test_nulls_fall_back_to_the_python_sort() -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"k": "int64"})
    cap = coll.capture()
    for t, k in enumerate([3, None, -2, None, 2**35]):
        inp.update_at((k,), t, 1)
    inp.advance_to(9)
    flow.run_until(9)
    inp.update_batch({"k": [5, None, 1]}, times=[9, 9, 9])
    inp.advance_to(10)
    flow.run_until(10)
    got = [(r["time"], r["k"]) for r in cap.updates().to_pylist()]
    assert got == [(0, 3), (1, None), (2, -2), (3, None), (4, 2**35), (9, 1), (9, 5), (9, None)]


def test_reading_a_capture_does_not_import_pandas() -> None:
    code = (
        "import sys, ddflow as dd\n"
        "flow = dd.Dataflow()\n"
        "inp, coll = flow.new_input({'k': 'int64', 'b': 'bool', 'x': 'float64'})\n"
        "cap = coll.capture()\n"
        "inp.update_batch({'k': [1, 2], 'b': [True, False], 'x': [0.5, 1.5]}, times=[0, 1])\n"
        "inp.advance_to(2); flow.run_until(2)\n"
        "t = cap.updates(); s = cap.state(); a = cap.at(1)\n"
        "assert t.num_rows == 2 and s.num_rows == 2, (t, s)\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("schema", "rows", "in_rust"),
    [
        ({"k": "int64", "b": "bool"}, {"k": [2, -1], "b": [True, False]}, True),
        ({"k": "int64"}, {"k": [2, None]}, False),
        ({"s": "str"}, {"s": ["b", "a"]}, False),
        ({"x": "float64"}, {"x": [0.5, -1.0]}, False),
    ],
)
def test_which_histories_rust_sorts(schema: dict[str, str], rows: Any, in_rust: bool) -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input(schema)
    cap = coll.capture()
    inp.update_batch(rows, times=[1, 0])
    inp.advance_to(2)
    flow.run_until(2)
    assert cap.updates().num_rows == 2
    assert cap._native is not None
    assert cap._native.kept_ordered()[3] is in_rust
