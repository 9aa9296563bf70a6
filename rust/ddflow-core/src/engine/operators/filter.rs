//! `filter`: keeps the records on which a bool expression is true.

use super::records::{Bound, Failures};
use super::{Operator, Output, RunCtx};
use crate::encoding::DType;
use crate::engine::column::Msg;
use crate::error::{Error, Result};
use crate::expr::{BoundExpr, Expr};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// A `filter` node: its predicate, bound for the last input schema.
pub struct Filter {
    predicate: Expr,
    bound: Bound<BoundExpr>,
}

impl Filter {
    /// A `filter` by `predicate`.
    pub fn new(predicate: &Expr) -> Self {
        Filter {
            predicate: predicate.clone(),
            bound: Bound::default(),
        }
    }
}

/// The records of `m` on which `predicate` is true.
fn keep(predicate: &BoundExpr, m: &Msg) -> Result<Msg> {
    Ok(Msg {
        schema: m.schema.clone(),
        upd: filter_rows(predicate, &m.upd)?,
    })
}

/// The updates of `upd` whose rows satisfy `predicate` (bound, bool).
pub fn filter_rows(predicate: &BoundExpr, upd: &Updates) -> Result<Updates> {
    let mask = predicate.eval_predicate(upd)?;
    let mut o = Updates::new(upd.width);
    for (i, keep) in mask.iter().enumerate() {
        if *keep {
            o.push(upd.row(i), upd.times[i], upd.diffs[i]);
        }
    }
    Ok(o)
}

impl Operator for Filter {
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
        let mut failures = Failures::default();
        for m in inputs.iter().flatten() {
            let predicate = &self.predicate;
            let bound = self.bound.get(m, names, &spec.label, |schema| {
                let b = predicate.bind(schema)?;
                if b.dtype() != DType::Bool {
                    return Err(Error::Type(format!(
                        "filter predicate {predicate} has dtype {}, expected bool",
                        b.dtype().name()
                    )));
                }
                Ok(b)
            })?;
            match bound {
                Ok(b) => failures.isolated(m, &mut |sub| keep(b, sub), &mut out)?,
                Err(e) => failures.fail_all(m, &e),
            }
        }
        failures.record(cx, names);
        Ok(Output::pass(out))
    }
}
