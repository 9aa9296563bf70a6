//! `advance_iteration`: moves each update's iteration coordinate forward to the value of an
//! int64 expression on its record, `max(current, value)`.
//!
//! The operator is a pure function of each update (no state beyond the bound expression), so
//! its path summary is the identity: every output time is at or after its input time, which
//! makes the identity a valid lower bound for progress tracking. Updates moved into the
//! future are held downstream (by `delay`, or by the `arrange` buffer in front of a
//! `reduce`), and those operators report them as pointstamps until their time completes.
//! Because all updates of one record move by the same rule, the accumulated collection at
//! iteration `i` is the input restricted to records whose value is at most `i`.

use super::records::{Bound, Failures};
use super::{Operator, Output, RunCtx};
use crate::encoding::{decode_i64, DType};
use crate::engine::column::Msg;
use crate::error::{Error, Result};
use crate::expr::{BoundExpr, Expr};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// An `advance_iteration` node: the value expression (bound for the last input schema), the
/// iteration coordinate it moves and the scope's `max_iterations`.
pub struct AdvanceIteration {
    expr: Expr,
    coord: usize,
    max_iterations: Option<u64>,
    bound: Bound<BoundExpr>,
}

impl AdvanceIteration {
    /// Moves coordinate `coord` to `expr`'s value, below `max_iterations` when set.
    pub fn new(expr: &Expr, coord: usize, max_iterations: Option<u64>) -> Self {
        AdvanceIteration {
            expr: expr.clone(),
            coord,
            max_iterations,
            bound: Bound::default(),
        }
    }
}

impl Operator for AdvanceIteration {
    /// Keeps no rows (string constants of the bound expressions are permanent).
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let spec = cx.spec();
        let names = cx.input_columns();
        let (coord, max) = (self.coord, self.max_iterations);
        let mut out = Vec::new();
        let mut failures = Failures::default();
        for m in inputs.iter().flatten() {
            let expr = &self.expr;
            match self.bound.get(m, names, &spec.label, |s| expr.bind(s))? {
                Ok(b) => failures.isolated(m, &mut |sub| advance(sub, b, coord, max), &mut out)?,
                Err(e) => failures.fail_all(m, &e),
            }
        }
        failures.record(cx, names);
        Ok(Output::pass(out))
    }
}

/// Applies `value` (bound, int64) to every update of `m`: the iteration coordinate `coord`
/// becomes `max(t[coord], value(row))`. Values below zero, or at or beyond `max_iterations`
/// (when the scope has one), are errors naming the expression and the value (the engine adds
/// the operator's label); nothing is emitted for a batch that fails.
pub fn advance(
    m: &Msg,
    value: &BoundExpr,
    coord: usize,
    max_iterations: Option<u64>,
) -> Result<Msg> {
    if value.dtype() != DType::Int64 {
        return Err(Error::Type(format!(
            "advance_iteration needs an int64 expression, {} has dtype {}",
            value.expr(),
            value.dtype().name()
        )));
    }
    let words = value.eval(&m.upd)?;
    let mut upd = Updates {
        width: m.upd.width,
        rows: m.upd.rows.clone(),
        times: m.upd.times.clone(),
        diffs: m.upd.diffs.clone(),
    };
    for (t, &w) in upd.times.iter_mut().zip(&words) {
        let v = decode_i64(w);
        if v < 0 {
            return Err(Error::Value(format!(
                "advance_iteration value {} = {v} is negative; iteration coordinates start \
                 at 0",
                value.expr()
            )));
        }
        let v = v as u64;
        if let Some(max) = max_iterations {
            if v >= max {
                return Err(Error::Value(format!(
                    "advance_iteration value {} = {v} is beyond the iterate's last \
                     iteration {} (max_iterations={max})",
                    value.expr(),
                    max - 1
                )));
            }
        }
        if v > t.0[coord] {
            t.0[coord] = v;
        }
    }
    Ok(Msg {
        schema: m.schema.clone(),
        upd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::encode_i64;
    use crate::expr::col;
    use std::sync::Arc;

    fn msg(vals: &[(i64, u64)]) -> Msg {
        let mut upd = Updates::new(1);
        for &(v, it) in vals {
            upd.push(&[encode_i64(v)], Time::from_coords(&[0, it]), 1);
        }
        Msg {
            schema: Arc::new(vec![DType::Int64]),
            upd,
        }
    }

    fn bind(e: Expr) -> BoundExpr {
        e.bind(&[("d".to_string(), DType::Int64)]).unwrap()
    }

    #[test]
    fn moves_forward_never_back() {
        let m = msg(&[(5, 2), (1, 3), (3, 3)]);
        let out = advance(&m, &bind(col("d")), 1, None).unwrap();
        let its: Vec<u64> = out.upd.times.iter().map(|t| t.0[1]).collect();
        assert_eq!(its, vec![5, 3, 3]);
        assert_eq!(out.upd.rows, m.upd.rows);
    }

    #[test]
    fn negative_and_too_large_values_are_errors() {
        let m = msg(&[(2, 0), (-1, 0)]);
        let e = advance(&m, &bind(col("d")), 1, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("col(\"d\") = -1"), "{e}");
        let m = msg(&[(10, 0)]);
        let e = advance(&m, &bind(col("d")), 1, Some(10))
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_iterations=10"), "{e}");
    }
}
