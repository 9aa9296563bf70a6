//! `inspect_py`: calls a Python function with each batch (columns, times, diffs) and passes
//! the batch on unchanged, whatever the function did.

use super::records::Failures;
use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::{rows_to_columns, Msg, Payload};
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// An `inspect_py` node: the function and the number of time coordinates it sees.
pub struct Inspect {
    func: u64,
    time_dims: usize,
}

impl Inspect {
    /// Calls `func` with times of `time_dims` coordinates (outer plus nesting depth).
    pub fn new(func: u64, time_dims: usize) -> Self {
        Inspect { func, time_dims }
    }
}

impl Operator for Inspect {
    /// Keeps no rows.
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let spec = cx.spec();
        let names = cx.input_columns();
        let label = spec.label.as_str();
        let callbacks = cx.callbacks;
        let mut failures = Failures::default();
        for m in inputs.iter().flatten() {
            let mut call = |sub: &Msg| -> Result<()> {
                let payload = Payload::Inspect {
                    names: names.clone(),
                    columns: rows_to_columns(&sub.schema, &sub.upd),
                    times: sub.upd.times.clone().into_vec(),
                    time_dims: self.time_dims,
                    diffs: sub.upd.diffs.clone(),
                };
                callbacks.call(self.func, "inspect_py", label, payload)?;
                Ok(())
            };
            failures.isolated(m, &mut call, &mut Vec::new())?;
        }
        failures.record(cx, names);
        Ok(Output::pass(take_all(inputs)))
    }

    fn calls_python(&self) -> bool {
        true
    }
}
