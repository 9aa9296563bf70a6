"""Fixtures for the whole suite.

Ctrl-C: the tests that interrupt a run (``SIGINT``) need Python's own handler. A suite
started in the background by a non-interactive shell (``nohup bash .ci/run &``) inherits
``SIGINT`` ignored, and then no ``KeyboardInterrupt`` ever comes; so every test runs with
Python's default handler installed, as in a terminal.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def python_sigint_handler() -> Iterator[None]:
    """Python's default ``SIGINT`` handler for the test (restored afterwards)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
