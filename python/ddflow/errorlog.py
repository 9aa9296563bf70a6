"""Error updates on the Python side: the dataflow's consolidated log of errors as data.

A record that makes an operator fail (an expression, a user function, an accumulation that
overflows) becomes an *error update* in the engine: operator, message, the offending values,
the record's time and diff. :class:`ErrorLog` collects them from the engine, sums diffs per
(operator, message, values, time) exactly (Python ints), and answers which errors are *live*
at an outer time ``t``: those whose diffs at times ``<=`` it sum to non-zero. Retracting the
bad record retracts its error, so from that time on the error is no longer live.

Inside ``iterate`` an error's time also has iteration coordinates. An error is live at ``t``
if it is live at ``t`` in *some* iteration: a record that fails in iteration 0 is missing from
iteration 1 on, so the error would cancel in the loop's limit, and the output would be wrong
without a word. Errors therefore never cancel across iterations, only across outer times.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ddflow.times import Coords, less_equal

__all__ = ["ErrorKey", "ErrorLog", "RawError", "SHOWN"]

RawError = tuple[int, str, str, str, Sequence[int], int]
"""An error update as the engine hands it out: node, label, message, values, time (outer
coordinates, then the node's iteration coordinates), diff."""

SHOWN = 5
"""How many live errors a ``DataError`` message lists."""


@dataclass(frozen=True, order=True)
class ErrorKey:
    """What an error is about: the operator (plan node and label), message and values."""

    node: int
    operator: str
    message: str
    values: str


class ErrorLog:
    """Every error update of a dataflow so far, consolidated per (error, time)."""

    def __init__(self, dims: int = 1) -> None:
        self.dims = dims
        """Outer time coordinates (the rest of an error's time are iterations)."""
        self._diffs: dict[tuple[ErrorKey, Coords], int] = {}

    def __len__(self) -> int:
        return len(self._diffs)

    def add(self, raw: Iterable[RawError]) -> None:
        """Adds error updates taken from the engine."""
        for node, label, message, values, time, diff in raw:
            key = (ErrorKey(int(node), label, message, values), tuple(int(c) for c in time))
            total = self._diffs.get(key, 0) + int(diff)
            if total:
                self._diffs[key] = total
            else:
                self._diffs.pop(key, None)

    def _select(
        self, nodes: Collection[int] | None, complete: Callable[[Coords], bool]
    ) -> list[tuple[ErrorKey, Coords, int]]:
        d = self.dims
        return sorted(
            (key, time, diff)
            for (key, time), diff in self._diffs.items()
            if (nodes is None or key.node in nodes) and complete(time[:d])
        )

    def live_at(self, time: Coords, nodes: Collection[int] | None = None) -> list[dict[str, Any]]:
        """Errors live at outer ``time`` (of operators in ``nodes``, default all), in a
        stable order: ``operator``, ``message``, ``values``, ``count`` (the accumulated diff
        where it is live) and ``since`` (the least outer time of their updates)."""
        d = self.dims
        updates: dict[ErrorKey, list[tuple[Coords, int]]] = {}
        since: dict[ErrorKey, Coords] = {}
        for key, t, diff in self._select(nodes, lambda t: less_equal(t, time)):
            updates.setdefault(key, []).append((t[d:], diff))
            since[key] = min(since.get(key, t[:d]), t[:d])
        live = []
        for key, ups in sorted(updates.items()):
            count = _live_count(ups)
            if count:
                live.append(
                    {
                        "operator": key.operator,
                        "message": key.message,
                        "values": key.values,
                        "count": count,
                        "since": since[key],
                    }
                )
        return live

    def first_live(
        self, nodes: Collection[int] | None, complete: Callable[[Coords], bool]
    ) -> tuple[Coords, list[dict[str, Any]]] | None:
        """The least complete time (lexicographically) at which some error is live, with
        the errors live there, or None. Liveness changes only at joins of error times, so
        those are the candidates."""
        times = {t[: self.dims] for _, t, _ in self._select(nodes, complete)}
        candidates = set(times)
        frontier = set(times)
        while frontier:  # close under pairwise joins (errors are few)
            new = {
                tuple(max(a, b) for a, b in zip(x, y, strict=True)) for x in frontier for y in times
            } - candidates
            candidates |= new
            frontier = new
        for t in sorted(candidates):
            if complete(t):
                live = self.live_at(t, nodes)
                if live:
                    return t, live
        return None

    def table(
        self,
        nodes: Collection[int] | None,
        complete: Callable[[Coords], bool],
        to_user: Callable[[Sequence[int]], Any],
    ) -> pa.Table:
        """The consolidated error updates (``operator``, ``message``, ``values``, ``time``,
        ``iteration`` (the iteration coordinates inside ``iterate``, else empty), ``diff``) of
        ``nodes`` at complete times, sorted by time then error."""
        d = self.dims
        rows = sorted((time, key, diff) for key, time, diff in self._select(nodes, complete))
        return pa.table(
            {
                "operator": pa.array([k.operator for _, k, _ in rows], pa.string()),
                "message": pa.array([k.message for _, k, _ in rows], pa.string()),
                "values": pa.array([k.values for _, k, _ in rows], pa.string()),
                "time": pa.array([to_user(t[:d]) for t, _, _ in rows]),
                "iteration": pa.array([list(t[d:]) for t, _, _ in rows], pa.list_(pa.int64())),
                "diff": pa.array([diff for _, _, diff in rows], pa.int64()),
            }
        )


def _live_count(updates: Sequence[tuple[Coords, int]]) -> int:
    """The accumulated diff of one error where it is live, or 0: ``updates`` are (iteration
    coordinates, diff) of its updates at outer times ``<=`` the time asked about. With no
    iteration coordinates this is the plain sum; otherwise the first non-zero accumulation at
    an iteration (joins of the updates' iterations are the candidates)."""
    if not updates or not updates[0][0]:
        return sum(diff for _, diff in updates)
    inner = {i for i, _ in updates}
    candidates = set(inner)
    frontier = set(inner)
    while frontier:
        new = {
            tuple(max(a, b) for a, b in zip(x, y, strict=True)) for x in frontier for y in inner
        } - candidates
        candidates |= new
        frontier = new
    for c in sorted(candidates):
        acc = sum(diff for i, diff in updates if less_equal(i, c))
        if acc:
            return acc
    return 0


def describe(live: Sequence[dict[str, Any]], to_user: Callable[[Sequence[int]], Any]) -> str:
    """The first live errors as text, one per line."""
    lines = [
        f"  operator {e['operator']}: {e['message']} (values: {e['values']}; count "
        f"{e['count']}, since time {to_user(e['since'])!r})"
        for e in live[:SHOWN]
    ]
    more = len(live) - SHOWN
    if more > 0:
        lines.append(f"  ... and {more} more")
    return "\n".join(lines)
