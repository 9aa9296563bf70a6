"""``update_batch`` from Arrow-speaking objects: pyarrow, pandas and polars frames and series
(through the Arrow PyCapsule protocol), string columns crossing as Arrow buffers, and the
errors for nulls and malformed strings. Each result is checked against the same batch given
as plain Python lists."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.dtypes import Utf8Column, arrow_utf8_column

NAMES = ["ann", "bob", "", "ann", "zoë", "bob", "日本"]
COUNTS = [1, 2, 3, 4, 5, 6, 7]


def _load(batch: object) -> list[tuple[str, int, int]]:
    """Loads ``batch`` (columns ``name``, ``n``) at time 0; returns the collection at 0."""
    flow = dd.Dataflow()
    inp, coll = flow.new_input(("name", "n"))
    out = coll.capture()
    inp.update_batch(batch, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    t = out.at(0)
    cols = (t["name"].to_pylist(), t["n"].to_pylist(), t["diff"].to_pylist())
    return sorted(zip(*cols, strict=True))


EXPECTED = sorted((s, n, 1) for s, n in zip(NAMES, COUNTS, strict=True))


def test_plain_lists_are_the_reference() -> None:
    assert _load({"name": NAMES, "n": COUNTS}) == EXPECTED


@pytest.mark.parametrize(
    "make",
    [
        lambda: pa.table({"name": NAMES, "n": COUNTS}),
        lambda: pa.record_batch({"name": pa.array(NAMES), "n": pa.array(COUNTS)}),
        lambda: pa.table({"name": pa.array(NAMES, pa.large_string()), "n": COUNTS}),
        lambda: pa.table({"name": pa.array(NAMES, pa.string_view()), "n": COUNTS}),
        lambda: pd.DataFrame({"name": NAMES, "n": COUNTS}),
        lambda: pl.DataFrame({"name": NAMES, "n": COUNTS}),
        lambda: {"name": pl.Series(NAMES), "n": pl.Series(COUNTS)},
        lambda: {"name": pd.Series(NAMES), "n": pd.Series(COUNTS)},
        lambda: {"name": np.array(NAMES, dtype=object), "n": np.array(COUNTS)},
        lambda: {"name": np.array(NAMES), "n": COUNTS},
    ],
    ids=[
        "pyarrow-table",
        "pyarrow-record-batch",
        "pyarrow-large-string",
        "pyarrow-string-view",
        "pandas-frame",
        "polars-frame",
        "polars-series",
        "pandas-series",
        "numpy-object",
        "numpy-unicode",
    ],
)
def test_arrow_speaking_batches_load_like_lists(make: object) -> None:
    assert _load(make()) == EXPECTED  # type: ignore[operator]


def test_chunked_and_sliced_string_columns() -> None:
    chunked = pa.chunked_array([pa.array(NAMES[:3]), pa.array(NAMES[3:])])
    assert _load({"name": chunked, "n": COUNTS}) == EXPECTED
    sliced = pa.array(["x", *NAMES, "y"]).slice(1, len(NAMES))
    assert _load({"name": sliced, "n": COUNTS}) == EXPECTED


def test_strings_cross_as_buffers_not_python_objects() -> None:
    col = arrow_utf8_column(pa.array(NAMES), "test")
    assert isinstance(col, Utf8Column)
    offsets, data, nulls = col._ddflow_utf8
    assert offsets.dtype == np.int64 and data.dtype == np.uint8 and nulls is None
    assert len(col) == len(NAMES) and col[4] == "zoë"
    assert arrow_utf8_column(pa.array([1, 2]), "test") is None


def test_arrow_nulls_cross_as_flags_and_come_back() -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input(("name", "n"), name="people")
    out = coll.capture()
    inp.update_batch({"name": pa.array(["a", None]), "n": [1, 2]}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    rows = sorted(out.state().to_pylist(), key=lambda r: r["n"])
    assert [r["name"] for r in rows] == ["a", None]


def test_malformed_utf8_buffers_are_rejected_naming_the_row() -> None:
    offsets = pa.py_buffer(np.array([0, 1, 3], dtype=np.int32).tobytes())
    data = pa.py_buffer(b"a\xff\xfe")
    bad = pa.Array.from_buffers(pa.string(), 2, [None, offsets, data])
    flow = dd.Dataflow()
    inp, coll = flow.new_input(("name",), name="people")
    out = coll.capture()
    with pytest.raises(dd.InvalidValueError, match=r"row 1 is not valid UTF-8"):
        inp.update_batch({"name": bad}, times=0)
    # Nothing was accepted, and the input still works.
    inp.update_batch({"name": ["ok"]}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert out.at(0)["name"].to_pylist() == ["ok"]


def test_lone_surrogates_still_name_the_value() -> None:
    flow = dd.Dataflow()
    inp, _ = flow.new_input(("name",), name="people")
    with pytest.raises(dd.InvalidValueError, match="not valid Unicode"):
        inp.update_batch({"name": np.array(["a", "\ud800"], dtype=object)}, times=0)


def test_a_million_strings_load_from_arrow() -> None:
    n = 1_000_000
    names = pa.array([f"k{i % 1000}" for i in range(n)])
    flow = dd.Dataflow(log=False)
    inp, coll = flow.new_input(("name",))
    out = coll.count(by="name").capture()
    inp.update_batch({"name": names}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    t = out.at(0)
    assert t.num_rows == 1000 and set(t["count"].to_pylist()) == {1000}


def test_uint64_beyond_int64_is_rejected_not_wrapped() -> None:
    big = np.array([1, 2**63 + 5], dtype=np.uint64)
    flow = dd.Dataflow()
    inp, coll = flow.new_input(("k",), name="keys")
    coll.capture()
    with pytest.raises(dd.OverflowError, match="does not fit in int64"):
        inp.update_batch({"k": pa.array(big)}, times=0)
    # The native boundary checks too (nothing is cast modulo 2^64 below Python's check).
    engine = flow._engine()
    times = np.zeros((2, 1), dtype=np.int64)
    with pytest.raises(dd.OverflowError, match=r"value 9223372036854775813 at row 1"):
        engine.push(inp.node, [big], times, np.ones(2, dtype=np.int64))
