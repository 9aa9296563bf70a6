"""The count micro-case's update phase measured inside its process: CPU and page faults.

    python benches/count_phase.py T [--records N] [--keys K]

Runs what ``benches/peers/ddflow_peer.py count T`` runs (``count(by="k")`` over ``N``
records ``(i % K, i)`` at time 0, run to completion, then one batch of ``K`` updates at each
of ``T`` distinct times) and prints one JSON line about the update phase (the numpy columns,
``update_batch``, ``advance_to`` and ``run_until``, as the peer times it): CPU nanoseconds
per update (``time.process_time``), user and system seconds and minor page faults
(``getrusage``), and wall nanoseconds per update. One phase per process, so that the
process's pages are as fresh as the peer's: alternate builds in a shell loop.

With ``PERF_CTL`` and ``PERF_ACK`` naming the control and acknowledgement FIFOs of ``perf
record --delay=-1 --control=fifo:CTL,ACK``, perf is enabled around the update phase alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np

import ddflow as dd


def _perf(command: str) -> None:
    """Sends ``command`` (``enable``/``disable``) to perf's control FIFO, if one is given."""
    ctl, ack = os.environ.get("PERF_CTL"), os.environ.get("PERF_ACK")
    if not ctl or not ack:
        return
    with open(ctl, "w") as f:
        f.write(command + "\n")
    with open(ack) as f:
        f.read(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("times", type=int)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=20)
    args = parser.parse_args()
    times, records, keys = args.times, args.records, args.keys

    flow = dd.Dataflow(log=False)
    recs_in, recs = flow.new_input({"k": "int64", "v": "int64"}, name="recs")
    cap = recs.count(by="k").capture()
    i = np.arange(records, dtype=np.int64)
    recs_in.update_batch({"k": i % keys, "v": i}, times=0)
    recs_in.advance_to(1)
    flow.run_until(1)
    cap.updates()

    _perf("enable")
    r0, c0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time(), time.perf_counter()
    t = np.repeat(np.arange(1, times + 1, dtype=np.int64), keys)
    k = np.tile(np.arange(keys, dtype=np.int64), times)
    recs_in.update_batch({"k": k, "v": records + (t - 1) * keys + k}, times=t)
    recs_in.advance_to(times + 1)
    flow.run_until(times + 1)
    c1, w1, r1 = time.process_time(), time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    _perf("disable")

    n = times * keys
    changes = cap.updates().num_rows
    print(
        json.dumps(
            {
                "times": times,
                "updates": n,
                "cpu_ns_per_update": (c1 - c0) * 1e9 / n,
                "user_s": r1.ru_utime - r0.ru_utime,
                "sys_s": r1.ru_stime - r0.ru_stime,
                "minor_faults": r1.ru_minflt - r0.ru_minflt,
                "wall_ns_per_update": (w1 - w0) * 1e9 / n,
                "changes": changes,
            }
        )
    )


if __name__ == "__main__":
    main()
