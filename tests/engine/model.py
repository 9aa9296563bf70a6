"""A brute-force reference model of ddflow's semantics, for tests.

The model knows nothing about batches, frontiers or incremental work. A collection is a
history of updates ``(record, time, diff)``; its value at a time ``t`` is the sum of the
diffs of updates at times ``<= t`` in the product order, zero counts dropped. An operator is
a plain function from accumulated collections (:class:`Rel`) to an accumulated collection,
and :func:`evaluate` applies such a function from scratch at every time of the lattice that
the input times generate (their closure under join), then turns the results back into
consolidated output updates. The rules it implements:

* ``select`` / ``filter`` / ``map`` / ``flat_map`` / ``concat`` / ``negate`` act per record;
* ``join`` is bilinear on the accumulated collections; ``semijoin`` keeps a left record with
  its own count while the right side's total count for its key is positive; ``antijoin`` is
  left minus semijoin;
* ``reduce`` applies an aggregate per key to the key's records with non-zero count:
  ``min`` / ``max`` / ``top_k`` / ``distinct`` look at values with positive count, ``sum`` is
  the signed weighted sum (present whenever the key is), ``count`` is the signed sum of
  counts (absent when zero); ``Aggs`` (``group_by().agg()``) writes several one-row
  aggregates per key, present while the key has a non-zero record, no row (an error in the
  engine) where ``mean`` divides by a zero count or ``min``/``max`` have no positive value;
* ``distinct`` keeps records with positive count (count 1); ``threshold(f)`` gives count
  ``f(c)``;
* ``iterate`` is the fixed point of repeated application of the body to the source.

Times are tuples of ints everywhere in the model: a 1-D time ``5`` is ``(5,)``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Time = tuple[int, ...]
Record = tuple[Any, ...]
Update = tuple[Record, Time, int]
Counts = dict[Record, int]
Row = dict[str, Any]

__all__ = [
    "Agg",
    "Aggs",
    "Count",
    "Distinct",
    "Max",
    "Min",
    "ModelResult",
    "PyReduce",
    "Rel",
    "Sum",
    "TopK",
    "accumulate",
    "bfs",
    "bilinear_join_updates",
    "concat",
    "consolidate",
    "count",
    "distinct",
    "evaluate",
    "filter_rows",
    "flat_map",
    "grid",
    "iterate",
    "join",
    "join_closure",
    "lattice_join",
    "leq",
    "map_rows",
    "meet",
    "negate",
    "plain_bfs",
    "reduce",
    "select",
    "semijoin",
    "antijoin",
    "threshold",
    "to_updates",
    "updates_from_membership",
    "with_columns",
]


# ---------------------------------------------------------------------------------------------
# Lattice of product times


def leq(a: Time, b: Time) -> bool:
    """Product partial order: ``a <= b`` iff every coordinate of ``a`` is ``<=``."""
    if len(a) != len(b):
        raise ValueError(f"times of different dimensions: {a} and {b}")
    return all(x <= y for x, y in zip(a, b, strict=True))


def lattice_join(a: Time, b: Time) -> Time:
    """Least upper bound: coordinate-wise max."""
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))


def meet(a: Time, b: Time) -> Time:
    """Greatest lower bound: coordinate-wise min."""
    return tuple(min(x, y) for x, y in zip(a, b, strict=True))


def join_closure(times: Iterable[Time]) -> list[Time]:
    """The closure of ``times`` under pairwise join, sorted lexicographically."""
    closed: set[Time] = set(times)
    frontier = list(closed)
    while frontier:
        fresh: list[Time] = []
        for a in frontier:
            for b in list(closed):
                j = lattice_join(a, b)
                if j not in closed:
                    closed.add(j)
                    fresh.append(j)
        frontier = fresh
    return sorted(closed)


def grid(dims: int, upto: int) -> list[Time]:
    """Every time with ``dims`` coordinates in ``0..=upto``, lexicographically sorted."""
    return [tuple(t) for t in itertools.product(range(upto + 1), repeat=dims)]


# ---------------------------------------------------------------------------------------------
# Histories of updates


def _add(counts: Counts, record: Record, diff: int) -> None:
    value = counts.get(record, 0) + diff
    if value:
        counts[record] = value
    else:
        counts.pop(record, None)


def accumulate(updates: Iterable[Update], t: Time) -> Counts:
    """The collection at time ``t``: summed diffs of updates at times ``<= t``, zeros dropped."""
    counts: Counts = {}
    for record, time, diff in updates:
        if leq(time, t):
            _add(counts, record, diff)
    return counts


def consolidate(updates: Iterable[Update]) -> list[Update]:
    """Sum diffs per ``(record, time)``, drop zeros, sort by time then record."""
    sums: dict[tuple[Time, Record], int] = defaultdict(int)
    for record, time, diff in updates:
        sums[(time, record)] += diff
    return [(record, time, diff) for (time, record), diff in sorted(sums.items()) if diff]


def to_updates(outputs: Mapping[Time, Counts]) -> list[Update]:
    """Invert accumulation: the unique updates at the given times that accumulate to ``outputs``.

    ``outputs`` must hold the accumulated collection at every time of a join-closed set; the
    result has ``accumulate(result, t) == outputs[t]`` for each of those times. Each time's
    diff is its collection minus everything accumulated strictly below it, visiting times in
    lexicographic order (a linear extension of the product order).
    """
    done: list[tuple[Time, Counts]] = []
    result: list[Update] = []
    for t in sorted(outputs):
        below: Counts = {}
        for s, delta in done:
            if leq(s, t):
                for record, diff in delta.items():
                    _add(below, record, diff)
        delta: Counts = dict(outputs[t])
        for record, diff in below.items():
            _add(delta, record, -diff)
        done.append((t, delta))
        result.extend((record, t, diff) for record, diff in delta.items())
    return consolidate(result)


def updates_from_membership(member: Mapping[Time, Iterable[Record]]) -> list[Update]:
    """Updates whose accumulation at each time of ``member``'s keys is exactly that set.

    ``member`` maps every time of a grid (any join-closed set) to the records present at that
    time; the result is the Moebius inversion of that indicator, so at each of those times
    every record has count 1 or 0 even when membership is not monotone in time.
    """
    return to_updates({t: dict.fromkeys(records, 1) for t, records in member.items()})


# ---------------------------------------------------------------------------------------------
# Accumulated collections with named columns


@dataclass(frozen=True)
class Rel:
    """An accumulated collection: named columns and a count per record (no zero counts)."""

    columns: tuple[str, ...]
    counts: Mapping[Record, int] = field(default_factory=dict)

    def rows(self) -> Iterable[tuple[Row, int]]:
        """Each record as a ``{column: value}`` dict, with its count."""
        for record, diff in self.counts.items():
            yield dict(zip(self.columns, record, strict=True)), diff

    def index(self, name: str) -> int:
        """Position of column ``name``; ``KeyError`` naming it when missing."""
        try:
            return self.columns.index(name)
        except ValueError:
            raise KeyError(f"column {name!r} not in {self.columns}") from None


def _rel(columns: Sequence[str], pairs: Iterable[tuple[Record, int]]) -> Rel:
    counts: Counts = {}
    for record, diff in pairs:
        _add(counts, tuple(record), diff)
    return Rel(tuple(columns), counts)


def _names(spec: str | Sequence[str]) -> tuple[str, ...]:
    return (spec,) if isinstance(spec, str) else tuple(spec)


def select(rel: Rel, **exprs: Callable[[Row], Any]) -> Rel:
    """``select(name=expr, ...)`` with each expression a function of the row dict."""
    return _rel(list(exprs), ((tuple(f(row) for f in exprs.values()), c) for row, c in rel.rows()))


def with_columns(rel: Rel, **exprs: Callable[[Row], Any]) -> Rel:
    """Replace columns of the same name in place, append new ones at the end."""
    columns = list(rel.columns) + [n for n in exprs if n not in rel.columns]

    def out(row: Row) -> Record:
        new = {**row, **{n: f(row) for n, f in exprs.items()}}
        return tuple(new[n] for n in columns)

    return _rel(columns, ((out(row), c) for row, c in rel.rows()))


def filter_rows(rel: Rel, pred: Callable[[Row], bool]) -> Rel:
    """Keep records for which ``pred(row)`` holds (counts unchanged)."""
    return Rel(rel.columns, {r: c for r, c in rel.counts.items() if pred(_row(rel.columns, r))})


def _row(columns: tuple[str, ...], record: Record) -> Row:
    return dict(zip(columns, record, strict=True))


def map_rows(rel: Rel, fn: Callable[[Row], Record], columns: Sequence[str]) -> Rel:
    """Map each record to one new record with ``columns``."""
    return _rel(columns, ((fn(row), c) for row, c in rel.rows()))


def flat_map(rel: Rel, fn: Callable[[Row], Iterable[Record]], columns: Sequence[str]) -> Rel:
    """Map each record to any number of new records, each with the source's count."""
    return _rel(columns, ((out, c) for row, c in rel.rows() for out in fn(row)))


def concat(*rels: Rel) -> Rel:
    """Union with counts added; every input must have the same columns."""
    columns = rels[0].columns
    for rel in rels:
        if rel.columns != columns:
            raise ValueError(f"concat of {rel.columns} and {columns}")
    return _rel(columns, ((r, c) for rel in rels for r, c in rel.counts.items()))


def negate(rel: Rel) -> Rel:
    """Every count negated."""
    return Rel(rel.columns, {r: -c for r, c in rel.counts.items()})


def _keys(
    left: Rel,
    right: Rel,
    on: str | Sequence[str] | None,
    left_on: str | Sequence[str] | None,
    right_on: str | Sequence[str] | None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if on is not None:
        return _names(on), _names(on)
    if left_on is None or right_on is None:
        raise ValueError("join needs on= or both left_on= and right_on=")
    lk, rk = _names(left_on), _names(right_on)
    if len(lk) != len(rk):
        raise ValueError(f"left_on {lk} and right_on {rk} differ in length")
    return lk, rk


def _split(rel: Rel, key: tuple[str, ...]) -> tuple[list[int], list[int]]:
    kpos = [rel.index(k) for k in key]
    vpos = [i for i in range(len(rel.columns)) if i not in kpos]
    return kpos, vpos


def join(
    left: Rel,
    right: Rel,
    on: str | Sequence[str] | None = None,
    *,
    left_on: str | Sequence[str] | None = None,
    right_on: str | Sequence[str] | None = None,
    nulls_equal: bool = False,
) -> Rel:
    """Bilinear equi-join: key (left names), left's other columns, right's other columns. A
    key with a null (``None``) matches nothing (SQL), unless ``nulls_equal``."""
    lk, rk = _keys(left, right, on, left_on, right_on)
    lkp, lvp = _split(left, lk)
    rkp, rvp = _split(right, rk)
    columns = list(lk) + [left.columns[i] for i in lvp] + [right.columns[i] for i in rvp]
    if len(set(columns)) != len(columns):
        raise ValueError(f"join output columns clash: {columns}")
    by_key: dict[Record, list[tuple[Record, int]]] = defaultdict(list)
    for r, c in right.counts.items():
        by_key[tuple(r[i] for i in rkp)].append((tuple(r[i] for i in rvp), c))
    pairs = []
    for r, c in left.counts.items():
        key = tuple(r[i] for i in lkp)
        lv = tuple(r[i] for i in lvp)
        if None in key and not nulls_equal:
            continue
        for rv, c2 in by_key.get(key, ()):
            pairs.append((key + lv + rv, c * c2))
    return _rel(columns, pairs)


def semijoin(
    left: Rel,
    right: Rel,
    on: str | Sequence[str] | None = None,
    *,
    left_on: str | Sequence[str] | None = None,
    right_on: str | Sequence[str] | None = None,
) -> Rel:
    """Left records (with their own counts) whose key's total count on the right is positive
    (left's columns kept). A key with a null matches nothing (SQL)."""
    lk, rk = _keys(left, right, on, left_on, right_on)
    lkp, _ = _split(left, lk)
    rkp, _ = _split(right, rk)
    key_count: Counts = {}
    for r, c in right.counts.items():
        _add(key_count, tuple(r[i] for i in rkp), c)
    return _rel(
        left.columns,
        (
            (r, c if None not in (k := tuple(r[i] for i in lkp)) and key_count.get(k, 0) > 0 else 0)
            for r, c in left.counts.items()
        ),
    )


def antijoin(
    left: Rel,
    right: Rel,
    on: str | Sequence[str] | None = None,
    *,
    left_on: str | Sequence[str] | None = None,
    right_on: str | Sequence[str] | None = None,
) -> Rel:
    """``left - semijoin(left, right)``."""
    return concat(left, negate(semijoin(left, right, on, left_on=left_on, right_on=right_on)))


# ---------------------------------------------------------------------------------------------
# Reduce and friends


class Agg:
    """A per-key aggregate: output value columns and the per-key function."""

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        """Names of the aggregate's output columns (after the key columns)."""
        raise NotImplementedError

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        """Output rows with counts for one key's non-zero ``(value row, count)`` pairs."""
        raise NotImplementedError


def _positive(group: list[tuple[Record, int]]) -> list[Record]:
    return [v for v, c in group if c > 0]


def _min_max(pick: Callable[[list[Any]], Any], vals: list[Any]) -> list[tuple[Record, int]]:
    """``min`` / ``max`` of the values with positive count, skipping nulls (``None``): null
    when all are null, no row when there is none."""
    known = [x for x in vals if x is not None]
    if known:
        return [((pick(known),), 1)]
    return [((None,), 1)] if vals else []


@dataclass(frozen=True)
class Min(Agg):
    """Least value of ``column`` among values with positive count."""

    column: str

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return (self.column,)

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        i = value_columns.index(self.column)
        return _min_max(min, [v[i] for v in _positive(group)])


@dataclass(frozen=True)
class Max(Agg):
    """Greatest value of ``column`` among values with positive count."""

    column: str

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return (self.column,)

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        i = value_columns.index(self.column)
        return _min_max(max, [v[i] for v in _positive(group)])


@dataclass(frozen=True)
class Sum(Agg):
    """Signed weighted sum of ``column``; present whenever the key has a non-zero record."""

    column: str

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return (self.column,)

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        i = value_columns.index(self.column)
        if not group:
            return []
        terms = [(v[i], c) for v, c in group if v[i] is not None]
        return [((sum(x * c for x, c in terms) if terms else None,), 1)]


@dataclass(frozen=True)
class Count(Agg):
    """Signed sum of counts, absent when zero; output column ``count``."""

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return ("count",)

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        n = sum(c for _, c in group)
        return [((n,), 1)] if n else []


@dataclass(frozen=True)
class Distinct(Agg):
    """Each value row with positive count, with count 1."""

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return value_columns

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        return [(v, 1) for v in _positive(group)]


@dataclass(frozen=True)
class TopK(Agg):
    """The ``k`` value rows with positive count that come first ordered by ``column``."""

    column: str
    k: int
    descending: bool = False

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return value_columns

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        i = value_columns.index(self.column)
        vals = sorted(_positive(group), key=lambda v: (v[i], v), reverse=self.descending)
        return [(v, 1) for v in vals[: self.k]]


@dataclass(frozen=True)
class PyReduce(Agg):
    """A per-key Python function from ``[(value row, count)]`` to ``[(output row, count)]``."""

    fn: Callable[[list[tuple[Record, int]]], list[tuple[Record, int]]]
    columns: tuple[str, ...]

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return self.columns

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        return self.fn(sorted(group))


@dataclass(frozen=True)
class Aggs(Agg):
    """Several one-row aggregates per key: ``parts`` are ``(name, kind, column)`` with kind
    ``sum``/``count``/``mean``/``min``/``max`` (column None for ``count``). One row while the
    key's count (the signed sum of its records' counts) is non-zero; none where a part is
    undefined (:meth:`undefined`).
    """

    parts: tuple[tuple[str, str, str | None], ...]

    def out_columns(self, value_columns: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self.parts)

    @staticmethod
    def _values(i: int, group: list[tuple[Record, int]]) -> tuple[list[Any], int]:
        """Column ``i``'s non-null values whose accumulated count (over the records holding
        them) is positive, and the nulls' accumulated count: ``min`` / ``max`` /
        ``count_distinct`` read the column's values as a multiset."""
        acc: dict[Any, int] = {}
        for v, c in group:
            acc[v[i]] = acc.get(v[i], 0) + c
        nulls = acc.pop(None, 0)
        return [x for x, c in acc.items() if c > 0], nulls

    def undefined(self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]) -> bool:
        """Whether a present group has a part without a value (an error update): a ``min`` /
        ``max`` whose column has no value and no null with a positive count."""
        n = sum(c for _, c in group)
        if n == 0:
            return False
        for _, kind, column in self.parts:
            if kind in ("min", "max"):
                values, nulls = self._values(value_columns.index(str(column)), group)
                if not values and nulls <= 0:
                    return True
        return False

    def apply(
        self, value_columns: tuple[str, ...], group: list[tuple[Record, int]]
    ) -> list[tuple[Record, int]]:
        n = sum(c for _, c in group)
        if n == 0 or self.undefined(value_columns, group):
            return []
        row: list[Any] = []
        for _, kind, column in self.parts:
            if kind == "count" and column is None:
                row.append(n)
                continue
            # SQL nulls (None): skipped; a part over only nulls is null.
            i = value_columns.index(str(column))
            terms = [(v[i], c) for v, c in group if v[i] is not None]
            nn = sum(c for _, c in terms)
            total = sum(x * c for x, c in terms)
            positive, _ = self._values(i, group)
            if kind == "count":
                row.append(nn)
            elif nn == 0 and kind in ("sum", "mean"):
                row.append(None)  # no non-null value (counted): null
            elif kind == "sum":
                row.append(total)
            elif kind == "mean":
                row.append(total / nn)
            else:
                row.append(
                    (min(positive) if kind == "min" else max(positive)) if positive else None
                )
        return [(tuple(row), 1)]


def reduce(rel: Rel, by: str | Sequence[str], agg: Agg) -> Rel:
    """Per key (columns ``by``), ``agg`` on the key's non-zero records; key columns first."""
    key = _names(by)
    kpos, vpos = _split(rel, key)
    value_columns = tuple(rel.columns[i] for i in vpos)
    groups: dict[Record, list[tuple[Record, int]]] = defaultdict(list)
    for r, c in rel.counts.items():
        groups[tuple(r[i] for i in kpos)].append((tuple(r[i] for i in vpos), c))
    columns = key + agg.out_columns(value_columns)
    pairs = [
        (k + out, c) for k, group in groups.items() for out, c in agg.apply(value_columns, group)
    ]
    return _rel(columns, pairs)


def count(rel: Rel, by: str | Sequence[str]) -> Rel:
    """``(by..., count)`` with the signed sum of counts per key, absent when zero."""
    return reduce(rel, by, Count())


def distinct(rel: Rel) -> Rel:
    """Records with positive count, each with count 1."""
    return Rel(rel.columns, {r: 1 for r, c in rel.counts.items() if c > 0})


def threshold(rel: Rel, fn: Callable[[int], int]) -> Rel:
    """Each record with count ``fn(count)`` (zeros dropped)."""
    return _rel(rel.columns, ((r, int(fn(c))) for r, c in rel.counts.items()))


def iterate(
    rel: Rel, body: Callable[[Rel], Rel], max_iterations: int | None = None, limit: int = 1000
) -> Rel:
    """Fixed point of ``v_0 = rel, v_{i+1} = body(v_i)``.

    With ``max_iterations`` the result is ``v_n`` for ``n = max_iterations`` (or the fixed
    point if reached earlier). Without it, ``limit`` bounds the search and a body that has not
    converged by then raises ``RuntimeError``.
    """
    current = rel
    bound = limit if max_iterations is None else max_iterations
    for _ in range(bound):
        nxt = body(current)
        if nxt.columns != current.columns:
            raise ValueError(f"iterate body changed columns {current.columns} -> {nxt.columns}")
        if dict(nxt.counts) == dict(current.counts):
            return nxt
        current = nxt
    if max_iterations is None:
        raise RuntimeError(f"iterate did not converge within {limit} iterations")
    return current


# ---------------------------------------------------------------------------------------------
# Evaluation over the lattice


@dataclass(frozen=True)
class ModelResult:
    """The model's output: columns, consolidated updates, and the lattice it was checked at."""

    columns: tuple[str, ...]
    updates: list[Update]
    times: list[Time]
    outputs: dict[Time, Counts]

    def at(self, t: Time) -> Counts:
        """The accumulated output at any time ``t`` (also times outside :attr:`times`)."""
        return accumulate(self.updates, t)


def evaluate(
    inputs: Mapping[str, tuple[Sequence[str], Sequence[Update]]],
    fn: Callable[[dict[str, Rel]], Rel],
    extra_times: Iterable[Time] = (),
) -> ModelResult:
    """Evaluate ``fn`` from scratch at every time of the join closure of the input times.

    ``inputs`` maps an input name to its columns and its update history. ``fn`` receives the
    accumulated :class:`Rel` of every input at one time and returns the output at that time.
    """
    times = join_closure([t for _, ups in inputs.values() for _, t, _ in ups] + list(extra_times))
    outputs: dict[Time, Counts] = {}
    columns: tuple[str, ...] = ()
    for t in times:
        rels = {name: Rel(tuple(cols), accumulate(ups, t)) for name, (cols, ups) in inputs.items()}
        out = fn(rels)
        columns = out.columns
        outputs[t] = dict(out.counts)
    return ModelResult(columns, to_updates(outputs), times, outputs)


def bilinear_join_updates(
    left: Sequence[Update], right: Sequence[Update], key_len: int = 1
) -> list[Update]:
    """Differential dataflow's join on updates: ``(k,v1,t1,d1) x (k,v2,t2,d2) -> t1 v t2``.

    Records are ``key + values`` with the first ``key_len`` columns the key. Used to check that
    :func:`join` evaluated over the lattice agrees with the update-level definition.
    """
    out = []
    for r1, t1, d1 in left:
        for r2, t2, d2 in right:
            if r1[:key_len] == r2[:key_len]:
                out.append((r1 + r2[key_len:], lattice_join(t1, t2), d1 * d2))
    return consolidate(out)


# ---------------------------------------------------------------------------------------------
# Breadth-first search


def plain_bfs(edges: Iterable[tuple[int, int]], roots: Iterable[int]) -> dict[int, int]:
    """Textbook multi-source BFS on directed ``edges``: ``{node: distance}`` of reached nodes."""
    adjacency: dict[int, list[int]] = defaultdict(list)
    for src, dst in edges:
        adjacency[src].append(dst)
    dist: dict[int, int] = {}
    queue: deque[int] = deque()
    for root in roots:
        if root not in dist:
            dist[root] = 0
            queue.append(root)
    while queue:
        node = queue.popleft()
        for nxt in adjacency[node]:
            if nxt not in dist:
                dist[nxt] = dist[node] + 1
                queue.append(nxt)
    return dist


def bfs(edges: Rel, roots: Rel) -> Rel:
    """BFS written with the model's operators, as ``dd.algorithms.bfs`` is with the API.

    ``edges`` has columns ``(src, dst)``, ``roots`` has ``(node,)``; the result has
    ``(node, dist)``.
    """
    nodes = select(roots, node=lambda r: r["node"], dist=lambda r: 0)

    def body(dists: Rel) -> Rel:
        proposals = join(dists, edges, left_on="node", right_on="src")
        stepped = select(proposals, node=lambda r: r["dst"], dist=lambda r: r["dist"] + 1)
        return reduce(concat(stepped, nodes), by="node", agg=Min("dist"))

    return iterate(nodes, body)
