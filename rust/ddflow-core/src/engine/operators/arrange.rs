//! `arrange`: holds updates until their time is complete, then adds them to the node's
//! trace as one batch (key columns first, sorted and consolidated) and hands that batch to
//! the arrangement's readers as this pass's fresh batch.
//!
//! With several workers, input updates are routed to the worker that owns their key
//! ([`Operator::exchange_key`], see `engine/exchange.rs`).

use super::buffer::Buffer;
use super::{take_all, Operator, Output, RunCtx};
use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::{Msg, Schema};
use crate::engine::util::consolidate_parts;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// An `arrange` node: its key columns and the updates not yet complete. The trace lives
/// with the worker (its readers share it).
pub struct Arrange {
    key: Vec<usize>,
    width: usize,
    buffer: Buffer,
}

impl Arrange {
    /// An arrangement of rows of `width` columns by the columns `key`.
    pub fn new(key: &[usize], width: usize) -> Self {
        Arrange {
            key: key.to_vec(),
            width,
            buffer: Buffer::default(),
        }
    }
}

/// The updates of `parts` (rows of `width` columns) as one batch with the columns `key`
/// first, then the others in order. A single part already keyed by its leading columns is
/// taken as it is (no copy).
pub fn key_first(mut parts: Vec<Updates>, key: &[usize], width: usize) -> Updates {
    let identity = key.iter().enumerate().all(|(i, &k)| i == k);
    let total = parts.iter().map(|u| u.len()).sum();
    if identity && parts.len() == 1 {
        parts.pop().expect("one part")
    } else if identity {
        let mut b = Updates::with_capacity(width, total);
        for u in &parts {
            b.extend(u);
        }
        b
    } else {
        let mut b = Updates::with_capacity(width, total);
        let mut row = Vec::with_capacity(width);
        let rest: Vec<usize> = (0..width).filter(|c| !key.contains(c)).collect();
        for u in &parts {
            for i in 0..u.len() {
                let r = u.row(i);
                row.clear();
                row.extend(key.iter().map(|&k| r[k]));
                row.extend(rest.iter().map(|&k| r[k]));
                b.push(&row, u.times[i], u.diffs[i]);
            }
        }
        b
    }
}

/// `schema` with the columns of `key` first.
fn reorder_schema(schema: &Schema, key: &[usize]) -> Schema {
    let mut s: Vec<DType> = key.iter().map(|&k| schema[k]).collect();
    s.extend(
        (0..schema.len())
            .filter(|c| !key.contains(c))
            .map(|c| schema[c]),
    );
    Arc::new(s)
}

impl Operator for Arrange {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.buffer.mark_strings(marks);
    }

    /// The updates held until their time is complete.
    fn heap_bytes(&self) -> usize {
        self.buffer.heap_bytes()
    }

    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let node = cx.node;
        let label = &cx.plan.nodes[node].label;
        let trace = cx.traces[node].as_mut().expect("an arrange node's trace");
        // Check every batch before accepting any, so an error leaves nothing half-done.
        for m in inputs.iter().flatten() {
            let reordered = reorder_schema(&m.schema, &self.key);
            let expected = trace.schema.get_or_insert_with(|| reordered.clone());
            if &reordered != expected {
                return Err(Error::Type(format!(
                    "{label}: batch dtypes {:?} differ from earlier batches {:?}",
                    reordered.iter().map(|d| d.name()).collect::<Vec<_>>(),
                    expected.iter().map(|d| d.name()).collect::<Vec<_>>()
                )));
            }
        }
        self.buffer.extend(take_all(inputs));
        let ready = self.buffer.extract_complete(frontier)?;
        if ready.is_empty() {
            return Ok(Output::none());
        }
        let schema = trace.schema.clone().expect("schema");
        let width = schema.len();
        let parts = ready
            .into_iter()
            .map(|m| key_first(vec![m.upd], &self.key, width))
            .collect();
        let batch = consolidate_parts(parts, width)?;
        trace.insert(&batch, frontier);
        cx.fresh[node] = Some(Arc::new(Msg { schema, upd: batch }));
        Ok(Output {
            msgs: Vec::new(),
            did: true,
        })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        self.buffer.held(held);
    }

    fn exchange_key(&self) -> Option<&[usize]> {
        Some(&self.key)
    }

    fn new_trace(&self) -> Option<Arrangement> {
        Some(Arrangement::new(self.key.len(), self.width))
    }
}
