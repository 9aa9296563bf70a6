//! `concat` (the union of its inputs) and `enter` (a collection seen inside an iterate
//! scope, at iteration 0): both pass their input on unchanged. Times entering a scope
//! already have iteration coordinate 0 (see `lattice.rs`).

use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// A node that passes every update on as it is.
pub struct PassThrough;

impl Operator for PassThrough {
    /// Keeps no rows.
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        Ok(Output::pass(take_all(inputs)))
    }
}
