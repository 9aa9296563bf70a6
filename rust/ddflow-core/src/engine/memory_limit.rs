//! The engine's memory limit: the limit it runs under, the check after each activation, and
//! the error that stops the run, naming the operator and the largest arrangements.
//!
//! The counter is process-wide (`crate::memory`): every engine and kernel in the process adds
//! to it, and each engine compares it with its own limit. Operators whose loops can allocate
//! without bound within one activation (reduce's per-key work, interesting times) check as
//! they go; the pass checks after every activation (so the count can pass the limit by what
//! one activation allocates: a join emits at most its fuel of products per activation). The
//! error lists the largest arrangements and input queues. An engine that passed its limit is
//! *stopped*: its state may be half-updated (an operator may have stopped partway through a
//! batch), so every later pass fails with the same error; inputs, captures and the engine
//! itself can still be read and dropped.

use super::Engine;
use crate::error::{Error, Result};
use crate::memory;

/// How many of the largest arrangements the error lists.
const LISTED: usize = 5;

/// The size of one arrangement (or input queue), summed over workers: its operator's label,
/// updates and heap bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrangementSize {
    pub label: String,
    pub updates: usize,
    pub bytes: usize,
}

impl Engine {
    /// Sets the memory limit in bytes (`None`: no limit). An engine starts with
    /// [`memory::default_limit`].
    pub fn set_memory_limit(&mut self, limit: Option<usize>) {
        self.memory_limit = limit;
    }

    /// The memory limit in bytes (`None`: no limit).
    pub fn memory_limit(&self) -> Option<usize> {
        self.memory_limit
    }

    /// The error that stopped the engine, if it passed its memory limit.
    pub fn stopped(&self) -> Option<&Error> {
        self.stopped.as_ref()
    }

    /// Fails if the engine was stopped; called at the start of every pass.
    pub(super) fn check_not_stopped(&self) -> Result<()> {
        match &self.stopped {
            None => Ok(()),
            Some(e) => Err(Error::MemoryLimit(format!(
                "the dataflow stopped at an earlier memory limit error and cannot continue \
                 (run it again with a larger memory_limit): {}",
                e.message()
            ))
            .with_operator(e.operator().unwrap_or("?"))),
        }
    }

    /// After `node` ran: fails if the live bytes exceed the limit.
    pub(super) fn check_memory(&self, node: usize) -> Result<()> {
        memory::check_against(self.memory_limit)
            .map_err(|e| e.with_operator(&self.plan.nodes[node].label))
    }

    /// Passes `err` through, except a memory limit error: that one stops the engine and
    /// gets the largest arrangements' sizes appended.
    pub(super) fn stop_on_memory_limit(&mut self, err: Error) -> Error {
        let Error::MemoryLimit(msg) = err.cause() else {
            return err;
        };
        let sizes = self.largest_arrangements(LISTED);
        let listed: Vec<String> = sizes
            .iter()
            .map(|s| {
                format!(
                    "{} ({} updates, {})",
                    s.label,
                    s.updates,
                    memory::human(s.bytes)
                )
            })
            .collect();
        let queues: Vec<String> = self
            .largest_queues(LISTED)
            .iter()
            .map(|s| {
                format!(
                    "{} ({} updates, {})",
                    s.label,
                    s.updates,
                    memory::human(s.bytes)
                )
            })
            .collect();
        let or_none = |v: Vec<String>| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        let full = Error::MemoryLimit(format!(
            "{msg}; largest arrangements: {}; largest input queues: {}",
            or_none(listed),
            or_none(queues)
        ));
        let full = match err.operator() {
            Some(op) => full.with_operator(op),
            None => full,
        };
        self.stopped = Some(full.clone());
        full
    }

    /// The `n` operators with the most updates queued at their inputs (the output of an
    /// upstream operator not yet consumed), summed over workers, by heap bytes.
    pub fn largest_queues(&self, n: usize) -> Vec<ArrangementSize> {
        let mut sizes: Vec<ArrangementSize> = self
            .plan
            .nodes
            .iter()
            .enumerate()
            .map(|(node, spec)| {
                let (mut updates, mut bytes) = (0, 0);
                for w in &self.workers {
                    for m in w.inbox.get(node).into_iter().flatten().flatten() {
                        updates += m.upd.len();
                        bytes += m.upd.heap_bytes();
                    }
                }
                ArrangementSize {
                    label: spec.label.clone(),
                    updates,
                    bytes,
                }
            })
            .filter(|s| s.updates > 0)
            .collect();
        sizes.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.updates.cmp(&a.updates)));
        sizes.truncate(n);
        sizes
    }

    /// The `n` largest arrangements by heap bytes (the traces of `arrange` nodes and the
    /// output traces of `reduce`s), summed over workers.
    pub fn largest_arrangements(&self, n: usize) -> Vec<ArrangementSize> {
        let mut sizes: Vec<ArrangementSize> = self
            .plan
            .nodes
            .iter()
            .enumerate()
            .map(|(node, spec)| {
                let (mut updates, mut bytes) = (0, 0);
                for w in &self.workers {
                    if let Some(t) = w.traces.get(node).and_then(|t| t.as_ref()) {
                        updates += t.len();
                        bytes += t.heap_bytes();
                    }
                    if let Some(op) = w.ops.get(node) {
                        updates += op.sizes().0;
                        bytes += op.heap_bytes();
                    }
                }
                ArrangementSize {
                    label: spec.label.clone(),
                    updates,
                    bytes,
                }
            })
            .filter(|s| s.updates > 0 || s.bytes > 0)
            .collect();
        sizes.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.updates.cmp(&a.updates)));
        sizes.truncate(n);
        sizes
    }
}
