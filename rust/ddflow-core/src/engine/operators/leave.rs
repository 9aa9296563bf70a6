//! `leave`: a collection of an iterate scope seen outside it; the scope's iteration
//! coordinate is reset to zero, so the updates of all iterations accumulate (the fixed
//! point).

use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// A `leave` node: the iteration coordinate it drops.
pub struct Leave {
    coord: usize,
}

impl Leave {
    /// Drops time coordinate `coord`.
    pub fn new(coord: usize) -> Self {
        Leave { coord }
    }
}

impl Operator for Leave {
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
            m.upd.times.map_each(|t| t.0[self.coord] = 0);
        }
        Ok(Output::pass(msgs))
    }
}
