"""The one uint64 policy of the column boundary: the kernel API keeps uint64 columns as
their own type; engine inputs, batch operators and expressions read them as int64 where
every value fits, and raise ``OverflowError`` naming the value where one does not."""

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


def test_batch_operators_read_uint64_as_int64() -> None:
    times = np.zeros(3, dtype=np.int64)
    cols, _, diffs = _core.batch_arrange(([FITS], times, np.ones(3, dtype=np.int64)), [0], 1)
    assert cols[0].dtype == np.int64 and sorted(cols[0].tolist()) == [0, 3, 2**63 - 1]
    assert list(diffs) == [1, 1, 1]
    with pytest.raises(OverflowError, match="does not fit in int64"):
        _core.batch_arrange(([TOO_BIG], times[:2], np.ones(2, dtype=np.int64)), [0], 1)
