//! The value conversions of `cast` that can fail: range checks, float to integer or decimal,
//! and parsing and formatting of `str`. A strict cast fails the row (an error update naming
//! the expression, row and value); `cast(..., strict=False)` makes the row null instead.
//!
//! Text forms: integers in decimal with an optional sign; floats as Rust parses them
//! (`1e3`, `inf`, `NaN`) and formatted as Python's `repr`; bools `true` / `false` (any case);
//! decimals as `[-]digits[.digits]`, rounded half away from zero to the target's scale;
//! dates as `YYYY-MM-DD`; timestamps as `YYYY-MM-DD HH:MM:SS[.fraction]` (or with `T`),
//! read as local time of the target's zone, or with an offset (`+01:00`, `Z`) as that
//! instant. Surrounding whitespace is ignored when parsing.

use super::column::{Vals, Value};
use super::eval::{first_bad, map1, Rows};
use crate::dtype::{DType, TimeUnit};
use crate::encoding::Interner;
use crate::error::{Error, Result};
use crate::values::{date_of_days, instant, render_logical, EPOCH_DAYS_FROM_CE};
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime};

/// A conversion step of a cast.
#[derive(Clone, Debug)]
pub(crate) enum Conversion {
    /// An int64 checked to lie in `lo..=hi` (a narrower integer, or a decimal's digits).
    Fit(i64, i64),
    /// An int64 divided by a constant, truncated toward zero (decimal to integer).
    TruncDiv(i64),
    /// A float64 times `10**scale`, rounded half away from zero, as int64 (to decimal).
    FloatToDecimal(u8),
    /// A float64 truncated toward zero to int64 (NaN and out-of-range values fail).
    FloatToInt,
    /// A float64 rounded to the nearest float32.
    ToFloat32,
    /// A str parsed as `to` (its words: int64, float64, bool, unscaled decimal, days,
    /// units since the epoch).
    Parse(DType),
    /// A value of the dtype as str.
    Format(DType),
    /// A str as binary: its UTF-8 bytes.
    ToBinary,
    /// A binary as str: its bytes, which must be UTF-8.
    FromBinary,
}

/// Evaluates `conv` on `arg`: the values and the rows that did not convert (null when not
/// `strict`; with `strict` the first counted such row is an error).
pub(crate) fn eval<'a>(
    conv: &Conversion,
    strict: bool,
    arg: &Value<'a>,
    rows: Rows<'_>,
    src: &str,
) -> Result<(Value<'a>, Option<Vec<bool>>)> {
    let Rows { n, off, mask } = rows;
    // Runs `f` per row: `None` is a failure.
    let finish = |out: Vec<Option<u64>>,
                  show: &dyn Fn(usize) -> String|
     -> Result<(Vec<u64>, Option<Vec<bool>>)> {
        let failed: Vec<bool> = out.iter().map(Option::is_none).collect();
        if !failed.contains(&true) {
            return Ok((out.into_iter().map(|v| v.unwrap_or(0)).collect(), None));
        }
        if strict {
            if let Some(i) = first_bad(n, mask, |i| failed[i]) {
                return Err(Error::Value(format!(
                    "{src} at row {}: {} (cast(..., strict=False) makes it null)",
                    i + off,
                    show(i)
                )));
            }
        }
        Ok((
            out.into_iter().map(|v| v.unwrap_or(0)).collect(),
            Some(failed),
        ))
    };
    let ints = |v: &Vals<'_, i64>| (0..n).map(|i| v.get(i)).collect::<Vec<i64>>();
    let floats = |v: &Vals<'_, f64>| (0..n).map(|i| v.get(i)).collect::<Vec<f64>>();
    Ok(match (conv, arg) {
        (Conversion::TruncDiv(d), Value::Int(a)) => {
            let d = *d;
            (Value::Int(map1(a, move |x| x / d)), None)
        }
        (Conversion::ToFloat32, Value::Float(a)) => {
            (Value::Float(map1(a, |x| x as f32 as f64)), None)
        }
        (Conversion::Fit(lo, hi), Value::Int(a)) => {
            let xs = ints(a);
            let out = xs
                .iter()
                .map(|&x| (*lo..=*hi).contains(&x).then_some(x as u64))
                .collect();
            let show =
                |i: usize| format!("value {} is out of the target's range {lo}..={hi}", xs[i]);
            let (w, bad) = finish(out, &show)?;
            (
                Value::Int(Vals::Owned(w.into_iter().map(|x| x as i64).collect())),
                bad,
            )
        }
        (Conversion::FloatToDecimal(s), Value::Float(a)) => {
            let xs = floats(a);
            let scale = 10f64.powi(*s as i32);
            let out = xs
                .iter()
                .map(|&x| {
                    let v = (x * scale).round();
                    (v.is_finite() && v.abs() < 9.2e18).then_some(v as i64 as u64)
                })
                .collect();
            let show = |i: usize| format!("value {} does not fit the decimal", xs[i]);
            let (w, bad) = finish(out, &show)?;
            (
                Value::Int(Vals::Owned(w.into_iter().map(|x| x as i64).collect())),
                bad,
            )
        }
        (Conversion::FloatToInt, Value::Float(a)) => {
            let xs = floats(a);
            let out = xs
                .iter()
                .map(|&x| {
                    let t = x.trunc();
                    (-9.223372036854775e18..9.223372036854775e18)
                        .contains(&t)
                        .then_some(t as i64)
                        .filter(|&v| v != i64::MIN)
                        .map(|v| v as u64)
                })
                .collect();
            let show = |i: usize| format!("value {} does not fit int64", xs[i]);
            let (w, bad) = finish(out, &show)?;
            (
                Value::Int(Vals::Owned(w.into_iter().map(|x| x as i64).collect())),
                bad,
            )
        }
        (Conversion::ToBinary, Value::Str(a)) => {
            let texts = texts_of(a, n);
            let bytes: Vec<String> = texts
                .iter()
                .map(|t| crate::encoding::binary_text(t.as_bytes()))
                .collect();
            let mut ids = Vec::with_capacity(n);
            Interner::intern_all(bytes.iter().map(String::as_str), &mut ids);
            (Value::Str(Vals::Owned(ids)), None)
        }
        (Conversion::FromBinary, Value::Str(a)) => {
            let texts = texts_of(a, n);
            let decoded: Vec<Option<String>> = texts
                .iter()
                .map(|t| String::from_utf8(crate::encoding::binary_bytes(t)).ok())
                .collect();
            let mut ids = Vec::with_capacity(n);
            Interner::intern_all(decoded.iter().map(|t| t.as_deref().unwrap_or("")), &mut ids);
            let out: Vec<Option<u64>> = decoded
                .iter()
                .zip(&ids)
                .map(|(t, &id)| t.as_ref().map(|_| id))
                .collect();
            let show = |i: usize| {
                format!(
                    "binary value {} is not UTF-8 text",
                    crate::values::render_binary(&crate::encoding::binary_bytes(&texts[i]))
                )
            };
            let (w, bad) = finish(out, &show)?;
            (Value::Str(Vals::Owned(w)), bad)
        }
        (Conversion::Parse(to), Value::Str(a)) => {
            let texts = texts_of(a, n);
            let out: Vec<Option<u64>> = texts.iter().map(|t| parse(t.trim(), *to)).collect();
            let show = |i: usize| format!("{:?} is not a valid {}", &*texts[i], to.name());
            let (w, bad) = finish(out, &show)?;
            let v = match to.physical() {
                DType::Float64 => {
                    Value::Float(Vals::Owned(w.into_iter().map(f64::from_bits).collect()))
                }
                DType::Bool => Value::Bool(Vals::Owned(w.into_iter().map(|x| x != 0).collect())),
                _ => Value::Int(Vals::Owned(w.into_iter().map(|x| x as i64).collect())),
            };
            (v, bad)
        }
        (Conversion::Format(from), v) => {
            let texts: Vec<String> = (0..n).map(|i| format(v, i, *from)).collect();
            let mut ids = Vec::with_capacity(n);
            Interner::intern_all(texts.iter().map(String::as_str), &mut ids);
            (Value::Str(Vals::Owned(ids)), None)
        }
        _ => unreachable!("bind passes the conversion's operand dtype"),
    })
}

/// The strings of the first `n` rows of a str operand (`""` at null rows, which are null
/// in the result anyway).
fn texts_of(a: &Vals<'_, u64>, n: usize) -> Vec<std::sync::Arc<str>> {
    let ids: Vec<u64> = (0..n).map(|i| a.get(i)).collect();
    Interner::resolve_all(&ids).unwrap_or_else(|_| {
        ids.iter()
            .map(|&id| {
                Interner::resolve_all(&[id])
                    .map(|mut v| v.remove(0))
                    .unwrap_or_else(|_| std::sync::Arc::from(""))
            })
            .collect()
    })
}

/// The word of `text` as a value of `to` (`None` when it does not parse or fit).
fn parse(text: &str, to: DType) -> Option<u64> {
    match to {
        DType::Float64 | DType::Float32 => {
            let x: f64 = text.parse().ok()?;
            let x = if to == DType::Float32 {
                x as f32 as f64
            } else {
                x
            };
            Some(crate::encoding::encode_f64(x))
        }
        DType::Bool => match text.to_ascii_lowercase().as_str() {
            "true" => Some(1),
            "false" => Some(0),
            _ => None,
        },
        DType::Decimal(_, s) => parse_decimal(text, s).map(|v| v as u64),
        DType::Date32 => {
            let d = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
            Some((d.num_days_from_ce() as i64 - EPOCH_DAYS_FROM_CE as i64) as u64)
        }
        DType::Timestamp(unit, zone) => parse_timestamp(text, unit, zone).map(|v| v as u64),
        DType::Duration(_) => text
            .parse::<i64>()
            .ok()
            .filter(|&v| v != i64::MIN)
            .map(|v| v as u64),
        _ => {
            let v: i64 = text.parse().ok()?;
            let (lo, hi) = to.int_range().unwrap_or((i64::MIN + 1, i64::MAX));
            (lo..=hi).contains(&v).then_some(v as u64)
        }
    }
}

/// `[-+]digits[.digits]` as an unscaled value of scale `s`, half away from zero.
fn parse_decimal(text: &str, s: u8) -> Option<i64> {
    let (neg, body) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let s = s as usize;
    let mut v: i128 = 0;
    for b in int
        .bytes()
        .chain(frac.bytes().chain(std::iter::repeat(b'0')).take(s))
    {
        v = v.checked_mul(10)?.checked_add((b - b'0') as i128)?;
    }
    if frac.len() > s && frac.as_bytes()[s] >= b'5' {
        v += 1;
    }
    let v = if neg { -v } else { v };
    i64::try_from(v).ok().filter(|&x| x != i64::MIN)
}

fn parse_timestamp(
    text: &str,
    unit: TimeUnit,
    zone: Option<crate::dtype::TimeZone>,
) -> Option<i64> {
    let to_units = |secs: i64, nanos: u32| -> Option<i64> {
        let per = unit.per_second();
        secs.checked_mul(per)?
            .checked_add(nanos as i64 / (1_000_000_000 / per))
            .filter(|&w| w != i64::MIN)
    };
    if let Ok(t) = DateTime::parse_from_rfc3339(&text.replace(' ', "T")) {
        return to_units(t.timestamp(), t.timestamp_subsec_nanos());
    }
    let naive = [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M",
        "%Y-%m-%d",
    ]
    .iter()
    .find_map(|f| {
        NaiveDateTime::parse_from_str(text, f).ok().or_else(|| {
            NaiveDate::parse_from_str(text, f)
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
    })?;
    let cal = super::calendar::Calendar::of(DType::Timestamp(unit, zone), "cast").ok()?;
    let days = naive.date().num_days_from_ce() as i64 - EPOCH_DAYS_FROM_CE as i64;
    let _ = date_of_days(days)?;
    cal.local_word(naive)
}

/// Row `i` of `v` (of dtype `from`) as text.
fn format(v: &Value<'_>, i: usize, from: DType) -> String {
    match v {
        Value::Int(a) => {
            let x = a.get(i);
            match from {
                DType::Duration(u) => format!("{x}{}", u.name()),
                DType::Timestamp(u, _) if instant(x, u).is_none() => x.to_string(),
                d if !d.is_physical() => {
                    render_logical(d, x as u64).unwrap_or_else(|| x.to_string())
                }
                _ => x.to_string(),
            }
        }
        Value::Float(a) => {
            let x = a.get(i);
            if from == DType::Float32 {
                super::ast::py_float_repr(x as f32 as f64)
            } else {
                super::ast::py_float_repr(x)
            }
        }
        Value::Bool(a) => if a.get(i) { "true" } else { "false" }.to_string(),
        Value::Str(_) => unreachable!("str to str is not a conversion"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_forms() {
        assert_eq!(parse_decimal("12.345", 2), Some(1235));
        assert_eq!(parse_decimal("-12.345", 2), Some(-1235));
        assert_eq!(parse_decimal("-0.004", 2), Some(0));
        assert_eq!(parse_decimal("7", 3), Some(7000));
        assert_eq!(parse_decimal(".5", 1), Some(5));
        assert_eq!(parse_decimal("1.2.3", 1), None);
        assert_eq!(parse_decimal("", 1), None);
        assert_eq!(parse_decimal("99999999999999999999", 0), None);
        assert_eq!(parse("42", DType::Int8), Some(42));
        assert_eq!(parse("300", DType::Int8), None);
        assert_eq!(parse("TRUE", DType::Bool), Some(1));
        assert_eq!(parse("1970-01-02", DType::Date32), Some(1));
        assert_eq!(parse("1970-02-30", DType::Date32), None);
        let us = DType::Timestamp(TimeUnit::Micro, None);
        assert_eq!(parse("1970-01-01 00:00:01.5", us), Some(1_500_000));
        assert_eq!(parse("1970-01-01T00:00:01Z", us), Some(1_000_000));
        assert_eq!(parse("1970-01-01 01:00:00+01:00", us), Some(0));
        assert_eq!(parse("1970-01-02", us), Some(86_400_000_000));
    }
}
