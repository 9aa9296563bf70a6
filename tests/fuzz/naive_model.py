"""The naive Python model the fuzz targets check ddflow against.

A collection at a time is a multiset of records: a dict from record (a tuple, ``None`` for a
null) to its accumulated count. Each plan step is a plain Python function over such a dict,
written from the documented semantics: nulls propagate through arithmetic, a filter keeps a
row only where its predicate is true (not null, not NaN), ``count``/``group_by`` group nulls
together, a join matches equal keys that are not null, ``distinct`` keeps each record with a
positive count once. Floats compare as ddflow groups them: every NaN equal, ``-0.0 == 0.0``.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

Multiset = dict[tuple[Any, ...], int]

NAN = ("nan",)
"""What every NaN becomes in :func:`canon` (NaN never equals itself in Python)."""


def canon(v: Any) -> Any:
    """A value as ddflow compares and groups it."""
    if isinstance(v, float):
        if math.isnan(v):
            return NAN
        if v == 0.0:
            return 0.0
    return v


def canon_record(r: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(canon(v) for v in r)


def add(into: Multiset, record: tuple[Any, ...], count: int) -> None:
    key = canon_record(record)
    total = into.get(key, 0) + count
    if total:
        into[key] = total
    else:
        into.pop(key, None)


def from_rows(rows: Iterable[dict[str, Any]], columns: list[str]) -> Multiset:
    """A capture's ``at(t)`` rows (with ``diff``) as a multiset."""
    out: Multiset = {}
    for r in rows:
        add(out, tuple(r[c] for c in columns), int(r["diff"]))
    return out


@dataclass(frozen=True)
class Step:
    """One plan step: how to build it on a ddflow collection, and its model."""

    name: str
    build: Callable[[Any], Any]
    model: Callable[[Multiset], Multiset]
    columns: list[str]
    dtypes: list[str]


def _value(v: Any) -> Any:
    return math.nan if v == NAN else v


def filter_greater(index: int, bound: float) -> Callable[[Multiset], Multiset]:
    """Rows whose column ``index`` is greater than ``bound`` (null and NaN rows dropped)."""

    def model(ms: Multiset) -> Multiset:
        out: Multiset = {}
        for r, c in ms.items():
            v = _value(r[index])
            if v is not None and not (isinstance(v, float) and math.isnan(v)) and v > bound:
                add(out, r, c)
        return out

    return model


def filter_equal(index: int, value: Any) -> Callable[[Multiset], Multiset]:
    """Rows whose column ``index`` equals ``value`` (a str or a bool)."""

    def model(ms: Multiset) -> Multiset:
        out: Multiset = {}
        for r, c in ms.items():
            if r[index] is not None and r[index] == value:
                add(out, r, c)
        return out

    return model


def plus(i: int, j: int, offset: int) -> Callable[[Multiset], Multiset]:
    """One column: ``col(i) + col(j) + offset`` (null if either is null)."""

    def model(ms: Multiset) -> Multiset:
        out: Multiset = {}
        for r, c in ms.items():
            a, b = _value(r[i]), _value(r[j])
            add(out, (None if a is None or b is None else a + b + offset,), c)
        return out

    return model


def project(indices: list[int]) -> Callable[[Multiset], Multiset]:
    def model(ms: Multiset) -> Multiset:
        out: Multiset = {}
        for r, c in ms.items():
            add(out, tuple(r[i] for i in indices), c)
        return out

    return model


def count_by(indices: list[int]) -> Callable[[Multiset], Multiset]:
    """``(keys..., count)`` per key whose signed count is not zero, once."""

    def model(ms: Multiset) -> Multiset:
        totals: collections.Counter[tuple[Any, ...]] = collections.Counter()
        for r, c in ms.items():
            totals[tuple(r[i] for i in indices)] += c
        return {(*k, n): 1 for k, n in totals.items() if n}

    return model


def distinct(ms: Multiset) -> Multiset:
    return {r: 1 for r, c in ms.items() if c > 0}


def concat_self(ms: Multiset) -> Multiset:
    return {r: 2 * c for r, c in ms.items()}


def join(left_key: int, right: Multiset, right_key: int) -> Callable[[Multiset], Multiset]:
    """Left rows then the right row's other columns, for equal keys that are not null."""

    def model(ms: Multiset) -> Multiset:
        out: Multiset = {}
        for lr, lc in ms.items():
            if lr[left_key] is None:
                continue
            for rr, rc in right.items():
                if rr[right_key] == lr[left_key]:
                    rest = tuple(v for k, v in enumerate(rr) if k != right_key)
                    add(out, (*lr, *rest), lc * rc)
        return out

    return model


class Unknown(Exception):
    """The model does not say what ddflow gives here (a reduction over negative counts)."""


def group_agg(key: int, value: int) -> Callable[[Multiset], Multiset]:
    """``group_by(key).agg(n=count(), s=sum(value), hi=max(value))`` over positive counts:
    ``s`` and ``hi`` are null when the group has no non-null value."""

    def model(ms: Multiset) -> Multiset:
        if any(c < 0 for c in ms.values()):
            raise Unknown("negative counts")
        groups: dict[Any, list[tuple[Any, int]]] = {}
        for r, c in ms.items():
            groups.setdefault(r[key], []).append((r[value], c))
        out: Multiset = {}
        for k, rows in groups.items():
            present = [(v, c) for v, c in rows if v is not None]
            s = sum(v * c for v, c in present) if present else None
            hi = max(v for v, _ in present) if present else None
            add(out, (k, sum(c for _, c in rows), s, hi), 1)
        return out

    return model
