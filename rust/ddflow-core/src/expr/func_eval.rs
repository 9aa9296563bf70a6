//! Vectorised evaluation of the library functions ([`BoundFunc`]) on a chunk of rows.
//!
//! Failing rows (int64 `abs(i64::MIN)`, int64 `rem` by zero) raise like the operators in
//! [`eval`](super::eval): only rows selected by the mask count. String functions resolve each
//! *distinct* interned id of the chunk once, run the kernel of [`strings`](super::strings)
//! on it, and intern the distinct results in one pass (strings produced by expressions are
//! interned like input strings).

use super::bind::Const;
use super::column::{Vals, Value};
use super::eval::{checked_i64, first_bad, map1, map2, overflow, Rows};
use super::func_bind::BoundFunc;
use super::{math, strings};
use crate::encoding::Interner;
use crate::error::{Error, Result};
use std::borrow::Cow;
use std::sync::Arc;

/// The distinct ids of a str operand's chunk (sorted) and their strings.
struct Distinct {
    ids: Vec<u64>,
    strs: Vec<Arc<str>>,
}

impl Distinct {
    fn of(v: &Vals<'_, u64>) -> Result<Distinct> {
        let mut ids = match v.slice() {
            None => vec![v.get(0)],
            Some(s) => s.to_vec(),
        };
        ids.sort_unstable();
        ids.dedup();
        let strs = Interner::resolve_all(&ids)?;
        Ok(Distinct { ids, strs })
    }

    /// Spreads per-distinct results back over the rows of `v`.
    fn spread<O: Copy>(&self, v: &Vals<'_, u64>, out: &[O]) -> Vals<'static, O> {
        let at = |id: u64| out[self.ids.binary_search(&id).expect("id was collected")];
        map1(v, at)
    }
}

/// `f` of each string of `v`.
fn map_str<O: Copy>(v: &Vals<'_, u64>, f: impl Fn(&str) -> O) -> Result<Vals<'static, O>> {
    let d = Distinct::of(v)?;
    let out: Vec<O> = d.strs.iter().map(|s| f(s)).collect();
    Ok(d.spread(v, &out))
}

/// The interned strings `f` of each string of `v`.
fn map_str_str(
    v: &Vals<'_, u64>,
    f: impl for<'s> Fn(&'s str) -> Cow<'s, str>,
) -> Result<Vals<'static, u64>> {
    let d = Distinct::of(v)?;
    let results: Vec<Cow<'_, str>> = d.strs.iter().map(|s| f(s)).collect();
    let mut ids = Vec::with_capacity(results.len());
    Interner::intern_all(results.iter().map(|c| c.as_ref()), &mut ids);
    Ok(d.spread(v, &ids))
}

/// The strings of `v` row by row (`n` rows).
fn rows_of(v: &Vals<'_, u64>, n: usize) -> Result<Vec<Arc<str>>> {
    match v.slice() {
        None => {
            let s = Interner::resolve_all(&[v.get(0)])?.remove(0);
            Ok(vec![s; n])
        }
        Some(ids) => Interner::resolve_all(ids),
    }
}

/// `concat_str` of the str operands `args` with `sep` between them.
fn concat(args: &[Vals<'_, u64>], sep: &str, n: usize) -> Result<Vals<'static, u64>> {
    if args.iter().all(|a| a.slice().is_none()) {
        let parts = args
            .iter()
            .map(|a| Interner::resolve_all(&[a.get(0)]).map(|mut v| v.remove(0)))
            .collect::<Result<Vec<_>>>()?;
        let joined = parts.iter().map(|p| &**p).collect::<Vec<_>>().join(sep);
        return Ok(Vals::Const(Interner::intern(&joined)));
    }
    let cols = args
        .iter()
        .map(|a| rows_of(a, n))
        .collect::<Result<Vec<_>>>()?;
    let mut joined = Vec::with_capacity(n);
    let mut buf = String::new();
    for i in 0..n {
        buf.clear();
        for (k, c) in cols.iter().enumerate() {
            if k > 0 {
                buf.push_str(sep);
            }
            buf.push_str(&c[i]);
        }
        joined.push(buf.clone());
    }
    let mut ids = Vec::with_capacity(n);
    Interner::intern_all(joined.iter().map(String::as_str), &mut ids);
    Ok(Vals::Owned(ids))
}

/// `is_in` on a value of the constants' dtype.
fn is_in(v: Value<'_>, consts: &[Const]) -> Value<'static> {
    let sorted_words = |f: fn(&Const) -> Option<u64>| {
        let mut w: Vec<u64> = consts.iter().filter_map(f).collect();
        w.sort_unstable();
        w
    };
    Value::Bool(match v {
        Value::Int(a) => {
            let set = sorted_words(|c| match c {
                Const::Int(x) => Some(*x as u64),
                _ => None,
            });
            map1(&a, |x| set.binary_search(&(x as u64)).is_ok())
        }
        Value::Str(a) => {
            let set = sorted_words(|c| match c {
                Const::Str(x) => Some(*x),
                _ => None,
            });
            map1(&a, |x| set.binary_search(&x).is_ok())
        }
        Value::Float(a) => {
            // IEEE equality: NaN is in no list, -0.0 equals 0.0 (adding 0.0 maps -0.0 to 0.0).
            let mut set: Vec<f64> = consts
                .iter()
                .filter_map(|c| match c {
                    Const::Float(x) if !x.is_nan() => Some(x + 0.0),
                    _ => None,
                })
                .collect();
            set.sort_unstable_by(f64::total_cmp);
            map1(&a, |x| {
                !x.is_nan() && set.binary_search_by(|c| c.total_cmp(&(x + 0.0))).is_ok()
            })
        }
        Value::Bool(a) => {
            let has = |b: bool| consts.contains(&Const::Bool(b));
            let (t, f) = (has(true), has(false));
            map1(&a, |x| if x { t } else { f })
        }
    })
}

/// Evaluates `func` on its evaluated operands `args` over `rows`.
pub(super) fn eval<'a>(
    func: &BoundFunc,
    mut args: Vec<Value<'a>>,
    rows: Rows<'_>,
    src: &str,
) -> Result<Value<'a>> {
    let Rows { n, off, mask } = rows;
    if let BoundFunc::ConcatStr(sep) = func {
        let strs: Vec<Vals<'_, u64>> = args
            .into_iter()
            .map(|a| match a {
                Value::Str(s) => s,
                _ => unreachable!("bind checks str operands"),
            })
            .collect();
        return Ok(Value::Str(concat(&strs, sep, n)?));
    }
    if let BoundFunc::IsIn(consts) = func {
        return Ok(is_in(args.pop().expect("one operand"), consts));
    }
    if let Some(out) = eval_calendar(func, &args, rows, src) {
        return out;
    }
    if let BoundFunc::DecimalDiv(shift) = *func {
        let b = args.pop().expect("two operands");
        let a = args.pop().expect("two operands");
        let (Value::Int(a), Value::Int(b)) = (a, b) else {
            unreachable!("bind passes unscaled int64 operands")
        };
        return Ok(Value::Int(checked_i64(
            &a,
            &b,
            rows,
            |x, y| math::decimal_div(x, y, shift).unwrap_or(0),
            |x, y| math::decimal_div(x, y, shift).is_none(),
            |i, x, y| {
                if y == 0 {
                    Error::DivisionByZero(format!("decimal division by zero in {src} at row {i}"))
                } else {
                    overflow(
                        src,
                        i,
                        format!("the quotient of unscaled {x} / {y} leaves 64 bits"),
                    )
                }
            },
        )?));
    }
    if matches!(func, BoundFunc::Pow | BoundFunc::Rem) {
        let b = args.pop().expect("two operands");
        let a = args.pop().expect("two operands");
        return Ok(match (func, a, b) {
            (BoundFunc::Pow, Value::Float(a), Value::Float(b)) => {
                Value::Float(map2(&a, &b, f64::powf))
            }
            (_, Value::Float(a), Value::Float(b)) => Value::Float(map2(&a, &b, math::rem_f64)),
            (_, Value::Int(a), Value::Int(b)) => Value::Int(checked_i64(
                &a,
                &b,
                rows,
                math::rem_i64,
                math::rem_i64_bad,
                |i, x, _| {
                    Error::DivisionByZero(format!(
                        "integer modulo by zero in {src} at row {i}: {x}.rem(0)"
                    ))
                },
            )?),
            _ => unreachable!("bind unifies rem / pow operands"),
        });
    }
    let arg = args.pop().expect("one operand");
    Ok(match (func, arg) {
        (BoundFunc::Abs, Value::Int(a)) => {
            if n > 0 && (0..n).any(|i| math::abs_i64_bad(a.get(i))) {
                if let Some(i) = first_bad(n, mask, |i| math::abs_i64_bad(a.get(i))) {
                    return Err(overflow(src, i + off, format!("abs({})", i64::MIN)));
                }
            }
            Value::Int(map1(&a, math::abs_i64))
        }
        (BoundFunc::Abs, Value::Float(a)) => Value::Float(map1(&a, f64::abs)),
        (BoundFunc::Round(d), Value::Float(a)) => {
            let d = *d;
            Value::Float(map1(&a, |x| math::round_f64(x, d)))
        }
        (BoundFunc::Floor, Value::Float(a)) => Value::Float(map1(&a, f64::floor)),
        (BoundFunc::Ceil, Value::Float(a)) => Value::Float(map1(&a, f64::ceil)),
        (BoundFunc::Sqrt, Value::Float(a)) => Value::Float(map1(&a, f64::sqrt)),
        (BoundFunc::Log, Value::Float(a)) => Value::Float(map1(&a, f64::ln)),
        (BoundFunc::Exp, Value::Float(a)) => Value::Float(map1(&a, f64::exp)),
        (BoundFunc::LenChars, Value::Str(s)) => Value::Int(map_str(&s, strings::len_chars)?),
        (BoundFunc::Lower, Value::Str(s)) => {
            Value::Str(map_str_str(&s, |x| Cow::Owned(x.to_lowercase()))?)
        }
        (BoundFunc::Upper, Value::Str(s)) => {
            Value::Str(map_str_str(&s, |x| Cow::Owned(x.to_uppercase()))?)
        }
        (BoundFunc::Strip, Value::Str(s)) => {
            Value::Str(map_str_str(&s, |x| Cow::Borrowed(strings::strip(x)))?)
        }
        (BoundFunc::StartsWith(p), Value::Str(s)) => {
            Value::Bool(map_str(&s, |x| x.starts_with(p.as_str()))?)
        }
        (BoundFunc::EndsWith(p), Value::Str(s)) => {
            Value::Bool(map_str(&s, |x| x.ends_with(p.as_str()))?)
        }
        (BoundFunc::Contains(m), Value::Str(s)) => Value::Bool(map_str(&s, |x| m.is_match(x))?),
        (BoundFunc::Like(re), Value::Str(s)) => Value::Bool(map_str(&s, |x| re.is_match(x))?),
        (BoundFunc::Slice(offset, length), Value::Str(s)) => {
            let (o, l) = (*offset, *length);
            Value::Str(map_str_str(&s, |x| Cow::Borrowed(strings::slice(x, o, l)))?)
        }
        (BoundFunc::Replace(m, value), Value::Str(s)) => {
            Value::Str(map_str_str(&s, |x| m.replace_first(x, value))?)
        }
        (func, _) => unreachable!("bind checks the operand of {func:?}"),
    })
}

/// The `.dt` functions (`None` for any other function): a value chrono cannot represent,
/// or a result outside int64, is a value error on a counted row.
fn eval_calendar<'a>(
    func: &BoundFunc,
    args: &[Value<'a>],
    rows: Rows<'_>,
    src: &str,
) -> Option<Result<Value<'a>>> {
    use super::calendar::{epoch, field, offset_by, truncate};
    let f: Box<dyn Fn(i64) -> Option<i64> + '_> = match func {
        BoundFunc::Dt(part, cal) => Box::new(move |v| field(cal, v, *part)),
        BoundFunc::DtEpoch(unit, cal) => Box::new(move |v| epoch(cal, v, *unit)),
        BoundFunc::DtTruncate(every, cal) => Box::new(move |v| truncate(cal, v, *every)),
        BoundFunc::DtOffsetBy(every, cal) => Box::new(move |v| offset_by(cal, v, *every)),
        _ => return None,
    };
    let Value::Int(a) = &args[0] else {
        unreachable!("bind passes date or timestamp words")
    };
    let Rows { n, off, mask } = rows;
    let out: Vec<Option<i64>> = (0..n).map(|i| f(a.get(i))).collect();
    if let Some(i) = first_bad(n, mask, |i| out[i].is_none()) {
        return Some(Err(Error::Value(format!(
            "{src} at row {}: the value (stored word {}) is out of the calendar's range",
            i + off,
            a.get(i)
        ))));
    }
    Some(Ok(Value::Int(Vals::Owned(
        out.into_iter().map(|v| v.unwrap_or(0)).collect(),
    ))))
}
