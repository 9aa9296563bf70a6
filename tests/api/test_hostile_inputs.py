"""Hostile inputs on the embedded engine: each ends in a correct result or a clear
``DdflowError`` naming what was wrong (the operator or input, the column, the value), never a
crash, a hang or an error from deep inside Python (``RecursionError``, ``KeyError``).

Sizes, times, diffs and strings at their limits; NaN and signed-zero keys; empty batches;
captures read too early; an input closed twice; 10,000 columns; bytes that are not text;
Unicode column names; batches whose columns, times or diffs disagree in length; expressions
nested too deep or too large once shared parts are written out.
"""

from __future__ import annotations

import datetime
import math
import re
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import ddflow as dd
from ddflow.errors import (
    DdflowError,
    InvalidValueError,
    OverflowError,
    PlanError,
    SchemaTypeError,
    ShapeError,
    TimeError,
)

pytestmark = pytest.mark.timeout(60)

INT64_MAX = 2**63 - 1


def _one_input(columns: Any = ("x",)) -> tuple[dd.Dataflow, dd.InputSession, dd.Collection]:
    flow = dd.Dataflow()
    session, coll = flow.new_input(columns)
    return flow, session, coll


def _run(flow: dd.Dataflow, session: dd.InputSession, until: int = 1) -> None:
    session.advance_to(until)
    flow.run_until(until)


# -- sizes ------------------------------------------------------------------------------------


def test_a_50_mb_string_is_kept_whole() -> None:
    flow, inp, c = _one_input(("s",))
    cap = c.select(n=dd.col("s").str.len_chars(), tail=dd.col("s").str.slice(-3)).capture()
    inp.update_at(("ab" * 25_000_000 + "xyz",), 0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"n": 50_000_003, "tail": "xyz", "diff": 1}]


def test_ten_thousand_columns() -> None:
    names = [f"c{j}" for j in range(10_000)]
    flow, inp, c = _one_input(tuple(names))
    cap = c.select(s=dd.col("c0") + dd.col("c9999")).capture()
    wide = c.count(by=["c1", "c9998"]).capture()
    inp.update_batch({n: np.array([j, j], dtype=np.int64) for j, n in enumerate(names)}, times=0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"s": 9999, "diff": 2}]
    assert wide.at(0).to_pylist() == [{"c1": 1, "c9998": 9998, "count": 2, "diff": 1}]


@pytest.mark.parametrize("depth", [300, 5_000, 100_000])
def test_an_expression_nested_too_deep_is_a_plan_error_naming_the_operator(depth: int) -> None:
    _, _, c = _one_input()
    e = dd.col("x")
    for _ in range(depth):
        e = e + 1
    with pytest.raises(PlanError, match=r"select@.*nests deeper than 256 levels"):
        c.select(y=e)
    with pytest.raises(PlanError, match=r"filter@.*nests deeper than 256 levels"):
        c.filter(e > 0)
    with pytest.raises(PlanError, match="nests deeper than 256 levels"):
        dd.sum(e)


def test_a_nested_expression_within_the_plan_parser_limit_runs() -> None:
    flow, inp, c = _one_input()
    e = dd.col("x")
    for _ in range(30):  # 60 levels of alternating operators
        e = (e + 1) * 1
    cap = c.select(y=e).capture()
    inp.update_at((1,), 0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"y": 31, "diff": 1}]


def test_a_nested_expression_within_max_depth_runs() -> None:
    flow, inp, c = _one_input()
    e = dd.col("x")
    for _ in range(100):  # 200 levels of alternating operators: within MAX_DEPTH
        e = (e + 1) * 1
    cap = c.select(y=e).capture()
    inp.update_at((1,), 0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"y": 101, "diff": 1}]


def test_an_expression_sharing_subexpressions_is_refused_before_it_explodes() -> None:
    _, _, c = _one_input()
    e = dd.col("x")
    for _ in range(60):  # 2**60 nodes once written out: JSON and text would never finish
        e = e + e
    with pytest.raises(PlanError, match=r"select@.*more than 100,000 nodes"):
        c.select(y=e)


def test_many_distinct_times_in_one_batch() -> None:
    flow, inp, c = _one_input()
    cap = c.group_by().agg(n=dd.count()).capture()
    n = 50_000
    inp.update_batch({"x": np.arange(n, dtype=np.int64)}, times=np.arange(n, dtype=np.int64))
    _run(flow, inp, n)
    assert cap.at(n - 1).to_pylist() == [{"n": n, "diff": 1}]
    assert cap.updates().num_rows == 2 * n - 1  # one row per time, retracted at the next


# -- values -----------------------------------------------------------------------------------


def test_nan_and_signed_zero_keys_group_as_values() -> None:
    flow, inp, c = _one_input(("k", "v"))
    cap = c.group_by("k").agg(n=dd.count(), top=dd.max("v")).capture()
    keys = np.array([math.nan, -math.nan, 1.0, -0.0, 0.0, math.inf])
    inp.update_batch({"k": keys, "v": np.arange(6, dtype=np.int64)}, times=0)
    _run(flow, inp)
    rows = {
        ("nan" if math.isnan(r["k"]) else r["k"]): (r["n"], r["top"]) for r in cap.at(0).to_pylist()
    }
    assert rows == {"nan": (2, 1), 1.0: (1, 2), 0.0: (2, 4), math.inf: (1, 5)}


def test_nan_join_keys_match_each_other() -> None:
    flow = dd.Dataflow()
    a_in, a = flow.new_input(("k", "x"))
    b_in, b = flow.new_input(("k", "y"))
    cap = a.join(b, on="k").capture()
    a_in.update_at((math.nan, 1), 0)
    b_in.update_at((math.nan, 2), 0)
    b_in.update_at((1.0, 3), 0)
    for s in (a_in, b_in):
        s.advance_to(1)
    flow.run_until(1)
    [row] = cap.at(0).to_pylist()
    assert math.isnan(row["k"]) and (row["x"], row["y"]) == (1, 2)


def test_inf_cast_to_int_is_an_error_update_naming_the_value() -> None:
    flow, inp, c = _one_input()
    cap = c.select(y=dd.col("x").cast("int64")).capture(errors="collect")
    inp.update_at((math.inf,), 0)
    inp.update_at((2.0,), 0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"y": 2, "diff": 1}]
    [err] = cap.errors().to_pylist()
    assert "inf" in err["message"] and err["values"] == "x=inf" and "select@" in err["operator"]


def test_strings_with_nul_and_astral_characters_are_values() -> None:
    flow, inp, c = _one_input(("s",))
    cap = c.count(by="s").capture()
    for s in ("a\x00b", "a", "🙂\U0010ffff", ""):
        inp.update_at((s,), 0)
    _run(flow, inp)
    assert sorted(r["s"] for r in cap.at(0).to_pylist()) == ["", "a", "a\x00b", "🙂\U0010ffff"]


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, object()], ids=repr)
def test_values_that_are_not_scalars_name_the_column(value: object) -> None:
    _, inp, _ = _one_input(("s",))
    with pytest.raises(SchemaTypeError, match=r"input 'input0', column 's': unsupported value"):
        inp.update_at((value,), 0)


def test_bytes_in_a_str_column_are_refused_naming_the_column() -> None:
    """Bytes are ``binary`` values: a ``str`` column refuses them, one by one or as an Arrow
    binary column."""
    _, inp, _ = _one_input({"s": "str"})
    with pytest.raises(SchemaTypeError, match=r"input 'input0', column 's': value b'\\xff\\xfe'"):
        inp.update_at((b"\xff\xfe",), 0)
    with pytest.raises(SchemaTypeError, match="column 's'"):
        inp.update_batch(pa.table({"s": pa.array([b"\xff"], pa.binary())}), times=0)


def test_a_lone_surrogate_is_refused_naming_the_row() -> None:
    _, inp, _ = _one_input(("s",))
    with pytest.raises(DdflowError, match="column 's'"):
        inp.update_batch({"s": ["ok", "bad\ud800"]}, times=0)


@pytest.mark.parametrize(
    ("value", "error", "text"),
    [
        (2**64, OverflowError, "does not fit in int64"),
        (-(2**63), InvalidValueError, "reserved null word"),
        (None, SchemaTypeError, "before the column's dtype is known"),
    ],
)
def test_integers_at_the_edge_are_refused_clearly(
    value: object, error: type[Exception], text: str
) -> None:
    _, inp, _ = _one_input()
    with pytest.raises(error, match=text):
        inp.update_at((value,), 0)


def test_dates_decimals_and_timestamps_at_their_limits() -> None:
    schema = pa.schema(
        [("d", pa.date32()), ("p", pa.decimal128(10, 2)), ("ts", pa.timestamp("ns"))]
    )
    flow, inp, c = _one_input(schema)
    cap = c.select(
        y=dd.col("d").dt.year(), p=dd.col("p"), later=dd.col("ts").dt.offset_by("1200mo")
    ).capture(errors="collect")
    inp.update_at((datetime.date(9999, 12, 31), Decimal("99999999.99"), None), 0)
    inp.update_at((datetime.date(1, 1, 1), Decimal("-0.01"), datetime.datetime(2200, 1, 1)), 0)
    _run(flow, inp)
    rows = cap.at(0).to_pylist()
    assert rows == [{"y": 9999, "p": Decimal("99999999.99"), "later": None, "diff": 1}]
    [err] = cap.errors().to_pylist()
    assert "offset_by" in err["message"] and "out of the calendar" in err["message"]
    for bad, text in [
        (Decimal("NaN"), "unsupported value Decimal('NaN')"),
        (Decimal("1.234"), "do not fit decimal128"),
        (Decimal("1" + "0" * 30), "fit decimal128"),
    ]:
        with pytest.raises(DdflowError, match=r"column 'p'.*" + re.escape(text)):
            inp.update_at((None, bad, None), 1)


# -- times ------------------------------------------------------------------------------------


def test_a_time_far_in_the_future() -> None:
    flow, inp, c = _one_input()
    cap = c.capture()
    inp.update_at((1,), 2**62)
    _run(flow, inp, 2**62 + 1)
    assert cap.updates().to_pylist() == [{"x": 1, "time": 2**62, "diff": 1}]


def test_the_greatest_time_completes_when_the_input_closes() -> None:
    flow, inp, c = _one_input()
    cap = c.count(by="x").capture()
    inp.update_at((1,), INT64_MAX - 1)
    inp.update_at((1,), INT64_MAX)
    inp.close()
    flow.run()
    assert cap.updates().to_pylist() == [
        {"x": 1, "count": 1, "time": INT64_MAX - 1, "diff": 1},
        {"x": 1, "count": 1, "time": INT64_MAX, "diff": -1},
        {"x": 1, "count": 2, "time": INT64_MAX, "diff": 1},
    ]
    assert cap.at(INT64_MAX).to_pylist() == [{"x": 1, "count": 2, "diff": 1}]


@pytest.mark.parametrize(
    ("time", "error", "text"),
    [
        (2**63, InvalidValueError, "non-negative int64"),
        (-1, InvalidValueError, "non-negative int64"),
        (1.5, SchemaTypeError, "non-negative int"),
        ((1, 2), InvalidValueError, "got 2 coordinates"),  # after int times
    ],
)
def test_bad_times_name_the_input(time: Any, error: type[Exception], text: str) -> None:
    _, inp, _ = _one_input()
    inp.update_at((0,), 0)  # the first time fixes the time shape: int times
    with pytest.raises(error, match=rf"input 'input0'.*{text}"):
        inp.update_at((1,), time)


def test_bad_batch_times_name_the_input() -> None:
    _, inp, _ = _one_input()
    with pytest.raises(InvalidValueError, match="input 'input0': times must be non-negative"):
        inp.update_batch({"x": [1]}, times=np.array([-1]))
    with pytest.raises(SchemaTypeError, match="input 'input0': times must be integers"):
        inp.update_batch({"x": [1]}, times=np.array([0.5]))


def test_run_until_past_int64_is_refused() -> None:
    flow, _, _ = _one_input()
    with pytest.raises(InvalidValueError, match="run_until"):
        flow.run_until(2**63)


def test_time_behind_the_frontier_and_going_backwards() -> None:
    _, inp, _ = _one_input()
    inp.advance_to(5)
    with pytest.raises(TimeError, match="time 3 is not in the future"):
        inp.update_at((1,), 3)
    with pytest.raises(TimeError, match="would go backwards from 5"):
        inp.advance_to(3)


# -- diffs ------------------------------------------------------------------------------------


def test_negative_and_zero_diffs() -> None:
    flow, inp, c = _one_input()
    cap = c.count(by="x").capture()
    everything = c.capture()
    inp.update_at((1,), 0, -5)
    inp.update_at((2,), 0, 0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"x": 1, "count": -5, "diff": 1}]
    assert everything.updates().to_pylist() == [{"x": 1, "time": 0, "diff": -5}]


def test_diffs_summing_past_int64_raise_overflow_naming_the_record() -> None:
    flow, inp, c = _one_input()
    cap = c.capture()
    inp.update_at((1,), 0, INT64_MAX)
    inp.update_at((1,), 0, INT64_MAX)
    _run(flow, inp)
    with pytest.raises(OverflowError, match=r"capture@.*record \{'x': 1\}"):
        cap.updates()


@pytest.mark.parametrize(
    ("diff", "error"), [(2**63, OverflowError), (1.5, SchemaTypeError), ("1", SchemaTypeError)]
)
def test_bad_diffs_name_the_input(diff: Any, error: type[Exception]) -> None:
    _, inp, _ = _one_input()
    with pytest.raises(error, match="input 'input0'.*diff"):
        inp.update_at((1,), 0, diff)


# -- batches ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "column", [np.array([], dtype=np.int64), [], pa.array([], pa.int64())], ids=repr
)
def test_empty_batches_are_nothing(column: Any) -> None:
    flow, inp, c = _one_input()
    cap = c.capture()
    inp.update_batch({"x": column}, times=0)
    inp.update_batch(pa.table({"x": pa.array([], pa.int64())}), times=0)
    _run(flow, inp)
    assert cap.updates().num_rows == 0 and cap.at(0).num_rows == 0


def test_update_batch_with_mismatched_lengths_names_the_column() -> None:
    _, inp, _ = _one_input(("x", "y"))
    with pytest.raises(ShapeError, match="column 'y' has 2 rows, column 'x' has 3"):
        inp.update_batch({"x": [1, 2, 3], "y": [1, 2]}, times=0)
    with pytest.raises(ShapeError, match="2 times for 3 updates"):
        inp.update_batch({"x": [1, 2, 3], "y": [1, 2, 3]}, times=np.array([0, 1]))
    with pytest.raises(ShapeError, match="2 diffs for 3 updates"):
        inp.update_batch({"x": [1, 2, 3], "y": [1, 2, 3]}, times=0, diffs=np.array([1, 1]))


def test_records_of_the_wrong_shape_name_the_input() -> None:
    _, inp, _ = _one_input(("x", "y"))
    with pytest.raises(SchemaTypeError, match=r"record \(1,\) has 1 values"):
        inp.update_at((1,), 0)
    with pytest.raises(SchemaTypeError, match="must be a tuple of 2 values"):
        inp.update_at("ab", 0)
    with pytest.raises(SchemaTypeError, match="mixed value types"):
        inp.update_batch({"x": np.array([1, "a"], dtype=object), "y": [1, 2]}, times=0)


def test_a_rejected_batch_loses_nothing_accepted_before() -> None:
    flow, inp, c = _one_input(("x", "y"))
    cap = c.capture()
    inp.update_at((1, 1), 0)
    with pytest.raises(ShapeError):
        inp.update_batch({"x": [2, 3], "y": [2]}, times=0)
    _run(flow, inp)
    assert cap.updates().to_pylist() == [{"x": 1, "y": 1, "time": 0, "diff": 1}]


# -- lifecycle --------------------------------------------------------------------------------


def test_a_capture_read_before_running() -> None:
    _, inp, c = _one_input()
    cap = c.capture()
    inp.update_at((1,), 0)
    assert cap.updates().num_rows == 0  # nothing has run: no updates yet
    with pytest.raises(TimeError, match=r"capture@.*time 0 is not complete yet"):
        cap.at(0)


def test_run_until_without_advancing_names_the_input() -> None:
    flow, inp, c = _one_input()
    c.capture()
    inp.update_at((1,), 0)
    with pytest.raises(TimeError, match="advance or close the inputs first.*input0"):
        flow.run_until(1)


def test_closing_an_input_twice_then_updating_it() -> None:
    flow, inp, c = _one_input()
    cap = c.capture()
    inp.update_at((1,), 0)
    inp.close()
    inp.close()
    flow.run()
    flow.run()
    assert cap.updates().to_pylist() == [{"x": 1, "time": 0, "diff": 1}]
    with pytest.raises(DdflowError, match="input 'input0' is closed"):
        inp.update_at((2,), 1)


# -- names ------------------------------------------------------------------------------------


def test_unicode_column_names() -> None:
    flow, inp, c = _one_input(("名前", "ü ber", "🙂"))
    cap = (
        c.select(dd.col("名前"), doppelt=dd.col("🙂") * 2)
        .group_by("名前")
        .agg(n=dd.count(), s=dd.sum("doppelt"))
        .capture()
    )
    inp.update_at(("日本", 1, 2), 0)
    inp.update_at(("日本", 3, 4), 0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"名前": "日本", "n": 2, "s": 12, "diff": 1}]


@pytest.mark.parametrize(
    ("columns", "text"),
    [
        (("",), "non-empty str"),
        (("a", "a"), "repeat"),
        ((1,), "non-empty str"),
        ((), "at least one column"),
    ],
)
def test_bad_column_names(columns: Any, text: str) -> None:
    with pytest.raises(InvalidValueError, match=text):
        dd.Dataflow().new_input(columns)


def test_unknown_column_names_the_operator_and_the_columns() -> None:
    _, _, c = _one_input(("名前",))
    with pytest.raises(dd.ColumnNotFoundError, match=r"select@.*'nope'.*\['名前'\]"):
        c.select(dd.col("nope"))


def test_an_oversized_regex_is_a_plan_error() -> None:
    _, _, c = _one_input(("s",))
    with pytest.raises(PlanError, match="invalid regex"):
        c.filter(dd.col("s").str.contains("(a{1000}){1000}"))


# -- subscribers ------------------------------------------------------------------------------


def test_a_subscriber_that_raises_makes_no_other_miss_the_round() -> None:
    """All subscribers of all captures are called; then the first error is raised, with a
    note naming the subscriber; the next round is delivered as usual."""
    flow, inp, c = _one_input()
    cap, other = c.capture(), c.select(y=dd.col("x") * 10).capture()
    got: list[tuple[str, list[int]]] = []

    def boom(table: pa.Table) -> None:
        raise ValueError("boom")

    cap.subscribe(lambda t: got.append(("a", t.column("x").to_pylist())))
    cap.subscribe(boom)
    cap.subscribe(lambda t: got.append(("c", t.column("x").to_pylist())))
    other.subscribe(lambda t: got.append(("d", t.column("y").to_pylist())))
    inp.update_at((1,), 0)
    inp.advance_to(1)
    with pytest.raises(ValueError, match="boom") as info:
        flow.run_until(1)
    pattern = r"subscriber \S*boom \(test_hostile_inputs.py:\d+\) of capture@"
    assert any(re.search(pattern, n) for n in info.value.__notes__)
    assert got == [("a", [1]), ("c", [1]), ("d", [10])]
    inp.update_at((2,), 1)
    inp.advance_to(2)
    with pytest.raises(ValueError, match="boom"):
        flow.run_until(2)
    assert got[3:] == [("a", [2]), ("c", [2]), ("d", [20])]


# -- columns numpy, pandas or Arrow would read wrongly ----------------------------------------


def _batch_rows(columns: Any, values: Any) -> list[Any]:
    """The rows of one batch ``{"s": values}`` into an input of ``columns`` after a run, as the
    capture reads them (sorted)."""
    flow, inp, c = _one_input(columns)
    cap = c.capture()
    inp.update_batch({"s": values}, times=0)
    _run(flow, inp)
    return sorted(
        (r["s"] for r in cap.at(0).to_pylist() for _ in range(r["diff"])),
        key=lambda v: (v is None, repr(v)),
    )


def _sorted_values(values: list[Any]) -> list[Any]:
    return sorted(values, key=lambda v: (v is None, repr(v)))


def test_numpy_str_arrays_keep_nul_characters_as_numpy_reads_them() -> None:
    arr = np.array(["a\x00b", "\x00y", "x\x00", "\x00\x00z\x00"])
    # numpy itself drops trailing NULs of its fixed-width strings: tolist() is the oracle.
    assert arr.tolist() == ["a\x00b", "\x00y", "x", "\x00\x00z"]
    assert _batch_rows(("s",), arr) == _sorted_values(arr.tolist())
    listed = ["a\x00b", "x\x00", "\x00"]  # a list is taken whole
    assert _batch_rows(("s",), listed) == _sorted_values(listed)


@pytest.mark.parametrize(
    "values",
    [
        np.array([b"ab", b"\xff\x00z"]),
        [b"ab", b"\xff\x00z"],
        np.array([b"ab", b"\xff\x00z"], dtype=object),
        pa.array([b"ab", b"\xff\x00z"], pa.binary()),
    ],
    ids=["numpy S", "list", "object array", "arrow"],
)
def test_bytes_in_a_batch_are_binary_values_never_text(values: Any) -> None:
    assert _batch_rows(("s",), values) == _sorted_values([b"ab", b"\xff\x00z"])
    _, inp, _ = _one_input({"s": "str"})
    with pytest.raises(SchemaTypeError, match=r"column 's'.*binary.*the column is str"):
        inp.update_batch({"s": values}, times=0)


def test_bytes_with_nulls_and_mixed_with_text() -> None:
    assert _batch_rows(("s",), np.array([b"a", None, b"b"], dtype=object)) == [b"a", b"b", None]
    for mixed in (["a", b"b"], [b"a", "b"], np.array([b"a", "b"], dtype=object), ["a", 1]):
        _, inp, _ = _one_input(("s",))
        with pytest.raises(SchemaTypeError, match=r"input 'input0', column 's': mixed value"):
            inp.update_batch({"s": mixed}, times=0)


@pytest.mark.parametrize(
    ("data", "mask"),
    [
        (np.array([1, 2, 3]), [0, 1, 0]),
        (np.array([1.5, 2.5, math.nan]), [1, 0, 0]),
        (np.array(["a", "b", "c"]), [0, 0, 1]),
        (np.array([True, False, True]), [1, 1, 0]),
    ],
    ids=["int", "float", "str", "bool"],
)
def test_numpy_masked_arrays_give_nulls_where_masked(data: Any, mask: list[int]) -> None:
    got = _batch_rows(("s",), np.ma.array(data, mask=mask))
    expected = [None if m else v for v, m in zip(data.tolist(), mask, strict=True)]
    assert [repr(v) for v in got] == [repr(v) for v in _sorted_values(expected)]


def test_pandas_period_columns_are_refused_naming_the_column() -> None:
    pd = pytest.importorskip("pandas")
    periods = pd.period_range("2020-01", periods=3, freq="M")
    for batch in (pd.DataFrame({"s": periods}), {"s": pd.Series(periods)}):
        _, inp, _ = _one_input(("s",))
        with pytest.raises(SchemaTypeError, match=r"input 'input0', column 's'.*[Pp]eriod"):
            inp.update_batch(batch, times=0)
        assert inp.dtypes == {"s": None}  # nothing accepted
    with pytest.raises(SchemaTypeError, match=r"column 's': unsupported value Period"):
        inp.update_at((periods[0],), 0)


def test_pandas_missing_values_in_object_columns_are_nulls() -> None:
    pd = pytest.importorskip("pandas")
    texts = np.array(["a", math.nan, None, pd.NA, "b"], dtype=object)
    assert _batch_rows(("s",), texts) == ["a", "b", None, None, None]
    assert _batch_rows(("s",), pd.Series(["a", math.nan])) == ["a", None]
    assert _batch_rows({"s": "str"}, np.array([math.nan, "z"], dtype=object)) == ["z", None]
    ints = pd.Series([1, math.nan, None], dtype=object)
    assert _batch_rows({"s": "int64"}, ints) == [1, None, None]
    assert _batch_rows(("s",), pd.DataFrame({"s": ["a", math.nan]})["s"]) == ["a", None]
    # Beside floats NaN is a float value, not a missing one.
    floats = _batch_rows(("s",), np.array([1.5, math.nan, None], dtype=object))
    assert floats[0] == 1.5 and math.isnan(floats[1]) and floats[2] is None


def test_repeated_column_names_in_a_batch_or_schema_are_refused() -> None:
    pd = pytest.importorskip("pandas")
    table = pa.table([pa.array([1]), pa.array([2])], names=["x", "x"])
    for batch in (table, table.to_batches()[0], pd.DataFrame([[1, 2]], columns=["x", "x"])):
        _, inp, _ = _one_input()
        with pytest.raises(InvalidValueError, match=r"'input0': column names repeat: \['x'\]"):
            inp.update_batch(batch, times=0)
    schema = pa.schema([("a", pa.int64()), ("a", pa.int64())])
    with pytest.raises(InvalidValueError, match="column names repeat"):
        dd.Dataflow().new_input(schema)


# -- reserved names and deep expressions ------------------------------------------------------


def _reducer(batch: Any) -> dict[str, Any]:
    return {"offsets": np.arange(len(batch) + 1), "n": np.zeros(len(batch), dtype=np.int64)}


@pytest.mark.parametrize("name", ["__row__", "__count__", "__offsets__"])
def test_reserved_names_as_function_outputs_are_plan_errors(name: str) -> None:
    """The engine reads these keys of a function's result; as output columns they would be
    taken for row indices, counts or offsets."""
    _, _, c = _one_input(("k", "v"))
    text = rf"output column name '{name}' is reserved"
    with pytest.raises(PlanError, match=r"map@.*" + text):
        c.map(lambda b: {name: b["v"]})
    with pytest.raises(PlanError, match=r"map@.*" + text):
        c.map(lambda b: b, columns=(name, "v"))
    with pytest.raises(PlanError, match=r"flat_map@.*" + text):
        c.flat_map(lambda b: b, columns=(name,))
    with pytest.raises(PlanError, match=r"reduce@.*" + text):
        c.reduce("k", dd.reducer(_reducer), columns=(name,))


def test_reserved_names_as_input_columns_are_plain_columns() -> None:
    flow, inp, c = _one_input(("__row__", "__count__"))
    cap = c.map(lambda b: {"a": b["__row__"] * 2, "b": b["__count__"]}).capture()
    inp.update_at((3, 4), 0)
    _run(flow, inp)
    assert cap.at(0).to_pylist() == [{"a": 6, "b": 4, "diff": 1}]


def test_a_deep_or_huge_expression_prints_a_summary_not_a_recursion_error() -> None:
    deep = dd.col("x")
    for _ in range(5_000):
        deep = deep + 1
    assert repr(deep) == "<an expression nests deeper than 256 levels; build it in steps " + (
        "(with_columns) or flatten it>"
    )
    assert str(deep == deep).startswith("<an expression nests deeper")
    wide = dd.col("x")
    for _ in range(40):
        wide = wide + wide
    assert "more than 100,000 nodes" in repr(wide)
    shallow = (dd.col("x") + 1) * 2
    assert repr(shallow) == '((col("x") + 1) * 2)'


def test_a_batch_column_of_only_nulls_takes_the_declared_dtype() -> None:
    pd = pytest.importorskip("pandas")
    for dtype in ("int64", "float64", "str", "bool", "binary", "date32"):
        nulls: list[Any] = [None, None]
        for column in (nulls, np.array(nulls, dtype=object), pd.Series(nulls, dtype=object)):
            assert _batch_rows({"s": dtype}, column) == [None, None]
    _, inp, _ = _one_input(("s",))
    with pytest.raises(SchemaTypeError, match="column 's': a column of only nulls has no dtype"):
        inp.update_batch({"s": [None]}, times=0)


def test_a_list_mixing_bools_and_numbers_is_refused() -> None:
    """numpy would read True as 1 (or 1.0) beside numbers."""
    for mixed in ([1.5, True], [True, 2], [False, None, 0]):
        _, inp, _ = _one_input(("s",))
        with pytest.raises(SchemaTypeError, match=r"column 's': mixed value types.*among bool"):
            inp.update_batch({"s": mixed}, times=0)
    assert _batch_rows(("s",), [True, None, False]) == [False, True, None]
