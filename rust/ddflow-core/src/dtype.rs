//! Column dtypes: the logical type of a column ([`DType`]) and the one-word physical form
//! each is stored in ([`DType::physical`]).
//!
//! Every column value is one `u64` word (see [`crate::encoding`]). The four physical dtypes
//! (`int64`, `float64`, `bool`, `str`) say how a word is read; every other dtype is stored as
//! one of them and keeps its meaning in the schema:
//!
//! | dtype | stored as | word holds |
//! |-------|-----------|------------|
//! | `int8` `int16` `int32` `uint8` `uint16` `uint32` `uint64` | int64 | the value (uint64 up to `2**63 - 1`) |
//! | `float32` | float64 | the value, widened exactly |
//! | `date32` | int64 | days since 1970-01-01 |
//! | `timestamp[unit]`, `timestamp[unit, tz=Z]` | int64 | units since the epoch (UTC) |
//! | `duration[unit]` | int64 | a count of units |
//! | `decimal128(p, s)` | int64 | the unscaled value (`value * 10**s`), `|value| < 2**63` |
//! | `binary` | str | the interned text whose chars are the bytes (Latin-1: byte `b` is char `U+00b`) |
//!
//! A `binary` value is interned as the string of its bytes read as Latin-1, which keeps
//! equality and order (code point order is byte order), so joins, grouping and `min`/`max`
//! treat it as the bytes; the bindings turn the text back into bytes.
//!
//! So hashing, sorting, grouping, joins and traces see plain words of four kinds; the binder
//! ([`crate::expr`]) reads the logical dtype to rescale decimals, promote dates to timestamps
//! and so on, and the bindings read it to hand Arrow's own types back out. A decimal128 of
//! any precision up to 38 is accepted while its unscaled value fits 64 bits: a value beyond
//! is refused at input, and a result beyond is an overflow error update.
//!
//! Names follow Arrow's (`"date32"`, `"timestamp[us, tz=UTC]"`, `"decimal128(12, 2)"`),
//! except the four physical ones, which keep ddflow's (`int64`, `float64`, `bool`, `str`).

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// The unit of a timestamp or duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TimeUnit {
    /// Seconds.
    Second,
    /// Milliseconds.
    Milli,
    /// Microseconds.
    Micro,
    /// Nanoseconds.
    Nano,
}

impl TimeUnit {
    /// Every unit, coarsest first.
    pub const ALL: [TimeUnit; 4] = [
        TimeUnit::Second,
        TimeUnit::Milli,
        TimeUnit::Micro,
        TimeUnit::Nano,
    ];

    /// Arrow's short name (`s`, `ms`, `us`, `ns`).
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Second => "s",
            TimeUnit::Milli => "ms",
            TimeUnit::Micro => "us",
            TimeUnit::Nano => "ns",
        }
    }

    /// The unit named `s`, `ms`, `us` or `ns`.
    pub fn parse(name: &str) -> Option<TimeUnit> {
        TimeUnit::ALL.into_iter().find(|u| u.name() == name)
    }

    /// Units per second.
    pub fn per_second(self) -> i64 {
        match self {
            TimeUnit::Second => 1,
            TimeUnit::Milli => 1_000,
            TimeUnit::Micro => 1_000_000,
            TimeUnit::Nano => 1_000_000_000,
        }
    }

    /// Units per day.
    pub fn per_day(self) -> i64 {
        self.per_second() * 86_400
    }
}

/// A time zone name, interned ([`TimeZone::name`] gives it back).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TimeZone(u32);

fn zones() -> &'static RwLock<Vec<&'static str>> {
    static ZONES: OnceLock<RwLock<Vec<&'static str>>> = OnceLock::new();
    ZONES.get_or_init(|| RwLock::new(Vec::new()))
}

impl TimeZone {
    /// The zone named `name` (as Arrow spells it: `UTC`, `+05:30`, `Europe/Paris`).
    pub fn new(name: &str) -> TimeZone {
        if let Some(i) = zones()
            .read()
            .expect("zones poisoned")
            .iter()
            .position(|z| *z == name)
        {
            return TimeZone(i as u32);
        }
        let mut g = zones().write().expect("zones poisoned");
        if let Some(i) = g.iter().position(|z| *z == name) {
            return TimeZone(i as u32);
        }
        g.push(Box::leak(name.to_string().into_boxed_str()));
        TimeZone(g.len() as u32 - 1)
    }

    /// The zone's name.
    pub fn name(self) -> &'static str {
        zones().read().expect("zones poisoned")[self.0 as usize]
    }
}

/// The largest decimal precision (decimal128's).
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// The type of a record column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// Signed 64-bit integers.
    Int64,
    /// 64-bit floats.
    Float64,
    /// Booleans.
    Bool,
    /// UTF-8 strings (interned).
    Str,
    /// Signed 8-bit integers.
    Int8,
    /// Signed 16-bit integers.
    Int16,
    /// Signed 32-bit integers.
    Int32,
    /// Unsigned 8-bit integers.
    UInt8,
    /// Unsigned 16-bit integers.
    UInt16,
    /// Unsigned 32-bit integers.
    UInt32,
    /// Unsigned 64-bit integers (values up to `2**63 - 1`).
    UInt64,
    /// 32-bit floats.
    Float32,
    /// Calendar dates: days since 1970-01-01.
    Date32,
    /// Instants: units since the epoch, with an optional time zone (Arrow's meaning: the
    /// value is UTC; the zone says how to show and take it apart).
    Timestamp(TimeUnit, Option<TimeZone>),
    /// Elapsed time: a count of units.
    Duration(TimeUnit),
    /// Exact decimals: the unscaled value in 64 bits, with Arrow's decimal128 precision
    /// (1..=38 digits) and scale (0..=precision).
    Decimal(u8, u8),
    /// Byte strings (interned as their Latin-1 text; see the module docs).
    Binary,
}

/// A dtype's family, for code that treats the members of one alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Signed and unsigned integers of every width.
    Integer,
    /// float32 and float64.
    Float,
    /// bool.
    Bool,
    /// str.
    Str,
    /// date32.
    Date,
    /// Timestamps of every unit and zone.
    Timestamp,
    /// Durations of every unit.
    Duration,
    /// Decimals of every precision and scale.
    Decimal,
    /// binary.
    Binary,
}

fn names() -> &'static RwLock<HashMap<DType, &'static str>> {
    static NAMES: OnceLock<RwLock<HashMap<DType, &'static str>>> = OnceLock::new();
    NAMES.get_or_init(|| RwLock::new(HashMap::new()))
}

impl DType {
    /// The physical dtype the column's words are read as: `Int64`, `Float64`, `Bool` or
    /// `Str` (see the module docs).
    #[inline]
    pub fn physical(self) -> DType {
        match self {
            DType::Float64 | DType::Float32 => DType::Float64,
            DType::Bool => DType::Bool,
            DType::Str | DType::Binary => DType::Str,
            _ => DType::Int64,
        }
    }

    /// The dtype's family.
    pub fn family(self) -> Family {
        match self {
            DType::Int64
            | DType::Int8
            | DType::Int16
            | DType::Int32
            | DType::UInt8
            | DType::UInt16
            | DType::UInt32
            | DType::UInt64 => Family::Integer,
            DType::Float64 | DType::Float32 => Family::Float,
            DType::Bool => Family::Bool,
            DType::Str => Family::Str,
            DType::Date32 => Family::Date,
            DType::Timestamp(..) => Family::Timestamp,
            DType::Duration(_) => Family::Duration,
            DType::Decimal(..) => Family::Decimal,
            DType::Binary => Family::Binary,
        }
    }

    /// Whether this is one of the four physical dtypes.
    pub fn is_physical(self) -> bool {
        self.physical() == self
    }

    /// The inclusive range of an integer dtype's values (`None` for other dtypes). uint64's
    /// stops at `2**63 - 1`, the most a word holds; int64's starts above `i64::MIN`, which
    /// is the null word.
    pub fn int_range(self) -> Option<(i64, i64)> {
        Some(match self {
            DType::Int8 => (i8::MIN as i64, i8::MAX as i64),
            DType::Int16 => (i16::MIN as i64, i16::MAX as i64),
            DType::Int32 => (i32::MIN as i64, i32::MAX as i64),
            DType::UInt8 => (0, u8::MAX as i64),
            DType::UInt16 => (0, u16::MAX as i64),
            DType::UInt32 => (0, u32::MAX as i64),
            DType::UInt64 => (0, i64::MAX),
            DType::Int64 => (i64::MIN + 1, i64::MAX),
            _ => return None,
        })
    }

    /// The dtype's name: Arrow's, except ddflow's own four (`int64`, `float64`, `bool`,
    /// `str`).
    pub fn name(&self) -> &'static str {
        let simple = match self {
            DType::Int64 => "int64",
            DType::Float64 => "float64",
            DType::Bool => "bool",
            DType::Str => "str",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::UInt8 => "uint8",
            DType::UInt16 => "uint16",
            DType::UInt32 => "uint32",
            DType::UInt64 => "uint64",
            DType::Float32 => "float32",
            DType::Date32 => "date32",
            DType::Binary => "binary",
            _ => "",
        };
        if !simple.is_empty() {
            return simple;
        }
        if let Some(n) = names().read().expect("names poisoned").get(self) {
            return n;
        }
        let text = match self {
            DType::Timestamp(u, None) => format!("timestamp[{}]", u.name()),
            DType::Timestamp(u, Some(z)) => format!("timestamp[{}, tz={}]", u.name(), z.name()),
            DType::Duration(u) => format!("duration[{}]", u.name()),
            DType::Decimal(p, s) => format!("decimal128({p}, {s})"),
            _ => unreachable!("simple names above"),
        };
        let leaked: &'static str = Box::leak(text.into_boxed_str());
        names()
            .write()
            .expect("names poisoned")
            .entry(*self)
            .or_insert(leaked)
    }

    /// A decimal dtype, checked: precision 1..=38, scale 0..=precision.
    pub fn decimal(precision: u32, scale: u32) -> Result<DType> {
        if !(1..=MAX_DECIMAL_PRECISION as u32).contains(&precision) || scale > precision {
            return Err(Error::Type(format!(
                "decimal128({precision}, {scale}): precision must be 1 to 38 and scale 0 to the precision"
            )));
        }
        Ok(DType::Decimal(precision as u8, scale as u8))
    }

    /// Parses a dtype name (see [`DType::name`]; also `int`, `float`, `string`, `utf8`,
    /// `date32[day]`, `decimal(p, s)`).
    pub fn parse(name: &str) -> Result<DType> {
        let bad = || {
            Error::Type(format!(
                "unsupported dtype {name:?} (expected int64, float64, bool, str, int8/16/32, \
                 uint8/16/32/64, float32, date32, binary, timestamp[s|ms|us|ns] (optionally with \
                 \", tz=ZONE\"), duration[s|ms|us|ns] or decimal128(precision, scale))"
            ))
        };
        let n = name.trim();
        Ok(match n {
            "int64" | "int" | "i64" => DType::Int64,
            "float64" | "float" | "f64" | "double" => DType::Float64,
            "bool" | "boolean" => DType::Bool,
            "str" | "string" | "utf8" | "large_string" | "large_utf8" | "string_view" => DType::Str,
            "int8" => DType::Int8,
            "int16" => DType::Int16,
            "int32" => DType::Int32,
            "uint8" => DType::UInt8,
            "uint16" => DType::UInt16,
            "uint32" => DType::UInt32,
            "uint64" => DType::UInt64,
            "float32" => DType::Float32,
            "date32" | "date32[day]" | "date" => DType::Date32,
            "binary" | "large_binary" | "binary_view" | "bytes" => DType::Binary,
            _ => {
                if let Some(inner) = n
                    .strip_prefix("timestamp[")
                    .and_then(|r| r.strip_suffix(']'))
                {
                    let (unit, tz) = match inner.split_once(',') {
                        Some((u, rest)) => {
                            let zone = rest.trim().strip_prefix("tz=").ok_or_else(bad)?.trim();
                            if zone.is_empty() {
                                return Err(bad());
                            }
                            (u.trim(), Some(TimeZone::new(zone)))
                        }
                        None => (inner.trim(), None),
                    };
                    DType::Timestamp(TimeUnit::parse(unit).ok_or_else(bad)?, tz)
                } else if let Some(unit) = n
                    .strip_prefix("duration[")
                    .and_then(|r| r.strip_suffix(']'))
                {
                    DType::Duration(TimeUnit::parse(unit.trim()).ok_or_else(bad)?)
                } else if let Some(args) = n
                    .strip_prefix("decimal128(")
                    .or_else(|| n.strip_prefix("decimal("))
                    .and_then(|r| r.strip_suffix(')'))
                {
                    let (p, s) = args.split_once(',').ok_or_else(bad)?;
                    let p: u32 = p.trim().parse().map_err(|_| bad())?;
                    let s: u32 = s.trim().parse().map_err(|_| bad())?;
                    DType::decimal(p, s)?
                } else {
                    return Err(bad());
                }
            }
        })
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let utc = TimeZone::new("UTC");
        for d in [
            DType::Int64,
            DType::Float64,
            DType::Bool,
            DType::Str,
            DType::Int8,
            DType::UInt64,
            DType::Float32,
            DType::Date32,
            DType::Timestamp(TimeUnit::Micro, None),
            DType::Timestamp(TimeUnit::Nano, Some(utc)),
            DType::Duration(TimeUnit::Milli),
            DType::Decimal(12, 2),
            DType::Binary,
        ] {
            assert_eq!(DType::parse(d.name()).unwrap(), d, "{}", d.name());
        }
        assert_eq!(
            DType::Timestamp(TimeUnit::Micro, Some(utc)).name(),
            "timestamp[us, tz=UTC]"
        );
        assert_eq!(DType::parse("decimal(5,1)").unwrap(), DType::Decimal(5, 1));
        assert!(DType::parse("decimal128(39, 2)").is_err());
        assert!(DType::parse("decimal128(5, 6)").is_err());
        assert!(DType::parse("timestamp[h]").is_err());
        assert!(DType::parse("list<int64>").is_err());
    }

    #[test]
    fn physical_and_families() {
        assert_eq!(DType::Decimal(38, 4).physical(), DType::Int64);
        assert_eq!(DType::Float32.physical(), DType::Float64);
        assert_eq!(DType::Date32.family(), Family::Date);
        assert!(DType::Str.is_physical());
        assert!(!DType::Int32.is_physical());
        assert_eq!(DType::UInt64.int_range(), Some((0, i64::MAX)));
    }
}
