//! Words of the logical dtypes as text, for messages and records: a date as `1995-03-15`, a
//! timestamp as `1995-03-15 12:30:00` (or `...+00:00` with a zone, in that zone), a duration
//! as a count with its unit, a decimal with its scale's digits (`12.50`). The four physical
//! dtypes are rendered by their callers (each in its own style: Python's repr or plain).

use crate::dtype::{DType, TimeUnit};
use crate::encoding::{decode_f64, decode_i64};
use chrono::{DateTime, NaiveDate, TimeZone as _, Utc};

/// The days-since-epoch `days` as a calendar date (`None` out of chrono's range).
pub fn date_of_days(days: i64) -> Option<NaiveDate> {
    let days = i32::try_from(days).ok()?;
    NaiveDate::from_num_days_from_ce_opt(days.checked_add(EPOCH_DAYS_FROM_CE)?)
}

/// Days from 0001-01-01 (day 1 of the common era) to 1970-01-01.
pub const EPOCH_DAYS_FROM_CE: i32 = 719_163;

/// The UTC instant `v` units after the epoch (`None` out of chrono's range).
pub fn instant(v: i64, unit: TimeUnit) -> Option<DateTime<Utc>> {
    let per = unit.per_second();
    let (secs, sub) = (v.div_euclid(per), v.rem_euclid(per));
    let nanos = (sub * (1_000_000_000 / per)) as u32;
    Utc.timestamp_opt(secs, nanos).single()
}

/// An unscaled decimal with `scale` digits after the point, as text (`-0.05`).
pub fn decimal_text(unscaled: i128, scale: u8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let s = scale as usize;
    let padded = format!("{digits:0>width$}", width = s + 1);
    let (int, frac) = padded.split_at(padded.len() - s);
    format!("{sign}{int}.{frac}")
}

/// A non-null word of a logical (non-physical) dtype as text; `None` for the four physical
/// dtypes, which callers render in their own style.
pub fn render_logical(dtype: DType, w: u64) -> Option<String> {
    let v = decode_i64(w);
    Some(match dtype {
        DType::Int8
        | DType::Int16
        | DType::Int32
        | DType::UInt8
        | DType::UInt16
        | DType::UInt32
        | DType::UInt64 => v.to_string(),
        DType::Float32 => format!("{:?}", decode_f64(w) as f32),
        DType::Date32 => match date_of_days(v) {
            Some(d) => d.format("%Y-%m-%d").to_string(),
            None => format!("<date32 {v}>"),
        },
        DType::Timestamp(unit, zone) => match instant(v, unit) {
            Some(t) => match zone.and_then(|z| z.name().parse::<chrono_tz::Tz>().ok()) {
                Some(tz) => t
                    .with_timezone(&tz)
                    .format("%Y-%m-%d %H:%M:%S%.f%:z")
                    .to_string(),
                None if zone.is_some() => {
                    format!("{}+00:00", t.naive_utc().format("%Y-%m-%d %H:%M:%S%.f"))
                }
                None => t.naive_utc().format("%Y-%m-%d %H:%M:%S%.f").to_string(),
            },
            None => format!("<{} {v}>", dtype.name()),
        },
        DType::Duration(unit) => format!("{v}{}", unit.name()),
        DType::Decimal(_, s) => decimal_text(v as i128, s),
        DType::Binary => {
            let text = crate::encoding::Interner::resolve_all(&[w]).ok()?;
            render_binary(&crate::encoding::binary_bytes(&text[0]))
        }
        DType::Int64 | DType::Float64 | DType::Bool | DType::Str => return None,
    })
}

/// Bytes as Python writes a bytes literal: `b'ab\x00'`.
pub fn render_binary(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push_str("b'");
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::TimeZone;
    use crate::encoding::encode_i64;

    #[test]
    fn renders_logical_values() {
        assert_eq!(decimal_text(-5, 2), "-0.05");
        assert_eq!(decimal_text(1250, 2), "12.50");
        assert_eq!(decimal_text(7, 0), "7");
        let r = |d: DType, v: i64| render_logical(d, encode_i64(v)).unwrap();
        assert_eq!(r(DType::Date32, 0), "1970-01-01");
        assert_eq!(r(DType::Date32, 9204), "1995-03-15");
        assert_eq!(r(DType::Date32, -1), "1969-12-31");
        let us = DType::Timestamp(TimeUnit::Micro, None);
        assert_eq!(r(us, 1_500_000), "1970-01-01 00:00:01.500");
        let utc = DType::Timestamp(TimeUnit::Second, Some(TimeZone::new("UTC")));
        assert_eq!(r(utc, 3600), "1970-01-01 01:00:00+00:00");
        let paris = DType::Timestamp(TimeUnit::Second, Some(TimeZone::new("Europe/Paris")));
        assert_eq!(r(paris, 0), "1970-01-01 01:00:00+01:00");
        assert_eq!(r(DType::Duration(TimeUnit::Milli), 1500), "1500ms");
        assert!(render_logical(DType::Int64, 3).is_none());
    }
}
