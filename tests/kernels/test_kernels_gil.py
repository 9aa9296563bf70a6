"""Kernels release the GIL: another Python thread makes progress while one runs."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pytest

from ddflow import _core

N = 10_000_000


def _progress_during(kernel: Callable[[], object]) -> int:
    """Runs ``kernel`` in a thread; counts how often this thread runs until it finishes.

    The worker sets ``started`` and enters the kernel without blocking in between. Had the
    kernel kept the GIL, this thread could only wake up once the kernel had returned (a
    thread holding the GIL inside native code does not yield it), and would then find
    ``done`` set at once.
    """
    started = threading.Event()
    done = threading.Event()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            started.set()
            kernel()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            done.set()

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    ticks = 0
    while not done.wait(0.0005):
        ticks += 1
    t.join()
    if errors:
        raise errors[0]
    return ticks


@pytest.fixture(scope="module")
def columns() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.integers(0, 1_000_000, N), rng.integers(0, 1_000_000, N)


def test_sort_pairs_releases_the_gil(columns) -> None:
    src, dst = columns
    assert _progress_during(lambda: _core.sort_pairs(src, dst)) >= 3


def test_static_trace_build_releases_the_gil(columns) -> None:
    src, dst = columns
    assert _progress_during(lambda: _core.Trace.from_static_pairs(src, dst)) >= 3


def test_consolidate_releases_the_gil(columns) -> None:
    src, _ = columns
    t = np.zeros(N, dtype=np.int64)
    d = np.ones(N, dtype=np.int64)
    assert _progress_during(lambda: _core.consolidate([src], t, d)) >= 3
