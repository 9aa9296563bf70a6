//! `select`: evaluates one expression per output column on every record.
//!
//! An output column that is a null without a dtype (`{"op": "lit", "value": null}`, the
//! padding of an outer join) takes the dtype of the columns the plan links it with
//! ([`crate::engine::dtype_links`]: an input's, or an arrangement's seen at run time). While
//! none is known yet, every record of the batch is an error update naming the column.

use super::records::{is_data_error, Bound, Failures};
use super::{take_all, Operator, Output, RunCtx};
use crate::encoding::DType;
use crate::engine::column::{Msg, Schema};
use crate::error::{Error, Result};
use crate::expr::{BoundExpr, Expr};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// A `select` node: its expressions, bound for the last input schema.
pub struct Select {
    exprs: Vec<Expr>,
    /// Output columns that are nulls without a dtype, and the dtypes they were given.
    untyped: Vec<(usize, Option<DType>)>,
    bound: Bound<(Vec<BoundExpr>, Schema)>,
}

impl Select {
    /// A `select` of `exprs`.
    pub fn new(exprs: &[Expr]) -> Self {
        let untyped = exprs
            .iter()
            .enumerate()
            .filter(|(_, e)| is_untyped_null(e))
            .map(|(j, _)| (j, None))
            .collect();
        Select {
            exprs: exprs.to_vec(),
            untyped,
            bound: Bound::default(),
        }
    }

    /// Gives the untyped null columns the dtypes the links know; `Err` names the first
    /// column still without one.
    fn type_nulls(&mut self, cx: &RunCtx<'_>) -> std::result::Result<(), Error> {
        let mut changed = false;
        for (j, given) in self.untyped.iter_mut() {
            if given.is_some() {
                continue;
            }
            let Some(d) = cx.dtype_links.dtype_of(cx.node, *j) else {
                let name = cx.spec().columns.get(*j).cloned().unwrap_or_default();
                return Err(Error::Type(format!(
                    "column {name:?} is a null whose dtype comes from the columns the plan \
                     puts it beside (the other side of an outer join), and no data of them \
                     has arrived yet; push that side's first update (at any time) before \
                     running this time"
                )));
            };
            *given = Some(d);
            self.exprs[*j] = Expr::Null(Some(d));
            changed = true;
        }
        if changed {
            self.bound = Bound::default();
        }
        Ok(())
    }
}

/// `exprs` bound to the columns `schema`, and the dtypes of their results.
fn bind(exprs: &[Expr], schema: &[(String, DType)]) -> Result<(Vec<BoundExpr>, Schema)> {
    let bound = exprs
        .iter()
        .map(|e| e.bind(schema))
        .collect::<Result<Vec<BoundExpr>>>()?;
    let out_schema: Schema = Arc::new(bound.iter().map(|b| b.dtype()).collect());
    Ok((bound, out_schema))
}

/// Whether `e` is a null without a dtype (under any aliases).
fn is_untyped_null(e: &Expr) -> bool {
    match e {
        Expr::Null(None) => true,
        Expr::Alias(a, _) => is_untyped_null(a),
        _ => false,
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
    Ok(Updates {
        width: bound.len(),
        rows: result_rows(bound, upd)?,
        times: upd.times.clone(),
        diffs: upd.diffs.clone(),
    })
}

/// The bound expressions' results on `upd`, as rows (one word per expression).
fn result_rows(bound: &[BoundExpr], upd: &Updates) -> Result<Vec<u64>> {
    let cols: Vec<Vec<u64>> = bound.iter().map(|b| b.eval(upd)).collect::<Result<_>>()?;
    let n = upd.len();
    let w = cols.len();
    let mut rows = vec![0u64; n * w];
    for (c, col) in cols.iter().enumerate() {
        for (r, &v) in col.iter().enumerate() {
            rows[r * w + c] = v;
        }
    }
    Ok(rows)
}

impl Operator for Select {
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
        let mut out = Vec::new();
        if let Err(e) = self.type_nulls(cx) {
            let mut failures = Failures::default();
            for m in inputs.iter().flatten() {
                failures.fail_all(m, &e);
            }
            failures.record(cx, names);
            return Ok(Output::none());
        }
        // A message whose records all evaluate passes its times and diffs on without a
        // copy (the input is dropped after the activation). The others are run again
        // below, record by record where needed, and their failures kept.
        let mut retry = Vec::new();
        for m in take_all(inputs) {
            let exprs = &self.exprs;
            let bound = self
                .bound
                .get(&m, names, &spec.label, |schema| bind(exprs, schema))?;
            let Ok((bound, out_schema)) = bound else {
                retry.push(m);
                continue;
            };
            match result_rows(bound, &m.upd) {
                Ok(rows) => out.push(Msg {
                    schema: out_schema.clone(),
                    upd: Updates {
                        width: bound.len(),
                        rows,
                        times: m.upd.times,
                        diffs: m.upd.diffs,
                    },
                }),
                Err(e) if !is_data_error(&e) => return Err(e),
                Err(_) => retry.push(m),
            }
        }
        let mut failures = Failures::default();
        for m in &retry {
            let exprs = &self.exprs;
            let bound = self
                .bound
                .get(m, names, &spec.label, |schema| bind(exprs, schema))?;
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
