//! Consolidating updates with the thread's radix sorter (`sort::with_thread_sorter`, shared
//! by the engine's operators, trace batches and the bindings' kernels), and consolidating
//! several batches into one, merging those that are sorted already (`merge_sorted`).

pub mod merge_sorted;

use crate::error::Result;
use crate::updates::Updates;
use merge_sorted::{is_sorted, merge_consolidated};

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

/// Below this many updates in all, [`consolidate_parts`] sorts the concatenation (a
/// comparison sort, below [`crate::sort::SMALL_UPDATES`]) instead of looking for sorted
/// parts and merging: the merge's fixed costs (its heap, the output's columns) outweigh
/// what it saves. Measured on the 1k/2k distance-counts job at batches of 10 (parts of a few
/// updates): 12.8 M instructions in 4,297 merges without it.
pub const MERGE_FROM: usize = 128;

/// The updates of `parts` (rows of `width` words) as one batch, as [`consolidate`] of their
/// concatenation leaves it. The parts already sorted by (row, time) are consolidated where
/// they lie; the others are concatenated and sorted together (one sort); then all of them
/// are merged ([`merge_consolidated`]). Parts released by an `arrange` are often sorted
/// already (a reduce's output, or one time's slice of it): they are not sorted again.
pub fn consolidate_parts(mut parts: Vec<Updates>, width: usize) -> Result<Updates> {
    parts.retain(|p| !p.is_empty());
    let total: usize = parts.iter().map(|p| p.len()).sum();
    if parts.len() <= 1 || total < MERGE_FROM {
        let mut upd = parts.pop().unwrap_or_else(|| Updates::new(width));
        if !parts.is_empty() {
            let mut all = Updates::with_capacity(width, total);
            for p in parts.iter().chain([&upd]) {
                all.extend(p);
            }
            upd = all;
        }
        consolidate(&mut upd)?;
        return Ok(upd);
    }
    let (mut sorted, unsorted): (Vec<Updates>, Vec<Updates>) =
        parts.into_iter().partition(is_sorted);
    for part in &mut sorted {
        match crate::sort::consolidate_sorted(part) {
            // Left sorted and equivalent, as in `consolidate`.
            Err(crate::error::Error::Overflow(_)) => {}
            other => other?,
        }
    }
    let mut unsorted = unsorted.into_iter();
    if let Some(mut all) = unsorted.next() {
        let rest: Vec<Updates> = unsorted.collect();
        if !rest.is_empty() {
            let n: usize = rest.iter().map(|u| u.len()).sum();
            all.rows.reserve(n * width);
            all.times.reserve(n);
            all.diffs.reserve(n);
            for u in &rest {
                all.extend(u);
            }
        }
        consolidate(&mut all)?;
        sorted.push(all);
    }
    Ok(merge_consolidated(sorted, width))
}

#[cfg(test)]
mod tests {
    //! `consolidate_parts` against consolidating the concatenation (`Updates::extend`).

    use super::*;
    use crate::lattice::Time;
    use crate::time_column::TimeColumn;
    use proptest::prelude::*;

    proptest! {
        // Parts in random order or sorted, some held as one time, of few distinct rows and
        // times (so updates of different parts cancel), below and above `MERGE_FROM` in all.
        #[test]
        fn parts_consolidate_as_their_concatenation(
            width in 0usize..4,
            parts in prop::collection::vec(
                (
                    prop::collection::vec(
                        (prop::collection::vec(0u64..4, 3), [0u64..3, 0u64..3], -2i64..3),
                        0..90,
                    ),
                    0u8..3,
                ),
                0..6,
            ),
        ) {
            let parts: Vec<Updates> = parts
                .into_iter()
                .map(|(ups, shape)| {
                    let mut u = Updates::new(width);
                    for (r, t, d) in &ups {
                        u.push(&r[..width], Time::from_coords(t), *d);
                    }
                    match shape {
                        // Held as one time.
                        1 => u.times = TimeColumn::repeat(Time::from_coords(&[1, 2]), u.len()),
                        // Sorted (and summed): consolidated where it lies, then merged.
                        2 => consolidate(&mut u).unwrap(),
                        _ => {}
                    }
                    u
                })
                .collect();
            let mut all = Updates::new(width);
            for p in &parts {
                all.extend(p);
            }
            consolidate(&mut all).unwrap();
            let got = consolidate_parts(parts, width).unwrap();
            prop_assert_eq!(got.width, width);
            prop_assert_eq!(got.columns(), all.columns());
        }
    }
}
