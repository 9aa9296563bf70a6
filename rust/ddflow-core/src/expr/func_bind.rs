//! Binding of the library functions ([`Func`]): operand dtypes checked, int64 promoted to
//! float64 where a function works on floats, literals of `is_in` converted to the operand's
//! dtype (strings interned), patterns compiled.
//!
//! Result dtypes:
//!
//! | function | operand | result |
//! |----------|---------|--------|
//! | `is_in` | int64, float64, bool, str (values of the same kind; int64 with float64 compares as float64) | bool |
//! | `abs`, `round`, `floor`, `ceil` | int64 / float64 | same (int64 `round`/`floor`/`ceil` are the identity) |
//! | `sqrt`, `log`, `exp` | int64 / float64 | float64 |
//! | `pow` | two numbers | float64 |
//! | `rem` | two numbers | int64, or float64 if either is |
//! | `str.len_chars` | str | int64 |
//! | `str.to_lowercase` `to_uppercase` `strip_chars` `slice` `replace` | str | str |
//! | `str.starts_with` `ends_with` `contains` `like` | str | bool |
//! | `concat_str` | str, ... | str |

use super::ast::Scalar;
use super::bind::{is_num, to_float, unify_num, Const, Kind, Node};
use super::func::Func;
use super::strings::{like_regex, Matcher};
use crate::encoding::{DType, Interner};
use crate::error::{Error, Result};
use regex::Regex;

/// A bound library function (the operands are the node's `args`).
#[derive(Clone, Debug)]
pub(crate) enum BoundFunc {
    /// Membership in constants of the operand's dtype.
    IsIn(Vec<Const>),
    Abs,
    Round(u32),
    Floor,
    Ceil,
    Sqrt,
    Log,
    Exp,
    Pow,
    Rem,
    LenChars,
    Lower,
    Upper,
    Strip,
    StartsWith(String),
    EndsWith(String),
    Contains(Matcher),
    Like(Regex),
    Slice(i64, Option<i64>),
    Replace(Matcher, String),
    ConcatStr(String),
    /// A field of a date or timestamp.
    Dt(super::calendar::DtPart, super::calendar::Calendar),
    /// The count of a unit since the epoch.
    DtEpoch(super::calendar::EpochUnit, super::calendar::Calendar),
    /// Truncation to a period.
    DtTruncate(super::calendar::Every, super::calendar::Calendar),
    /// A calendar offset.
    DtOffsetBy(super::calendar::Every, super::calendar::Calendar),
    /// A conversion of a cast ([`super::convert`]); `strict: false` makes a value that does
    /// not convert null instead of an error.
    Convert(super::convert::Conversion, bool),
    /// Decimal quotient of two unscaled int64 operands: `a * 10**shift / b`, rounded half
    /// away from zero ([`super::bind_logical`] chooses `shift` from the scales).
    DecimalDiv(u32),
}

fn node(func: BoundFunc, args: Vec<Node>, dtype: DType, src: String) -> Node {
    Node {
        kind: Kind::Func {
            func: Box::new(func),
            args,
            src,
        },
        dtype,
    }
}

/// Binds `func` of bound operands `args`. Type errors are [`Error::Type`] with a message
/// the caller places in context; a bad pattern is an [`Error::Plan`].
pub(crate) fn bind(func: &Func, mut args: Vec<Node>, src: String) -> Result<Node> {
    let name = func.json_name();
    let dtypes: Vec<&str> = args.iter().map(|a| a.dtype.name()).collect();
    let type_err =
        |want: &str| Error::Type(format!("{name} needs {want}, got {}", dtypes.join(" and ")));
    let d0 = args[0].dtype;
    let numeric = |args: &[Node]| args.iter().all(|a| is_num(a.dtype));
    let strings = |args: &[Node]| args.iter().all(|a| a.dtype == DType::Str);
    Ok(match func {
        Func::IsIn(values) => {
            let kinds: Vec<DType> = values.iter().map(Scalar::dtype).collect();
            let arg = super::bind_logical::widen(args.pop().expect("one operand"));
            let d0 = arg.dtype;
            if let DType::Decimal(p, s) = d0 {
                return bind_decimal_is_in(arg, p, s, values, src);
            }
            let all_num = is_num(d0) && kinds.iter().all(|&d| is_num(d));
            let (arg, dtype) =
                if all_num && (d0 == DType::Float64 || kinds.contains(&DType::Float64)) {
                    (to_float(arg), DType::Float64)
                } else if all_num || kinds.iter().all(|&d| d == d0) {
                    (arg, d0)
                } else {
                    let vs: Vec<&str> = kinds.iter().map(|d| d.name()).collect();
                    return Err(Error::Type(format!(
                        "is_in values must match the operand's dtype {}, got [{}]",
                        d0.name(),
                        vs.join(", ")
                    )));
                };
            let consts = values
                .iter()
                .map(|v| match (v, dtype) {
                    (Scalar::Int64(x), DType::Float64) => Const::Float(*x as f64),
                    (Scalar::Int64(x), _) => Const::Int(*x),
                    (Scalar::Float64(x), _) => Const::Float(*x),
                    (Scalar::Bool(x), _) => Const::Bool(*x),
                    (Scalar::Str(x), _) => Const::Str(Interner::intern_permanent(x)),
                    (Scalar::Binary(x), _) => {
                        Const::Str(Interner::intern_permanent(&crate::encoding::binary_text(x)))
                    }
                    (Scalar::Word(x, _), _) => Const::Int(*x),
                })
                .collect();
            node(BoundFunc::IsIn(consts), vec![arg], DType::Bool, src)
        }
        Func::Abs | Func::Round(_) | Func::Floor | Func::Ceil => {
            if !numeric(&args) {
                return Err(type_err("an int64 or float64 operand"));
            }
            let arg = args.pop().expect("one operand");
            if d0 == DType::Int64 && !matches!(func, Func::Abs) {
                return Ok(arg);
            }
            let f = match func {
                Func::Abs => BoundFunc::Abs,
                Func::Round(d) => BoundFunc::Round(*d),
                Func::Floor => BoundFunc::Floor,
                _ => BoundFunc::Ceil,
            };
            node(f, vec![arg], d0, src)
        }
        Func::Sqrt | Func::Log | Func::Exp => {
            if !numeric(&args) {
                return Err(type_err("an int64 or float64 operand"));
            }
            let f = match func {
                Func::Sqrt => BoundFunc::Sqrt,
                Func::Log => BoundFunc::Log,
                _ => BoundFunc::Exp,
            };
            let arg = to_float(args.pop().expect("one operand"));
            node(f, vec![arg], DType::Float64, src)
        }
        Func::Pow | Func::Rem => {
            if !numeric(&args) {
                return Err(type_err("two int64 or float64 operands"));
            }
            let b = args.pop().expect("two operands");
            let a = args.pop().expect("two operands");
            if matches!(func, Func::Pow) {
                node(
                    BoundFunc::Pow,
                    vec![to_float(a), to_float(b)],
                    DType::Float64,
                    src,
                )
            } else {
                let (a, b, dtype) = unify_num(a, b);
                node(BoundFunc::Rem, vec![a, b], dtype, src)
            }
        }
        Func::Dt(_) | Func::DtEpoch(_) | Func::DtTruncate(_) | Func::DtOffsetBy(_) => {
            use super::calendar::{parse_every, Calendar, EpochUnit};
            let cal = Calendar::of(d0, name)?;
            let (f, dtype) = match func {
                Func::Dt(part) => (BoundFunc::Dt(*part, cal), DType::Int64),
                Func::DtEpoch(unit) => (
                    BoundFunc::DtEpoch(EpochUnit::parse(unit)?, cal),
                    DType::Int64,
                ),
                Func::DtTruncate(every) => {
                    func.validate()?;
                    (BoundFunc::DtTruncate(parse_every(every)?, cal), d0)
                }
                Func::DtOffsetBy(by) => (BoundFunc::DtOffsetBy(parse_every(by)?, cal), d0),
                _ => unreachable!(),
            };
            node(f, args, dtype, src)
        }
        Func::ConcatStr(sep) => {
            if !strings(&args) {
                return Err(type_err("str operands (cast is not available for str)"));
            }
            node(BoundFunc::ConcatStr(sep.clone()), args, DType::Str, src)
        }
        _ => {
            if !strings(&args) {
                return Err(type_err("a str operand"));
            }
            let (f, dtype) = match func {
                Func::LenChars => (BoundFunc::LenChars, DType::Int64),
                Func::Lower => (BoundFunc::Lower, DType::Str),
                Func::Upper => (BoundFunc::Upper, DType::Str),
                Func::Strip => (BoundFunc::Strip, DType::Str),
                Func::StartsWith(p) => (BoundFunc::StartsWith(p.clone()), DType::Bool),
                Func::EndsWith(p) => (BoundFunc::EndsWith(p.clone()), DType::Bool),
                Func::Contains { pattern, literal } => (
                    BoundFunc::Contains(Matcher::new(pattern, *literal)?),
                    DType::Bool,
                ),
                Func::Like(p) => (BoundFunc::Like(like_regex(p)?), DType::Bool),
                Func::Slice { offset, length } => {
                    func.validate()?;
                    (BoundFunc::Slice(*offset, *length), DType::Str)
                }
                Func::Replace {
                    pattern,
                    value,
                    literal,
                } => (
                    BoundFunc::Replace(Matcher::new(pattern, *literal)?, value.clone()),
                    DType::Str,
                ),
                _ => unreachable!("handled above: {func:?}"),
            };
            node(f, args, dtype, src)
        }
    })
}

/// `is_in` on a decimal operand: integer and decimal literals compare exactly at the largest
/// scale among them and the operand (the operand is rescaled when a literal has more
/// places); a float literal makes the comparison float64.
fn bind_decimal_is_in(arg: Node, p: u8, s: u8, values: &[Scalar], src: String) -> Result<Node> {
    let scale_of = |v: &Scalar| match v {
        Scalar::Word(_, DType::Decimal(_, ls)) => Some(*ls),
        Scalar::Int64(_) => Some(0),
        _ => None,
    };
    if values.iter().any(|v| matches!(v, Scalar::Float64(_))) {
        let arg = super::bind_logical::decimal_to_float(arg, s);
        let consts = values
            .iter()
            .map(|v| match v {
                Scalar::Float64(x) => Ok(Const::Float(*x)),
                Scalar::Int64(x) => Ok(Const::Float(*x as f64)),
                Scalar::Word(x, DType::Decimal(_, ls)) => {
                    Ok(Const::Float(*x as f64 / 10f64.powi(*ls as i32)))
                }
                other => Err(Error::Type(format!(
                    "is_in values must be numbers for a decimal operand, got {}",
                    other.dtype().name()
                ))),
            })
            .collect::<Result<Vec<_>>>()?;
        return Ok(node(BoundFunc::IsIn(consts), vec![arg], DType::Bool, src));
    }
    let mut target = s;
    for v in values {
        target = target.max(scale_of(v).ok_or_else(|| {
            Error::Type(format!(
                "is_in values must be numbers for a decimal operand, got {}",
                v.dtype().name()
            ))
        })?);
    }
    let consts = values
        .iter()
        .map(|v| {
            let (x, ls) = match v {
                Scalar::Word(x, DType::Decimal(_, ls)) => (*x, *ls),
                Scalar::Int64(x) => (*x, 0),
                _ => unreachable!("checked above"),
            };
            10i64
                .checked_pow((target - ls) as u32)
                .and_then(|f| x.checked_mul(f))
                .map(Const::Int)
                .ok_or_else(|| {
                    Error::Overflow(format!("is_in value {x} overflows at scale {target}"))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let dtype = DType::Decimal(p.saturating_add(target - s).min(38), target);
    let arg = super::bind_logical::scaled(arg, 10i64.pow((target - s) as u32), dtype, &src);
    Ok(node(BoundFunc::IsIn(consts), vec![arg], DType::Bool, src))
}
