//! `select`: evaluates one expression per output column on every record.

use super::records::{Bound, Failures};
use super::{Operator, Output, RunCtx};
use crate::engine::column::{Msg, Schema};
use crate::error::Result;
use crate::expr::{BoundExpr, Expr};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// A `select` node: its expressions, bound for the last input schema.
pub struct Select {
    exprs: Vec<Expr>,
    bound: Bound<(Vec<BoundExpr>, Schema)>,
}

impl Select {
    /// A `select` of `exprs`.
    pub fn new(exprs: &[Expr]) -> Self {
        Select {
            exprs: exprs.to_vec(),
            bound: Bound::default(),
        }
    }
}

/// Evaluates the bound expressions on `m` into a message of rows of their results.
fn eval(bound: &[BoundExpr], out_schema: &Schema, m: &Msg) -> Result<Msg> {
    Ok(Msg {
        schema: out_schema.clone(),
        upd: select_rows(bound, &m.upd)?,
    })
}

/// Rows of the bound expressions' results on `upd`, with `upd`'s times and diffs.
pub fn select_rows(bound: &[BoundExpr], upd: &Updates) -> Result<Updates> {
    let cols: Vec<Vec<u64>> = bound.iter().map(|b| b.eval(upd)).collect::<Result<_>>()?;
    let n = upd.len();
    let w = cols.len();
    let mut rows = vec![0u64; n * w];
    for (c, col) in cols.iter().enumerate() {
        for (r, &v) in col.iter().enumerate() {
            rows[r * w + c] = v;
        }
    }
    Ok(Updates {
        width: w,
        rows,
        times: upd.times.clone(),
        diffs: upd.diffs.clone(),
    })
}

impl Operator for Select {
    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let spec = cx.spec();
        let names = cx.input_columns();
        let mut out = Vec::new();
        let mut failures = Failures::default();
        for m in inputs.iter().flatten() {
            let exprs = &self.exprs;
            let bound = self.bound.get(m, names, &spec.label, |schema| {
                let bound = exprs
                    .iter()
                    .map(|e| e.bind(schema))
                    .collect::<Result<Vec<BoundExpr>>>()?;
                let out_schema: Schema = Arc::new(bound.iter().map(|b| b.dtype()).collect());
                Ok((bound, out_schema))
            })?;
            match bound {
                Ok((bound, out_schema)) => {
                    failures.isolated(m, &mut |sub| eval(bound, out_schema, sub), &mut out)?
                }
                // The batch's dtypes do not fit the expressions: every record is an error
                // (the rest of the dataflow goes on).
                Err(e) => failures.fail_all(m, &e),
            }
        }
        failures.record(cx, names);
        Ok(Output::pass(out))
    }
}
