"""A per-tick look at the soak's dataflow (``benches/soak.py``): after every tick of the run
loop, the process' RSS, ``ddflow.memory.live_bytes()`` and ``flow.metrics()`` per node; prints
the bands after a warm-up, the ticks of highest RSS with their place in the simulated hour,
and the nodes whose bytes swing by more than 200 KB.

``python benches/soak_probe.py [--ticks 2500] [--warmup 1500] [--user-churn 100]
[--jsonl PATH]`` (every tick sampled, so its bands are wider than the soak's samples every
2 s; ``--jsonl`` keeps the samples).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import ddflow as dd
from ddflow.memory import live_bytes, string_memory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from soak import START_MS, Clicks, build, rss_bytes  # noqa: E402

MB = 1 << 20
HOUR_MS = 3_600_000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ticks", type=int, default=2500)
    p.add_argument("--warmup", type=int, default=1500, help="ticks before the bands count")
    p.add_argument("--user-churn", type=int, default=100)
    p.add_argument("--jsonl", default=None)
    args = p.parse_args()

    flow = dd.Dataflow(log=False)
    source = Clicks(2000, 50, 10_000, args.user_churn, 200, 0)
    build(flow, source)
    samples: list[dict[str, Any]] = []

    def after_tick(_: Any) -> None:
        m = flow.metrics()
        samples.append(
            {
                "tick": len(samples) + 1,
                "rss": rss_bytes(),
                "live": live_bytes(),
                "heap": m.heap_bytes,
                "strings": string_memory()["strings"],
                "hour_phase": ((source.next_ms - START_MS) % HOUR_MS) / HOUR_MS,
                "nodes": [(o.label, o.heap_bytes + o.queued_bytes) for o in m.operators],
            }
        )
        if len(samples) >= args.ticks:
            flow.stop()

    flow.run(progress=after_tick)
    if args.jsonl:
        Path(args.jsonl).write_text("".join(json.dumps(s) + "\n" for s in samples))
    warm = [s for s in samples if s["tick"] > args.warmup] or samples[-1:]

    def band(key: str) -> str:
        values = [s[key] for s in warm]
        return f"{min(values) / MB:.1f}-{max(values) / MB:.1f} MB"

    lo, hi = min(s["rss"] for s in warm), max(s["rss"] for s in warm)
    print(f"after tick {args.warmup}: RSS {band('rss')} ({hi / lo:.3f}), live {band('live')}")
    slack = [s["rss"] - s["live"] for s in warm]
    print(f"RSS beyond the live heap {min(slack) / MB:.1f}-{max(slack) / MB:.1f} MB")
    for s in sorted(warm, key=lambda s: -s["rss"])[:5]:
        print(
            f"tick {s['tick']}: RSS {s['rss'] / MB:.1f}, live {s['live'] / MB:.1f}, "
            f"heap {s['heap'] / MB:.1f} MB, hour phase {s['hour_phase']:.3f}"
        )
    for i, (label, _) in enumerate(warm[0]["nodes"]):
        sizes = [s["nodes"][i][1] for s in warm]
        if max(sizes) - min(sizes) > 200_000:
            print(f"node {i} {label}: {min(sizes) / MB:.2f}-{max(sizes) / MB:.2f} MB")


if __name__ == "__main__":
    main()
