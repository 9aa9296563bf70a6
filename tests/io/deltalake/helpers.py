"""Helpers for the Delta Lake tests: a run driven one table version at a time, and oracles.

:class:`Steps` changes the source table from inside the run: it is a source of its own,
attached before the Delta sources so that the run loop polls it first in each tick, after
the previous tick's updates were completed and written by the sinks. Once the Delta source
has handed over the version the last step made, it calls ``check(version)`` and makes the
next step; after the last check it stops the run. Everything runs in the run loop's thread,
so each version is checked exactly once, whatever the machine's speed (a version that
changes no rows is checked too: the source moves past it without a tick).
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, QueryBuilder

import ddflow as dd
from ddflow.io.deltalake.source import DeltaSource
from ddflow.sources import Source, SourceBatch


class Steps(Source):
    """Makes ``steps`` one after another, each once the source handed over the last one.
    Create it before reading the Delta tables (it must be polled first)."""

    name = "test steps"

    def __init__(
        self,
        flow: dd.Dataflow,
        uri: str,
        steps: Sequence[Callable[[], Any]],
        check: Callable[[int], None],
    ) -> None:
        self.flow = flow
        self.uri = uri
        self.steps = list(steps)
        self.check = check
        self.checked: list[int] = []
        self.waiting_for: int | None = None
        session, _ = flow.new_input(("unused",), name="steps")
        flow.attach_source(session, self)

    def poll(self) -> list[SourceBatch]:
        sources = [s for s in self.flow._loop.sources if isinstance(s, DeltaSource)]
        version = sources[0].version if sources else None
        if version is None or (self.waiting_for is not None and version < self.waiting_for):
            return []
        if self.checked and self.checked[-1] == version:
            return []
        self.check(version)
        self.checked.append(version)
        while self.steps:
            self.steps.pop(0)()
            self.waiting_for = DeltaTable(self.uri).version()
            if self.waiting_for > version:
                return []
            # The step committed nothing (a delete matching no row): on to the next.
        self.flow.stop()
        return []

    @property
    def ended(self) -> bool:
        return False


def multiset(table: pa.Table, columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    """The rows of ``table`` (its ``columns``) as a multiset."""
    return Counter(tuple(r[c] for c in columns) for r in table.select(list(columns)).to_pylist())


def accumulate(updates: pa.Table, columns: Sequence[str]) -> Counter[tuple[Any, ...]]:
    """The collection that an update table (``columns``, ``time``, ``diff``) accumulates
    to, as a multiset (asserting no count is negative)."""
    total: Counter[tuple[Any, ...]] = Counter()
    for r in updates.to_pylist():
        total[tuple(r[c] for c in columns)] += r["diff"]
    assert all(n >= 0 for n in total.values()), total
    return +total


def table_at(uri: str, version: int | None = None) -> pa.Table:
    """The Delta table's rows at ``version`` (the newest by default), deletion vectors
    applied (delta-rs' query engine reads tables with them; ``to_pyarrow_table`` does not)."""
    table = DeltaTable(uri, version=version)
    return pa.table(QueryBuilder().register("t", table).execute("select * from t"))


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85(data: bytes) -> str:
    """ZeroMQ's Z85 text encoding (``len(data)`` a multiple of 4)."""
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        chars = []
        for _ in range(5):
            value, r = divmod(value, 85)
            chars.append(_Z85[r])
        out.append("".join(reversed(chars)))
    return "".join(out)


def _deletion_vector(rows: Sequence[int]) -> bytes:
    """Delta's serialized deletion vector for row indexes below 2**16: the magic number, one
    32-bit Roaring bitmap (key 0) in Roaring's portable format, one array container."""
    values = sorted(rows)
    bitmap = struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, len(values) - 1)
    bitmap += struct.pack("<I", len(bitmap) + 4)
    bitmap += b"".join(struct.pack("<H", v) for v in values)
    return struct.pack("<iqi", 1681511377, 1, 0) + bitmap


def delete_with_deletion_vector(uri: str, path: str, rows: Sequence[int]) -> None:
    """Commits a new version that deletes rows ``rows`` (0-based) of the data file ``path``
    by an inline deletion vector, as Spark does (delta-rs deletes by rewriting files)."""
    log = Path(uri) / "_delta_log"
    version = DeltaTable(uri).version()
    add = None
    for v in range(version + 1):
        for line in (log / f"{v:020d}.json").read_text().splitlines():
            action = json.loads(line)
            if "add" in action and action["add"]["path"] == path:
                add = action["add"]
    assert add is not None, path
    data = _deletion_vector(rows)
    descriptor = {
        "storageType": "i",
        "pathOrInlineDv": _z85(data + b"\0" * (-len(data) % 4)),
        "sizeInBytes": len(data),
        "cardinality": len(rows),
    }
    remove = {
        "path": path,
        "dataChange": True,
        "deletionTimestamp": 1,
        "extendedFileMetadata": True,
        "partitionValues": add["partitionValues"],
        "size": add["size"],
    }
    if add.get("deletionVector"):
        remove["deletionVector"] = add["deletionVector"]
    commit = {"timestamp": 1, "operation": "DELETE", "operationParameters": {}}
    actions = [
        {"commitInfo": commit},
        {"remove": remove},
        {"add": {**add, "deletionVector": descriptor}},
    ]
    (log / f"{version + 1:020d}.json").write_text("\n".join(map(json.dumps, actions)) + "\n")


def times_sorted(table: pa.Table) -> bool:
    """Whether an update table's ``time`` column never decreases."""
    times = table["time"]
    return len(times) < 2 or bool(pc.all(pc.less_equal(times[:-1], times[1:])).as_py())
