//! `consolidate`: holds updates until their time is complete, then emits them summed per
//! (row, time).

use super::buffer::Buffer;
use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::engine::util::consolidate;
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// A `consolidate` node: the updates not yet complete.
#[derive(Default)]
pub struct Consolidate {
    buffer: Buffer,
}

impl Operator for Consolidate {
    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output> {
        self.buffer.extend(take_all(inputs));
        let mut msgs = Vec::new();
        for mut m in self.buffer.extract_complete(frontier) {
            consolidate(&mut m.upd)?;
            msgs.push(m);
        }
        let did = !msgs.is_empty();
        Ok(Output { msgs, did })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        self.buffer.held(held);
    }
}
