//! Consolidating updates with the thread's radix sorter (`sort::with_thread_sorter`, shared
//! by the engine's operators, trace batches and the bindings' kernels).

use crate::error::Result;
use crate::updates::Updates;

/// Sorts updates by (row, time), sums diffs of equal (row, time) and drops zeros (radix
/// sort with reused buffers). Sums are exact: a total outside `i64` is kept as several
/// updates of the same row and time that sum to it (never wrapped, never an error), so no
/// update is ever dropped; whoever finally accumulates them checks the range.
pub fn consolidate(upd: &mut Updates) -> Result<()> {
    if upd.len() <= 1 {
        if upd.diffs.first() == Some(&0) {
            upd.clear();
        }
        return Ok(());
    }
    match crate::sort::with_thread_sorter(|s| s.consolidate_updates(upd)) {
        // The data is left sorted and equivalent (see `sort::consolidate`).
        Err(crate::error::Error::Overflow(_)) => Ok(()),
        other => other,
    }
}
