//! Spilling cold trace batches to disk when the live bytes near the memory limit.
//!
//! After each activation (before the limit check) the engine compares the bytes live in
//! its heap (`crate::memory`) with its memory limit. Past [`SPILL_AT_PERCENT`] of it, it
//! writes cold batches of its traces to spill files until the live bytes are back near
//! [`SPILL_TO_PERCENT`]: the largest traces first (arrangements and reduce outputs, on
//! every worker), in each the largest batches that no merge in progress reads
//! ([`crate::trace::Spine::spill`]). A spilled batch reads from a read-only memory map of
//! its (already unlinked) file, so merges and cursors read it as before.
//!
//! A merge that starts while the heap is near the limit, with an output of at least a 64th
//! of it that would take the live bytes past [`SPILL_TO_PERCENT`], writes that output
//! straight to files in the spill directory ([`Engine::write_through`], see
//! `trace/stored.rs`): it never passes through the heap, and is not written again by a
//! later spill. Smaller merges, and all merges well under the limit, build on the heap.
//!
//! The spill directory is the persistence path's `spill/` when the dataflow persists, else
//! `DDFLOW_SPILL_DIR`, else the system's temporary directory
//! ([`crate::trace::spill::default_spill_dir`]). With no explicit limit the limit is 80% of
//! the machine's memory, so spilling starts only near that.

use super::Engine;
use crate::error::Result;
use crate::memory;
use std::path::PathBuf;
use std::sync::Arc;

/// The directory, live-bytes threshold and least output size of
/// [`crate::trace::spill::WriteThroughScope::new`].
pub(crate) type WriteThrough = (Option<Arc<PathBuf>>, usize, usize);

/// Spilling starts when the live bytes pass this share (percent) of the memory limit...
pub const SPILL_AT_PERCENT: usize = 70;
/// ...and stops once the spilled batches' heap bytes bring them back under this share.
pub const SPILL_TO_PERCENT: usize = 50;
/// Batches smaller than this are not spilled (nor smaller than a 256th of the limit):
/// each spill costs a file and a mapping.
const MAX_MIN_BATCH_BYTES: usize = 1 << 20;

impl Engine {
    /// Sets the directory spill files go to (`None`: the default, see the module docs).
    pub fn set_spill_dir(&mut self, dir: Option<PathBuf>) {
        self.spill_dir = dir;
        self.write_through_dir = std::sync::OnceLock::new();
    }

    /// The directory spill files go to.
    pub fn spill_dir(&self) -> PathBuf {
        self.spill_dir
            .clone()
            .unwrap_or_else(crate::trace::spill::default_spill_dir)
    }

    /// Where and when merges write large outputs through to files, for
    /// [`crate::trace::spill::WriteThroughScope`]: under a memory limit, to the spill
    /// directory, when an output of at least a 64th of the limit would take the live bytes
    /// past [`SPILL_TO_PERCENT`] of it. `(None, ..)` without a limit.
    pub(super) fn write_through(&self) -> WriteThrough {
        match self.memory_limit {
            Some(limit) => (
                Some(
                    self.write_through_dir
                        .get_or_init(|| Arc::new(self.spill_dir()))
                        .clone(),
                ),
                limit / 100 * SPILL_TO_PERCENT,
                limit / 64,
            ),
            None => (None, 0, 0),
        }
    }

    /// Bytes of the engine's traces held in spill files (mapped, not on the heap).
    pub fn spilled_bytes(&self) -> usize {
        self.sum_over_traces(|t| t.spilled_bytes(), |op| op.spilled_bytes())
    }

    /// Spills cold trace batches if the live bytes passed [`SPILL_AT_PERCENT`] of the
    /// limit (see the module docs). Errors: [`crate::Error::Spill`] if a file cannot be
    /// written or mapped (the traces are unchanged then).
    pub(super) fn spill_if_needed(&mut self) -> Result<()> {
        let Some(limit) = self.memory_limit else {
            return Ok(());
        };
        let live = memory::live_bytes();
        if live < limit / 100 * SPILL_AT_PERCENT {
            return Ok(());
        }
        let mut want = live.saturating_sub(limit / 100 * SPILL_TO_PERCENT);
        let min_bytes = (limit / 256).min(MAX_MIN_BATCH_BYTES);
        // (heap bytes, worker, node, whether the trace is the operator's own output).
        let mut traces: Vec<(usize, usize, usize, bool)> = Vec::new();
        for (wi, w) in self.workers.iter().enumerate() {
            for (node, t) in w.traces.iter().enumerate() {
                if let Some(t) = t {
                    traces.push((t.heap_bytes(), wi, node, false));
                }
            }
            for (node, op) in w.ops.iter().enumerate() {
                let bytes = op.output_trace_bytes();
                if bytes > 0 {
                    traces.push((bytes, wi, node, true));
                }
            }
        }
        traces.sort_unstable_by(|a, b| b.cmp(a));
        let dir = self.spill_dir();
        let mut created = false;
        let mut swaps = Vec::new();
        for (bytes, wi, node, own) in traces {
            if want == 0 || bytes < min_bytes {
                break;
            }
            if !created {
                std::fs::create_dir_all(&dir).map_err(|e| {
                    crate::Error::Spill(format!(
                        "cannot create the spill directory {}: {e}",
                        dir.display()
                    ))
                })?;
                created = true;
            }
            let w = &mut self.workers[wi];
            let freed = if own {
                w.ops[node].spill_output(&dir, want, min_bytes, &mut swaps)?
            } else {
                match w.traces[node].as_mut() {
                    Some(t) => t.spill(&dir, want, min_bytes, &mut swaps)?,
                    None => 0,
                }
            };
            want = want.saturating_sub(freed);
        }
        if !swaps.is_empty() {
            for w in self.workers.iter_mut() {
                for op in w.ops.iter_mut() {
                    op.swap_spilled(&swaps);
                }
            }
        }
        Ok(())
    }
}
