"""Fuzz target: random plans over random batches, checked against a naive Python model.

Hypothesis draws a schema (int64, float64, str and bool columns, nulls allowed), a second
input to join with, a short chain of plan steps (filter, select, count, distinct, concat, join)
and a history of updates at a few times, each fed as single records (``update_at``) or as one
batch in a list, a numpy (masked) array, a pyarrow array or a pandas object Series. Some
batches and records carry a value of the wrong type. Every outcome must be exact: a batch or
record the model calls hostile raises a ``DdflowError`` subclass and adds nothing, every
other is accepted, and every complete time's output equals the model's; any other exception
fails the test. Bounded for CI: ``max_examples`` and a per-example ``deadline``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.fuzz import naive_model as m

import ddflow as dd

pytestmark = pytest.mark.timeout(120)

Model = Callable[[m.Multiset, int], m.Multiset]
"""A step's model: the step's output multiset from its input's at one time."""

TIMES = 4
"""Updates happen at times 0..TIMES-1."""

DTYPES = ["int64", "float64", "str", "bool"]
ARROW = {"int64": pa.int64(), "float64": pa.float64(), "str": pa.string(), "bool": pa.bool_()}
NUMPY = {"int64": np.int64, "float64": np.float64, "str": object, "bool": np.bool_}
WRONG = {"int64": ["x", 1.5, True], "float64": ["x", True], "str": [1, b"x"], "bool": [1, "x"]}
"""Values of another type per column dtype (an int in a float column is not wrong: it widens)."""

SETTINGS = settings(
    max_examples=40,
    deadline=timedelta(seconds=10),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


def values(dtype: str) -> st.SearchStrategy[Any]:
    """Values of one column, with nulls."""
    base: st.SearchStrategy[Any] = {
        "int64": st.integers(-3, 3),
        "float64": st.sampled_from([0.0, -0.0, 1.5, -2.25, math.nan, math.inf, 3.0]),
        "str": st.sampled_from(["", "a", "b", "ü", "a\x00b", "🙂"]),
        "bool": st.booleans(),
    }[dtype]
    return st.one_of(st.none(), base, base, base)


@dataclass
class Feed:
    """One feeding call: records at one time, how they are handed over, and whether one value
    is of the wrong type (then the call must raise and add nothing)."""

    time: int
    how: str
    rows: list[tuple[Any, ...]]
    diffs: list[int]
    wrong: tuple[int, int, Any] | None = None  # (row, column, value)


@dataclass
class Case:
    dtypes: list[str]
    feeds: list[Feed]
    other_rows: list[tuple[tuple[Any, ...], int, int]]  # (record (k, w), time, diff)
    steps: list[str] = field(default_factory=list)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    dtypes = ["int64"] + draw(st.lists(st.sampled_from(DTYPES), min_size=1, max_size=2))
    feeds = []
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(1, 6))
        rows = [tuple(draw(values(d)) for d in dtypes) for _ in range(n)]
        diffs = draw(st.lists(st.sampled_from([1, 1, 2, -1]), min_size=n, max_size=n))
        how = draw(st.sampled_from(["update_at", "list", "numpy", "arrow", "pandas"]))
        wrong = None
        if how in ("update_at", "list", "pandas") and draw(st.integers(0, 5)) == 0:
            j = draw(st.integers(0, len(dtypes) - 1))
            wrong = (draw(st.integers(0, n - 1)), j, draw(st.sampled_from(WRONG[dtypes[j]])))
        feeds.append(Feed(draw(st.integers(0, TIMES - 1)), how, rows, diffs, wrong))
    other = [
        ((draw(values("int64")), draw(values("str"))), draw(st.integers(0, TIMES - 1)), 1)
        for _ in range(draw(st.integers(0, 5)))
    ]
    steps = draw(
        st.lists(
            st.sampled_from(["filter", "select", "count", "distinct", "concat", "join", "group"]),
            min_size=1,
            max_size=2,
        )
    )
    return Case(dtypes, feeds, other, steps)


def _column(rows: list[tuple[Any, ...]], j: int) -> list[Any]:
    return [r[j] for r in rows]


def _container(how: str, dtype: str, vals: list[Any]) -> Any:
    """One batch column in the container ``how``."""
    if how == "list":
        return list(vals)
    if how == "arrow":
        return pa.array(vals, type=ARROW[dtype])
    if how == "pandas":
        pd = pytest.importorskip("pandas")
        return pd.Series(vals, dtype=object)
    nulls = [v is None for v in vals]
    fill = {"int64": 0, "float64": 0.0, "str": "", "bool": False}[dtype]
    data = np.array([fill if v is None else v for v in vals], dtype=NUMPY[dtype])
    return np.ma.array(data, mask=nulls) if any(nulls) else data


def _feed(inp: dd.InputSession, names: list[str], dtypes: list[str], feed: Feed) -> list[int]:
    """Feeds one call; returns the indices of the rows the model says are accepted."""
    rows = [list(r) for r in feed.rows]
    if feed.wrong is not None:
        i, j, v = feed.wrong
        rows[i][j] = v
    if feed.how == "update_at":
        accepted = []
        for i, (r, d) in enumerate(zip(rows, feed.diffs, strict=True)):
            if feed.wrong is not None and feed.wrong[0] == i:
                with pytest.raises(dd.DdflowError):
                    inp.update_at(tuple(r), feed.time, d)
            else:
                inp.update_at(tuple(r), feed.time, d)
                accepted.append(i)
        return accepted
    tuples = [tuple(r) for r in rows]
    batch = {
        n: _container(feed.how, d, _column(tuples, j))
        for j, (n, d) in enumerate(zip(names, dtypes, strict=True))
    }
    diffs = np.array(feed.diffs, dtype=np.int64)
    if feed.wrong is not None:
        with pytest.raises(dd.DdflowError):
            inp.update_batch(batch, times=feed.time, diffs=diffs)
        return []
    inp.update_batch(batch, times=feed.time, diffs=diffs)
    return list(range(len(rows)))


def _timeless(model: Callable[[m.Multiset], m.Multiset]) -> Model:
    """A step model that does not depend on the time."""
    return lambda ms, t: model(ms)


def _plan(
    case: Case, c: dd.Collection, other: dd.Collection, other_at: Callable[[int], m.Multiset]
) -> tuple[dd.Collection, list[Model]]:
    """Builds the steps on ``c``; returns the result and the models of its steps."""
    models: list[Model] = []
    columns = list(c.columns)
    dtypes = list(case.dtypes)
    for step in case.steps:
        if step == "filter":
            j = len(columns) - 1
            if dtypes[j] in ("int64", "float64"):
                c = c.filter(dd.col(columns[j]) > 0)
                model = m.filter_greater(j, 0)
            elif dtypes[j] == "str":
                c = c.filter(dd.col(columns[j]) == "a")
                model = m.filter_equal(j, "a")
            else:
                c = c.filter(dd.col(columns[j]))
                model = m.filter_equal(j, True)
            models.append(_timeless(model))
        elif step == "select":
            numeric = [j for j, d in enumerate(dtypes) if d in ("int64", "float64")]
            i, j = numeric[0], numeric[-1]
            c = c.select(y=dd.col(columns[i]) + dd.col(columns[j]) + 1)
            models.append(_timeless(m.plus(i, j, 1)))
            dtypes = ["float64" if "float64" in (dtypes[i], dtypes[j]) else "int64"]
            columns = ["y"]
        elif step == "count":
            c = c.count(by=columns[0])
            models.append(_timeless(m.count_by([0])))
            columns, dtypes = [columns[0], "count"], [dtypes[0], "int64"]
        elif step == "distinct":
            c = c.distinct()
            models.append(_timeless(m.distinct))
        elif step == "concat":
            c = c.concat(c)
            models.append(_timeless(m.concat_self))
        elif step == "group" and "int64" in dtypes:
            value = max(j for j, d in enumerate(dtypes) if d == "int64")
            c = c.group_by(columns[0]).agg(
                n=dd.count(), s=dd.sum(columns[value]), hi=dd.max(columns[value])
            )
            models.append(_timeless(m.group_agg(0, value)))
            columns, dtypes = [columns[0], "n", "s", "hi"], [dtypes[0], "int64", "int64", "int64"]
        elif step == "join" and columns[0] == "k" and "w" not in columns:
            c = c.join(other, on="k")
            models.append(lambda ms, t: m.join(0, other_at(t), 0)(ms))
            columns, dtypes = [*columns, "w"], [*dtypes, "str"]
    return c, models


@SETTINGS
@given(case=cases())
def test_random_plans_over_random_batches_are_exact_or_a_ddflow_error(case: Case) -> None:
    names = ["k"] + [f"c{j}" for j in range(1, len(case.dtypes))]
    flow = dd.Dataflow()
    inp, c = flow.new_input(dict(zip(names, case.dtypes, strict=True)))
    other_in, other = flow.new_input({"k": "int64", "w": "str"})
    accepted: list[tuple[tuple[Any, ...], int, int]] = []

    def at(history: list[tuple[tuple[Any, ...], int, int]], t: int) -> m.Multiset:
        ms: m.Multiset = {}
        for rec, time, diff in history:
            if time <= t:
                m.add(ms, rec, diff)
        return ms

    out, models = _plan(case, c, other, lambda t: at(case.other_rows, t))
    cap = out.capture()
    for rec, t, d in case.other_rows:
        other_in.update_at(rec, t, d)
    for feed in case.feeds:
        for i in _feed(inp, names, case.dtypes, feed):
            accepted.append((feed.rows[i], feed.time, feed.diffs[i]))
    for s in (inp, other_in):
        s.advance_to(TIMES)
    flow.run_until(TIMES)
    for t in range(TIMES):
        expected = at(accepted, t)
        try:
            for model in models:
                expected = model(expected, t)
        except m.Unknown:
            continue
        got = m.from_rows(cap.at(t).to_pylist(), list(out.columns))
        assert got == expected, f"time {t}: {case.steps}"
