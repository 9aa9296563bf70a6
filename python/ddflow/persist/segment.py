"""Checkpoint files: a checksummed header and Arrow IPC parts, written atomically.

Every file a persistent dataflow writes (a tick of its log, a snapshot of an input, a
manifest) is one *segment*::

    magic     b"DDFLOWSEG"            9 bytes
    version   u16 little-endian        the format version (FORMAT_VERSION)
    length    u32 little-endian        bytes of the header
    header    JSON, UTF-8              what the file holds, and each part's byte length
    crc       u32 little-endian        CRC-32 of the header bytes
    parts     Arrow IPC streams        one after another, lengths in the header
    crc       u32 little-endian        CRC-32 of all the parts' bytes

A reader checks the magic, the version, both checksums and every length before it uses a
byte: a truncated or altered file is a :class:`~ddflow.errors.CorruptCheckpointError`
naming the file, never loaded. How a file is written whole and durably (after a crash it is
either whole or absent) is its store's part (:mod:`ddflow.persist.store`).
"""

from __future__ import annotations

import io
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from ddflow.errors import CorruptCheckpointError, PersistenceError

__all__ = [
    "FORMAT_VERSION",
    "Segment",
    "TruncatedSegment",
    "decode_at",
    "decode",
    "encode",
]

MAGIC = b"DDFLOWSEG"
FORMAT_VERSION = 1
"""The on-disk format this release writes and reads."""

_PREFIX = struct.Struct("<HI")
_CRC = struct.Struct("<I")


@dataclass
class Segment:
    """A segment's contents: its JSON header and its Arrow tables."""

    header: dict[str, Any]
    parts: list[pa.Table] = field(default_factory=list)


def _ipc_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def encode(segment: Segment) -> bytes:
    """A segment as the bytes of its file."""
    parts = [_ipc_bytes(t) for t in segment.parts]
    header = dict(segment.header)
    header["part_bytes"] = [len(p) for p in parts]
    head = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    body = b"".join(parts)
    return b"".join(
        [
            MAGIC,
            _PREFIX.pack(FORMAT_VERSION, len(head)),
            head,
            _CRC.pack(zlib.crc32(head)),
            body,
            _CRC.pack(zlib.crc32(body)),
        ]
    )


class TruncatedSegment(CorruptCheckpointError):
    """The data ends inside a segment (the tail a crash cut off an append)."""


def decode_at(data: bytes, at: int, where: str) -> tuple[Segment, int]:
    """The segment starting at byte ``at`` of ``data`` (read from ``where``), checked whole
    before it is used, and the offset just after it."""

    def corrupt(what: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(
            f"checkpoint file {where} (byte {at}): {what}; it is not loaded"
        )

    def truncated(what: str) -> TruncatedSegment:
        return TruncatedSegment(
            f"checkpoint file {where} (byte {at}): truncated in {what}; it is not loaded"
        )

    if len(data) < at + len(MAGIC) + _PREFIX.size:
        raise truncated("its prefix")
    if data[at : at + len(MAGIC)] != MAGIC:
        raise corrupt("not a ddflow checkpoint segment (bad magic bytes)")
    at += len(MAGIC)
    version, head_len = _PREFIX.unpack_from(data, at)
    if version != FORMAT_VERSION:
        raise PersistenceError(
            f"checkpoint file {where} has format version {version}; this ddflow reads "
            f"version {FORMAT_VERSION} (see the persistence docs: reset or migrate)"
        )
    at += _PREFIX.size
    if len(data) < at + head_len + _CRC.size:
        raise truncated("its header")
    head = data[at : at + head_len]
    at += head_len
    (head_crc,) = _CRC.unpack_from(data, at)
    at += _CRC.size
    if zlib.crc32(head) != head_crc:
        raise corrupt("header checksum mismatch")
    header = json.loads(head)
    lengths = header.pop("part_bytes")
    body_len = sum(lengths)
    if len(data) < at + body_len + _CRC.size:
        raise truncated("its data")
    body = data[at : at + body_len]
    (body_crc,) = _CRC.unpack_from(data, at + body_len)
    if zlib.crc32(body) != body_crc:
        raise corrupt("data checksum mismatch")
    parts = []
    offset = 0
    for n in lengths:
        parts.append(ipc.open_stream(pa.py_buffer(body[offset : offset + n])).read_all())
        offset += n
    return Segment(header, parts), at + body_len + _CRC.size


def decode(data: bytes, where: str) -> Segment:
    """The one segment a file holds, checked (trailing bytes are corruption)."""
    segment, end = decode_at(data, 0, where)
    if end != len(data):
        raise CorruptCheckpointError(
            f"checkpoint file {where}: {len(data) - end} bytes after its segment; it is not "
            "loaded"
        )
    return segment
