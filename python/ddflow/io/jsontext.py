"""Arrow tables as JSON lines text, built with Arrow compute kernels (no loop over rows).

Each row becomes one object ``{"name": value, ...}`` on its own line: integers, floats and
decimals as numbers (NaN and infinities, which JSON cannot hold, as null), booleans as
``true``/``false``, strings escaped and quoted, dates and timestamps as quoted ISO 8601 text
(what ``pyarrow.json`` reads back), durations as their integer count, nulls as ``null``.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["encode"]

_ESCAPES = [("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")]
_CONTROL = "[\x00-\x1f]"


def _quoted(values: pa.Array) -> pa.Array:
    """Strings as JSON string literals."""
    for raw, escaped in _ESCAPES:
        values = pc.replace_substring(values, raw, escaped)
    if pc.any(pc.match_substring_regex(values, _CONTROL)).as_py():
        for code in range(0x20):
            values = pc.replace_substring(values, chr(code), f"\\u{code:04x}")
    return pc.binary_join_element_wise('"', values, '"', "")


def _text(values: pa.Array) -> pa.Array:
    """One column's values as JSON text (null where the value is null)."""
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _quoted(values.cast(pa.string()))
    if pa.types.is_floating(t):
        finite = pc.is_finite(values)
        return pc.if_else(finite, values.cast(pa.string()), pa.scalar(None, pa.string()))
    if pa.types.is_duration(t):
        return values.cast(pa.int64()).cast(pa.string())
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return _quoted(values.cast(pa.string()))
    return values.cast(pa.string())


def encode(table: pa.Table) -> bytes:
    """``table`` as JSON lines (UTF-8), one object per row, each line ending in ``\\n``."""
    if table.num_rows == 0:
        return b""
    parts: list[pa.Array | str] = []
    for i, name in enumerate(table.column_names):
        values = table[name].combine_chunks()
        parts.append(("{" if i == 0 else ",") + json.dumps(name) + ":")
        parts.append(pc.fill_null(_text(values), "null"))
    parts.append("}\n")
    lines = pc.binary_join_element_wise(*parts, "").cast(pa.large_string())
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)
    start, end = int(offsets[lines.offset]), int(offsets[lines.offset + len(lines)])
    data: bytes = lines.buffers()[2].to_pybytes()[start:end]
    return data
