"""A join on one hot key feeding a ``count``: time and peak RSS.

    python benches/hot_key_join.py N

``N`` left rows and ``N`` right rows, all with key 0, arrive at time 0; the plan is
``left.join(right, on="k").group_by("k").agg(n=dd.count())``, so the join makes ``N * N``
products of one record (the key) for the ``count``. Prints the answer (``n == N * N``), the
wall time of the run and the process's peak RSS. The products come in fueled chunks
(``DDFLOW_JOIN_FUEL``); what bounds memory is that the ``arrange`` in front of the ``count``
consolidates what it holds as it grows.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

import ddflow as dd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, help="rows on each side")
    n = parser.parse_args().n
    flow = dd.Dataflow(log=False)
    left_in, left = flow.new_input({"k": "int64", "a": "int64"})
    right_in, right = flow.new_input({"k": "int64", "b": "int64"})
    out = left.join(right, on="k").group_by("k").agg(n=dd.count()).capture()
    start = time.monotonic()
    keys = np.zeros(n, dtype=np.int64)
    left_in.update_batch({"k": keys, "a": np.arange(n)}, times=0)
    right_in.update_batch({"k": keys, "b": np.arange(n)}, times=0)
    left_in.advance_to(1)
    right_in.advance_to(1)
    flow.run_until(1)
    wall = time.monotonic() - start
    (row,) = out.state().to_pylist()
    assert row["n"] == n * n, row
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{n} x {n} on one key: count {row['n']:,} in {wall:.1f} s, peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
