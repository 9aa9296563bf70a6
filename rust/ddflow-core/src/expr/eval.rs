//! Vectorised evaluation of a [`BoundExpr`]: each node is computed for all rows at once into
//! a typed temporary ([`Vals`]: a broadcast constant, a borrowed input column or an owned
//! `Vec`), with tight per-dtype loops.
//!
//! Failing operations (integer overflow, integer division by zero, float -> int casts of
//! NaN or out-of-range values) are computed without panicking, checked with a cheap
//! whole-column test, and only on failure scanned for the first offending row to name it.
//! `when/then/otherwise` evaluates each branch under a *row mask*: a branch's failures count
//! only on rows that select it, and a branch no row selects is not evaluated.

use super::ast::BinaryOp;
use super::bind::{BoundExpr, Const, Kind, Node};
use super::column::{Column, ColumnRef, Vals, Value};
use super::ops;
use crate::encoding::{is_null_word, null_word, DType, NULL_I64};
use crate::error::{Error, Result};
use crate::updates::Updates;

/// Rows evaluated at a time: temporaries of a chunk stay in cache and their allocations are
/// recycled, instead of touching fresh pages for whole-column temporaries.
const CHUNK: usize = 4096;

#[inline]
pub(super) fn map1<T: Copy, O>(a: &Vals<'_, T>, f: impl Fn(T) -> O) -> Vals<'static, O> {
    match a.slice() {
        None => Vals::Const(f(a.get(0))),
        Some(x) => Vals::Owned(x.iter().map(|&x| f(x)).collect()),
    }
}

#[inline]
pub(super) fn map2<A: Copy, B: Copy, O>(
    a: &Vals<'_, A>,
    b: &Vals<'_, B>,
    f: impl Fn(A, B) -> O,
) -> Vals<'static, O> {
    match (a.slice(), b.slice()) {
        (None, None) => Vals::Const(f(a.get(0), b.get(0))),
        (Some(x), None) => {
            let y = b.get(0);
            Vals::Owned(x.iter().map(|&x| f(x, y)).collect())
        }
        (None, Some(y)) => {
            let x = a.get(0);
            Vals::Owned(y.iter().map(|&y| f(x, y)).collect())
        }
        (Some(x), Some(y)) => Vals::Owned(x.iter().zip(y).map(|(&x, &y)| f(x, y)).collect()),
    }
}

/// Whether `bad` holds for any pair (a fast, branch-free pass).
#[inline]
fn any2<A: Copy, B: Copy>(
    a: &Vals<'_, A>,
    b: &Vals<'_, B>,
    n: usize,
    bad: impl Fn(A, B) -> bool,
) -> bool {
    if n == 0 {
        return false;
    }
    match (a.slice(), b.slice()) {
        (None, None) => bad(a.get(0), b.get(0)),
        (Some(x), None) => {
            let y = b.get(0);
            x.iter().fold(false, |acc, &x| acc | bad(x, y))
        }
        (None, Some(y)) => {
            let x = a.get(0);
            y.iter().fold(false, |acc, &y| acc | bad(x, y))
        }
        (Some(x), Some(y)) => x.iter().zip(y).fold(false, |acc, (&x, &y)| acc | bad(x, y)),
    }
}

/// The first row `< n` selected by `mask` where `bad(i)` holds.
pub(super) fn first_bad(
    n: usize,
    mask: Option<&[bool]>,
    bad: impl Fn(usize) -> bool,
) -> Option<usize> {
    (0..n).find(|&i| mask.is_none_or(|m| m[i]) && bad(i))
}

pub(super) fn overflow(src: &str, i: usize, what: String) -> Error {
    Error::Overflow(format!("int64 overflow in {src} at row {i}: {what}"))
}

/// The rows an operation runs on: `n` rows of a chunk starting at row `off`, of which
/// `mask` (if any) selects those whose failures count.
#[derive(Clone, Copy)]
pub(super) struct Rows<'m> {
    pub(super) n: usize,
    pub(super) off: usize,
    pub(super) mask: Option<&'m [bool]>,
}

/// A checked int64 binary operation: `wrap` computes (never panics), `bad` flags rows to
/// raise for, `err` builds the error for a flagged row's operands.
pub(super) fn checked_i64(
    a: &Vals<'_, i64>,
    b: &Vals<'_, i64>,
    rows: Rows<'_>,
    wrap: impl Fn(i64, i64) -> i64,
    bad: impl Fn(i64, i64) -> bool,
    err: impl Fn(usize, i64, i64) -> Error,
) -> Result<Vals<'static, i64>> {
    let Rows { n, off, mask } = rows;
    if any2(a, b, n, &bad) {
        if let Some(i) = first_bad(n, mask, |i| bad(a.get(i), b.get(i))) {
            return Err(err(i + off, a.get(i), b.get(i)));
        }
    }
    Ok(map2(a, b, wrap))
}

fn arith_i64(
    op: BinaryOp,
    a: &Vals<'_, i64>,
    b: &Vals<'_, i64>,
    rows: Rows<'_>,
    src: &str,
) -> Result<Vals<'static, i64>> {
    match op {
        BinaryOp::Add => checked_i64(
            a,
            b,
            rows,
            i64::wrapping_add,
            |x, y| x.overflowing_add(y).1,
            |i, x, y| overflow(src, i, format!("{x} + {y}")),
        ),
        BinaryOp::Sub => checked_i64(
            a,
            b,
            rows,
            i64::wrapping_sub,
            |x, y| x.overflowing_sub(y).1,
            |i, x, y| overflow(src, i, format!("{x} - {y}")),
        ),
        BinaryOp::Mul => checked_i64(
            a,
            b,
            rows,
            i64::wrapping_mul,
            |x, y| x.overflowing_mul(y).1,
            |i, x, y| overflow(src, i, format!("{x} * {y}")),
        ),
        BinaryOp::FloorDiv => checked_i64(
            a,
            b,
            rows,
            ops::floordiv_i64,
            ops::floordiv_i64_bad,
            |i, x, y| {
                if y == 0 {
                    Error::DivisionByZero(format!(
                        "integer division by zero in {src} at row {i}: {x} // 0"
                    ))
                } else {
                    overflow(src, i, format!("{x} // {y}"))
                }
            },
        ),
        BinaryOp::Mod => checked_i64(a, b, rows, ops::mod_i64, ops::mod_i64_bad, |i, x, _| {
            Error::DivisionByZero(format!(
                "integer modulo by zero in {src} at row {i}: {x} % 0"
            ))
        }),
        _ => unreachable!("not arithmetic: {op:?}"),
    }
}

fn arith_f64(op: BinaryOp, a: &Vals<'_, f64>, b: &Vals<'_, f64>) -> Vals<'static, f64> {
    match op {
        BinaryOp::Add => map2(a, b, |x, y| x + y),
        BinaryOp::Sub => map2(a, b, |x, y| x - y),
        BinaryOp::Mul => map2(a, b, |x, y| x * y),
        BinaryOp::TrueDiv => map2(a, b, |x, y| x / y),
        BinaryOp::FloorDiv => map2(a, b, ops::floordiv_f64),
        BinaryOp::Mod => map2(a, b, ops::mod_f64),
        _ => unreachable!("not arithmetic: {op:?}"),
    }
}

fn compare<T: Copy + PartialOrd>(
    op: BinaryOp,
    a: &Vals<'_, T>,
    b: &Vals<'_, T>,
) -> Vals<'static, bool> {
    match op {
        BinaryOp::Eq => map2(a, b, |x, y| x == y),
        BinaryOp::Ne => map2(a, b, |x, y| x != y),
        BinaryOp::Lt => map2(a, b, |x, y| x < y),
        BinaryOp::Le => map2(a, b, |x, y| x <= y),
        BinaryOp::Gt => map2(a, b, |x, y| x > y),
        BinaryOp::Ge => map2(a, b, |x, y| x >= y),
        _ => unreachable!("not a comparison: {op:?}"),
    }
}

/// `<`, `<=`, `>`, `>=` of interned strings by their text (code point order, which is
/// UTF-8 byte order, and byte order for binary values' Latin-1 texts). Null rows (the null
/// id) compare as empty text; the caller marks them null.
fn compare_text(
    op: BinaryOp,
    a: &Vals<'_, u64>,
    b: &Vals<'_, u64>,
    n: usize,
) -> Result<Vals<'static, bool>> {
    let mut ids: Vec<u64> = (0..n)
        .flat_map(|i| [a.get(i), b.get(i)])
        .filter(|&id| id != crate::encoding::NULL_STR)
        .collect();
    ids.sort_unstable();
    ids.dedup();
    let texts = crate::encoding::Interner::resolve_all(&ids)?;
    let text = |id: u64| -> &str { ids.binary_search(&id).map_or("", |k| &texts[k]) };
    let (a, b): (Vec<&str>, Vec<&str>) = (0..n).map(|i| (text(a.get(i)), text(b.get(i)))).unzip();
    Ok(compare(op, &Vals::Owned(a), &Vals::Owned(b)))
}

fn select<T: Copy>(c: &[bool], t: &Vals<'_, T>, o: &Vals<'_, T>) -> Vals<'static, T> {
    let pick = |c: bool, t: T, o: T| if c { t } else { o };
    Vals::Owned(match (t.slice(), o.slice()) {
        (Some(t), Some(o)) => c
            .iter()
            .zip(t.iter().zip(o))
            .map(|(&c, (&t, &o))| pick(c, t, o))
            .collect(),
        (Some(t), None) => {
            let o = o.get(0);
            c.iter().zip(t).map(|(&c, &t)| pick(c, t, o)).collect()
        }
        (None, Some(o)) => {
            let t = t.get(0);
            c.iter().zip(o).map(|(&c, &o)| pick(c, t, o)).collect()
        }
        (None, None) => {
            let (t, o) = (t.get(0), o.get(0));
            c.iter().map(|&c| pick(c, t, o)).collect()
        }
    })
}

/// `a && b` over optional masks.
fn and_mask(mask: Option<&[bool]>, c: &[bool], negate: bool) -> Vec<bool> {
    match mask {
        None => c.iter().map(|&c| c ^ negate).collect(),
        Some(m) => m.iter().zip(c).map(|(&m, &c)| m & (c ^ negate)).collect(),
    }
}

/// Which rows of a temporary are null (`None`: none).
type Nulls = Option<Vec<bool>>;

/// The rows null in either operand.
fn or_nulls(a: Nulls, b: Nulls) -> Nulls {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(mut a), Some(b)) => {
            a.iter_mut().zip(&b).for_each(|(x, &y)| *x |= y);
            Some(a)
        }
    }
}

/// The rows of `mask` that are not null (`None` when there is no null: `mask` itself).
fn counted_rows(mask: Option<&[bool]>, nulls: &Nulls) -> Option<Vec<bool>> {
    nulls.as_ref().map(|nl| and_mask(mask, nl, true))
}

/// Kleene's `a & b` / `a | b`: `false & null` is false, `true | null` is true, otherwise a
/// null operand gives null.
fn kleene(
    and: bool,
    a: &Vals<'_, bool>,
    na: Nulls,
    b: &Vals<'_, bool>,
    nb: Nulls,
    n: usize,
) -> (Value<'static>, Nulls) {
    if na.is_none() && nb.is_none() {
        let v = if and {
            map2(a, b, |x, y| x & y)
        } else {
            map2(a, b, |x, y| x | y)
        };
        return (Value::Bool(v), None);
    }
    let null = |x: &Nulls, i: usize| x.as_ref().is_some_and(|x| x[i]);
    // The deciding value: false for `&`, true for `|`.
    let decides = !and;
    let mut vals = Vec::with_capacity(n);
    let mut nulls = Vec::with_capacity(n);
    for i in 0..n {
        let (x, y) = (a.get(i), b.get(i));
        let (xn, yn) = (null(&na, i), null(&nb, i));
        let decided = (!xn && x == decides) || (!yn && y == decides);
        let is_null = !decided && (xn || yn);
        vals.push(if decided {
            decides
        } else if and {
            x & y
        } else {
            x | y
        });
        nulls.push(is_null);
    }
    (Value::Bool(Vals::Owned(vals)), Some(nulls))
}

struct Ctx<'a> {
    inputs: &'a [Option<ColumnRef<'a>>],
    /// Per input column, which rows are null (`None`: no null in this chunk).
    nulls: &'a [Option<Vec<bool>>],
    /// Rows in this chunk.
    n: usize,
    /// Index of the chunk's first row (for error messages).
    offset: usize,
}

impl<'a> Ctx<'a> {
    /// Evaluates `node` on the rows `mask` selects (all when `None`; other rows may hold any
    /// value) with SQL nulls: the values (meaningless on null rows) and which rows are null
    /// (`None`: none). Arithmetic, comparisons, casts, `min_of`/`max_of` and library
    /// functions are null where an operand is (and never fail on such a row); `&`, `|`, `~`
    /// are Kleene's; `when` takes a null condition as false; `is_null` is never null;
    /// `coalesce` is null where every operand is.
    fn eval(&self, node: &Node, mask: Option<&[bool]>) -> Result<(Value<'a>, Nulls)> {
        Ok(match &node.kind {
            Kind::Input(i) => {
                let v = match self.inputs[*i].expect("checked by eval_columns") {
                    ColumnRef::Int64(s) => Value::Int(Vals::Slice(s)),
                    ColumnRef::Float64(s) => Value::Float(Vals::Slice(s)),
                    ColumnRef::Bool(s) => Value::Bool(Vals::Slice(s)),
                    ColumnRef::Str(s) => Value::Str(Vals::Slice(s)),
                };
                (v, self.nulls.get(*i).cloned().flatten())
            }
            Kind::Const(c) => (
                match *c {
                    Const::Int(v) => Value::Int(Vals::Const(v)),
                    Const::Float(v) => Value::Float(Vals::Const(v)),
                    Const::Bool(v) => Value::Bool(Vals::Const(v)),
                    Const::Str(v) => Value::Str(Vals::Const(v)),
                },
                None,
            ),
            Kind::Null => (
                match node.dtype.physical() {
                    DType::Int64 => Value::Int(Vals::Const(0)),
                    DType::Float64 => Value::Float(Vals::Const(0.0)),
                    DType::Bool => Value::Bool(Vals::Const(false)),
                    _ => Value::Str(Vals::Const(0)),
                },
                Some(vec![true; self.n]),
            ),
            Kind::Arith { op, lhs, rhs, src } => self.eval_arith(*op, lhs, rhs, src, mask)?,
            Kind::Cmp { .. }
            | Kind::And(..)
            | Kind::Or(..)
            | Kind::Not(_)
            | Kind::Neg { .. }
            | Kind::Cast { .. } => self.eval_op(node, mask)?,
            Kind::When {
                cond,
                then,
                otherwise,
            } => self.eval_when(node, cond, then, otherwise, mask)?,
            Kind::MinMax { .. } => self.eval_op(node, mask)?,
            Kind::Func { func, args, src } => self.eval_func(func, args, src, mask)?,
            Kind::IsNull { arg, negate } => {
                let (_, nulls) = self.eval(arg, mask)?;
                let v = match nulls {
                    None => Vals::Const(*negate),
                    Some(nulls) => Vals::Owned(nulls.iter().map(|&x| x ^ *negate).collect()),
                };
                (Value::Bool(v), None)
            }
            Kind::Coalesce(args) => self.eval_coalesce(args, mask)?,
            Kind::Retype(arg) => self.eval(arg, mask)?,
        })
    }

    /// `+ - * / // %`, null where an operand is (never failing there).
    #[inline(never)]
    fn eval_arith(
        &self,
        op: BinaryOp,
        lhs: &Node,
        rhs: &Node,
        src: &str,
        mask: Option<&[bool]>,
    ) -> Result<(Value<'a>, Nulls)> {
        let op = &op;
        let ((a, na), (b, nb)) = (self.eval(lhs, mask)?, self.eval(rhs, mask)?);
        let nulls = or_nulls(na, nb);
        let counted = counted_rows(mask, &nulls);
        let v = match (a, b) {
            (Value::Int(a), Value::Int(b)) => {
                let rows = Rows {
                    n: self.n,
                    off: self.offset,
                    mask: counted.as_deref().or(mask),
                };
                Value::Int(arith_i64(*op, &a, &b, rows, src)?)
            }
            (Value::Float(a), Value::Float(b)) => Value::Float(arith_f64(*op, &a, &b)),
            _ => unreachable!("bind unifies arithmetic operands"),
        };
        Ok((v, nulls))
    }

    /// The operators whose operands are null-propagating or Kleene (out of line: keeps the
    /// recursive [`Ctx::eval`] frame small, the deepest accepted tree fitting in 2 MiB).
    #[inline(never)]
    fn eval_op(&self, node: &Node, mask: Option<&[bool]>) -> Result<(Value<'a>, Nulls)> {
        Ok(match &node.kind {
            Kind::Cmp { op, lhs, rhs } => {
                let ((a, na), (b, nb)) = (self.eval(lhs, mask)?, self.eval(rhs, mask)?);
                let v = Value::Bool(match (a, b) {
                    (Value::Int(a), Value::Int(b)) => compare(*op, &a, &b),
                    (Value::Float(a), Value::Float(b)) => compare(*op, &a, &b),
                    (Value::Bool(a), Value::Bool(b)) => compare(*op, &a, &b),
                    (Value::Str(a), Value::Str(b)) if matches!(op, BinaryOp::Eq | BinaryOp::Ne) => {
                        compare(*op, &a, &b) // equal strings share one id
                    }
                    (Value::Str(a), Value::Str(b)) => compare_text(*op, &a, &b, self.n)?,
                    _ => unreachable!("bind unifies comparison operands"),
                });
                (v, or_nulls(na, nb))
            }
            Kind::And(l, r) | Kind::Or(l, r) => {
                let and = matches!(node.kind, Kind::And(..));
                let ((a, na), (b, nb)) = (self.eval(l, mask)?, self.eval(r, mask)?);
                let (Value::Bool(a), Value::Bool(b)) = (a, b) else {
                    unreachable!("bind checks bool operands")
                };
                kleene(and, &a, na, &b, nb, self.n)
            }
            Kind::Not(a) => match self.eval(a, mask)? {
                (Value::Bool(a), na) => (Value::Bool(map1(&a, |x| !x)), na),
                _ => unreachable!("bind checks bool operand"),
            },
            Kind::Neg { arg, src } => {
                let (a, na) = self.eval(arg, mask)?;
                let counted = counted_rows(mask, &na);
                (self.neg(a, counted.as_deref().or(mask), src)?, na)
            }
            Kind::Cast { arg, src } => {
                let (v, nulls) = self.eval(arg, mask)?;
                // Null rows do not count for the cast's errors.
                let counted = counted_rows(mask, &nulls);
                let v = self.cast(v, node.dtype, counted.as_deref().or(mask), src)?;
                (v, nulls)
            }
            Kind::MinMax { max, lhs, rhs } => {
                let ((a, na), (b, nb)) = (self.eval(lhs, mask)?, self.eval(rhs, mask)?);
                let v = match (a, b, *max) {
                    (Value::Int(a), Value::Int(b), false) => Value::Int(map2(&a, &b, i64::min)),
                    (Value::Int(a), Value::Int(b), true) => Value::Int(map2(&a, &b, i64::max)),
                    (Value::Float(a), Value::Float(b), false) => {
                        Value::Float(map2(&a, &b, ops::min_f64))
                    }
                    (Value::Float(a), Value::Float(b), true) => {
                        Value::Float(map2(&a, &b, ops::max_f64))
                    }
                    (Value::Bool(a), Value::Bool(b), false) => {
                        Value::Bool(map2(&a, &b, |x, y| x & y))
                    }
                    (Value::Bool(a), Value::Bool(b), true) => {
                        Value::Bool(map2(&a, &b, |x, y| x | y))
                    }
                    _ => unreachable!("bind unifies min/max operands"),
                };
                (v, or_nulls(na, nb))
            }
            _ => unreachable!("eval dispatches only operators here"),
        })
    }

    /// `-a` (int64 `-i64::MIN` is an overflow on a counted row).
    fn neg(&self, a: Value<'a>, mask: Option<&[bool]>, src: &str) -> Result<Value<'a>> {
        let n = self.n;
        Ok(match a {
            Value::Int(a) => {
                let bad = n > 0
                    && match a.slice() {
                        None => a.get(0) == i64::MIN,
                        Some(s) => s.iter().fold(false, |acc, &x| acc | (x == i64::MIN)),
                    };
                if bad {
                    if let Some(i) = first_bad(n, mask, |i| a.get(i) == i64::MIN) {
                        return Err(overflow(src, i + self.offset, format!("-({})", i64::MIN)));
                    }
                }
                Value::Int(map1(&a, i64::wrapping_neg))
            }
            Value::Float(a) => Value::Float(map1(&a, |x| -x)),
            _ => unreachable!("bind checks numeric operand"),
        })
    }

    /// `when(cond).then(t).otherwise(o)`: each branch is evaluated only on its rows (so its
    /// errors count only there); a null condition selects `otherwise`.
    #[inline(never)]
    fn eval_when(
        &self,
        node: &Node,
        cond: &Node,
        then: &Node,
        otherwise: &Node,
        mask: Option<&[bool]>,
    ) -> Result<(Value<'a>, Nulls)> {
        let (Value::Bool(c), nc) = self.eval(cond, mask)? else {
            unreachable!("bind checks bool condition")
        };
        let c: Vec<bool> = match (c.slice(), &nc) {
            (None, None) => {
                let branch = if c.get(0) { then } else { otherwise };
                return self.eval(branch, mask);
            }
            (Some(c), None) => c.to_vec(),
            (_, Some(nc)) => (0..self.n).map(|i| c.get(i) & !nc[i]).collect(),
        };
        let then_mask = and_mask(mask, &c, false);
        let else_mask = and_mask(mask, &c, true);
        let t = if then_mask.contains(&true) {
            Some(self.eval(then, Some(&then_mask))?)
        } else {
            None
        };
        let o = if else_mask.contains(&true) {
            Some(self.eval(otherwise, Some(&else_mask))?)
        } else {
            None
        };
        Ok(match (t, o) {
            (Some(t), None) => t,
            (None, Some(o)) => o,
            // No row selected (n == 0 or every row masked out): any value of the dtype.
            (None, None) => (placeholder(node.dtype), None),
            (Some((t, nt)), Some((o, no))) => {
                let v = match (t, o) {
                    (Value::Int(t), Value::Int(o)) => Value::Int(select(&c, &t, &o)),
                    (Value::Float(t), Value::Float(o)) => Value::Float(select(&c, &t, &o)),
                    (Value::Bool(t), Value::Bool(o)) => Value::Bool(select(&c, &t, &o)),
                    (Value::Str(t), Value::Str(o)) => Value::Str(select(&c, &t, &o)),
                    _ => unreachable!("bind unifies branches"),
                };
                let nulls = match (nt, no) {
                    (None, None) => None,
                    (nt, no) => {
                        let get = |x: &Nulls, i: usize| x.as_ref().is_some_and(|x| x[i]);
                        Some(
                            (0..self.n)
                                .map(|i| if c[i] { get(&nt, i) } else { get(&no, i) })
                                .collect(),
                        )
                    }
                };
                (v, nulls)
            }
        })
    }

    /// `coalesce`: per row the first non-null operand; each operand after the first is
    /// evaluated only on the rows still null.
    #[inline(never)]
    fn eval_coalesce(&self, args: &[Node], mask: Option<&[bool]>) -> Result<(Value<'a>, Nulls)> {
        let (mut acc, mut nulls) = self.eval(&args[0], mask)?;
        for a in &args[1..] {
            let Some(still) = nulls.take() else { break };
            let sub = and_mask(mask, &still, false);
            let (v, vn) = self.eval(a, Some(&sub))?;
            acc = match (v, acc) {
                (Value::Int(t), Value::Int(o)) => Value::Int(select(&still, &t, &o)),
                (Value::Float(t), Value::Float(o)) => Value::Float(select(&still, &t, &o)),
                (Value::Bool(t), Value::Bool(o)) => Value::Bool(select(&still, &t, &o)),
                (Value::Str(t), Value::Str(o)) => Value::Str(select(&still, &t, &o)),
                _ => unreachable!("bind unifies coalesce operands"),
            };
            nulls = vn
                .map(|vn| still.iter().zip(&vn).map(|(&s, &v)| s & v).collect())
                .filter(|x: &Vec<bool>| x.contains(&true));
        }
        Ok((acc, nulls))
    }

    /// A library function (out of line: keeps the recursive [`Ctx::eval`] frame small): null
    /// where an argument is; it never fails on such a row.
    #[inline(never)]
    fn eval_func(
        &self,
        func: &super::func_bind::BoundFunc,
        args: &[Node],
        src: &str,
        mask: Option<&[bool]>,
    ) -> Result<(Value<'a>, Nulls)> {
        let mut vals = Vec::with_capacity(args.len());
        let mut nulls = None;
        for a in args {
            let (v, na) = self.eval(a, mask)?;
            // String functions resolve every id: a null's (no string) becomes "".
            let v = match (v, &na) {
                (Value::Str(ids), Some(nl)) => {
                    let empty = crate::encoding::Interner::intern("");
                    Value::Str(Vals::Owned(
                        (0..self.n)
                            .map(|i| if nl[i] { empty } else { ids.get(i) })
                            .collect(),
                    ))
                }
                (v, _) => v,
            };
            vals.push(v);
            nulls = or_nulls(nulls, na);
        }
        let counted = counted_rows(mask, &nulls);
        let rows = Rows {
            n: self.n,
            off: self.offset,
            mask: counted.as_deref().or(mask),
        };
        if let super::func_bind::BoundFunc::Convert(conv, strict) = func {
            let (v, failed) = super::convert::eval(conv, *strict, &vals[0], rows, src)?;
            return Ok((v, or_nulls(nulls, failed)));
        }
        Ok((super::func_eval::eval(func, vals, rows, src)?, nulls))
    }

    fn cast(&self, v: Value<'a>, to: DType, mask: Option<&[bool]>, src: &str) -> Result<Value<'a>> {
        let n = self.n;
        Ok(match (v, to) {
            (Value::Int(a), DType::Float64) => Value::Float(map1(&a, |x| x as f64)),
            (Value::Int(a), DType::Bool) => Value::Bool(map1(&a, |x| x != 0)),
            (Value::Float(a), DType::Int64) => {
                let fits = |x: f64| ops::f64_fits_i64(x);
                let bad = n > 0
                    && match a.slice() {
                        None => !fits(a.get(0)),
                        Some(s) => !s.iter().fold(true, |acc, &x| acc & fits(x)),
                    };
                if bad {
                    if let Some(i) = first_bad(n, mask, |i| !fits(a.get(i))) {
                        let x = a.get(i);
                        let i = i + self.offset;
                        return Err(if x.is_nan() {
                            Error::Value(format!("cannot cast NaN to int64 in {src} at row {i}"))
                        } else {
                            Error::Overflow(format!(
                                "float64 value {} is out of the int64 range in {src} at row {i}",
                                super::ast::py_float_repr(x)
                            ))
                        });
                    }
                }
                Value::Int(map1(&a, |x| x as i64))
            }
            (Value::Float(a), DType::Bool) => Value::Bool(map1(&a, |x| x != 0.0)),
            (Value::Bool(a), DType::Int64) => Value::Int(map1(&a, |x| x as i64)),
            (Value::Bool(a), DType::Float64) => Value::Float(map1(&a, |x| x as u8 as f64)),
            _ => unreachable!("bind checks casts"),
        })
    }
}

fn placeholder(dtype: DType) -> Value<'static> {
    match dtype.physical() {
        DType::Int64 => Value::Int(Vals::Const(0)),
        DType::Float64 => Value::Float(Vals::Const(0.0)),
        DType::Bool => Value::Bool(Vals::Const(false)),
        _ => Value::Str(Vals::Const(crate::encoding::Interner::intern(""))),
    }
}

impl BoundExpr {
    /// Evaluates on typed columns, one entry per schema column (`None` is allowed for the
    /// columns the expression does not reference, see [`BoundExpr::inputs`]); every
    /// referenced column must have `n` values and its bound dtype.
    pub fn eval_columns(&self, columns: &[Option<ColumnRef<'_>>], n: usize) -> Result<Column> {
        let schema = self.schema();
        if columns.len() != schema.len() {
            return Err(Error::Shape(format!(
                "{} columns given for a schema of {} in {}",
                columns.len(),
                schema.len(),
                self.expr()
            )));
        }
        for &i in self.inputs() {
            let (name, dtype) = &schema[i];
            let Some(c) = columns[i] else {
                return Err(Error::Shape(format!(
                    "column {name:?} is referenced by {} but was not given",
                    self.expr()
                )));
            };
            if c.dtype() != *dtype {
                return Err(Error::Type(format!(
                    "column {name:?} has dtype {} but {} was bound with {}",
                    c.dtype().name(),
                    self.expr(),
                    dtype.name()
                )));
            }
            if c.len() != n {
                return Err(Error::Shape(format!(
                    "column {name:?} has {} values, expected {n}",
                    c.len()
                )));
            }
        }
        let mut out = Column::with_capacity(self.dtype(), n);
        let mut start = 0;
        while start < n {
            let end = (start + CHUNK).min(n);
            let chunk: Vec<Option<ColumnRef<'_>>> = columns
                .iter()
                .map(|c| c.map(|c| c.slice(start..end)))
                .collect();
            let ctx = Ctx {
                inputs: &chunk,
                nulls: &[],
                n: end - start,
                offset: start,
            };
            // Typed columns hold no nulls; a null literal or a lax cast may still make one,
            // which a column without null flags cannot carry: refused, never dropped.
            let (v, nulls) = ctx.eval(&self.root, None)?;
            if let Some(i) = nulls.and_then(|m| m.iter().position(|&x| x)) {
                return Err(Error::Value(format!(
                    "{} is null at row {}: columns evaluated outside a dataflow carry no \
                     nulls (run the expression in a dataflow, where nulls are values)",
                    self.expr(),
                    start + i
                )));
            }
            v.append_to(&mut out, end - start);
            start = end;
        }
        Ok(out)
    }

    /// Evaluates on a batch whose rows follow the bound schema (column `i` of row `r` is
    /// word `rows.rows[r * width + i]`, encoded per [`crate::encoding`]); returns one encoded
    /// word per row.
    pub fn eval(&self, rows: &Updates) -> Result<Vec<u64>> {
        if let Kind::Input(i) = self.root.kind {
            // A bare column: its words as they are (nulls included).
            let w = rows.width;
            if w == self.schema().len() && rows.rows.len() == rows.len() * w {
                return Ok(rows.rows.chunks_exact(w).map(|r| r[i]).collect());
            }
        }
        let mut out = Vec::with_capacity(rows.len());
        let null = null_word(self.dtype());
        let int = self.dtype().physical() == DType::Int64;
        // The first row whose int64 result is the value `i64::MIN` (not a null passed
        // through): it cannot be stored, `i64::MIN` being int64's null word.
        let mut min_at: Option<usize> = None;
        self.eval_row_chunks(rows, |v, nulls, m| {
            let start = out.len();
            v.append_words(&mut out, m);
            if int && min_at.is_none() {
                min_at = (start..out.len())
                    .find(|&r| out[r] == NULL_I64 && !nulls.is_some_and(|nl| nl[r - start]));
            }
            if let Some(nulls) = nulls {
                for (w, &is_null) in out[start..].iter_mut().zip(nulls) {
                    if is_null {
                        *w = null;
                    }
                }
            }
        })?;
        if let Some(r) = min_at {
            return Err(Error::Overflow(format!(
                "int64 result {} in {} at row {r}: the one int64 value reserved for null",
                i64::MIN,
                self.expr()
            )));
        }
        Ok(out)
    }

    /// Evaluates a bool expression as a filter mask.
    pub fn eval_predicate(&self, rows: &Updates) -> Result<Vec<bool>> {
        if self.dtype() != DType::Bool {
            return Err(Error::Type(format!(
                "filter predicate {} has dtype {}, expected bool",
                self.expr(),
                self.dtype().name()
            )));
        }
        let mut out = Vec::with_capacity(rows.len());
        // A null predicate is not true: the row is dropped.
        self.eval_row_chunks(rows, |v, nulls, m| match v {
            Value::Bool(b) => {
                let start = out.len();
                b.append_to(&mut out, m);
                if let Some(nulls) = nulls {
                    for (k, &is_null) in out[start..].iter_mut().zip(nulls) {
                        *k &= !is_null;
                    }
                }
            }
            _ => unreachable!("bool dtype"),
        })?;
        Ok(out)
    }

    /// Evaluates chunk by chunk, decoding only the referenced columns of each chunk's rows,
    /// and hands each chunk's result and row count to `sink`.
    fn eval_row_chunks(
        &self,
        rows: &Updates,
        mut sink: impl FnMut(Value<'_>, Option<&[bool]>, usize),
    ) -> Result<()> {
        let schema = self.schema();
        let (n, w) = (rows.len(), rows.width);
        if w != schema.len() || rows.rows.len() != n * w {
            return Err(Error::Shape(format!(
                "a batch of {} words for {n} rows of width {w} does not match the {} schema columns of {}",
                rows.rows.len(),
                schema.len(),
                self.expr()
            )));
        }
        let mut start = 0;
        while start < n {
            let end = (start + CHUNK).min(n);
            let words = &rows.rows[start * w..end * w];
            let owned: Vec<Option<Column>> = (0..schema.len())
                .map(|i| {
                    self.inputs()
                        .contains(&i)
                        .then(|| Column::from_words(schema[i].1, words, w, i))
                })
                .collect();
            let refs: Vec<Option<ColumnRef<'_>>> =
                owned.iter().map(|c| c.as_ref().map(Column::view)).collect();
            let nulls: Vec<Option<Vec<bool>>> = (0..schema.len())
                .map(|i| {
                    let d = schema[i].1;
                    let col = || words.chunks_exact(w).map(move |r| r[i]);
                    (self.inputs().contains(&i) && col().any(|x| is_null_word(d, x)))
                        .then(|| col().map(|x| is_null_word(d, x)).collect())
                })
                .collect();
            let ctx = Ctx {
                inputs: &refs,
                nulls: &nulls,
                n: end - start,
                offset: start,
            };
            let (v, nulls) = ctx.eval(&self.root, None)?;
            sink(v, nulls.as_deref(), end - start);
            start = end;
        }
        Ok(())
    }
}
