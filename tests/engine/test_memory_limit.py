"""``Dataflow(memory_limit=...)``: past the limit a run stops with ``MemoryLimitError`` naming
the operator, the live bytes and the largest arrangements, never an abort; under a generous
limit the same plan gives the exact answer (a naive Python count is the oracle).

Runs that may exhaust memory run in a subprocess, so that an abort shows as its exit status
(a failure) instead of killing pytest.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

import ddflow as dd
from ddflow import _core
from ddflow.memory import default_memory_limit, live_bytes, resolve_memory_limit

pytestmark = pytest.mark.timeout(120)

PYTHONPATH = str(Path(dd.__file__).resolve().parent.parent)

# A join whose keys are hot (``KEYS`` distinct values over ``n`` rows a side) feeding a count
# by the left row: the arrangement in front of the count holds every product, ``n * n / KEYS``
# distinct rows. Exit status 0 prints the counts, 3 the MemoryLimitError (message, operator)
# and what the stopped dataflow still allows.
SCRIPT = textwrap.dedent(
    """
    import gc, json, sys
    import numpy as np
    import ddflow as dd
    from ddflow.memory import live_bytes
    n, keys, limit, workers = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    flow = dd.Dataflow(workers=workers, log=False, memory_limit=None if limit == "none" else limit)
    left_in, left = flow.new_input({"k": "int64", "a": "int64"})
    right_in, right = flow.new_input({"k": "int64", "b": "int64"})
    out = left.join(right, on="k").group_by("a").agg(n=dd.count()).capture()
    rows = np.arange(n, dtype=np.int64)
    left_in.update_batch({"k": rows % keys, "a": rows}, times=0)
    right_in.update_batch({"k": rows % keys, "b": rows}, times=0)
    left_in.advance_to(1)
    right_in.advance_to(1)
    report = {}
    try:
        flow.run_until(1)
    except dd.MemoryLimitError as exc:
        report = {"message": str(exc), "operator": exc.operator}
    if not report:
        print(json.dumps({r["a"]: r["n"] for r in out.state().to_pylist()}))
        sys.exit(0)
    try:
        flow.run_until(1)
    except dd.MemoryLimitError as again:
        report["again"] = str(again)
    # The tracebacks (which hold the dataflow's frames) are gone: dropping it frees its heap.
    report["captured"] = out.updates().num_rows  # readable, nothing completed
    before = live_bytes()
    del flow, out, left_in, right_in, left, right
    gc.collect()
    report["freed"] = before - live_bytes()
    print(json.dumps(report))
    sys.exit(3)
    """
)


def run_script(
    script: str, *args: object, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs ``script`` in a fresh interpreter importing this ddflow; fails on an abort."""
    full_env = {k: v for k, v in os.environ.items() if k != "DDFLOW_MEMORY_LIMIT"}
    full_env.update({"PYTHONPATH": PYTHONPATH, **(env or {})})
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=100,
        env=full_env,
    )
    assert done.returncode in (
        0,
        3,
    ), f"exit status {done.returncode} (an abort or a crash):\n{done.stdout}\n{done.stderr}"
    return done


def naive_counts(n: int, keys: int) -> dict[int, int]:
    """For each left row ``a``, the right rows whose key equals its key."""
    right_keys = Counter(b % keys for b in range(n))
    return {a: right_keys[a % keys] for a in range(n)}


@pytest.mark.parametrize("workers", [1, 2])
def test_a_hot_join_past_a_small_limit_raises_naming_the_operator(workers: int) -> None:
    # 3,000 x 3,000 rows on 2 keys: 4.5 M distinct products (hundreds of MB) past 64 MB.
    done = run_script(SCRIPT, 3000, 2, "64MB", workers)
    assert done.returncode == 3, done.stdout + done.stderr
    report = json.loads(done.stdout)
    message = report["message"]
    assert message.startswith("memory limit exceeded: operator "), message
    assert report["operator"] and f"operator {report['operator']}: " in message
    assert "over the memory_limit of 64.0 MB (64000000 bytes)" in message
    assert "largest arrangements: " in message and " updates, " in message
    # The dataflow is stopped: running again raises again, and dropping it frees its heap.
    assert "stopped at an earlier memory limit error" in report["again"]
    assert report["captured"] == 0
    assert report["freed"] > 32_000_000


@pytest.mark.parametrize(("n", "keys", "workers"), [(300, 3, 1), (400, 1, 2), (1500, 2, 1)])
def test_under_a_generous_limit_the_same_plan_is_exact(n: int, keys: int, workers: int) -> None:
    done = run_script(SCRIPT, n, keys, "4GB", workers)
    assert done.returncode == 0, done.stdout + done.stderr
    got = {int(a): c for a, c in json.loads(done.stdout).items()}
    assert got == naive_counts(n, keys)


def test_no_limit_is_exact_too() -> None:
    done = run_script(SCRIPT, 200, 4, "none", 1)
    assert done.returncode == 0
    got = {int(a): c for a, c in json.loads(done.stdout).items()}
    assert got == naive_counts(200, 4)


KERNEL = textwrap.dedent(
    """
    import sys
    import numpy as np
    import ddflow as dd
    import ddflow.kernels as K
    rng = np.random.default_rng(0)
    edits = rng.integers(0, 1000, size=(300, 4))
    news = rng.integers(0, 1000, size=(300, 4))
    try:
        K.interesting_times(edits, news)
    except dd.MemoryLimitError as exc:
        print(exc)
        sys.exit(3)
    """
)


def test_interesting_times_past_the_process_limit_raises() -> None:
    # 300 x 300 times of four coordinates below 1,000: a closure far past 64 MB.
    done = run_script(KERNEL, env={"DDFLOW_MEMORY_LIMIT": "64MB"})
    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stdout.startswith("memory limit exceeded: "), done.stdout
    assert "over the memory_limit of 64.0 MB" in done.stdout


def test_the_limit_reaches_the_engine() -> None:
    flow = dd.Dataflow(memory_limit="3 GiB")
    _, col = flow.new_input({"k": "int64"})
    col.capture()
    assert flow.memory_limit == 3 << 30
    assert flow.engine().memory_limit() == 3 << 30  # type: ignore[union-attr]
    default = dd.Dataflow()
    default.new_input({"k": "int64"})[1].capture()
    assert default.engine().memory_limit() == default_memory_limit()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1, 1),
        (10**12, 10**12),
        ("1000", 1000),
        ("64MB", 64_000_000),
        ("64 mb", 64_000_000),
        ("4GB", 4_000_000_000),
        ("2kB", 2000),
        ("2KiB", 2048),
        ("512MiB", 512 << 20),
        ("1.5GiB", 3 << 29),
        ("2TB", 2 * 10**12),
        ("none", None),
        (None, None),
    ],
)
def test_memory_limit_values(value: object, expected: int | None) -> None:
    assert resolve_memory_limit(value) == expected
    assert dd.Dataflow(memory_limit=value).memory_limit == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value", [0, -5, "0", "", "4 parsecs", "GB", "-1MB", "1e9", 1.5, True, b"4GB", [1]]
)
def test_bad_memory_limits_name_the_argument_and_value(value: object) -> None:
    with pytest.raises(dd.InvalidValueError) as ei:
        dd.Dataflow(memory_limit=value)  # type: ignore[arg-type]
    assert "memory_limit" in str(ei.value)
    assert repr(value) in str(ei.value) or json.dumps(value) in str(ei.value)


def machine_share() -> int:
    """The oracle for the default: 80% of min(MemTotal, cgroup limit), read here afresh."""
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
            break
    return total // 5 * 4


def test_the_default_is_a_share_of_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DDFLOW_MEMORY_LIMIT", raising=False)
    assert default_memory_limit() == machine_share()
    assert _core.machine_memory_limit() == machine_share()
    assert dd.Dataflow().memory_limit == machine_share()
    assert dd.Dataflow(memory_limit="auto").memory_limit == machine_share()


def test_the_environment_overrides_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DDFLOW_MEMORY_LIMIT", "2GB")
    assert dd.Dataflow().memory_limit == 2_000_000_000
    monkeypatch.setenv("DDFLOW_MEMORY_LIMIT", "none")
    assert dd.Dataflow().memory_limit is None
    monkeypatch.setenv("DDFLOW_MEMORY_LIMIT", "lots")
    with pytest.raises(dd.InvalidValueError, match="DDFLOW_MEMORY_LIMIT.*'lots'|DDFLOW.*lots"):
        dd.Dataflow()


def test_live_bytes_follow_rust_allocations() -> None:
    import numpy as np

    before = live_bytes()
    keys = np.arange(2_000_000, dtype=np.int64)
    flow = dd.Dataflow(log=False)
    inp, col = flow.new_input({"k": "int64"})
    cap = col.count(by="k").capture()
    inp.update_batch({"k": keys}, times=0)
    inp.advance_to(1)
    flow.run_until(1)
    # Two million keys arranged and reduced: tens of MB that Python never allocated.
    assert live_bytes() - before > 32_000_000
    del flow, inp, col, cap


def test_the_error_pickles_and_prints_like_the_others() -> None:
    err = dd.MemoryLimitError("memory limit exceeded: operator count#3: 70 MB live")
    err.operator = "count#3"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is dd.MemoryLimitError
    assert str(again) == str(err) and again.operator == "count#3"
    assert isinstance(again, dd.DdflowError) and isinstance(again, MemoryError)
    assert repr(again).startswith("MemoryLimitError(")
