//! `consolidate`: holds updates until their time is complete, then emits them summed per
//! (row, time) across every message that arrived for those times.
//!
//! With several workers the updates are routed by the whole row, so equal rows meet on one
//! worker and cancel there: the output holds each (row, time) at most once, with a non-zero
//! diff. An `iterate` body whose only consolidation is this operator reaches its fixed point.

use super::buffer::Buffer;
use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::{Msg, Schema};
use crate::engine::util::consolidate_parts;
use crate::error::Result;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// A `consolidate` node: the updates not yet complete.
pub struct Consolidate {
    buffer: Buffer,
    /// Every column of the row: the exchange key.
    all_columns: Vec<usize>,
}

impl Consolidate {
    /// A consolidate over rows of `width` columns.
    pub fn new(width: usize) -> Self {
        Consolidate {
            buffer: Buffer::default(),
            all_columns: (0..width).collect(),
        }
    }
}

/// Consolidates the messages of each schema (in order of first appearance) into one,
/// dropping what cancels: those already sorted are merged, the others sorted together
/// ([`consolidate_parts`]).
fn merge_and_consolidate(ready: Vec<Msg>) -> Result<Vec<Msg>> {
    let mut groups: Vec<(Schema, Vec<Updates>)> = Vec::new();
    for m in ready {
        match groups.iter_mut().find(|(s, _)| *s == m.schema) {
            Some((_, parts)) => parts.push(m.upd),
            None => groups.push((m.schema, vec![m.upd])),
        }
    }
    let mut merged = Vec::with_capacity(groups.len());
    for (schema, parts) in groups {
        let upd = consolidate_parts(parts, schema.len())?;
        if !upd.is_empty() {
            merged.push(Msg { schema, upd });
        }
    }
    Ok(merged)
}

impl Operator for Consolidate {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.buffer.mark_strings(marks);
    }

    /// The updates held until their time is complete.
    fn heap_bytes(&self) -> usize {
        self.buffer.heap_bytes()
    }

    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output> {
        self.buffer.extend(take_all(inputs));
        let ready = self.buffer.extract_complete(frontier)?;
        let did = !ready.is_empty();
        let msgs = merge_and_consolidate(ready)?;
        Ok(Output { msgs, did })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        self.buffer.held(held);
    }

    fn exchange_key(&self) -> Option<&[usize]> {
        Some(&self.all_columns)
    }
}
