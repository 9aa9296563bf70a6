"""The memory limit of a dataflow: reading ``Dataflow(memory_limit=...)`` and the figures of
ddflow's heap.

The native module counts every byte its Rust code allocates (a counting global allocator),
across the process. An engine checks that count against its limit after every operator
activation, and the loops that can grow without bound within one activation (a reduce's
per-key work, interesting times) check as they go; past the limit the run stops with
:class:`~ddflow.errors.MemoryLimitError` instead of the allocator aborting the process.
Python objects and numpy arrays that Python allocated are not counted; the Rust-owned arrays
handed to Python (captured columns) are, until they are freed.

Freed memory goes back to the system (glibc's ``malloc_trim``) when an engine's
``run_until`` completes, if 8 MB of its heap were freed since the last trim or the process'
resident memory beyond it grew by 2 MB; the run loop checks again after each tick's delivery
(:func:`trim_memory`).

Past 70% of the limit an engine spills cold trace batches (the largest traces' batches that
no merge is reading) to files it maps back read-only, until its heap is back near 50% of the
limit: the persistence path's ``spill/`` when the dataflow persists to a local directory, else
``DDFLOW_SPILL_DIR``, else the system's temporary directory. Each file is unlinked as soon as
it is mapped, so nothing is left on disk after the dataflow ends or crashes; mapped pages are
page cache the system can drop, not heap (:func:`spilled_bytes_total`).

String values live once each in a process-wide interner; strings no live dataflow, capture
or kernel trace holds are freed by collections that run as the interner grows
(:func:`string_memory` reports its size, :func:`collect_strings` runs one now).
"""

from __future__ import annotations

import os
from typing import cast

from ddflow import _core
from ddflow.errors import DdflowError, InvalidValueError
from ddflow.times import is_int

__all__ = [
    "ENV_VAR",
    "MemoryLimit",
    "default_memory_limit",
    "live_bytes",
    "spilled_bytes_total",
    "collect_strings",
    "resolve_memory_limit",
    "string_memory",
    "trim_memory",
]

MemoryLimit = int | str | None
"""A memory limit as ``Dataflow(memory_limit=...)`` takes it: bytes, a size such as
``"4GB"`` or ``"512MiB"``, ``"auto"`` (the default) or ``None`` (no limit)."""

ENV_VAR = "DDFLOW_MEMORY_LIMIT"
"""Overrides the default limit for the process: bytes, a size, or ``none``."""


def live_bytes() -> int:
    """Bytes live in ddflow's Rust heap across the process (all dataflows and kernels)."""
    return int(_core.memory_live_bytes())


def spilled_bytes_total() -> int:
    """Bytes written to spill files by this process so far (all dataflows)."""
    return int(_core.spilled_bytes_total())


def trim_memory() -> bool:
    """Gives the allocator's free pages back to the system if the process' resident memory
    beyond ddflow's heap grew by 2 MB since the last trim (otherwise cheap: the resident size
    is read at most every millisecond, and a trim waits until the process has spent five
    times the last one's CPU time since it); whether it trimmed. Engines do this when
    ``run_until`` completes, the run loop after each tick's delivery."""
    return bool(_core.trim_memory())


def string_memory() -> dict[str, int]:
    """The string interner's size and its collector's counters: ``strings`` (distinct strings
    held), ``string_bytes`` (their text), ``arena_bytes`` (the memory holding the text),
    ``collections`` (run so far) and ``freed`` (strings freed so far)."""
    return {k: int(v) for k, v in _core.string_memory().items()}


def collect_strings() -> int | None:
    """Frees now the interned strings that no live dataflow, capture or kernel trace holds
    and that were not interned since the previous collection; returns how many were freed
    (``None`` if a dataflow was running in another thread: nothing was freed). Collections
    also run by themselves as the interner grows; this is for tests and measurements."""
    freed = _core.collect_strings()
    return None if freed is None else int(freed)


def default_memory_limit() -> int | None:
    """The limit ``memory_limit="auto"`` stands for: ``DDFLOW_MEMORY_LIMIT`` if set, else 80%
    of the smaller of the physical memory and the cgroup limit (``/sys/fs/cgroup/memory.max``);
    ``None`` (no limit) where neither can be read."""
    text = os.environ.get(ENV_VAR)
    if text is not None:
        return _parse(text, ENV_VAR)
    # A native module built before the memory limit existed counts nothing: no limit.
    machine = getattr(_core, "machine_memory_limit", None)
    return None if machine is None else cast(int | None, machine())


def resolve_memory_limit(value: object) -> int | None:
    """Bytes of a ``memory_limit=`` argument (``None``: no limit); a clear
    ``InvalidValueError`` naming the argument and the value otherwise."""
    if value is None:
        return None
    if isinstance(value, str):
        if value.strip().lower() == "auto":
            return default_memory_limit()
        return _parse(value, "memory_limit")
    if is_int(value):
        nbytes = int(cast(int, value))
        if nbytes < 1:
            raise InvalidValueError(f"memory_limit: must be at least one byte, got {value!r}")
        return nbytes
    raise InvalidValueError(
        "memory_limit: expected bytes (int), a size such as '4GB' or '512MiB', 'auto' or "
        f"None, got {value!r}"
    )


def _parse(text: str, name: str) -> int | None:
    """Bytes of a size (``None`` for ``"none"``), the error naming ``name``."""
    try:
        return _core.parse_memory_limit(text)
    except DdflowError as exc:
        message = str(exc).removeprefix("value error: ")
        raise InvalidValueError(message.replace("memory_limit", name, 1)) from None
