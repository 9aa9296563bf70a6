//! `capture`: keeps everything it receives until the engine's caller takes it.

use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};

/// A `capture` node: the messages received and not yet taken.
#[derive(Default)]
pub struct Capture {
    data: Vec<Msg>,
}

impl Operator for Capture {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.data.iter().for_each(|m| marks.words(&m.upd.rows));
    }

    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        self.data.extend(take_all(inputs));
        Ok(Output::none())
    }

    fn take_captured(&mut self) -> Vec<Msg> {
        std::mem::take(&mut self.data)
    }
}
