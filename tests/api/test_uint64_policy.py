"""The one uint64 policy of the column boundary (``rust/ddflow-py/src/convert/uint64.rs``, and
``ddflow.dtypes.uint64_as_int64`` on the Python side): the kernel API keeps uint64 record
columns as their own type; engine inputs, captures, expressions, and times and diffs
everywhere read them as int64 where every value fits, and raise
``OverflowError`` naming the first value and its row where one does not."""

from __future__ import annotations

import json

import numpy as np
import pytest

import ddflow as dd
from ddflow import _core, kernels
from ddflow.dtypes import to_column
from ddflow.errors import OverflowError

pytestmark = pytest.mark.timeout(30)

FITS = np.array([3, 2**63 - 1, 0], dtype=np.uint64)
TOO_BIG = np.array([1, 2**63], dtype=np.uint64)


def test_kernels_keep_uint64() -> None:
    assert kernels.as_column(FITS).dtype == np.uint64
    assert kernels.as_column(TOO_BIG).dtype == np.uint64
    out = kernels.sort_values(TOO_BIG[::-1].copy())
    assert out.dtype == np.uint64 and list(out) == [1, 2**63]
    cols, _, _ = kernels.consolidate(
        [TOO_BIG], np.zeros(2, dtype=np.int64), np.ones(2, dtype=np.int64)
    )
    assert cols[0].dtype == np.uint64 and sorted(cols[0].tolist()) == [1, 2**63]


def test_inputs_read_uint64_as_int64() -> None:
    flow = dd.Dataflow()
    inp, c = flow.new_input(("k",))
    cap = c.capture()
    inp.update_batch({"k": FITS}, times=0)
    assert inp.dtypes == {"k": "int64"}
    with pytest.raises(OverflowError, match="does not fit in int64"):
        inp.update_batch({"k": TOO_BIG}, times=0)
    inp.close()
    flow.run()
    assert sorted(r["k"] for r in cap.updates().to_pylist()) == [0, 3, 2**63 - 1]
    assert to_column(FITS, "k").dtype == np.int64


def test_expressions_read_uint64_as_int64() -> None:
    text = json.dumps((dd.col("u") + 0).to_json())
    out = _core.eval_expr(text, {"u": FITS})
    assert out.dtype == np.int64 and list(out) == [3, 2**63 - 1, 0]
    with pytest.raises(OverflowError, match=r"value 9223372036854775808 at row 1"):
        _core.eval_expr(text, {"u": TOO_BIG})


BIG_MSG = r"value 9223372036854775808 at row 1 does not fit in int64"


def test_update_batch_messages_name_the_value_and_row() -> None:
    """Columns, diffs and times of update_batch: uint64 that fits is read as int64; the
    first value that does not is named with its row (the same words as the native module)."""
    flow = dd.Dataflow()
    inp, c = flow.new_input(("k",))
    cap = c.capture()
    two = np.array([1, 2], dtype=np.int64)
    with pytest.raises(OverflowError, match=r"column 'k': " + BIG_MSG):
        inp.update_batch({"k": TOO_BIG}, times=0)
    with pytest.raises(OverflowError, match=r"diffs: " + BIG_MSG):
        inp.update_batch({"k": two}, times=0, diffs=TOO_BIG)
    with pytest.raises(OverflowError, match=r"times: " + BIG_MSG):
        inp.update_batch({"k": two}, times=TOO_BIG)
    inp.update_batch(
        {"k": two},
        times=np.array([0, 1], dtype=np.uint64),
        diffs=np.array([1, 3], dtype=np.uint64),
    )
    inp.close()
    flow.run()
    rows = sorted((r["k"], r["time"], r["diff"]) for r in cap.updates().to_pylist())
    assert rows == [(1, 0, 1), (2, 1, 3)]


def test_native_engine_side_reads_uint64_as_int64() -> None:
    """The native module decides the same without the Python package in front: a
    capture's columns, times and diffs."""
    times = np.zeros((2, 1), dtype=np.int64)
    ones = np.ones(2, dtype=np.int64)
    for args, what in [
        (([TOO_BIG], times, ones), "capture: column 0"),
        (([ones], TOO_BIG, ones), "capture"),
        (([ones], times, TOO_BIG), "capture: diffs"),
    ]:
        state = _core.CaptureState("cap", ["k"], 1, "history")
        with pytest.raises(OverflowError, match=f"{what}: {BIG_MSG}"):
            state.absorb(*args, [[1]])
    # Narrower unsigned ints always fit and are widened; uint64 that fits is int64.
    state = _core.CaptureState("cap", ["k"], 1, "history")
    state.absorb(
        [np.array([7, 5], dtype=np.uint8)], times.astype(np.uint32), ones.astype(np.uint16), [[1]]
    )
    state.absorb([np.array([2**63 - 1], dtype=np.uint64)], times[:1], ones[:1], [[1]])
    cols, t, d = state.kept()
    assert cols[0].dtype == np.int64 and sorted(cols[0].tolist()) == [5, 7, 2**63 - 1]
    assert t.dtype == np.int64 and d.dtype == np.int64


def test_kernel_api_keeps_uint64_and_checks_the_rest() -> None:
    """The kernel API keeps uint64 record columns (traces keyed by them, read back as
    uint64); its times and diffs are int64, so the facade checks uint64 ones like the
    engine does, and the raw functions take int64 only."""
    tr = kernels.Trace.from_columns([TOO_BIG, np.array([1.5, 2.5])], key_columns=1)
    assert tr.dtypes == ["uint64", "float64"]
    cols, _, _ = tr.to_columns()
    assert cols[0].dtype == np.uint64 and sorted(cols[0].tolist()) == [1, 2**63]
    with pytest.raises(OverflowError, match=f"times: {BIG_MSG}"):
        kernels.as_times(TOO_BIG)
    with pytest.raises(OverflowError, match=f"diffs: {BIG_MSG}"):
        kernels.as_diffs(TOO_BIG)
    with pytest.raises(dd.SchemaTypeError, match=r"diffs must be int64"):
        _core.consolidate([FITS], np.zeros(3, dtype=np.int64), FITS)
    with pytest.raises(dd.SchemaTypeError, match=r"expected int64, uint64, float64, bool or str\)"):
        _core.consolidate([np.array([1j])], np.zeros(1, dtype=np.int64), np.ones(1, dtype=np.int64))


def test_expressions_name_only_engine_dtypes() -> None:
    """Expressions see the engine's dtypes: uint64 is never one of them, so an unsupported
    dtype's message does not offer it."""
    text = json.dumps((dd.col("u") + 0).to_json())
    with pytest.raises(dd.SchemaTypeError, match=r"expected int64, float64, bool or str\)"):
        _core.eval_expr(text, {"u": np.array([1j])})
    out = _core.eval_expr(text, {"u": np.array([200, 3], dtype=np.uint8)})
    assert out.dtype == np.int64 and list(out) == [200, 3]
