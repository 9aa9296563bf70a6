//! What the engine hands back: captured updates, error updates, frontiers, the operator
//! log and diagnostics.

use super::column::{self, Column, Schema};
use super::errors::ErrorUpdate;
use super::plan::Op;
use super::worker::LogEntry;
use super::Engine;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// Captured output handed back to the caller: columns, times, diffs.
pub struct Captured {
    pub columns: Vec<Column>,
    pub times: Vec<Time>,
    pub diffs: Vec<i64>,
}

impl Engine {
    /// Takes the updates captured by a capture node since the last call.
    pub fn capture_take(&mut self, node: usize) -> Result<Captured> {
        let (schema, all) = self.capture_take_updates(node)?;
        let columns = match &schema {
            Some(s) => column::rows_to_columns(s, &all),
            None => Vec::new(),
        };
        Ok(Captured {
            columns,
            times: all.times.into_vec(),
            diffs: all.diffs,
        })
    }

    /// Takes the updates captured by a capture node since the last call, as row-major
    /// updates with their record dtypes (`None` when there are none). See
    /// [`crate::capture::CaptureState`] for completing and consolidating them.
    pub fn capture_take_updates(&mut self, node: usize) -> Result<(Option<Schema>, Updates)> {
        if !matches!(self.plan.nodes.get(node).map(|n| &n.op), Some(Op::Capture)) {
            return Err(Error::Value(format!("node {node} is not a capture")));
        }
        let mut msgs = Vec::new();
        for w in self.workers.iter_mut() {
            msgs.extend(w.take_capture(node));
        }
        let ncols = self.plan.nodes[node].columns.len();
        let schema: Option<Schema> = msgs
            .iter()
            .find(|m| !m.upd.is_empty())
            .map(|m| m.schema.clone());
        let width = schema.as_ref().map(|s| s.len()).unwrap_or(ncols);
        if msgs
            .iter()
            .any(|m| Some(&m.schema) != schema.as_ref() && !m.upd.is_empty())
        {
            return Err(Error::Type(
                "batches with different dtypes reached the capture".to_string(),
            )
            .with_operator(&self.plan.nodes[node].label));
        }
        // One batch moves as it is; several are copied into one of their exact total size,
        // each dropped once copied (no doubling, and no second copy of the largest).
        let mut parts: Vec<Updates> = msgs
            .into_iter()
            .map(|m| m.upd)
            .filter(|u| !u.is_empty())
            .collect();
        if parts.len() == 1 {
            return Ok((schema, parts.pop().unwrap_or_else(|| Updates::new(width))));
        }
        let total = parts.iter().map(Updates::len).sum();
        let mut all = Updates::with_capacity(width, total);
        for part in parts {
            all.extend(&part);
        }
        Ok((schema, all))
    }

    /// Takes the error updates produced since the last call (all workers).
    pub fn errors_take(&mut self) -> Vec<ErrorUpdate> {
        let mut all = Vec::new();
        for w in self.workers.iter_mut() {
            all.append(&mut w.errors);
        }
        all
    }

    /// The operator log of all workers, in order of activation per worker.
    pub fn log(&self) -> Vec<LogEntry> {
        let mut all: Vec<LogEntry> = self
            .workers
            .iter()
            .flat_map(|w| w.log.iter().cloned())
            .collect();
        all.sort_by_key(|e| e.worker);
        all
    }

    /// Per-node sizes (trace updates, reduce output updates, reduce pending) for diagnostics.
    pub fn sizes(&self) -> Vec<(usize, usize, usize, usize)> {
        let w = &self.workers[0];
        (0..self.plan.nodes.len())
            .map(|n| {
                let t = w.traces[n].as_ref().map(|t| t.len()).unwrap_or(0);
                let (o, p) = w.ops[n].sizes();
                (n, t, o, p)
            })
            .filter(|x| x.1 + x.2 + x.3 > 0)
            .collect()
    }

    /// Heap bytes held by all traces (arrangements and reduce outputs).
    pub fn heap_bytes(&self) -> usize {
        self.sum_over_traces(|t| t.heap_bytes(), |op| op.heap_bytes())
    }

    /// The sum of `of_trace` over every worker's arrangements and `of_op` over its
    /// operators (which count the traces they own, such as a reduce's output).
    pub(super) fn sum_over_traces(
        &self,
        of_trace: impl Fn(&super::arrangement::Arrangement) -> usize,
        of_op: impl Fn(&dyn super::operators::Operator) -> usize,
    ) -> usize {
        self.workers
            .iter()
            .map(|w| {
                w.traces.iter().flatten().map(&of_trace).sum::<usize>()
                    + w.ops.iter().map(|op| of_op(op.as_ref())).sum::<usize>()
            })
            .sum()
    }

    /// Heap bytes per plan node, summed over workers: `(state, queued)`, the node's trace
    /// and operator state (what [`Engine::heap_bytes`] sums), and the updates waiting at its
    /// inputs (sent by upstream operators, not yet taken).
    pub fn node_heap_bytes(&self) -> Vec<(usize, usize)> {
        let mut bytes = vec![(0, 0); self.plan.nodes.len()];
        for w in &self.workers {
            for (node, b) in bytes.iter_mut().enumerate() {
                if let Some(t) = w.traces.get(node).and_then(|t| t.as_ref()) {
                    b.0 += t.heap_bytes();
                }
                b.0 += w.ops.get(node).map_or(0, |op| op.heap_bytes());
                let queued = w.inbox.get(node).into_iter().flatten().flatten();
                b.1 += queued.map(|m| m.upd.heap_bytes()).sum::<usize>();
            }
        }
        bytes
    }

    /// Updates stored in the trace of arrange node `node`, summed over workers.
    pub fn trace_len(&self, node: usize) -> Result<usize> {
        let t = self
            .trace_of
            .get(node)
            .copied()
            .flatten()
            .ok_or_else(|| Error::Value(format!("node {node} is not an arrangement")))?;
        Ok(self
            .workers
            .iter()
            .map(|w| w.traces[t].as_ref().map_or(0, |t| t.len()))
            .sum())
    }

    /// The frontier at a node's inputs (for `capture` and `probe`: what is complete).
    pub fn frontier(&self, node: usize) -> Result<Antichain<Time>> {
        self.frontier_in
            .get(node)
            .cloned()
            .ok_or_else(|| Error::Value(format!("no node {node}")))
    }

    /// Enables or disables the operator log.
    pub fn set_logging(&mut self, on: bool) {
        for w in self.workers.iter_mut() {
            w.logging = on;
        }
    }

    pub(super) fn trim_logs(&mut self) {
        let max = self.max_log;
        for w in self.workers.iter_mut() {
            if w.log.len() > max {
                let drop = w.log.len() - max / 2;
                w.log.drain(..drop);
            }
        }
    }
}
