//! The expression library's nodes ([`Func`], carried by [`Expr::Func`]): set membership,
//! math and the `.str` functions. This file holds their names, JSON form and `Display`
//! (identical to Python's `Expr.__repr__`); binding is in [`func_bind`](super::func_bind),
//! evaluation in [`func_eval`](super::func_eval), the row kernels in
//! [`math`](super::math) and [`strings`](super::strings).

use super::ast::{quote, Expr, Scalar};
use super::calendar::{parse_every, DtPart, EpochUnit};
use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::fmt;

/// A library function. Its operands are the `args` of [`Expr::Func`]: one for every function
/// except [`Func::Pow`] and [`Func::Rem`] (two) and [`Func::ConcatStr`] (one or more).
#[derive(Clone, Debug, PartialEq)]
pub enum Func {
    /// `a.is_in([v, ...])`: whether the value equals one of the literals.
    IsIn(Vec<Scalar>),
    /// `a.abs()`.
    Abs,
    /// `a.round(decimals)`: half away from zero, on the shortest decimal form of a float.
    Round(u32),
    /// `a.floor()`.
    Floor,
    /// `a.ceil()`.
    Ceil,
    /// `a.sqrt()` (float64).
    Sqrt,
    /// `a.log()`: natural logarithm (float64).
    Log,
    /// `a.exp()` (float64).
    Exp,
    /// `a.pow(b)` (float64).
    Pow,
    /// `a.rem(b)`: remainder with the sign of the dividend (SQL, Spark, Rust `%`).
    Rem,
    /// `a.str.len_chars()`: the number of Unicode code points.
    LenChars,
    /// `a.str.to_lowercase()`.
    Lower,
    /// `a.str.to_uppercase()`.
    Upper,
    /// `a.str.strip_chars()`: leading and trailing Unicode whitespace removed.
    Strip,
    /// `a.str.starts_with(prefix)`.
    StartsWith(String),
    /// `a.str.ends_with(suffix)`.
    EndsWith(String),
    /// `a.str.contains(pattern, literal=...)`: a regex (Rust `regex` syntax) or substring.
    Contains {
        /// The pattern.
        pattern: String,
        /// Whether `pattern` is plain text rather than a regex.
        literal: bool,
    },
    /// `a.str.like(pattern)`: SQL LIKE (`%`, `_`, `\` escapes), the whole string.
    Like(String),
    /// `a.str.slice(offset, length)`: code points from `offset` (negative: from the end).
    Slice {
        /// First code point (0-based; negative counts from the end).
        offset: i64,
        /// At most this many code points (`None`: to the end).
        length: Option<i64>,
    },
    /// `a.str.replace(pattern, value, literal=...)`: the first match replaced by `value`
    /// (taken literally: no `$1` expansion).
    Replace {
        /// The pattern.
        pattern: String,
        /// The replacement text.
        value: String,
        /// Whether `pattern` is plain text rather than a regex.
        literal: bool,
    },
    /// `concat_str([a, b, ...], separator=...)`.
    ConcatStr(String),
    /// `a.dt.year()`, `.month()`, ...: a field of a date or timestamp (int64).
    Dt(DtPart),
    /// `a.dt.epoch(unit)`: the count of `unit` (`d`, `s`, `ms`, `us`, `ns`) since the epoch.
    DtEpoch(String),
    /// `a.dt.truncate(every)`: the start of the `every` period holding the value.
    DtTruncate(String),
    /// `a.dt.offset_by(by)`: the value moved by a duration string (calendar months).
    DtOffsetBy(String),
}

/// The JSON `op` names of the library, for callers that dispatch on them.
pub const FUNC_OPS: [&str; 31] = [
    "is_in",
    "abs",
    "round",
    "floor",
    "ceil",
    "sqrt",
    "log",
    "exp",
    "pow",
    "rem",
    "str.len_chars",
    "str.to_lowercase",
    "str.to_uppercase",
    "str.strip_chars",
    "str.starts_with",
    "str.ends_with",
    "str.contains",
    "str.like",
    "str.slice",
    "str.replace",
    "concat_str",
    "dt.year",
    "dt.month",
    "dt.day",
    "dt.hour",
    "dt.minute",
    "dt.second",
    "dt.weekday",
    "dt.epoch",
    "dt.truncate",
    "dt.offset_by",
];

impl Func {
    /// The JSON `op` name.
    pub fn json_name(&self) -> &'static str {
        match self {
            Func::IsIn(_) => "is_in",
            Func::Abs => "abs",
            Func::Round(_) => "round",
            Func::Floor => "floor",
            Func::Ceil => "ceil",
            Func::Sqrt => "sqrt",
            Func::Log => "log",
            Func::Exp => "exp",
            Func::Pow => "pow",
            Func::Rem => "rem",
            Func::LenChars => "str.len_chars",
            Func::Lower => "str.to_lowercase",
            Func::Upper => "str.to_uppercase",
            Func::Strip => "str.strip_chars",
            Func::StartsWith(_) => "str.starts_with",
            Func::EndsWith(_) => "str.ends_with",
            Func::Contains { .. } => "str.contains",
            Func::Like(_) => "str.like",
            Func::Slice { .. } => "str.slice",
            Func::Replace { .. } => "str.replace",
            Func::ConcatStr(_) => "concat_str",
            Func::Dt(part) => part.json_name(),
            Func::DtEpoch(_) => "dt.epoch",
            Func::DtTruncate(_) => "dt.truncate",
            Func::DtOffsetBy(_) => "dt.offset_by",
        }
    }

    /// Whether the JSON form lists operands as `args` (else one `arg`).
    fn takes_args(&self) -> bool {
        matches!(self, Func::Pow | Func::Rem | Func::ConcatStr(_))
    }

    /// Checks the parameters: a bad regex or LIKE pattern, a negative slice length.
    pub(crate) fn validate(&self) -> Result<()> {
        match self {
            Func::Contains {
                pattern,
                literal: false,
            }
            | Func::Replace {
                pattern,
                literal: false,
                ..
            } => super::strings::compile_regex(pattern).map(|_| ()),
            Func::Like(pattern) => super::strings::like_regex(pattern).map(|_| ()),
            Func::Slice {
                length: Some(n), ..
            } if *n < 0 => Err(Error::Plan(format!(
                "str.slice length must be >= 0 or None, got {n}"
            ))),
            Func::DtEpoch(unit) => EpochUnit::parse(unit).map(|_| ()),
            Func::DtOffsetBy(by) => parse_every(by).map(|_| ()),
            Func::DtTruncate(every) => {
                let e = parse_every(every)?;
                if (e.months > 0 && e.nanos != 0) || (e.months <= 0 && e.nanos <= 0) || e.months < 0
                {
                    return Err(Error::Plan(format!(
                        "dt.truncate needs a positive period of calendar units (mo, q, y) or of fixed units (ns ... w), not both, got {every:?}"
                    )));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The JSON form of `self` applied to `args` (already in JSON).
    pub(crate) fn to_json(&self, args: Vec<Value>) -> Value {
        let mut m = Map::new();
        m.insert("op".into(), json!(self.json_name()));
        if self.takes_args() {
            m.insert("args".into(), Value::Array(args));
        } else {
            let a = args.into_iter().next().expect("one operand");
            m.insert("arg".into(), a);
        }
        match self {
            Func::IsIn(values) => {
                let vs = values.iter().map(|s| Expr::Lit(s.clone()).to_json());
                m.insert("values".into(), Value::Array(vs.collect()));
            }
            Func::Round(d) => {
                m.insert("decimals".into(), json!(d));
            }
            Func::StartsWith(s) => {
                m.insert("prefix".into(), json!(s));
            }
            Func::EndsWith(s) => {
                m.insert("suffix".into(), json!(s));
            }
            Func::Contains { pattern, literal } => {
                m.insert("pattern".into(), json!(pattern));
                m.insert("literal".into(), json!(literal));
            }
            Func::Like(p) => {
                m.insert("pattern".into(), json!(p));
            }
            Func::Slice { offset, length } => {
                m.insert("offset".into(), json!(offset));
                m.insert("length".into(), json!(length));
            }
            Func::Replace {
                pattern,
                value,
                literal,
            } => {
                m.insert("pattern".into(), json!(pattern));
                m.insert("value".into(), json!(value));
                m.insert("literal".into(), json!(literal));
            }
            Func::ConcatStr(sep) => {
                m.insert("separator".into(), json!(sep));
            }
            Func::DtEpoch(unit) => {
                m.insert("unit".into(), json!(unit));
            }
            Func::DtTruncate(every) => {
                m.insert("every".into(), json!(every));
            }
            Func::DtOffsetBy(by) => {
                m.insert("by".into(), json!(by));
            }
            _ => {}
        }
        Value::Object(m)
    }

    /// Writes `self` applied to `args` as Python-like source.
    pub(crate) fn fmt_call(&self, args: &[Expr], f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Func::ConcatStr(sep) = self {
            let parts: Vec<String> = args.iter().map(Expr::to_string).collect();
            return write!(
                f,
                "concat_str([{}], separator={})",
                parts.join(", "),
                quote(sep)
            );
        }
        match &args[0] {
            Expr::Lit(s) => write!(f, "lit({s})")?,
            e => write!(f, "{e}")?,
        }
        let name = self.json_name();
        let py_bool = |b: bool| if b { "True" } else { "False" };
        match self {
            Func::IsIn(values) => {
                let vs: Vec<String> = values.iter().map(Scalar::to_string).collect();
                write!(f, ".is_in([{}])", vs.join(", "))
            }
            Func::Round(d) => write!(f, ".round({d})"),
            Func::Pow | Func::Rem => write!(f, ".{name}({})", args[1]),
            Func::StartsWith(s) | Func::EndsWith(s) | Func::Like(s) => {
                write!(f, ".{name}({})", quote(s))
            }
            Func::Contains { pattern, literal } => {
                write!(
                    f,
                    ".{name}({}, literal={})",
                    quote(pattern),
                    py_bool(*literal)
                )
            }
            Func::DtEpoch(s) | Func::DtTruncate(s) | Func::DtOffsetBy(s) => {
                write!(f, ".{name}({})", quote(s))
            }
            Func::Slice { offset, length } => match length {
                Some(n) => write!(f, ".{name}({offset}, {n})"),
                None => write!(f, ".{name}({offset}, None)"),
            },
            Func::Replace {
                pattern,
                value,
                literal,
            } => write!(
                f,
                ".{name}({}, {}, literal={})",
                quote(pattern),
                quote(value),
                py_bool(*literal)
            ),
            _ => write!(f, ".{name}()"),
        }
    }
}

fn plan_err(msg: impl fmt::Display, v: &Value) -> Error {
    let mut text = v.to_string();
    if text.len() > 200 {
        let mut cut = 200;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("...");
    }
    Error::Plan(format!("invalid expression JSON: {msg} in {text}"))
}

/// Parses a library node (`op` is one of [`FUNC_OPS`]); `sub` parses an operand.
pub(crate) fn parse(
    op: &str,
    obj: &Map<String, Value>,
    v: &Value,
    mut sub: impl FnMut(&Value) -> Result<Expr>,
) -> Result<Expr> {
    let get = |key: &str| {
        obj.get(key)
            .ok_or_else(|| plan_err(format!("missing field {key:?}"), v))
    };
    let text = |key: &str| -> Result<String> {
        get(key)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| plan_err(format!("field {key:?} must be a string"), v))
    };
    let flag = |key: &str| -> Result<bool> {
        match obj.get(key) {
            None => Ok(false),
            Some(b) => b
                .as_bool()
                .ok_or_else(|| plan_err(format!("field {key:?} must be a bool"), v)),
        }
    };
    let int = |key: &str| -> Result<i64> {
        get(key)?
            .as_i64()
            .ok_or_else(|| plan_err(format!("field {key:?} must be an int64"), v))
    };
    let func = match op {
        "is_in" => {
            let values = get("values")?
                .as_array()
                .ok_or_else(|| plan_err("\"values\" must be a list of literals", v))?;
            let mut out = Vec::with_capacity(values.len());
            for x in values {
                match sub(x)? {
                    Expr::Lit(s) => out.push(s),
                    _ => return Err(plan_err("\"values\" must be a list of literals", v)),
                }
            }
            Func::IsIn(out)
        }
        "abs" => Func::Abs,
        "round" => {
            let d = int("decimals")?;
            Func::Round(u32::try_from(d).map_err(|_| {
                plan_err(format!("round decimals must be 0..=4294967295, got {d}"), v)
            })?)
        }
        "floor" => Func::Floor,
        "ceil" => Func::Ceil,
        "sqrt" => Func::Sqrt,
        "log" => Func::Log,
        "exp" => Func::Exp,
        "pow" => Func::Pow,
        "rem" => Func::Rem,
        "str.len_chars" => Func::LenChars,
        "str.to_lowercase" => Func::Lower,
        "str.to_uppercase" => Func::Upper,
        "str.strip_chars" => Func::Strip,
        "str.starts_with" => Func::StartsWith(text("prefix")?),
        "str.ends_with" => Func::EndsWith(text("suffix")?),
        "str.contains" => Func::Contains {
            pattern: text("pattern")?,
            literal: flag("literal")?,
        },
        "str.like" => Func::Like(text("pattern")?),
        "str.slice" => Func::Slice {
            offset: int("offset")?,
            length: match obj.get("length") {
                None | Some(Value::Null) => None,
                Some(_) => Some(int("length")?),
            },
        },
        "str.replace" => Func::Replace {
            pattern: text("pattern")?,
            value: text("value")?,
            literal: flag("literal")?,
        },
        "dt.epoch" => Func::DtEpoch(text("unit")?),
        "dt.truncate" => Func::DtTruncate(text("every")?),
        "dt.offset_by" => Func::DtOffsetBy(text("by")?),
        other if other.starts_with("dt.") => {
            match DtPart::ALL.iter().find(|p| p.json_name() == other) {
                Some(p) => Func::Dt(*p),
                None => return Err(plan_err(format!("unknown op {other:?}"), v)),
            }
        }
        "concat_str" => Func::ConcatStr(match obj.get("separator") {
            None => String::new(),
            Some(_) => text("separator")?,
        }),
        other => return Err(plan_err(format!("unknown op {other:?}"), v)),
    };
    let args = if func.takes_args() {
        let want = if matches!(func, Func::ConcatStr(_)) {
            1..=usize::MAX
        } else {
            2..=2
        };
        let list = get("args")?
            .as_array()
            .filter(|a| want.contains(&a.len()))
            .ok_or_else(|| plan_err(format!("{op:?} has the wrong number of \"args\""), v))?;
        list.iter().map(&mut sub).collect::<Result<Vec<_>>>()?
    } else {
        vec![sub(get("arg")?)?]
    };
    func.validate()?;
    Ok(Expr::Func(func, args))
}
