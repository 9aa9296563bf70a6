//! Nodes that do nothing when activated: `input` (updates are pushed to its consumers),
//! `probe` (only its input frontier matters), and the arrangement readers
//! `enter_arrangement` and `import_trace` (their consumers read the source's trace and
//! fresh batches directly).

use super::{Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// A node without work of its own.
pub struct Inert;

impl Operator for Inert {
    /// Keeps no rows.
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        _inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        Ok(Output::none())
    }
}
