"""Arrow arrays into the kernels: numeric columns without nulls cross as views of their Arrow
buffers (no copy), string record columns as their offsets and bytes (no ``str`` per value),
and every layout (sliced, chunked, strings, narrower types) gives the exact answer of a
pure-Python reference."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ddflow import kernels as K
from ddflow.dtypes import Utf8Column
from ddflow.errors import InvalidValueError, SchemaTypeError


def _buffer(arr: pa.Array, dtype: Any) -> np.ndarray:
    """The whole values buffer of ``arr`` (from its first byte, offset ignored) as numpy."""
    return np.frombuffer(arr.buffers()[1], dtype=dtype)


NUMERIC = [
    (pa.int64(), np.int64, K.as_column),
    (pa.float64(), np.float64, K.as_column),
    (pa.uint64(), np.uint64, K.as_column),
    (pa.int64(), np.int64, K.as_diffs),
    (pa.int64(), np.int64, K.as_times),
]


@pytest.mark.parametrize(
    ("typ", "dtype", "convert"),
    NUMERIC,
    ids=["column-int64", "column-float64", "column-uint64", "diffs", "times"],
)
def test_numeric_arrays_are_not_copied(typ: pa.DataType, dtype: Any, convert: Any) -> None:
    values = np.arange(1, 21).astype(dtype)
    arr = pa.array(values, type=typ)
    for given_, chunk in [
        (arr, arr),
        (pa.chunked_array([arr]), arr),
        (arr.slice(3, 10), arr),
        (pa.chunked_array([arr.slice(5)]), arr),
    ]:
        out = convert(given_)
        assert out.dtype == dtype
        assert np.shares_memory(out, _buffer(chunk, dtype)), type(given_).__name__
        np.testing.assert_array_equal(out, given_.to_numpy())


def test_the_buffer_itself_reaches_the_kernel() -> None:
    """The address numpy sees is the Arrow buffer's (offset of a slice included)."""
    arr = pa.array(np.arange(100, dtype=np.int64)).slice(10, 50)
    out = K.as_column(arr)
    assert out.ctypes.data == arr.buffers()[1].address + 10 * 8
    assert not out.flags.writeable  # a view of Arrow's immutable memory


def test_copies_where_the_layout_needs_one() -> None:
    """Several chunks, narrower ints and bools are converted (and still exact)."""
    a, b = pa.array([3, 1], type=pa.int64()), pa.array([2], type=pa.int64())
    out = K.as_column(pa.chunked_array([a, b]))
    assert not np.shares_memory(out, _buffer(a, np.int64))
    np.testing.assert_array_equal(out, [3, 1, 2])
    np.testing.assert_array_equal(K.as_column(pa.array([1, -2], type=pa.int32())), [1, -2])
    assert K.as_column(pa.array([1], type=pa.int16())).dtype == np.int64
    np.testing.assert_array_equal(K.as_column(pa.array([True, False])), [True, False])


def test_nulls_are_refused_naming_the_argument() -> None:
    with pytest.raises(InvalidValueError, match="diffs: 1 null"):
        K.consolidate([pa.array([1, 2])], [0, 0], pa.chunked_array([[1], [None]]))


def _reference(
    keys: list[int], vals: list[str], times: list[int], diffs: list[int]
) -> Counter[tuple[int, str, int]]:
    total: Counter[tuple[int, str, int]] = Counter()
    for k, v, t, d in zip(keys, vals, times, diffs, strict=True):
        total[(k, v, t)] += d
    return Counter({r: d for r, d in total.items() if d != 0})


def _chunked(values: list[Any], typ: pa.DataType, cuts: list[int]) -> pa.ChunkedArray:
    bounds = sorted({0, len(values), *(c % (len(values) + 1) for c in cuts)})
    return pa.chunked_array(
        [pa.array(values[lo:hi], type=typ) for lo, hi in zip(bounds, bounds[1:], strict=False)],
        type=typ,
    )


UPDATES = st.lists(
    st.tuples(
        st.integers(-5, 5),
        st.sampled_from(["", "a", "b", "ü", "long text"]),
        st.integers(0, 3),
        st.integers(-2, 2),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(
    updates=UPDATES,
    cuts=st.lists(st.integers(0, 40), max_size=3),
    lo=st.integers(0, 5),
    string_type=st.sampled_from([pa.string(), pa.large_string()]),
)
def test_consolidate_on_any_arrow_layout_matches_reference(
    updates: list[tuple[int, str, int, int]], cuts: list[int], lo: int, string_type: pa.DataType
) -> None:
    """Strings, chunked and sliced columns: the same answer as a recount of the rows."""
    keys = [u[0] for u in updates]
    vals = [u[1] for u in updates]
    times = [u[2] for u in updates]
    diffs = [u[3] for u in updates]
    table = pa.table(
        {
            "key": _chunked(keys, pa.int64(), cuts),
            "val": _chunked(vals, string_type, cuts),
            "time": _chunked(times, pa.int64(), cuts),
            "diff": _chunked(diffs, pa.int64(), cuts),
        }
    ).slice(lo)
    cols, t, d = K.consolidate([table["key"], table["val"]], table["time"], table["diff"])
    got = Counter(
        {
            (int(k), str(v), int(tt)): int(dd)
            for k, v, tt, dd in zip(cols[0], cols[1], t, d, strict=True)
        }
    )
    assert len(got) == len(d)  # one row per (record, time)
    want = _reference(keys[lo:], vals[lo:], times[lo:], diffs[lo:])
    assert got == want


STRINGS = ["", "a", "b", "ü", "long text", "a"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: pa.array(STRINGS),
        lambda: pa.array(STRINGS, pa.large_string()),
        lambda: pa.array(["x", *STRINGS], pa.string()).slice(1),
        lambda: pa.chunked_array([STRINGS[:2], STRINGS[2:]]),
        lambda: pa.chunked_array([STRINGS], pa.string_view()),
    ],
    ids=["string", "large_string", "sliced", "chunked", "string_view"],
)
def test_arrow_strings_are_read_from_their_buffers(make: Any) -> None:
    """An Arrow string record column crosses as its buffers (no ``str`` per value) and
    consolidates exactly as the same strings in an object array."""
    col = make()
    assert isinstance(K._record_column(col, "c"), Utf8Column)
    keys = np.arange(len(STRINGS)) % 2
    times, diffs = np.zeros(len(STRINGS), np.int64), np.ones(len(STRINGS), np.int64)
    got = K.consolidate([keys, col], times, diffs)
    want = K.consolidate([keys, np.array(STRINGS, dtype=object)], times, diffs)
    for g, w in zip([*got[0], got[1], got[2]], [*want[0], want[1], want[2]], strict=True):
        assert g.tolist() == w.tolist()


def test_a_trace_takes_arrow_and_numpy_strings_alike() -> None:
    """The same interned ids whichever way a string arrives: inserts of both kinds
    consolidate together, and Arrow keys find them."""
    trace = K.Trace(["str", "int64"], key_columns=1)
    trace.insert([pa.array(["ann", "bob", "ann"]), pa.array([1, 2, 1])], diffs=[1, 1, 1])
    trace.insert([np.array(["bob", "cy"], dtype=object), np.array([2, 3])], diffs=[-1, 1])
    cols, _, diffs = trace.read_keys([pa.chunked_array([["ann"], ["bob", "cy", "dan"]])])
    got = {
        (k, v): d
        for k, v, d in zip(cols[0].tolist(), cols[1].tolist(), diffs.tolist(), strict=True)
    }
    assert got == {("ann", 1): 2, ("cy", 3): 1}
    with pytest.raises(SchemaTypeError, match=r"columns\[1\]: dtype str \(Arrow\) does not"):
        trace.insert([pa.array(["ann"]), pa.array(["x"])])


def test_arrow_string_nulls_are_refused() -> None:
    with pytest.raises(InvalidValueError, match=r"columns\[1\]: 1 null values"):
        K.consolidate([[1, 2], pa.array(["a", None])], [0, 0], [1, 1])
