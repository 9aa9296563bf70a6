"""PostgreSQL column types and the Arrow types ddflow holds them as, both ways.

Reading (a table's columns, by type OID and type modifier):

===============================  ======================================
PostgreSQL                       ddflow (Arrow)
===============================  ======================================
``smallint``/``int``/``bigint``  ``int16``/``int32``/``int64``
``real``/``double precision``    ``float32``/``float64``
``numeric(p, s)``                ``decimal128(p, s)`` (``p <= 38``)
``text``/``varchar``/``char``    ``str`` (also ``uuid``, ``json``, ``jsonb``, ``name``)
``boolean``                      ``bool``
``date``                         ``date32``
``timestamp``/``timestamptz``    ``timestamp[us]``/``timestamp[us, tz=UTC]``
``bytea``                        ``binary``
===============================  ======================================

Any other type (and ``numeric`` without a precision) needs ``schema=``: as ``"str"`` its text
form is read. Writing goes the other way (:func:`sql_type`), ``duration`` as ``interval``.
"""

from __future__ import annotations

import pyarrow as pa

from ddflow.errors import SchemaTypeError

__all__ = ["TEXT_OIDS", "arrow_type_of", "sql_type"]

_SIMPLE: dict[int, pa.DataType] = {
    16: pa.bool_(),
    17: pa.binary(),
    20: pa.int64(),
    21: pa.int16(),
    23: pa.int32(),
    700: pa.float32(),
    701: pa.float64(),
    1082: pa.date32(),
    1114: pa.timestamp("us"),
    1184: pa.timestamp("us", tz="UTC"),
}
"""Types by OID: bool, bytea, int8, int2, int4, float4, float8, date, timestamp,
timestamptz."""

TEXT_OIDS = frozenset({18, 19, 25, 114, 1042, 1043, 2950, 3802})
"""Types read as their text: char, name, text, json, bpchar, varchar, uuid, jsonb."""

_NUMERIC = 1700


def arrow_type_of(type_oid: int, typmod: int, type_name: str, where: str) -> pa.DataType:
    """The Arrow type a column of PostgreSQL type ``type_oid`` is read as (``where`` names
    the column in the ``SchemaTypeError`` for a type without one)."""
    if type_oid in _SIMPLE:
        return _SIMPLE[type_oid]
    if type_oid in TEXT_OIDS:
        return pa.string()
    if type_oid == _NUMERIC and typmod >= 4:
        precision, scale = ((typmod - 4) >> 16) & 0xFFFF, (typmod - 4) & 0xFFFF
        if 0 < precision <= 38 and scale <= precision:
            return pa.decimal128(precision, scale)
    raise SchemaTypeError(
        f"{where} is {type_name}, which has no ddflow type; pass schema= with a type for it "
        '("str" reads its text; a decimal such as "decimal128(18, 4)" or "float64" for '
        "numeric)"
    )


def sql_type(t: pa.DataType, where: str) -> str:
    """The PostgreSQL column type a sink creates for Arrow type ``t``."""
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
        return "smallint"
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return "integer"
    if pa.types.is_integer(t):
        return "bigint"
    if pa.types.is_float32(t):
        return "real"
    if pa.types.is_floating(t):
        return "double precision"
    if pa.types.is_decimal(t):
        return f"numeric({t.precision}, {t.scale})"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return "text"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytea"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp" if t.tz is None else "timestamptz"
    if pa.types.is_duration(t):
        return "interval"
    raise SchemaTypeError(f"{where} is {t}, which has no PostgreSQL column type here")
