"""Helpers for the engine tests: random histories, feeding inputs, reading captures.

Nothing here is session state: every helper is a plain function that tests import. The
points where the tests assume details of the public API beyond the operators' semantics are
gathered at the bottom (``API assumptions``) so that they can be adjusted in one place.

The engine suites import ``ddflow`` at collection: a missing or broken native module fails
them loudly (it never turns into skipped tests).
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any

import pytest

from . import model as m


def _load_ddflow() -> ModuleType:
    dd = importlib.import_module("ddflow")
    if not hasattr(dd, "Dataflow"):
        raise ImportError(f"ddflow at {dd.__file__} has no Dataflow: a stale or broken build")
    return dd


DD: ModuleType = _load_ddflow()
"""The ``ddflow`` module (its import failing fails every engine suite)."""

requires_engine = pytest.mark.engine
"""Mark of the suites that run the engine (``pytestmark = requires_engine``; select them
with ``pytest -m engine``). It never skips."""


def ddflow() -> ModuleType:
    """The ``ddflow`` module (imported for real, so a missing engine fails loudly)."""
    return importlib.import_module("ddflow")


# ---------------------------------------------------------------------------------------------
# Deterministic random data


def random_time(rng: random.Random, dims: int, max_time: int) -> m.Time:
    """A uniformly random time with ``dims`` coordinates in ``0..=max_time``."""
    return tuple(rng.randint(0, max_time) for _ in range(dims))


def random_multiset_history(
    rng: random.Random,
    columns: Sequence[str],
    *,
    dims: int,
    n: int,
    domain: int,
    max_time: int,
    diffs: Sequence[int] = (1, 1, 1, 2, -1),
) -> list[m.Update]:
    """``n`` updates of int records in ``0..domain`` at random times with random diffs.

    Accumulated counts may go negative: the model and the engine must agree regardless.
    """
    return [
        (
            tuple(rng.randrange(domain) for _ in columns),
            random_time(rng, dims, max_time),
            rng.choice(diffs),
        )
        for _ in range(n)
    ]


def random_set_history(
    rng: random.Random,
    columns: Sequence[str],
    *,
    dims: int,
    domain: int,
    max_time: int,
    density: float = 0.4,
    stickiness: float = 0.7,
) -> list[m.Update]:
    """A history whose accumulation is a set (counts 0 or 1) at every time of the grid.

    Each record's membership is drawn per grid time (keeping the previous value along the
    first coordinate with probability ``stickiness``), so records come and go, also at
    incomparable times; the updates are the Moebius inversion of that membership.
    """
    universe = [tuple(vals) for vals in _product([range(domain) for _ in columns])]
    member: dict[m.Time, set[m.Record]] = {}
    for t in m.grid(dims, max_time):
        prev = member.get((t[0] - 1, *t[1:])) if t[0] > 0 else None
        present = set()
        for rec in universe:
            if prev is not None and rng.random() < stickiness:
                if rec in prev:
                    present.add(rec)
            elif rng.random() < density:
                present.add(rec)
        member[t] = present
    return m.updates_from_membership(member)


def _product(ranges: Sequence[Iterable[int]]) -> Iterable[tuple[int, ...]]:
    import itertools

    return itertools.product(*ranges)


def random_graph(seed: int, nodes: int, edges: int) -> list[tuple[int, int]]:
    """``edges`` random directed edges (repeats allowed) on ``nodes`` nodes, as G(n, m)."""
    rng = random.Random(seed)
    return [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(edges)]


def sliding_window(edges: Sequence[tuple[int, int]], m_edges: int, rounds: int) -> list[m.Update]:
    """The sliding-window workload: ``edges[:m]`` at time 0, round ``r`` (1-based) at time
    ``r`` adds ``edges[m + r - 1]`` and removes ``edges[r - 1]``."""
    ups: list[m.Update] = [(e, (0,), 1) for e in edges[:m_edges]]
    for r in range(1, rounds + 1):
        ups.append((edges[m_edges + r - 1], (r,), 1))
        ups.append((edges[r - 1], (r,), -1))
    return ups


# ---------------------------------------------------------------------------------------------
# Talking to the engine


def engine_time(t: m.Time) -> int | tuple[int, ...]:
    """A model time as the engine takes it: an int for 1-D times, else the tuple."""
    return t[0] if len(t) == 1 else tuple(t)


def model_time(value: Any) -> m.Time:
    """An engine time (int, list or tuple) as a model tuple."""
    if isinstance(value, int):
        return (value,)
    return tuple(int(x) for x in value)


def feed(
    inp: Any,
    updates: Sequence[m.Update],
    *,
    columns: Sequence[str] | None = None,
    batch: bool = False,
) -> None:
    """Send ``updates`` to an ``InputSession``: one ``update_at`` each, or one ``update_batch``.

    The batch form needs the input's ``columns`` to name the numpy columns it sends.
    """
    if not updates:
        return
    if not batch:
        for record, t, diff in updates:
            inp.update_at(record, time=engine_time(t), diff=diff)
        return
    import numpy as np

    if columns is None:
        raise ValueError("feed(batch=True) needs columns=")
    cols = {name: np.array([rec[i] for rec, _, _ in updates]) for i, name in enumerate(columns)}
    dims = len(updates[0][1])
    times = np.array([t[0] if dims == 1 else t for _, t, _ in updates], dtype=np.int64)
    diffs = np.array([d for _, _, d in updates], dtype=np.int64)
    inp.update_batch(cols, times=times, diffs=diffs)


def table_records(table: Any, columns: Sequence[str]) -> list[tuple[m.Record, int]]:
    """``(record, diff)`` rows of an Arrow table, records built from ``columns`` in order."""
    data = table.to_pydict()
    cols = [data[c] for c in columns]
    return (
        list(zip(zip(*cols, strict=True), data["diff"], strict=True))
        if cols
        else [((), d) for d in data["diff"]]
    )


def captured_updates(cap: Any, columns: Sequence[str]) -> list[m.Update]:
    """``cap.updates()`` as model updates, in the table's order."""
    table = cap.updates()
    data = table.to_pydict()
    times = [model_time(t) for t in data["time"]]
    records = [tuple(data[c][i] for c in columns) for i in range(table.num_rows)]
    return [(r, t, int(d)) for r, t, d in zip(records, times, data["diff"], strict=True)]


def captured_at(cap: Any, t: m.Time, columns: Sequence[str]) -> m.Counts:
    """``cap.at(t)`` as a ``{record: count}`` dict (zero counts would be a bug: kept)."""
    counts: m.Counts = {}
    for record, diff in table_records(cap.at(engine_time(t)), columns):
        assert record not in counts, f"at({t}) repeats record {record}"
        counts[record] = int(diff)
    return counts


def record_columns(table: Any) -> list[str]:
    """Column names of a captured table other than ``time`` and ``diff``."""
    return [c for c in table.column_names if c not in ("time", "diff")]


def assert_matches_model(
    cap: Any, res: m.ModelResult, *, upto: int, ordered_columns: bool = True
) -> None:
    """The capture's consolidated updates and ``at(t)`` at every grid time equal the model's.

    ``upto`` bounds the grid of times at which ``at`` is checked (every coordinate in
    ``0..=upto``). With ``ordered_columns`` the output column order must equal the model's,
    otherwise only the set of names must.
    """
    table = cap.updates()
    names = record_columns(table)
    if ordered_columns:
        assert tuple(names) == res.columns, f"columns {names}, expected {res.columns}"
    else:
        assert sorted(names) == sorted(res.columns)
    assert table.column_names[-2:] == ["time", "diff"]
    got = captured_updates(cap, res.columns)
    keys = [(t, r) for r, t, _ in got]
    assert keys == sorted(keys), "updates() is not sorted by time, then record"
    assert got == res.updates
    dims = len(res.times[0]) if res.times else 1
    for t in m.grid(dims, upto):
        assert captured_at(cap, t, res.columns) == res.at(t), f"at({engine_time(t)})"


def log_entries(flow: Any) -> list[dict[str, Any]]:
    """``flow.log()`` as a list of dicts (accepts a list of dicts or an Arrow table)."""
    log = flow.log()
    if hasattr(log, "to_pylist"):
        return list(log.to_pylist())
    return [dict(e) for e in log]


def antichain(value: Any) -> list[m.Time]:
    """A log entry's ``lower`` / ``upper``: an int, one time, or a list of times (antichain)."""
    if isinstance(value, int):
        return [(value,)]
    items = list(value)
    if items and all(isinstance(x, int) for x in items):
        return [tuple(items)]
    return [model_time(x) for x in items]


def interval_contains(entry: Mapping[str, Any], t: m.Time) -> bool:
    """Whether ``t`` lies in the entry's interval ``[lower, upper)`` of times."""
    lower, upper = antichain(entry["lower"]), antichain(entry["upper"])
    return any(m.leq(lo, t) for lo in lower if len(lo) == len(t)) and not any(
        m.leq(u, t) for u in upper if len(u) == len(t)
    )


def entry_dims(entry: Mapping[str, Any]) -> int:
    """Number of time coordinates of a log entry's interval."""
    for key in ("lower", "upper"):
        chain = antichain(entry[key])
        if chain:
            return len(chain[0])
    return 0


def rounds_covered(entry: Mapping[str, Any], rounds: Iterable[int], max_iter: int = 64) -> set[int]:
    """Outer rounds ``r`` with some time ``(r, ...)`` inside the entry's interval."""
    dims = entry_dims(entry)
    out = set()
    for r in rounds:
        if dims <= 1:
            if interval_contains(entry, (r,)):
                out.add(r)
        elif any(interval_contains(entry, (r, *([i] * (dims - 1)))) for i in range(max_iter)):
            out.add(r)
    return out


def new_flow(dims: int, workers: int = 1) -> Any:
    """A ``Dataflow``; 2-D and higher time shapes are declared up front."""
    dd = ddflow()
    return (
        dd.Dataflow(workers=workers) if dims == 1 else dd.Dataflow(workers=workers, time_dims=dims)
    )


# ---------------------------------------------------------------------------------------------
# API assumptions (details the tests rely on; adjust here if the implementation differs)
#
# * ``insert`` / ``remove`` / ``update`` act at the input's current time (its ``advance_to``).
# * ``dd.top_k(column, k, descending=False)``; ``dd.distinct()`` and ``dd.count()`` are calls.
# * A Python reducer is passed as ``reduce(by=..., agg=fn, columns=(out names))``; ``fn`` gets
#   one batch of keys with ``keys`` ({col: array}), ``offsets`` (int64, n+1), ``values``
#   ({col: array}) and ``counts`` (int64) as attributes (``ddflow.callbacks.ReduceBatch``)
#   or items, and returns ``{"offsets": int64 (n+1), out_col: array, ...}``; output rows
#   have count 1.
# * ``map(fn)`` / ``filter(fn)`` get ``{col: numpy array}``; ``map`` returns a dict of columns;
#   ``flat_map(fn)`` returns a dict of columns plus ``"__row__"`` (source row of each output).
# * ``threshold(fn)`` calls ``fn`` on an int64 numpy array of counts (vectorised).


def top_k(k: int, column: str, descending: bool = False) -> Any:
    """The built-in top-k aggregate."""
    return ddflow().top_k(column, k, descending=descending)


def python_reducer(
    per_key: Callable[[list[tuple[m.Record, int]]], list[m.Record]],
    value_columns: Sequence[str],
    out_columns: Sequence[str],
) -> Callable[[Any], dict[str, Any]]:
    """A batch reducer (one call per batch of keys) built from a per-key Python function.

    ``per_key`` gets the key's ``(value row, count)`` pairs and returns output rows (count 1).
    """
    import numpy as np

    def reducer(batch: Any) -> dict[str, Any]:
        offsets = np.asarray(_field(batch, "offsets"), dtype=np.int64)
        values = [np.asarray(_field(batch, "values")[c]).tolist() for c in value_columns]
        counts = np.asarray(_field(batch, "counts"), dtype=np.int64).tolist()
        out_offsets = [0]
        out_rows: list[m.Record] = []
        for i in range(len(offsets) - 1):
            lo, hi = int(offsets[i]), int(offsets[i + 1])
            group = [(tuple(v[j] for v in values), counts[j]) for j in range(lo, hi)]
            out_rows.extend(per_key(group))
            out_offsets.append(len(out_rows))
        result: dict[str, Any] = {"offsets": np.array(out_offsets, dtype=np.int64)}
        for j, c in enumerate(out_columns):
            result[c] = np.array([row[j] for row in out_rows], dtype=np.int64)
        return result

    return reducer


def _field(batch: Any, name: str) -> Any:
    """``batch.name`` or ``batch[name]``: a reducer batch as an object or a dict."""
    return batch[name] if isinstance(batch, Mapping) else getattr(batch, name)


def reduce_python(
    coll: Any, by: str, reducer: Callable[[Any], Any], out_columns: Sequence[str]
) -> Any:
    """``coll.reduce`` with a Python reducer whose output columns are ``out_columns``."""
    return coll.reduce(by=by, agg=reducer, columns=tuple(out_columns))
