"""Event time behind a file source driven by ``flow.run()``: the logical time from the rows'
own ``seq`` column (``time_column=``), the event time from ``ts``; every capture checked
against the recompute of :mod:`.oracle` at every logical time, on 1 and 2 workers.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

import ddflow as dd

from . import oracle

pytestmark = pytest.mark.timeout(120)


def _history(rng: random.Random, times: int, n: int) -> list[oracle.Update]:
    """Insertions only (a file holds rows, not retractions), some far behind in event time."""
    out: list[oracle.Update] = []
    for _ in range(n):
        t = rng.randrange(times)
        ts = 10 * t + rng.randrange(-25, 10)
        out.append(((ts, rng.choice("xyz"), rng.randrange(50)), t, 1))
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_a_watched_csv_directory_with_a_time_column(tmp_path: Path, workers: int) -> None:
    rng = random.Random(workers)
    times = 9
    updates = _history(rng, times, 80)
    # Three files, each the rows of a range of logical times, in shuffled order.
    for i, (lo, hi) in enumerate([(0, 3), (3, 6), (6, times)]):
        rows = [u for u in updates if lo <= u[1] < hi]
        rng.shuffle(rows)
        text = "seq,ts,k,x\n" + "".join(f"{t},{r[0]},{r[1]},{r[2]}\n" for r, t, _ in rows)
        (tmp_path / f"part{i}.csv").write_text(text)
    flow = dd.Dataflow(workers=workers)
    schema = {"seq": "int64", "ts": "int64", "k": "str", "x": "int64"}
    events = dd.io.csv.read(flow, tmp_path, schema=schema, time_column="seq")
    w = events.select("ts", "k", "x").with_watermark("ts", lateness=12, name="events")
    late = flow.late().capture()
    aggs = {"n": dd.count(), "s": dd.sum("x"), "mx": dd.max("x")}
    final = w.group_by_dynamic("ts", every=20, group_by="k", emit="final").agg(**aggs).capture()
    sessions = w.group_by_session("ts", gap=6, group_by="k").agg(**aggs).capture()
    flow.run()

    split = oracle.split(updates, 12, range(times))
    assert split.late, "the history has late records"

    def rows(cap: dd.Capture, t: int) -> Counter[tuple[object, ...]]:
        got: Counter[tuple[object, ...]] = Counter()
        for row in cap.at(t).to_pylist():
            diff = row.pop("diff")
            got[tuple(row.values())] += diff
        return got

    for t in range(times):
        on = oracle.state(split.on_time, t)
        want_late = Counter({(*r, "events"): c for r, c in oracle.state(split.late, t).items()})
        assert rows(late, t) == want_late, f"late at {t}"
        windows = oracle.closed(oracle.dynamic(on, 20, 20, 0, keyed=True), split.after[t])
        assert rows(final, t) == Counter(windows), f"final windows at {t}"
        assert rows(sessions, t) == Counter(oracle.sessions(on, 6, keyed=True)), f"at {t}"
