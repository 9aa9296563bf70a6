"""Decoding PostgreSQL's ``pgoutput`` logical replication messages (protocol version 1).

Each message is one row of ``pg_logical_slot_get_binary_changes(slot, ...,
'proto_version', '1', 'publication_names', ...)``: a type byte, then big-endian fields. Only
what the Postgres source follows is decoded: ``B`` (begin: the transaction's id), ``C``
(commit: its LSN), ``R`` (a relation's columns), ``I``/``U``/``D`` (a row inserted, updated,
deleted, with its values as text) and ``T`` (truncate). Types (``Y``) and origins (``O``) are
read as :class:`Other`. A value is ``None`` for SQL NULL, :data:`UNCHANGED` for a TOASTed
value the update did not change (not sent), else the bytes of its text form.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

__all__ = [
    "Begin",
    "Change",
    "Column",
    "Commit",
    "Message",
    "Other",
    "Relation",
    "Truncate",
    "UNCHANGED",
    "Value",
    "decode",
]


class _Unchanged:
    """The marker of an unchanged TOASTed value (``u`` in a tuple)."""

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Final = _Unchanged()
"""A TOASTed value that an update left unchanged, which pgoutput does not send again."""

Value = bytes | None | _Unchanged
"""One column's value in a tuple: its text form, NULL or unchanged."""


@dataclass(frozen=True)
class Begin:
    """A transaction starts."""

    final_lsn: int
    xid: int


@dataclass(frozen=True)
class Commit:
    """A transaction commits; ``end_lsn`` is the position after its commit record."""

    commit_lsn: int
    end_lsn: int
    commit_time: int
    """Microseconds since 2000-01-01 (PostgreSQL's epoch)."""


@dataclass(frozen=True)
class Column:
    """One column of a relation as the publisher describes it."""

    name: str
    type_oid: int
    typmod: int
    key: bool


@dataclass(frozen=True)
class Relation:
    """A table's columns, sent before the first change to it (and again after a change)."""

    relid: int
    namespace: str
    name: str
    replica_identity: str
    columns: tuple[Column, ...]


@dataclass(frozen=True)
class Change:
    """A row inserted (``I``: ``new``), updated (``U``: ``old`` where sent, ``new``) or
    deleted (``D``: ``old``)."""

    kind: str
    relid: int
    old: tuple[Value, ...] | None
    new: tuple[Value, ...] | None
    old_is_key: bool = False
    """Whether ``old`` holds only the replica identity's columns (``K``, the others NULL)."""


@dataclass(frozen=True)
class Truncate:
    """Tables emptied by ``TRUNCATE``."""

    relids: tuple[int, ...]


@dataclass(frozen=True)
class Other:
    """A message the source does not act on (type, origin, logical message)."""

    kind: str


Message = Begin | Commit | Relation | Change | Truncate | Other


class _Reader:
    """Big-endian fields read one after another from a message."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def _take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def u8(self) -> int:
        return self._take(">B")

    def i16(self) -> int:
        return self._take(">h")

    def i32(self) -> int:
        return self._take(">i")

    def u32(self) -> int:
        return self._take(">I")

    def i64(self) -> int:
        return self._take(">q")

    def text(self) -> str:
        end = self.data.index(b"\x00", self.at)
        s = self.data[self.at : end].decode("utf-8")
        self.at = end + 1
        return s

    def bytes(self, n: int) -> bytes:
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def tuple(self) -> tuple[Value, ...]:
        values: list[Value] = []
        for _ in range(self.i16()):
            kind = chr(self.u8())
            if kind == "n":
                values.append(None)
            elif kind == "u":
                values.append(UNCHANGED)
            elif kind in ("t", "b"):
                values.append(self.bytes(self.i32()))
            else:
                raise ValueError(f"pgoutput: unknown tuple value kind {kind!r}")
        return tuple(values)


def decode(data: bytes) -> Message:
    """One pgoutput message."""
    r = _Reader(data)
    kind = chr(r.u8())
    if kind == "B":
        final_lsn = r.i64()
        r.i64()  # commit time
        return Begin(final_lsn, r.u32())
    if kind == "C":
        r.u8()  # flags
        return Commit(r.i64(), r.i64(), r.i64())
    if kind == "R":
        relid = r.u32()
        namespace, name = r.text(), r.text()
        identity = chr(r.u8())
        columns = []
        for _ in range(r.i16()):
            flags = r.u8()
            columns.append(Column(r.text(), r.u32(), r.i32(), bool(flags & 1)))
        return Relation(relid, namespace, name, identity, tuple(columns))
    if kind == "I":
        relid = r.u32()
        r.u8()  # 'N'
        return Change("I", relid, None, r.tuple())
    if kind == "U":
        relid = r.u32()
        marker = chr(r.u8())
        old: tuple[Value, ...] | None = None
        if marker in ("K", "O"):
            old = r.tuple()
            r.u8()  # 'N'
        return Change("U", relid, old, r.tuple(), old_is_key=marker == "K")
    if kind == "D":
        relid = r.u32()
        marker = chr(r.u8())
        return Change("D", relid, r.tuple(), None, old_is_key=marker == "K")
    if kind == "T":
        n = r.i32()
        r.u8()  # options
        return Truncate(tuple(r.u32() for _ in range(n)))
    return Other(kind)
