"""Interned strings are freed once no live data holds them (``ddflow_core::string_gc``).

* results stay exact while strings are freed and their ids reused: a stream of rounds over
  string keys (join, group-by with ``min``/``max`` of strings, string expressions, a
  ``distinct``) with a collection forced after every round, against a recompute from
  scratch in Python, on 1 and 2 workers and with two dataflows alive at once;
* an endless stream of unique strings, each row retracted a round later: after warm-up the
  process's RSS stays flat (a subprocess reads ``/proc/self/status``);
* 30 dataflows, each fed 5 MB of unique strings and dropped: RSS after the 30th stays
  within a bound of RSS after the first.

The RSS runs happen in a subprocess so that nothing else of the test session counts.
"""

from __future__ import annotations

import gc
import json
import random
import subprocess
import sys
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import ddflow as dd
from ddflow import _core

PYTHONPATH = str(Path(dd.__file__).resolve().parent.parent)


def collect_all() -> None:
    """Two collections: the second frees what the first still kept as recently interned.
    A collection is given up while another thread (one an earlier test left running) is
    inside a dataflow call: it is tried again for a while."""
    for _ in range(2):
        for _attempt in range(200):
            if _core.collect_strings() is not None:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("no collection could run for 10 s")


def word(rng: random.Random, round_: int) -> str:
    """A key: mostly new in this round (so freed ids get reused), sometimes an old one."""
    if rng.random() < 0.3:
        return f"old-{rng.randrange(20)}"
    return f"r{round_}-{rng.randrange(40)}-{'x' * rng.randrange(30)}"


def build(flow: Any) -> tuple[Any, Any, dict[str, Any]]:
    """Two inputs ``(k, v)`` and ``(k, tag)`` and captures of several string-holding results."""
    left_in, left = flow.new_input({"k": "str", "v": "int64"})
    right_in, right = flow.new_input({"k": "str", "tag": "str"})
    joined = left.join(right, on="k")
    caps = {
        "joined": joined.select(
            dd.col("k"), dd.col("tag").str.to_uppercase().alias("t"), dd.col("v")
        ).capture(keep="state"),
        "extremes": joined.group_by("v")
        .agg(lo=dd.min("tag"), hi=dd.max("tag"), n=dd.count())
        .capture(keep="state"),
        "keys": left.select(dd.col("k").str.concat("!", separator="").alias("k"))
        .distinct()
        .capture(keep="history"),
    }
    return left_in, right_in, caps


def expected(left: Counter[tuple[str, int]], right: Counter[tuple[str, str]]) -> dict[str, Any]:
    """The captures' states recomputed from the live rows."""
    joined: Counter[tuple[str, str, int]] = Counter()
    for (k, v), a in left.items():
        for (k2, tag), b in right.items():
            if k == k2:
                joined[(k, tag.upper(), v)] += a * b
    groups: dict[int, list[str]] = {}
    counts: Counter[int] = Counter()
    for (k, v), a in left.items():
        for (k2, tag), b in right.items():
            if k == k2:
                groups.setdefault(v, []).append(tag)
                counts[v] += a * b
    extremes = {(v, min(tags), max(tags), counts[v]) for v, tags in groups.items()}
    keys = {(k + "!",) for (k, _v), a in left.items() if a > 0}
    return {"joined": +joined, "extremes": extremes, "keys": keys}


def observed(caps: dict[str, Any]) -> dict[str, Any]:
    """The captures' current states, as ``expected`` writes them."""
    joined: Counter[tuple[str, str, int]] = Counter()
    for r in caps["joined"].state().to_pylist():
        joined[(r["k"], r["t"], r["v"])] += r["diff"]
    extremes = {(r["v"], r["lo"], r["hi"], r["n"]) for r in caps["extremes"].state().to_pylist()}
    keys = {(r["k"],) for r in caps["keys"].state().to_pylist()}
    return {"joined": +joined, "extremes": extremes, "keys": keys}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("workers", [1, 2])
def test_results_stay_exact_while_strings_are_freed_and_reused(workers: int) -> None:
    rng = random.Random(7 + workers)
    flows = []
    for _ in range(2):  # two dataflows alive at once, each its own root
        flow = dd.Dataflow(workers=workers, log=False)
        left_in, right_in, caps = build(flow)
        flows.append((flow, left_in, right_in, caps, Counter(), Counter()))
    freed_before = _core.string_memory()["freed"]
    for round_ in range(12):
        for flow, left_in, right_in, _caps, left, right in flows:
            adds_l = [(word(rng, round_), rng.randrange(5)) for _ in range(60)]
            adds_r = [(word(rng, round_), word(rng, round_)) for _ in range(60)]
            # Retract about half of what is live: its strings become garbage.
            drops_l = [r for r in left if rng.random() < 0.5]
            drops_r = [r for r in right if rng.random() < 0.5]
            rows_l = adds_l + drops_l
            diffs_l = [1] * len(adds_l) + [-left[r] for r in drops_l]
            rows_r = adds_r + drops_r
            diffs_r = [1] * len(adds_r) + [-right[r] for r in drops_r]
            left_in.update_batch(
                {"k": [r[0] for r in rows_l], "v": [r[1] for r in rows_l]},
                times=round_,
                diffs=diffs_l,
            )
            right_in.update_batch(
                {"k": [r[0] for r in rows_r], "tag": [r[1] for r in rows_r]},
                times=round_,
                diffs=diffs_r,
            )
            for r, d in zip(rows_l, diffs_l, strict=True):
                left[r] += d
            for r, d in zip(rows_r, diffs_r, strict=True):
                right[r] += d
            left_in.advance_to(round_ + 1)
            right_in.advance_to(round_ + 1)
            flow.run_until(round_ + 1)
            for live in (left, right):
                for r in [r for r, c in live.items() if c == 0]:
                    del live[r]
        collect_all()
        for _flow, _li, _ri, caps, left, right in flows:
            assert observed(caps) == expected(left, right), f"round {round_}"
    assert _core.string_memory()["freed"] > freed_before


def test_a_dropped_dataflow_frees_its_strings() -> None:
    collect_all()
    base = _core.string_memory()["strings"]
    flow = dd.Dataflow(log=False)
    inp, rows = flow.new_input({"s": "str"})
    out = rows.distinct().capture()
    inp.update_batch({"s": [f"dropped-{i}" for i in range(5000)]}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    assert len(out.state()) == 5000
    collect_all()
    assert _core.string_memory()["strings"] >= base + 5000
    del flow, inp, rows, out
    gc.collect()  # the dataflow's Python objects refer to each other
    collect_all()
    assert _core.string_memory()["strings"] <= base + 10


RSS = textwrap.dedent(
    """
    import gc, json, sys
    import pyarrow as pa
    import ddflow as dd
    from ddflow import _core

    def rss():
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024

    def unique(prefix, start, n):
        return pa.array([f"{prefix}{i:012d}-pad" for i in range(start, start + n)])
    """
)

STREAM = RSS + textwrap.dedent(
    """
    total, batch = int(sys.argv[1]), int(sys.argv[2])
    flow = dd.Dataflow(log=False)
    inp, rows = flow.new_input(("s",))
    out = rows.distinct().count().capture(keep="state")
    seen = []
    for t in range(total // batch):
        col = unique("stream", t * batch, batch)
        inp.update_batch({"s": col}, times=2 * t, diffs=1)
        inp.update_batch({"s": col}, times=2 * t + 1, diffs=-1)
        inp.advance_to(2 * t + 2)
        flow.run_until(2 * t + 2)
        assert len(out.state()) == 0
        seen.append(rss())
    print(json.dumps({"rss": seen, "strings": _core.string_memory()}))
    """
)

DROPPED = RSS + textwrap.dedent(
    """
    flows, n = int(sys.argv[1]), int(sys.argv[2])
    seen = []
    for k in range(flows):
        flow = dd.Dataflow(log=False)
        inp, rows = flow.new_input(("s",))
        out = rows.distinct().capture(keep="state")
        inp.update_batch({"s": unique(f"flow{k}-", 0, n)}, times=0)
        inp.advance_to(1)
        flow.run_until(1)
        assert len(out.state()) == n
        del flow, inp, rows, out
        gc.collect()
        seen.append(rss())
    print(json.dumps({"rss": seen, "strings": _core.string_memory()}))
    """
)


def run(script: str, *args: int) -> dict[str, Any]:
    """Runs ``script`` in a fresh interpreter; its one line of JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=280,
        env={"PYTHONPATH": PYTHONPATH, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.timeout(300)
def test_rss_of_an_endless_stream_of_unique_strings_stays_flat() -> None:
    # 1.5M unique strings of 22 bytes, 100k a round, each retracted one time later.
    got = run(STREAM, 1_500_000, 100_000)
    rss = got["rss"]
    warm = max(rss[3:6])
    assert max(rss[6:]) <= warm * 1.2, rss
    # The interner keeps about the strings a few rounds hold, not all 1.5M.
    assert got["strings"]["strings"] < 1_000_000, got["strings"]
    assert got["strings"]["freed"] > 500_000, got["strings"]


@pytest.mark.timeout(300)
def test_rss_after_thirty_dropped_dataflows_stays_bounded() -> None:
    # 30 dataflows of 5 MB of unique strings each (about 227k strings of 22 bytes).
    got = run(DROPPED, 30, 227_000)
    rss = got["rss"]
    # Without freeing, each dataflow left ~12 MB behind (text, spans, table): +350 MB. With
    # it, RSS settles within the first ten flows (the strings of the last interval or two
    # wait for the next collection) and stays there.
    assert rss[-1] <= max(rss[:10]) * 1.15, rss
    assert rss[-1] - rss[0] < 120, rss
    assert got["strings"]["strings"] < 3 * 227_000, got["strings"]
