//! Binding of `cast` between the numeric, decimal and temporal dtypes: each becomes plain
//! int64 / float64 work on the stored words, with value checks where the target is
//! narrower.
//!
//! | from | to | how |
//! |------|----|-----|
//! | integer, float, bool | int64, float64, bool | as before (a float that does not fit int64 is an error) |
//! | any numeric | a narrower integer | checked: a value out of range is an error update |
//! | any numeric | float32 | rounded to the nearest float32 |
//! | integer | decimal(p, s) | times `10**s`, checked against `p` digits |
//! | decimal(p1, s1) | decimal(p2, s2) | rescaled (half away from zero when the scale drops), checked against `p2` digits |
//! | decimal | integer | truncated toward zero (SQL, Spark), checked |
//! | decimal | float | `unscaled / 10**s` |
//! | float | decimal(p, s) | rounded half away from zero to `s` places, checked |
//! | date32 | timestamp | midnight |
//! | timestamp | date32 | the UTC date (floored) |
//! | timestamp / duration | the same of another unit | exact to a finer unit, floored to a coarser |
//! | integer | date32, timestamp, duration | the count (days or units) |
//! | date32, timestamp, duration | integer | the count |
//!
//! | str | any other | parsed ([`super::convert`] has the text forms) |
//! | any other | str | formatted: numbers as Python prints them, dates ISO, decimals with their scale |
//!
//! `strict=False` makes a value that does not convert null instead of an error update.

use super::bind::{Const, Kind, Node};
use super::bind_logical::{decimal_to_float, retype, widen};
use super::convert::Conversion;
use super::func_bind::BoundFunc;
use crate::dtype::{DType, Family, TimeUnit};

fn int_node(v: i64) -> Node {
    Node {
        kind: Kind::Const(Const::Int(v)),
        dtype: DType::Int64,
    }
}

fn func(f: BoundFunc, args: Vec<Node>, dtype: DType, src: &str) -> Node {
    Node {
        kind: Kind::Func {
            func: Box::new(f),
            args,
            src: src.to_string(),
        },
        dtype,
    }
}

fn mul(n: Node, factor: i64, dtype: DType, src: &str) -> Node {
    if factor == 1 {
        return retype(n, dtype);
    }
    Node {
        kind: Kind::Arith {
            op: super::ast::BinaryOp::Mul,
            lhs: Box::new(retype(n, DType::Int64)),
            rhs: Box::new(int_node(factor)),
            src: src.to_string(),
        },
        dtype,
    }
}

fn floor_div(n: Node, divisor: i64, dtype: DType, src: &str) -> Node {
    if divisor == 1 {
        return retype(n, dtype);
    }
    Node {
        kind: Kind::Arith {
            op: super::ast::BinaryOp::FloorDiv,
            lhs: Box::new(retype(n, DType::Int64)),
            rhs: Box::new(int_node(divisor)),
            src: src.to_string(),
        },
        dtype,
    }
}

/// A conversion step labelled `dtype`.
fn convert(c: Conversion, strict: bool, arg: Node, dtype: DType, src: &str) -> Node {
    func(BoundFunc::Convert(c, strict), vec![arg], dtype, src)
}

/// `n` checked to lie in `to`'s range (an integer's, or a decimal's digits), labelled `to`.
fn fit(n: Node, to: DType, strict: bool, src: &str) -> Node {
    let range = match to {
        DType::Decimal(p, _) if p <= 18 => {
            let m = 10i64.pow(p as u32) - 1;
            Some((-m, m))
        }
        _ => to.int_range().filter(|r| *r != (i64::MIN + 1, i64::MAX)),
    };
    match range {
        Some((lo, hi)) => convert(
            Conversion::Fit(lo, hi),
            strict,
            retype(n, DType::Int64),
            to,
            src,
        ),
        None => retype(n, to),
    }
}

fn unit_of(d: DType) -> TimeUnit {
    match d {
        DType::Timestamp(u, _) | DType::Duration(u) => u,
        _ => TimeUnit::Second,
    }
}

/// A cast of a physical value by the physical rules (the evaluator's `Cast` node).
fn physical_cast(n: Node, to: DType, src: &str) -> Node {
    if n.dtype == to {
        return n;
    }
    Node {
        kind: Kind::Cast {
            arg: Box::new(n),
            src: src.to_string(),
        },
        dtype: to,
    }
}

/// Binds `a.cast(to, strict)`; an error message for a pair that has no cast.
pub(super) fn bind_cast(a: Node, to: DType, strict: bool, src: &str) -> Result<Node, String> {
    use Family::*;
    let from = a.dtype;
    if from == to {
        return Ok(a);
    }
    let refuse = || format!("cannot cast {} to {}", from.name(), to.name());
    Ok(match (from.family(), to.family()) {
        (Str, Binary) => convert(Conversion::ToBinary, strict, a, to, src),
        (Binary, Str) => convert(Conversion::FromBinary, strict, a, to, src),
        (Binary, _) | (_, Binary) => return Err(refuse()),
        (Str, _) => {
            let parsed = convert(Conversion::Parse(to), strict, a, to, src);
            match to.family() {
                Integer | Decimal | Float | Bool | Date | Timestamp | Duration => parsed,
                Str | Binary => unreachable!("same dtype or binary above"),
            }
        }
        (_, Str) => convert(Conversion::Format(from), strict, a, DType::Str, src),
        (Integer | Float | Bool, Integer | Float | Bool) => {
            let a = widen(a);
            let target = to.physical();
            let a = if a.dtype == DType::Float64 && target == DType::Int64 && !strict {
                convert(Conversion::FloatToInt, strict, a, DType::Int64, src)
            } else {
                physical_cast(a, target, src)
            };
            match to {
                DType::Float32 => convert(Conversion::ToFloat32, strict, a, to, src),
                _ if to.family() == Integer => fit(a, to, strict, src),
                _ => a,
            }
        }
        (Integer | Bool, Decimal) => {
            let DType::Decimal(_, s) = to else {
                unreachable!()
            };
            let a = physical_cast(widen(a), DType::Int64, src);
            fit(mul(a, 10i64.pow(s as u32), to, src), to, strict, src)
        }
        (Decimal, Decimal) => {
            let (DType::Decimal(_, s1), DType::Decimal(_, s2)) = (from, to) else {
                unreachable!()
            };
            let n = if s2 >= s1 {
                mul(a, 10i64.pow((s2 - s1) as u32), to, src)
            } else {
                let d = int_node(10i64.pow((s1 - s2) as u32));
                func(
                    BoundFunc::DecimalDiv(0),
                    vec![retype(a, DType::Int64), d],
                    to,
                    src,
                )
            };
            fit(n, to, strict, src)
        }
        (Decimal, Integer | Bool) => {
            let DType::Decimal(_, s) = from else {
                unreachable!()
            };
            let n = convert(
                Conversion::TruncDiv(10i64.pow(s as u32)),
                strict,
                retype(a, DType::Int64),
                DType::Int64,
                src,
            );
            if to == DType::Bool {
                physical_cast(n, DType::Bool, src)
            } else {
                fit(n, to, strict, src)
            }
        }
        (Decimal, Float) => {
            let DType::Decimal(_, s) = from else {
                unreachable!()
            };
            let f = decimal_to_float(a, s);
            if to == DType::Float32 {
                convert(Conversion::ToFloat32, strict, f, to, src)
            } else {
                f
            }
        }
        (Float, Decimal) => {
            let DType::Decimal(_, s) = to else {
                unreachable!()
            };
            let n = convert(
                Conversion::FloatToDecimal(s),
                strict,
                widen(a),
                DType::Int64,
                src,
            );
            fit(n, to, strict, src)
        }
        (Date, Timestamp) => mul(a, unit_of(to).per_day(), to, src),
        (Timestamp, Date) => floor_div(a, unit_of(from).per_day(), to, src),
        (Timestamp, Timestamp) | (Duration, Duration) => {
            let (f, t) = (unit_of(from).per_second(), unit_of(to).per_second());
            if t >= f {
                mul(a, t / f, to, src)
            } else {
                floor_div(a, f / t, to, src)
            }
        }
        (Integer, Date | Timestamp | Duration) => retype(widen(a), to),
        (Date | Timestamp | Duration, Integer) => fit(retype(a, DType::Int64), to, strict, src),
        _ => return Err(refuse()),
    })
}
