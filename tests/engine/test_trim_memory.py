"""``ddflow.memory.trim_memory``: freed pages the allocator kept go back to the system once
the resident memory beyond ddflow's heap has grown (the process' resident set size, from
``/proc/self/statm``, is the oracle; when a trim is *not* due is checked by the Rust unit
tests of ``engine::idle``, free of the other tests' garbage)."""

from __future__ import annotations

import gc
import sys
import time

import pytest

from ddflow.memory import trim_memory

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim"),
]

MB = 1 << 20


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_freed_pages_go_back_once_the_slack_grew() -> None:
    gc.collect()
    time.sleep(0.05)
    trim_memory()  # whatever is due now; the least slack is then about what is resident
    # 40 MB of 100 KB blocks (below glibc's mmap threshold: from its heap); freeing every
    # other one leaves 20 MB of holes between blocks still in use, which free() keeps.
    blocks = [bytes(range(256)) * 400 for _ in range(400)]
    before = rss()
    del blocks[::2]
    assert rss() > before - 10 * MB, "glibc returned the holes by itself"
    deadline = time.monotonic() + 10
    while not trim_memory():  # a trim waits five times the last one's duration
        assert time.monotonic() < deadline, "no trim within 10 s"
        time.sleep(0.05)
    assert rss() < before - 10 * MB
    assert len(blocks) == 200
