//! `negate`: every diff negated.

use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// A `negate` node.
pub struct Negate;

impl Operator for Negate {
    /// Keeps no rows.
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let mut msgs = take_all(inputs);
        for m in msgs.iter_mut() {
            m.upd.negate();
        }
        Ok(Output::pass(msgs))
    }
}
