"""Input columns that no operator reads, which ``update_batch`` takes as nulls without
converting them.

The engine's plan analysis (``_core.plan_live_columns``; the core's
``engine::live_columns`` module says what each operator reads) tells, per input, the columns
nothing downstream reads: not a capture of the input, not an expression (used or not), not a
join key or an aggregate. Converting and interning such a column is wasted work, and for a
column of unique strings the largest part of a batch's cost (TPC-H ``lineitem``'s
``l_comment``). An input given an Arrow column of the column's dtype for one of them puts
nulls there instead: no result changes, and an error record shows the column as ``null``.
Arrangements with trace handles keep every column (another dataflow may read them).

Set ``DDFLOW_READ_ALL_COLUMNS=1`` to convert every column anyway.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from ddflow import _core

__all__ = ["READ_ALL_ENV", "unread_columns"]

READ_ALL_ENV = "DDFLOW_READ_ALL_COLUMNS"
"""The environment variable that turns the pruning off (``1``)."""


def unread_columns(plan: dict[str, Any] | str, pinned: Iterable[int]) -> list[frozenset[int]]:
    """Per node of ``plan`` (its JSON text or dict), the columns no operator reads;
    ``pinned`` nodes keep all of theirs. Empty sets everywhere when
    ``DDFLOW_READ_ALL_COLUMNS=1``."""
    text = plan if isinstance(plan, str) else json.dumps(plan, separators=(",", ":"))
    live = _core.plan_live_columns(text, sorted(set(pinned)))
    if os.environ.get(READ_ALL_ENV, "") == "1":
        return [frozenset() for _ in live]
    return [frozenset(c for c, read in enumerate(cols) if not read) for cols in live]
