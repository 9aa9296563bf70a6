"""A persistent program that feeds its inputs by hand, which the crash tests start, kill
and restart as a process.

    python -m tests.persist.hand_pipeline <output dir> <state dir | -> <steps> [seed]

Two inputs fed by hand: ``events`` (``k``, ``v``, ``s``, a nullable string) by
``update_batch`` and ``labels`` (``k``, ``label``) by ``update_at``. Step ``t`` feeds both at
time ``t`` (events of step ``t``, the retraction of half the events of step ``t - 7``, new
labels every 10 steps replacing the previous ones), advances both to ``t + 1`` and runs
until then. What a step feeds depends only on ``seed`` and ``t`` (:func:`events_at`,
:func:`labels_at`), so a restarted program feeds each input again from its
``inp.frontier()``. Per key the
event count and sum of ``v`` go to the Parquet sink ``totals``; the events joined with their
key's label, ``joined``. Checkpoints every 200 ms; ``-`` runs without persistence.
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa

import ddflow as dd

SINKS = ("totals", "joined")
KEYS = 25


def events_at(seed: int, t: int) -> pa.Table:
    """The events step ``t`` inserts (before the retractions)."""
    rng = np.random.default_rng([seed, t])
    n = int(rng.integers(5, 25))
    words = np.array(["a", "bb", "ccc", "dé", ""], dtype=object)
    s = words[rng.integers(0, len(words), n)]
    null = rng.random(n) < 0.2
    return pa.table(
        {
            "k": pa.array(rng.integers(0, KEYS, n), pa.int64()),
            "v": pa.array(rng.integers(-100, 1000, n), pa.int64()),
            "s": pa.array([None if z else x for x, z in zip(s, null, strict=True)], pa.string()),
        }
    )


def step_updates(seed: int, t: int) -> tuple[pa.Table, np.ndarray]:
    """Every update of ``events`` at step ``t``: its rows and their diffs."""
    new = events_at(seed, t)
    diffs = np.ones(new.num_rows, np.int64)
    if t >= 7:
        old = events_at(seed, t - 7)
        half = old.slice(0, old.num_rows // 2)
        new = pa.concat_tables([new, half])
        diffs = np.concatenate([diffs, -np.ones(half.num_rows, np.int64)])
    return new, diffs


def labels_at(t: int) -> list[tuple[tuple[int, str], int]]:
    """The ``labels`` updates at step ``t``: ``((k, label), diff)``."""
    if t % 10:
        return []
    out = [((k, f"L{t}-{k}"), 1) for k in range(0, KEYS, 2)]
    if t >= 10:
        out += [((k, f"L{t - 10}-{k}"), -1) for k in range(0, KEYS, 2)]
    return out


def build(out: str, state: str | None) -> tuple[dd.Dataflow, dd.InputSession, dd.InputSession]:
    """The program's dataflow and its two inputs."""
    persistence = None if state is None else dd.Persistence(state, interval="200ms")
    flow = dd.Dataflow(persistence=persistence, log=False)
    events_in, events = flow.new_input({"k": "int64", "v": "int64", "s": "str"}, name="events")
    labels_in, labels = flow.new_input({"k": "int64", "label": "str"}, name="labels")
    totals = events.group_by("k").agg(n=dd.count(), total=dd.sum("v"))
    joined = events.filter(dd.col("v") > 800).join(labels, on="k")
    dd.io.parquet.write(totals, f"{out}/totals")
    dd.io.parquet.write(joined, f"{out}/joined")
    return flow, events_in, labels_in


def run(out: str, state: str | None, steps: int, seed: int) -> None:
    """Feeds steps ``inp.frontier()`` to ``steps`` and runs until the last one is done."""
    flow, events_in, labels_in = build(out, state)
    # Each input from its own frontier: a crash between the two advances leaves one ahead.
    events_from, labels_from = events_in.frontier(), labels_in.frontier()
    assert isinstance(events_from, int) and isinstance(labels_from, int)
    for t in range(min(events_from, labels_from), steps):
        if t >= events_from:
            table, diffs = step_updates(seed, t)
            events_in.update_batch(table, times=t, diffs=diffs)
        if t >= labels_from:
            for record, diff in labels_at(t):
                labels_in.update_at(record, time=t, diff=diff)
        events_in.advance_to(t + 1)
        labels_in.advance_to(t + 1)
        flow.run_until(t + 1)


def main() -> None:
    out, state, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    run(out, None if state == "-" else state, steps, seed)


if __name__ == "__main__":
    main()
