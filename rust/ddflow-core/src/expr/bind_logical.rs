//! Binding of the operators on logical dtypes (dates, timestamps, durations, decimals,
//! narrow integers, float32): each becomes plain int64 / float64 work on the stored words,
//! with the result's logical dtype on the node.
//!
//! * Narrow integers and float32 are widened first: their arithmetic is int64's / float64's.
//! * Decimals are exact, as in SQL and arrow-rs. `+`/`-` align to the larger scale, with
//!   precision `max(p1 - s1, p2 - s2) + s + 1`; `*` has scale `s1 + s2` and precision
//!   `p1 + p2 + 1`; `/` has scale `s1 + 4` (Spark's rule for a mean; half away from zero)
//!   and precision 38. Precision is capped at 38. An integer operand is a decimal of scale 0;
//!   a float operand makes the operation float64. A result whose unscaled value leaves 64
//!   bits is an overflow error update.
//! * Comparisons align the operands the same way: decimals to the larger scale, a date to a
//!   timestamp (midnight), timestamps and durations to the finer unit. Timestamps compare
//!   when both or neither have a zone (values are UTC instants either way).
//! * Temporal arithmetic: date or timestamp `±` duration is a timestamp (a date's midnight
//!   plus the duration, in the finer unit); timestamp `-` timestamp is a duration; date `-`
//!   date is a `duration[ms]` (as Polars); durations add, subtract, multiply and floor-divide
//!   by integers.

use super::ast::BinaryOp;
use super::bind::{to_float, Const, Kind, Node};
use super::func_bind::BoundFunc;
use crate::dtype::{DType, Family, TimeUnit, MAX_DECIMAL_PRECISION};

/// Whether `d` needs this module's rules (dates, timestamps, durations, decimals).
pub(super) fn is_logical(d: DType) -> bool {
    matches!(
        d.family(),
        Family::Date | Family::Timestamp | Family::Duration | Family::Decimal
    )
}

/// `n` with the dtype label `dtype` (same words).
pub(super) fn retype(n: Node, dtype: DType) -> Node {
    if n.dtype == dtype {
        return n;
    }
    if let Kind::Const(_) = n.kind {
        return Node { dtype, ..n };
    }
    Node {
        kind: Kind::Retype(Box::new(n)),
        dtype,
    }
}

/// Narrow integers as int64, float32 as float64 (the dtypes their arithmetic has).
pub(super) fn widen(n: Node) -> Node {
    match n.dtype.family() {
        Family::Integer => retype(n, DType::Int64),
        Family::Float => retype(n, DType::Float64),
        _ => n,
    }
}

/// `n * factor` (checked: an overflow names `src`), labelled `dtype`.
pub(super) fn scaled(n: Node, factor: i64, dtype: DType, src: &str) -> Node {
    if factor == 1 {
        return retype(n, dtype);
    }
    if let Kind::Const(Const::Int(v)) = n.kind {
        if let Some(p) = v.checked_mul(factor) {
            return Node {
                kind: Kind::Const(Const::Int(p)),
                dtype,
            };
        }
    }
    Node {
        kind: Kind::Arith {
            op: BinaryOp::Mul,
            lhs: Box::new(retype(n, DType::Int64)),
            rhs: Box::new(Node {
                kind: Kind::Const(Const::Int(factor)),
                dtype: DType::Int64,
            }),
            src: src.to_string(),
        },
        dtype,
    }
}

fn pow10(k: u8) -> i64 {
    10i64.pow(k as u32)
}

/// A decimal of scale `s` as float64 (`unscaled / 10**s`, correctly rounded while the
/// unscaled value is below 2**53).
pub(super) fn decimal_to_float(n: Node, s: u8) -> Node {
    let f = to_float(retype(n, DType::Int64));
    if s == 0 {
        return f;
    }
    Node {
        kind: Kind::Arith {
            op: BinaryOp::TrueDiv,
            lhs: Box::new(f),
            rhs: Box::new(Node {
                kind: Kind::Const(Const::Float(10f64.powi(s as i32))),
                dtype: DType::Float64,
            }),
            src: String::new(),
        },
        dtype: DType::Float64,
    }
}

/// The decimal (precision, scale) of a decimal or integer operand.
fn decimal_parts(d: DType) -> Option<(u8, u8)> {
    match d {
        DType::Decimal(p, s) => Some((p, s)),
        _ if d.family() == Family::Integer => Some((19, 0)),
        _ => None,
    }
}

fn capped(p: u32) -> u8 {
    p.min(MAX_DECIMAL_PRECISION as u32) as u8
}

/// Brings two comparable operands to one stored form; the dtype both now have, or a
/// message saying why they do not compare.
pub(super) fn align(l: Node, r: Node, src: &str) -> Result<(Node, Node, DType), String> {
    let (ld, rd) = (l.dtype, r.dtype);
    let (lf, rf) = (ld.family(), rd.family());
    use Family::*;
    match (lf, rf) {
        (Decimal, Decimal) | (Decimal, Integer) | (Integer, Decimal) => {
            let (lp, ls) = decimal_parts(ld).expect("decimal or integer");
            let (rp, rs) = decimal_parts(rd).expect("decimal or integer");
            let s = ls.max(rs);
            let p = capped((lp - ls).max(rp - rs) as u32 + s as u32);
            let d = DType::Decimal(p.max(s).max(1), s);
            Ok((
                scaled(l, pow10(s - ls), d, src),
                scaled(r, pow10(s - rs), d, src),
                d,
            ))
        }
        (Decimal, Float) | (Float, Decimal) => {
            let conv = |n: Node| match n.dtype {
                DType::Decimal(_, s) => decimal_to_float(n, s),
                _ => widen(n),
            };
            Ok((conv(l), conv(r), DType::Float64))
        }
        (Date, Date) => Ok((l, r, ld)),
        (Duration, Duration) => {
            let (DType::Duration(lu), DType::Duration(ru)) = (ld, rd) else {
                unreachable!()
            };
            let u = lu.max(ru);
            let d = DType::Duration(u);
            Ok((to_unit(l, lu, u, d, src), to_unit(r, ru, u, d, src), d))
        }
        (Timestamp, Timestamp) | (Date, Timestamp) | (Timestamp, Date) => {
            let zone = |d: DType| match d {
                DType::Timestamp(_, z) => z,
                _ => None,
            };
            let (lz, rz) = (zone(ld), zone(rd));
            if lz.is_some() != rz.is_some()
                || (lf == Date && lz.is_some())
                || (rf == Date && rz.is_some())
            {
                return Err(format!(
                    "cannot compare {} with {}: one has a time zone and the other not (cast first)",
                    ld.name(),
                    rd.name()
                ));
            }
            let unit = |d: DType| match d {
                DType::Timestamp(u, _) => u,
                _ => TimeUnit::Second,
            };
            let u = unit(ld).max(unit(rd));
            let d = DType::Timestamp(u, lz.or(rz));
            Ok((to_timestamp(l, u, d, src), to_timestamp(r, u, d, src), d))
        }
        _ => Err(format!("cannot compare {} with {}", ld.name(), rd.name())),
    }
}

/// A duration or timestamp count in unit `from` as a count in the finer unit `to`.
fn to_unit(n: Node, from: TimeUnit, to: TimeUnit, dtype: DType, src: &str) -> Node {
    scaled(n, to.per_second() / from.per_second(), dtype, src)
}

/// A date or timestamp as a timestamp of unit `u` (a date is its midnight).
fn to_timestamp(n: Node, u: TimeUnit, dtype: DType, src: &str) -> Node {
    match n.dtype {
        DType::Date32 => scaled(n, u.per_day(), dtype, src),
        DType::Timestamp(from, _) => to_unit(n, from, u, dtype, src),
        _ => unreachable!("dates and timestamps only"),
    }
}

fn arith(op: BinaryOp, l: Node, r: Node, dtype: DType, src: &str) -> Node {
    Node {
        kind: Kind::Arith {
            op,
            lhs: Box::new(retype(l, DType::Int64)),
            rhs: Box::new(retype(r, DType::Int64)),
            src: src.to_string(),
        },
        dtype,
    }
}

/// What [`binary`] made of an operator.
pub(super) enum Bound {
    /// The bound node.
    Node(Node),
    /// Neither operand is logical: the operands back (widened), for the physical rules.
    Physical(Node, Node),
}

/// Binds `l op r` when either operand is logical; an error message otherwise out of rule.
pub(super) fn binary(op: BinaryOp, l: Node, r: Node, src: &str) -> Result<Bound, String> {
    let (l, r) = (widen(l), widen(r));
    if !is_logical(l.dtype) && !is_logical(r.dtype) {
        return Ok(Bound::Physical(l, r));
    }
    let (ld, rd) = (l.dtype, r.dtype);
    let cannot = || {
        format!(
            "cannot apply {} to {} and {}",
            op_name(op),
            ld.name(),
            rd.name()
        )
    };
    use BinaryOp::*;
    let node = match op {
        Eq | Ne | Lt | Le | Gt | Ge => {
            let (l, r, _) = align(l, r, src)?;
            Node {
                kind: Kind::Cmp {
                    op,
                    lhs: Box::new(l),
                    rhs: Box::new(r),
                },
                dtype: DType::Bool,
            }
        }
        MinOf | MaxOf => {
            let (l, r, d) = align(l, r, src)?;
            Node {
                kind: Kind::MinMax {
                    max: op == MaxOf,
                    lhs: Box::new(l),
                    rhs: Box::new(r),
                },
                dtype: d,
            }
        }
        And | Or => return Err(cannot()),
        Add | Sub | Mul | TrueDiv | FloorDiv | Mod => {
            if ld.family() == Family::Decimal || rd.family() == Family::Decimal {
                decimal_arith(op, l, r, src)?
            } else {
                temporal_arith(op, l, r, src).ok_or_else(cannot)?
            }
        }
    };
    Ok(Bound::Node(node))
}

fn op_name(op: BinaryOp) -> &'static str {
    op.symbol().unwrap_or_else(|| op.json_name())
}

fn decimal_arith(op: BinaryOp, l: Node, r: Node, src: &str) -> Result<Node, String> {
    let (ld, rd) = (l.dtype, r.dtype);
    if ld.family() == Family::Float || rd.family() == Family::Float {
        let (l, r, _) = align(l, r, src)?;
        let dtype = DType::Float64;
        return Ok(Node {
            kind: Kind::Arith {
                op,
                lhs: Box::new(l),
                rhs: Box::new(r),
                src: src.to_string(),
            },
            dtype,
        });
    }
    let (Some((lp, ls)), Some((rp, rs))) = (decimal_parts(ld), decimal_parts(rd)) else {
        return Err(format!(
            "cannot apply {} to {} and {}",
            op_name(op),
            ld.name(),
            rd.name()
        ));
    };
    Ok(match op {
        BinaryOp::Add | BinaryOp::Sub => {
            let (l, r, d) = align(l, r, src)?;
            let DType::Decimal(_, s) = d else {
                unreachable!()
            };
            let p = capped((lp - ls).max(rp - rs) as u32 + s as u32 + 1);
            arith(op, l, r, DType::Decimal(p, s), src)
        }
        BinaryOp::Mul => {
            let s = ls as u32 + rs as u32;
            if s > MAX_DECIMAL_PRECISION as u32 {
                return Err(format!(
                    "the product of {} and {} would have scale {s}, more than 38 (cast first)",
                    ld.name(),
                    rd.name()
                ));
            }
            let p = capped(lp as u32 + rp as u32 + 1).max(s as u8);
            arith(op, l, r, DType::Decimal(p, s as u8), src)
        }
        BinaryOp::TrueDiv => {
            let s = (ls + 4).min(MAX_DECIMAL_PRECISION);
            // unscaled result = l * 10**(s - ls + rs) / r, rounded half away from zero.
            let shift = (s - ls) as u32 + rs as u32;
            Node {
                kind: Kind::Func {
                    func: Box::new(BoundFunc::DecimalDiv(shift)),
                    args: vec![retype(l, DType::Int64), retype(r, DType::Int64)],
                    src: src.to_string(),
                },
                dtype: DType::Decimal(MAX_DECIMAL_PRECISION, s),
            }
        }
        _ => {
            return Err(format!(
                "cannot apply {} to {} and {} (cast to int64 or float64 first)",
                op_name(op),
                ld.name(),
                rd.name()
            ))
        }
    })
}

fn temporal_arith(op: BinaryOp, l: Node, r: Node, src: &str) -> Option<Node> {
    use Family::*;
    let (ld, rd) = (l.dtype, r.dtype);
    let unit_of = |d: DType| match d {
        DType::Timestamp(u, _) | DType::Duration(u) => u,
        _ => TimeUnit::Second,
    };
    Some(match (op, ld.family(), rd.family()) {
        (BinaryOp::Add, Date | Timestamp, Duration)
        | (BinaryOp::Sub, Date | Timestamp, Duration)
        | (BinaryOp::Add, Duration, Date | Timestamp) => {
            let (t, dur, t_first) = if ld.family() == Duration {
                (r, l, false)
            } else {
                (l, r, true)
            };
            let zone = match t.dtype {
                DType::Timestamp(_, z) => z,
                _ => None,
            };
            let u = unit_of(t.dtype).max(unit_of(dur.dtype));
            let d = DType::Timestamp(u, zone);
            let du = unit_of(dur.dtype);
            let t = to_timestamp(t, u, d, src);
            let dur = to_unit(dur, du, u, DType::Duration(u), src);
            if t_first {
                arith(op, t, dur, d, src)
            } else {
                arith(op, dur, t, d, src)
            }
        }
        (BinaryOp::Sub, Timestamp, Timestamp) | (BinaryOp::Sub, Date, Date) => {
            let (l, r, d) = match (ld, rd) {
                (DType::Date32, DType::Date32) => {
                    let d = DType::Duration(TimeUnit::Milli);
                    let ms = TimeUnit::Milli.per_day();
                    (scaled(l, ms, d, src), scaled(r, ms, d, src), d)
                }
                _ => {
                    let (l, r, t) = align(l, r, src).ok()?;
                    (l, r, DType::Duration(unit_of(t)))
                }
            };
            arith(op, l, r, d, src)
        }
        (BinaryOp::Add | BinaryOp::Sub, Duration, Duration) => {
            let (l, r, d) = align(l, r, src).ok()?;
            arith(op, l, r, d, src)
        }
        (BinaryOp::Mul, Duration, Integer) | (BinaryOp::FloorDiv, Duration, Integer) => {
            arith(op, l, r, ld, src)
        }
        (BinaryOp::Mul, Integer, Duration) => arith(op, l, r, rd, src),
        _ => return None,
    })
}
