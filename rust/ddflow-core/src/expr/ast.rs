//! The expression tree ([`Expr`]), its literals ([`Scalar`]), a readable [`fmt::Display`]
//! (used in error messages; `python/ddflow/expr.py` prints the same text) and name helpers.
//!
//! Rust callers can build trees with [`col`], [`lit`], the `+ - * % !` and unary `-`
//! operators, `&`/`|`, and methods such as [`Expr::floor_div`], [`Expr::lt`],
//! [`Expr::alias`] and [`Expr::cast`].

use super::func::Func;
use crate::encoding::DType;
use std::fmt;

/// A literal value.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A signed 64-bit integer.
    Int64(i64),
    /// A 64-bit float.
    Float64(f64),
    /// A boolean.
    Bool(bool),
    /// A string (interned when the expression is bound).
    Str(String),
    /// Bytes (JSON: their hex digits; interned as their Latin-1 text when bound).
    Binary(Vec<u8>),
    /// A value of a dtype stored as an int64 word other than int64 itself: a date's days, a
    /// timestamp's or duration's units, a decimal's unscaled value, a narrow integer.
    Word(i64, DType),
}

impl Scalar {
    /// The literal's dtype.
    pub fn dtype(&self) -> DType {
        match self {
            Scalar::Int64(_) => DType::Int64,
            Scalar::Float64(_) => DType::Float64,
            Scalar::Bool(_) => DType::Bool,
            Scalar::Str(_) => DType::Str,
            Scalar::Binary(_) => DType::Binary,
            Scalar::Word(_, d) => *d,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int64(v) => write!(f, "{v}"),
            Scalar::Float64(v) => f.write_str(&py_float_repr(*v)),
            Scalar::Bool(true) => f.write_str("True"),
            Scalar::Bool(false) => f.write_str("False"),
            Scalar::Str(s) => f.write_str(&quote(s)),
            Scalar::Binary(b) => f.write_str(&crate::values::render_binary(b)),
            Scalar::Word(v, d) => write!(
                f,
                "{}({})",
                d.name(),
                quote(&crate::values::render_logical(*d, *v as u64).unwrap_or_default())
            ),
        }
    }
}

/// A column expression. See the [module docs](crate::expr) for the JSON form and semantics.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A column by name.
    Col(String),
    /// A literal, broadcast to every row.
    Lit(Scalar),
    /// A SQL null of a dtype (`lit(None, "int64")`), broadcast to every row. Without a
    /// dtype (`lit(None)`) it may only be a whole `select` output column, whose dtype the
    /// plan decides: the engine gives it the dtype of the columns the plan links it with
    /// (the padding of an outer join; `engine/dtype_links.rs`).
    Null(Option<DType>),
    /// `a + b`.
    Add(Box<Expr>, Box<Expr>),
    /// `a - b`.
    Sub(Box<Expr>, Box<Expr>),
    /// `a * b`.
    Mul(Box<Expr>, Box<Expr>),
    /// `a / b` (true division: always float64, IEEE division by zero, like numpy).
    TrueDiv(Box<Expr>, Box<Expr>),
    /// `a // b` (floor division, like Python and numpy).
    FloorDiv(Box<Expr>, Box<Expr>),
    /// `a % b` (the remainder has the sign of `b`, like Python and numpy).
    Mod(Box<Expr>, Box<Expr>),
    /// `a == b`.
    Eq(Box<Expr>, Box<Expr>),
    /// `a != b`.
    Ne(Box<Expr>, Box<Expr>),
    /// `a < b`.
    Lt(Box<Expr>, Box<Expr>),
    /// `a <= b`.
    Le(Box<Expr>, Box<Expr>),
    /// `a > b`.
    Gt(Box<Expr>, Box<Expr>),
    /// `a >= b`.
    Ge(Box<Expr>, Box<Expr>),
    /// `a & b` (bool).
    And(Box<Expr>, Box<Expr>),
    /// `a | b` (bool).
    Or(Box<Expr>, Box<Expr>),
    /// `~a` (bool).
    Not(Box<Expr>),
    /// `-a`.
    Neg(Box<Expr>),
    /// `a.cast(dtype)`, or with `false` `a.cast(dtype, strict=False)`: a value that does
    /// not convert is null instead of an error.
    Cast(Box<Expr>, DType, bool),
    /// `when(cond).then(then).otherwise(otherwise)`.
    When {
        /// The bool condition.
        cond: Box<Expr>,
        /// The value where `cond` is true.
        then: Box<Expr>,
        /// The value where `cond` is false.
        otherwise: Box<Expr>,
    },
    /// Row-wise minimum of two expressions.
    MinOf(Box<Expr>, Box<Expr>),
    /// Row-wise maximum of two expressions.
    MaxOf(Box<Expr>, Box<Expr>),
    /// `a.alias(name)`: renames the output column.
    Alias(Box<Expr>, String),
    /// A library function ([`Func`]) of its operands.
    Func(Func, Vec<Expr>),
    /// `a.is_null()`: true where `a` is null (never null itself).
    IsNull(Box<Expr>),
    /// `a.is_not_null()`.
    IsNotNull(Box<Expr>),
    /// `coalesce(a, b, ...)`: per row the first operand that is not null (null if all are);
    /// `a.fill_null(v)` is `coalesce(a, v)`.
    Coalesce(Vec<Expr>),
}

/// The two-argument operators, for code that treats them uniformly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    TrueDiv,
    /// `//`
    FloorDiv,
    /// `%`
    Mod,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&`
    And,
    /// `|`
    Or,
    /// `min_of`
    MinOf,
    /// `max_of`
    MaxOf,
}

impl BinaryOp {
    /// Every binary operator.
    pub const ALL: [BinaryOp; 16] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::TrueDiv,
        BinaryOp::FloorDiv,
        BinaryOp::Mod,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::MinOf,
        BinaryOp::MaxOf,
    ];

    /// The `op` name in the JSON form.
    pub fn json_name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::TrueDiv => "truediv",
            BinaryOp::FloorDiv => "floordiv",
            BinaryOp::Mod => "mod",
            BinaryOp::Eq => "eq",
            BinaryOp::Ne => "ne",
            BinaryOp::Lt => "lt",
            BinaryOp::Le => "le",
            BinaryOp::Gt => "gt",
            BinaryOp::Ge => "ge",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::MinOf => "min_of",
            BinaryOp::MaxOf => "max_of",
        }
    }

    /// The operator for a JSON `op` name.
    pub fn from_json_name(name: &str) -> Option<BinaryOp> {
        BinaryOp::ALL.into_iter().find(|op| op.json_name() == name)
    }

    /// The infix symbol (`None` for `min_of` / `max_of`, printed as calls).
    pub fn symbol(self) -> Option<&'static str> {
        Some(match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::TrueDiv => "/",
            BinaryOp::FloorDiv => "//",
            BinaryOp::Mod => "%",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::And => "&",
            BinaryOp::Or => "|",
            BinaryOp::MinOf | BinaryOp::MaxOf => return None,
        })
    }
}

/// A column by name.
pub fn col(name: impl Into<String>) -> Expr {
    Expr::Col(name.into())
}

/// A literal.
pub fn lit(value: impl Into<Scalar>) -> Expr {
    Expr::Lit(value.into())
}

/// `when(cond).then(then).otherwise(otherwise)`.
pub fn when(cond: Expr, then: Expr, otherwise: Expr) -> Expr {
    Expr::When {
        cond: Box::new(cond),
        then: Box::new(then),
        otherwise: Box::new(otherwise),
    }
}

/// Row-wise minimum.
pub fn min_of(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinaryOp::MinOf, a, b)
}

/// Row-wise maximum.
pub fn max_of(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinaryOp::MaxOf, a, b)
}

impl From<i64> for Scalar {
    fn from(v: i64) -> Self {
        Scalar::Int64(v)
    }
}
impl From<f64> for Scalar {
    fn from(v: f64) -> Self {
        Scalar::Float64(v)
    }
}
impl From<bool> for Scalar {
    fn from(v: bool) -> Self {
        Scalar::Bool(v)
    }
}
impl From<&str> for Scalar {
    fn from(v: &str) -> Self {
        Scalar::Str(v.to_string())
    }
}
impl From<String> for Scalar {
    fn from(v: String) -> Self {
        Scalar::Str(v)
    }
}

impl Expr {
    /// Builds the binary node of `op`.
    pub fn binary(op: BinaryOp, a: Expr, b: Expr) -> Expr {
        let (a, b) = (Box::new(a), Box::new(b));
        match op {
            BinaryOp::Add => Expr::Add(a, b),
            BinaryOp::Sub => Expr::Sub(a, b),
            BinaryOp::Mul => Expr::Mul(a, b),
            BinaryOp::TrueDiv => Expr::TrueDiv(a, b),
            BinaryOp::FloorDiv => Expr::FloorDiv(a, b),
            BinaryOp::Mod => Expr::Mod(a, b),
            BinaryOp::Eq => Expr::Eq(a, b),
            BinaryOp::Ne => Expr::Ne(a, b),
            BinaryOp::Lt => Expr::Lt(a, b),
            BinaryOp::Le => Expr::Le(a, b),
            BinaryOp::Gt => Expr::Gt(a, b),
            BinaryOp::Ge => Expr::Ge(a, b),
            BinaryOp::And => Expr::And(a, b),
            BinaryOp::Or => Expr::Or(a, b),
            BinaryOp::MinOf => Expr::MinOf(a, b),
            BinaryOp::MaxOf => Expr::MaxOf(a, b),
        }
    }

    /// The operator and operands of a binary node.
    pub fn as_binary(&self) -> Option<(BinaryOp, &Expr, &Expr)> {
        let (op, a, b) = match self {
            Expr::Add(a, b) => (BinaryOp::Add, a, b),
            Expr::Sub(a, b) => (BinaryOp::Sub, a, b),
            Expr::Mul(a, b) => (BinaryOp::Mul, a, b),
            Expr::TrueDiv(a, b) => (BinaryOp::TrueDiv, a, b),
            Expr::FloorDiv(a, b) => (BinaryOp::FloorDiv, a, b),
            Expr::Mod(a, b) => (BinaryOp::Mod, a, b),
            Expr::Eq(a, b) => (BinaryOp::Eq, a, b),
            Expr::Ne(a, b) => (BinaryOp::Ne, a, b),
            Expr::Lt(a, b) => (BinaryOp::Lt, a, b),
            Expr::Le(a, b) => (BinaryOp::Le, a, b),
            Expr::Gt(a, b) => (BinaryOp::Gt, a, b),
            Expr::Ge(a, b) => (BinaryOp::Ge, a, b),
            Expr::And(a, b) => (BinaryOp::And, a, b),
            Expr::Or(a, b) => (BinaryOp::Or, a, b),
            Expr::MinOf(a, b) => (BinaryOp::MinOf, a, b),
            Expr::MaxOf(a, b) => (BinaryOp::MaxOf, a, b),
            _ => return None,
        };
        Some((op, a, b))
    }

    /// The direct sub-expressions, left to right.
    pub fn children(&self) -> Vec<&Expr> {
        if let Some((_, a, b)) = self.as_binary() {
            return vec![a, b];
        }
        match self {
            Expr::Col(_) | Expr::Lit(_) | Expr::Null(_) => vec![],
            Expr::Not(a)
            | Expr::Neg(a)
            | Expr::Cast(a, ..)
            | Expr::Alias(a, _)
            | Expr::IsNull(a)
            | Expr::IsNotNull(a) => vec![a],
            Expr::Coalesce(args) => args.iter().collect(),
            Expr::When {
                cond,
                then,
                otherwise,
            } => vec![cond, then, otherwise],
            Expr::Func(_, args) => args.iter().collect(),
            _ => unreachable!("binary handled above"),
        }
    }

    /// The names of the referenced columns, in order of first appearance.
    pub fn columns(&self) -> Vec<String> {
        fn walk(e: &Expr, out: &mut Vec<String>) {
            if let Expr::Col(name) = e {
                if !out.contains(name) {
                    out.push(name.clone());
                }
            }
            for c in e.children() {
                walk(c, out);
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }

    /// The output column name, like Polars: the outermost alias, else the leftmost column
    /// name, else `"literal"`.
    pub fn output_name(&self) -> String {
        fn first(e: &Expr) -> Option<&str> {
            match e {
                Expr::Alias(_, name) => Some(name),
                Expr::Col(name) => Some(name),
                _ => e.children().into_iter().find_map(first),
            }
        }
        first(self).unwrap_or("literal").to_string()
    }

    /// Nesting depth (a leaf has depth 1).
    pub fn depth(&self) -> usize {
        1 + self
            .children()
            .into_iter()
            .map(Expr::depth)
            .max()
            .unwrap_or(0)
    }

    /// `self // other`.
    pub fn floor_div(self, other: Expr) -> Expr {
        Expr::binary(BinaryOp::FloorDiv, self, other)
    }
    /// `self == other`.
    pub fn equal(self, other: Expr) -> Expr {
        Expr::binary(BinaryOp::Eq, self, other)
    }
    /// `self != other`.
    pub fn not_equal(self, other: Expr) -> Expr {
        Expr::binary(BinaryOp::Ne, self, other)
    }
    /// `self < other`.
    pub fn lt(self, other: Expr) -> Expr {
        Expr::binary(BinaryOp::Lt, self, other)
    }
    /// `self <= other`.
    pub fn lt_eq(self, other: Expr) -> Expr {
        Expr::binary(BinaryOp::Le, self, other)
    }
    /// `self > other`.
    pub fn gt(self, other: Expr) -> Expr {
        Expr::binary(BinaryOp::Gt, self, other)
    }
    /// `self >= other`.
    pub fn gt_eq(self, other: Expr) -> Expr {
        Expr::binary(BinaryOp::Ge, self, other)
    }
    /// Casts to `dtype`.
    pub fn cast(self, dtype: DType) -> Expr {
        Expr::Cast(Box::new(self), dtype, true)
    }
    /// Renames the output.
    pub fn alias(self, name: impl Into<String>) -> Expr {
        Expr::Alias(Box::new(self), name.into())
    }
}

macro_rules! std_binop {
    ($tr:ident, $method:ident, $op:expr) => {
        impl std::ops::$tr for Expr {
            type Output = Expr;
            fn $method(self, rhs: Expr) -> Expr {
                Expr::binary($op, self, rhs)
            }
        }
    };
}
std_binop!(Add, add, BinaryOp::Add);
std_binop!(Sub, sub, BinaryOp::Sub);
std_binop!(Mul, mul, BinaryOp::Mul);
std_binop!(Div, div, BinaryOp::TrueDiv);
std_binop!(Rem, rem, BinaryOp::Mod);
std_binop!(BitAnd, bitand, BinaryOp::And);
std_binop!(BitOr, bitor, BinaryOp::Or);

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Neg(Box::new(self))
    }
}

impl std::ops::Not for Expr {
    type Output = Expr;
    fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }
}

/// A string quoted like JSON (and Python's `json.dumps(s, ensure_ascii=False)`).
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("strings serialize")
}

/// Formats a float like Python's `repr(float)`: shortest round-trip digits, `.0` for
/// integral values, scientific notation (`1e+16`, `1e-05`) outside `1e-4 <= |v| < 1e16`.
pub fn py_float_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "-1.2345e-7" or "1e16".
    let s = format!("{v:e}");
    let (mantissa, exp) = s.split_once('e').expect("LowerExp has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    let sign = if v < 0.0 { "-" } else { "" };
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = python_tie(v.abs(), digits, exp);
    if !(-4..16).contains(&exp) {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{esign}{:02}", exp.unsigned_abs())
    } else if exp < 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            format!("{sign}{digits}{}.0", "0".repeat(point - digits.len()))
        } else {
            format!("{sign}{}.{}", &digits[..point], &digits[point..])
        }
    }
}

/// Python's choice between two shortest round-trip digit strings when the value lies exactly
/// halfway between them: the one with the even last digit (`repr(562949953421312.25)` is
/// `'562949953421312.2'`; Rust's shortest digits end in 3). `digits` are Rust's shortest
/// significant digits of `v > 0` with decimal exponent `exp`.
fn python_tie(v: f64, digits: String, exp: i32) -> String {
    let n = digits.len();
    let last = digits.as_bytes()[n - 1] - b'0';
    if last.is_multiple_of(2) {
        return digits;
    }
    // The exact decimal expansion of `v` (a double has at most 767 significant digits).
    let exact = format!("{v:.800e}");
    let (m, e) = exact.split_once('e').expect("LowerExp has an exponent");
    if e.parse::<i32>().ok() != Some(exp) {
        return digits;
    }
    let all: Vec<u8> = m.bytes().filter(u8::is_ascii_digit).collect();
    let halfway = all.get(n) == Some(&b'5') && all[n + 1..].iter().all(|&c| c == b'0');
    if !halfway {
        return digits;
    }
    // `v` is exactly between the truncation `lo` and `lo + 1` (last digit); Rust gave one.
    let lo = String::from_utf8(all[..n].to_vec()).expect("ASCII digits");
    let other = if lo == digits {
        match increment(&lo) {
            Some(up) => up,
            None => return digits,
        }
    } else {
        lo
    };
    let reparsed = format!("0.{other}e{}", exp + 1).parse::<f64>();
    if reparsed.ok() == Some(v) {
        other.trim_end_matches('0').to_string()
    } else {
        digits
    }
}

/// `digits + 1` in the last place, or `None` when that carries into a new leading digit.
fn increment(digits: &str) -> Option<String> {
    let mut b = digits.as_bytes().to_vec();
    for c in b.iter_mut().rev() {
        if *c == b'9' {
            *c = b'0';
        } else {
            *c += 1;
            return String::from_utf8(b).ok();
        }
    }
    None
}

/// Writes `e` as the receiver of a method call (`lit(...)` around bare literals).
fn receiver(e: &Expr, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match e {
        Expr::Lit(s) => write!(f, "lit({s})"),
        _ => write!(f, "{e}"),
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((op, a, b)) = self.as_binary() {
            return match op.symbol() {
                Some(sym) => write!(f, "({a} {sym} {b})"),
                None => write!(f, "{}({a}, {b})", op.json_name()),
            };
        }
        match self {
            Expr::Col(name) => write!(f, "col({})", quote(name)),
            Expr::Lit(s) => write!(f, "{s}"),
            Expr::Null(Some(d)) => write!(f, "lit(None, {})", quote(d.name())),
            Expr::Null(None) => f.write_str("lit(None)"),
            Expr::Not(a) => write!(f, "(~{a})"),
            Expr::Neg(a) => write!(f, "(-{a})"),
            Expr::Cast(a, dtype, strict) => {
                receiver(a, f)?;
                if *strict {
                    write!(f, ".cast({})", quote(dtype.name()))
                } else {
                    write!(f, ".cast({}, strict=False)", quote(dtype.name()))
                }
            }
            Expr::Alias(a, name) => {
                receiver(a, f)?;
                write!(f, ".alias({})", quote(name))
            }
            Expr::When {
                cond,
                then,
                otherwise,
            } => write!(f, "when({cond}).then({then}).otherwise({otherwise})"),
            Expr::Func(func, args) => func.fmt_call(args, f),
            Expr::IsNull(a) => {
                receiver(a, f)?;
                write!(f, ".is_null()")
            }
            Expr::IsNotNull(a) => {
                receiver(a, f)?;
                write!(f, ".is_not_null()")
            }
            Expr::Coalesce(args) => {
                write!(f, "coalesce(")?;
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{a}")?;
                }
                write!(f, ")")
            }
            _ => unreachable!("binary handled above"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display() {
        let e = (col("dist") + lit(1)).alias("d");
        assert_eq!(e.to_string(), r#"(col("dist") + 1).alias("d")"#);
        let e = when(col("a").gt(lit(0.5)) & !col("b"), lit("x"), lit("y\"\n"));
        assert_eq!(
            e.to_string(),
            r#"when(((col("a") > 0.5) & (~col("b")))).then("x").otherwise("y\"\n")"#
        );
        assert_eq!(
            min_of(-col("a"), lit(true)).to_string(),
            r#"min_of((-col("a")), True)"#
        );
        assert_eq!(
            lit(3).cast(DType::Float64).to_string(),
            r#"lit(3).cast("float64")"#
        );
    }

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e300, "1e+300"),
            (123.456, "123.456"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (-0.0, "-0.0"),
            (100.0, "100.0"),
            // Exactly halfway between two shortest digit strings: Python takes the even one.
            (2f64.powi(49) + 0.25, "562949953421312.2"),
            (2f64.powi(49) + 0.75, "562949953421312.8"),
            (-(2f64.powi(49) + 0.25), "-562949953421312.2"),
        ];
        for (v, s) in cases {
            assert_eq!(py_float_repr(v), s, "{v:e}");
        }
    }

    #[test]
    fn names() {
        let e = lit(1) + col("b") * col("a");
        assert_eq!(e.output_name(), "b");
        assert_eq!(e.columns(), vec!["b", "a"]);
        assert_eq!((lit(1) + lit(2)).output_name(), "literal");
        assert_eq!((col("a").alias("z") + col("b")).output_name(), "z");
        assert_eq!(e.depth(), 3);
    }
}
