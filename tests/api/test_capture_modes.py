"""``Capture`` on the native engine: ``keep="history"`` and ``keep="state"`` give the same
answers where both can answer, ``state`` keeps memory bounded by the live data, subscribers
see each completed interval once in both modes, and ``to_pandas`` / ``to_polars``."""

from __future__ import annotations

import random
import sys
from typing import Any

import pyarrow as pa
import pytest

import ddflow as dd


def _feed(seed: int, rounds: int) -> list[tuple[tuple[int, str], int, int]]:
    """Random (record, time, diff) updates, a few per time."""
    rng = random.Random(seed)
    return [
        ((rng.randrange(5), rng.choice("abc")), t, rng.choice([1, 1, -1, 2]))
        for t in range(rounds)
        for _ in range(rng.randrange(4))
    ]


def _run(keep: str, ups: list[tuple[tuple[int, str], int, int]], rounds: int) -> list[Any]:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"k": "int64", "s": "str"})
    cap = coll.capture(keep=keep)
    seen: list[pa.Table] = []
    cap.subscribe(seen.append)
    states = []
    for t in range(rounds):
        for rec, time, diff in ups:
            if time == t:
                inp.update_at(rec, time, diff)
        inp.advance_to(t + 1)
        flow.run_until(t + 1)
        states.append(cap.state().to_pylist())
        assert cap.at(t).to_pylist() == states[-1]
    return [states, pa.concat_tables(seen).to_pylist() if seen else [], cap]


@pytest.mark.parametrize("seed", range(4))
def test_history_and_state_agree(seed: int) -> None:
    ups = _feed(seed, 12)
    h_states, h_seen, hist = _run("history", ups, 12)
    s_states, s_seen, state = _run("state", ups, 12)
    assert h_states == s_states
    assert h_seen == s_seen
    # The reference: accumulate by hand.
    acc: dict[tuple[int, str], int] = {}
    for rec, _, diff in ups:
        acc[rec] = acc.get(rec, 0) + diff
    want = sorted((k, s, d) for (k, s), d in acc.items() if d)
    assert [(r["k"], r["s"], r["diff"]) for r in s_states[-1]] == want
    # The history answers for earlier times; the state does not.
    assert hist.at(3).to_pylist() == h_states[3]
    assert hist.updates().num_rows == len(h_seen)
    if s_states[3] != s_states[-1]:
        with pytest.raises(dd.TimeError, match='keep="state"'):
            state.at(3)
    with pytest.raises(dd.InvalidValueError, match="state"):
        state.updates()


def test_state_memory_is_bounded_by_live_data() -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"k": "int64"})
    hist = coll.capture()
    state = coll.capture(keep="state")
    for t in range(200):
        inp.update_at((t,), t, 1)  # a sliding window of the last 10 records
        if t >= 10:
            inp.update_at((t - 10,), t, -1)
        inp.advance_to(t + 1)
        flow.run_until(t + 1)
        state.state()
        hist.state()
    assert state.state().num_rows == 10
    assert state._native is not None and hist._native is not None
    assert len(state._native.kept()[2]) == 10
    assert len(hist._native.kept()[2]) == 200 + 190


def test_tuple_times_and_types_in_state_mode() -> None:
    flow = dd.Dataflow(time_dims=2)
    inp, coll = flow.new_input({"x": "float64", "b": "bool", "s": "str"})
    cap = coll.capture(keep="state")
    assert cap.state().schema.field("x").type == pa.int64()  # before any data
    inp.update_at((1.5, True, "é"), (0, 1), 1)
    inp.update_at((2.5, False, ""), (1, 0), 1)
    inp.advance_to((2, 2))
    flow.run_until((2, 2))
    table = cap.state()
    assert table.schema.field("s").type == pa.string()
    assert table.to_pylist() == [
        {"x": 1.5, "b": True, "s": "é", "diff": 1},
        {"x": 2.5, "b": False, "s": "", "diff": 1},
    ]


def test_capture_overflow_is_an_error_naming_the_capture() -> None:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"k": "int64"})
    cap = coll.capture(keep="state")
    inp.update_at((1,), 0, 2**62)
    inp.update_at((1,), 1, 2**62)
    inp.advance_to(2)
    flow.run_until(2)
    with pytest.raises(dd.OverflowError) as ei:
        cap.state()
    assert ei.value.operator == cap.label
    assert "'k': 1" in str(ei.value) and str(2**63) in str(ei.value)


def test_bad_keep_is_a_plan_error() -> None:
    flow = dd.Dataflow()
    _, coll = flow.new_input({"k": "int64"})
    with pytest.raises(dd.PlanError, match="keep"):
        coll.capture(keep="everything")


def _small() -> dd.Capture:
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"k": "int64", "s": "str"})
    cap = coll.capture()
    inp.update_at((1, "a"), 0, 1)
    inp.update_at((2, "b"), 1, 2)
    inp.advance_to(2)
    flow.run_until(2)
    return cap


def test_to_pandas() -> None:
    pd = pytest.importorskip("pandas")
    df = _small().to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert df.to_dict("records") == [
        {"k": 1, "s": "a", "time": 0, "diff": 1},
        {"k": 2, "s": "b", "time": 1, "diff": 2},
    ]


def test_to_polars() -> None:
    pl = pytest.importorskip("polars")
    df = _small().to_polars()
    assert isinstance(df, pl.DataFrame)
    assert df.to_dicts() == [
        {"k": 1, "s": "a", "time": 0, "diff": 1},
        {"k": 2, "s": "b", "time": 1, "diff": 2},
    ]


@pytest.mark.parametrize(("method", "module"), [("to_pandas", "pandas"), ("to_polars", "polars")])
def test_missing_library_is_a_clear_import_error(
    monkeypatch: pytest.MonkeyPatch, method: str, module: str
) -> None:
    cap = _small()
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=f"{method}.. needs {module}"):
        getattr(cap, method)()


def test_run_until_moves_new_updates_into_the_capture_without_a_read() -> None:
    # The engine must not hold a long run's raw output until the capture is first read:
    # run_until hands every capture its completed updates (consolidated natively).
    flow = dd.Dataflow()
    inp, coll = flow.new_input({"k": "int64"})
    cap = coll.capture()
    for t in range(3):
        inp.update_at((t,), t, 1)
        inp.update_at((t,), t, 1)
    inp.advance_to(3)
    flow.run_until(3)
    assert cap._native is not None
    assert cap._native.completed_upper() is not None
    assert cap.updates().to_pylist() == [{"k": t, "time": t, "diff": 2} for t in range(3)]
