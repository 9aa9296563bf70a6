//! Column expressions evaluated in Rust on whole columns.
//!
//! An [`Expr`] is a tree built in Python (`ddflow.expr`, modelled on Polars expressions) and
//! shipped as JSON inside plans (`select`'s `exprs`, `filter`'s `predicate`) or to
//! `ddflow._core.eval_expr`. [`Expr::bind`] resolves it against a schema into a
//! [`BoundExpr`]; [`BoundExpr::eval`] / [`BoundExpr::eval_predicate`] /
//! [`BoundExpr::eval_columns`] run it over whole columns.
//!
//! # JSON format
//!
//! Every node is an object with an `"op"`:
//!
//! | op | fields | meaning |
//! |----|--------|---------|
//! | `col` | `name` | the column `name` |
//! | `lit` | `value`, `dtype` (optional) | a literal broadcast to every row |
//! | `add` `sub` `mul` `truediv` `floordiv` `mod` | `args: [a, b, ...]` | `a + b`, `a - b`, `a * b`, `a / b`, `a // b`, `a % b` |
//! | `eq` `ne` `lt` `le` `gt` `ge` | `args: [a, b, ...]` | `a == b`, `!=`, `<`, `<=`, `>`, `>=` |
//! | `and` `or` | `args: [a, b, ...]` | `a & b`, `a \| b` (bool) |
//! | `min_of` `max_of` | `args: [a, b, ...]` | row-wise minimum / maximum |
//! | `not` | `arg` | `~a` (bool) |
//! | `neg` | `arg` | `-a` |
//! | `cast` | `dtype`, `arg` | `a.cast(dtype)` |
//! | `when` | `cond`, `then`, `otherwise` | `when(cond).then(a).otherwise(b)` |
//! | `alias` | `name`, `arg` | `a.alias(name)` (names the output; no effect on values) |
//! | `is_null` `is_not_null` | `arg` | whether `a` is null (bool, never null) |
//! | `coalesce` | `args: [a, ...]` | per row the first non-null operand (`fill_null`); null if all are |
//! | `is_in`, `abs`, `round`, `floor`, `ceil`, `sqrt`, `log`, `exp`, `pow`, `rem`, `str.*`, `concat_str` | see [`Func`] | the expression library (`func.rs`; dtypes in `func_bind.rs`) |
//!
//! ```json
//! {"op": "alias", "name": "d", "arg":
//!   {"op": "add", "args": [{"op": "col", "name": "dist"}, {"op": "lit", "value": 1, "dtype": "int64"}]}}
//! ```
//!
//! Binary operators take two or more `args`, chained to the left: `[a, b, c]` is
//! `((a op b) op c)`. Writers ([`Expr::to_json`], Python's `Expr.to_json`) flatten left-nested
//! chains of one operator this way (`a + b + c + ...`), which keeps long sums and
//! conjunctions shallow.
//!
//! `dtype` is one of `"int64"`, `"float64"`, `"bool"`, `"str"` (aliases as in
//! [`DType::parse`]). A `lit` without `dtype` is int64 for an integral JSON number, float64
//! for any other number, bool or str. With `"dtype": "float64"`, `value` may be an integer
//! or a string holding a float (`"inf"`, `"-inf"`, `"nan"`, `"0.1"`: JSON has no non-finite
//! numbers, and a string is parsed exactly even without `serde_json`'s `float_roundtrip`).
//! A `value` of `null` is a SQL null of `dtype` (`{"op": "lit", "value": null, "dtype":
//! "int64"}`, Python `lit(None, "int64")`); without `dtype` it is a null whose dtype the plan
//! decides, allowed only as a whole `select` column (the padding of an outer join: the
//! engine's `select` gives it the dtype of the columns the plan links it with).
//! [`Expr::to_json`] always writes `dtype`, and writes a float as a string when `serde_json`
//! (without its `float_roundtrip` feature) would not read the number back exactly. Malformed JSON raises [`Error::Plan`](crate::Error);
//! an integer literal outside int64 raises `Error::Overflow`. Nesting is limited to
//! [`json::MAX_DEPTH`] levels (counting chained `args`); `serde_json`'s parser also
//! limits JSON text to 128 nested arrays/objects (about 60 levels of non-chained binary
//! operators).
//!
//! # Nulls
//!
//! A SQL null is its dtype's null word ([`crate::encoding::null_word`]). Evaluating on words
//! ([`BoundExpr::eval`], [`BoundExpr::eval_predicate`]) knows which input rows are null: a
//! bare column passes them through; arithmetic, comparisons, casts, `min_of` / `max_of` and
//! library functions are null where an operand is (and never fail on that row); `&`, `|`,
//! `~` are Kleene's; `when` takes a null condition as false; `is_null` / `is_not_null` are
//! never null; `coalesce` is the first non-null operand (`null_tests.rs` checks these against
//! an `Option` reference). A predicate that is null is false. An int64 result of `i64::MIN`
//! (the null word) is an overflow error.
//! [`BoundExpr::eval_columns`] (typed columns: kernels, Spark tasks) has no nulls.
//!
//! # Display
//!
//! `Display` prints Python-like source, used in error messages and matched by
//! `Expr.__repr__` in Python: `(col("dist") + 1)`, `(~col("b"))`, `(-col("x"))`,
//! `min_of(a, b)`, `col("x").cast("float64")`, `a.alias("y")`,
//! `when(c).then(a).otherwise(b)`; literals print like Python (`1`, `1.5`, `1e+16`, `True`,
//! `"s"` JSON-quoted), and as `lit(v)` when a method is called on them.
//!
//! # Types
//!
//! * `+ - * // %`: int64 or float64 operands; int64 with float64 promotes to float64.
//!   `/` is true division: always float64 (like numpy). Bool operands are rejected (cast
//!   first).
//! * `== != < <= > >=`: numbers (with promotion), two bools (`False < True`); str supports
//!   only `==` and `!=` (strings are interned ids, which carry no order).
//! * `& | ~`: bool only. Both sides of `&`/`|` are always evaluated (no short-circuit);
//!   guard failing operations with `when`.
//! * `-a`: int64 or float64.
//! * `cast`: among int64, float64 and bool (and a no-op cast to the same dtype, including str).
//! * `when`: bool condition; `then`/`otherwise` of one dtype, or int64/float64 (-> float64).
//! * `min_of`/`max_of`: numbers (with promotion) or two bools.
//!
//! Type errors raise [`Error::Type`](crate::Error) naming the sub-expression, the whole
//! expression and the dtypes; an unknown column raises `Error::ColumnNotFound` naming the
//! column, the expression and the available columns.
//!
//! # Semantics
//!
//! * int64 arithmetic is checked: overflow of `+ - *`, unary `-`, and `i64::MIN // -1` raise
//!   `Error::Overflow`; `x // 0` and `x % 0` raise `Error::DivisionByZero`. Values never wrap.
//!   Errors name the sub-expression, the operand values and the (first) row.
//! * `//` and `%` round toward negative infinity, the remainder taking the sign of the
//!   divisor (Python and numpy). On float64 they follow numpy exactly, including IEEE
//!   division by zero: `x // 0.0` is `±inf` (NaN for `0.0 // 0.0` or NaN), `x % 0.0` is NaN.
//! * `/` and float64 arithmetic and comparisons are IEEE (`x / 0` is `±inf` or NaN, for
//!   int64 operands too, like numpy) (NaN compares unequal to everything);
//!   `min_of`/`max_of` propagate NaN like `numpy.minimum`/`maximum`.
//! * `cast` float64 -> int64 truncates toward zero; NaN raises `Error::Value`, values
//!   outside the int64 range (and ±inf) raise `Error::Overflow`. int64/float64 -> bool is
//!   `!= 0` (NaN is true). bool -> number is 0/1.
//! * `when` evaluates each branch only for the rows that select it (and errors of a branch
//!   count only on those rows), so `when(b != 0).then(a // b).otherwise(0)` is safe.
//! * Output words are encoded per [`crate::encoding`] (canonical float zero and NaN);
//!   `eval_columns` returns raw values.
//! * The library ([`Func`]): `round` is half away from zero on the shortest decimal form of
//!   a float; `rem` takes the dividend's sign (SQL; `%` keeps Python's divisor sign);
//!   `abs(i64::MIN)` raises `Error::Overflow` and int64 `rem` by 0 `Error::DivisionByZero`;
//!   string functions count Unicode code points and intern the strings they produce; an
//!   invalid regex or LIKE pattern is an `Error::Plan` when the JSON is read or the tree
//!   bound. Kernels: `math.rs`, `strings.rs`; vectorised evaluation: `func_eval.rs`.

mod ast;
mod bind;
mod bind_cast;
mod bind_logical;
mod calendar;
mod column;
mod convert;
mod eval;
mod func;
mod func_bind;
mod func_eval;
#[cfg(test)]
mod func_tests;
pub mod json;
mod math;
#[cfg(test)]
mod null_tests;
mod ops;
mod strings;
#[cfg(test)]
mod tests;

pub use crate::encoding::DType;
pub use ast::{col, lit, max_of, min_of, py_float_repr, when, BinaryOp, Expr, Scalar};
pub use bind::BoundExpr;
pub use column::{Column, ColumnRef};
pub use func::{Func, FUNC_OPS};
