//! Consolidation fused with the sort, for a batch whose whole `(row, time)` key packs into
//! one `u64` beside the update's index (`packed_key.rs`): the common case (node ids, small
//! values and 2-D times of a BFS: about 30 key bits and 11 index bits).
//!
//! Each update becomes one word, `key << index_bits | index`; the words are sorted (radix
//! passes over the key's varying bits only, or `sort_unstable` when few: the index makes
//! every word distinct, so either order is the stable one). Equal keys are equal
//! `(row, time)`, so the sorted words are read once, run by run: each run's diffs are
//! summed (exactly, as `consolidate.rs` does: a total outside `i64` is kept as pieces and
//! reported), and a non-zero total is written to the output diffs with the index of the
//! run's first update. The rows and times of those indexes are then gathered column by
//! column (loops of a few registers each, rather than one loop juggling all columns). No
//! update that cancels is moved, and no row or time is compared.

use super::consolidate::{pieces, row_time_overflow};
use super::packed_key::pack_with_index;
use super::radix::{index_bits, SortKey};
use super::{empty_with_room, scratch, RadixSorter, SMALL_U64};
use crate::error::Result;
use crate::lattice::Time;
use crate::updates::Updates;

impl RadixSorter {
    /// Consolidates `updates` (unsorted, at least two) when the key planned in
    /// `self.layout` is one chunk that fits beside the index; returns `None` (nothing done)
    /// otherwise.
    pub(super) fn consolidate_packed(&mut self, updates: &mut Updates) -> Option<Result<()>> {
        let n = updates.len();
        let w = updates.width;
        let ib = index_bits(n);
        let [(end, bits)] = self.layout.chunks[..] else {
            return None;
        };
        if bits + ib > 64 {
            return None;
        }
        let one_time = updates.times.same().copied();
        let times: &[Time] = match one_time {
            Some(_) => &[],
            None => &updates.times[..],
        };
        let parts = &self.layout.parts[..end];
        pack_with_index(parts, &updates.rows, times, w, n, ib, &mut self.packed);
        let in_buf = if n < self.min_radix.unwrap_or(SMALL_U64) {
            self.packed.sort_unstable();
            false
        } else {
            let index_mask = (1u64 << ib) - 1;
            let keys = [SortKey {
                word: 0,
                mask: !index_mask,
            }];
            let varying = [self.layout.first_chunk_varying() << ib, 0, 0, 0];
            let buf = scratch(&mut self.u64_buf, n, 0);
            self.lsd
                .sort_masked(&mut self.packed[..n], buf, &keys, &varying)
        };
        let sorted = if in_buf {
            &self.u64_buf[..n]
        } else {
            &self.packed[..n]
        };

        // Times move only when some coordinate varies; otherwise every output update keeps
        // the column's one time (a column held as one time stays so).
        let times = (one_time.is_none() && self.layout.times_vary(w)).then_some(times);
        empty_with_room(&mut self.diffs_buf, n);
        let overflow = sum_runs(
            sorted,
            ib,
            &updates.diffs,
            &mut self.perm,
            &mut self.diffs_buf,
        );
        let keep = &self.perm;
        empty_with_room(&mut self.rows_buf, keep.len() * w);
        match w {
            1 => gather_rows::<1>(&updates.rows, 1, keep, &mut self.rows_buf),
            2 => gather_rows::<2>(&updates.rows, 2, keep, &mut self.rows_buf),
            _ => gather_rows::<0>(&updates.rows, w, keep, &mut self.rows_buf),
        }
        if let Some(times) = times {
            empty_with_room(&mut self.times_buf, keep.len());
            self.times_buf
                .extend(keep.iter().map(|&e| times[e as usize]));
        }
        let err = overflow.map(|(e, total)| {
            let t = times.map_or(updates.times.first().copied().unwrap_or_default(), |ts| {
                ts[e]
            });
            row_time_overflow(&updates.rows[e * w..(e + 1) * w], &t, total)
        });
        let kept = self.diffs_buf.len();
        std::mem::swap(&mut self.rows_buf, &mut updates.rows);
        std::mem::swap(&mut self.diffs_buf, &mut updates.diffs);
        if times.is_some() {
            std::mem::swap(&mut self.times_buf, updates.times.make_mut());
        } else {
            updates.times.truncate(kept);
        }
        self.trim();
        Some(err.map_or(Ok(()), Err))
    }
}

/// Reads `sorted` (`key << ib | index` words in key order) run by run, and for each run of
/// equal keys with a non-zero total appends the index of its first update to `keep` and
/// the total (or its pieces, each with the index again) to `kept_diffs`. Returns the index
/// and total of the first run whose total does not fit an `i64`.
fn sum_runs(
    sorted: &[u64],
    ib: u32,
    diffs: &[i64],
    keep: &mut Vec<u32>,
    kept_diffs: &mut Vec<i64>,
) -> Option<(usize, i128)> {
    keep.clear();
    keep.reserve(sorted.len());
    kept_diffs.reserve(sorted.len());
    let index_mask = (1u64 << ib) - 1;
    let n = sorted.len();
    let mut overflow = None;
    let mut i = 0;
    while i < n {
        let x = sorted[i];
        let e = (x & index_mask) as usize;
        let d = diffs[e];
        // Most runs are single updates: no wide sum then.
        if i + 1 == n || (sorted[i + 1] ^ x) > index_mask {
            if d != 0 {
                keep.push(e as u32);
                kept_diffs.push(d);
            }
            i += 1;
            continue;
        }
        let mut total = d as i128;
        let mut j = i + 1;
        while j < n && (sorted[j] ^ x) <= index_mask {
            total += diffs[(sorted[j] & index_mask) as usize] as i128;
            j += 1;
        }
        match i64::try_from(total) {
            Ok(0) => {}
            Ok(d) => {
                keep.push(e as u32);
                kept_diffs.push(d);
            }
            Err(_) => {
                if overflow.is_none() {
                    overflow = Some((e, total));
                }
                pieces(total, |d| {
                    keep.push(e as u32);
                    kept_diffs.push(d);
                });
            }
        }
        i = j;
    }
    overflow
}

/// Appends the rows (of `W` words, or `w` when `W` is 0) of the updates `keep` to `out`.
fn gather_rows<const W: usize>(rows: &[u64], w: usize, keep: &[u32], out: &mut Vec<u64>) {
    let w = if W > 0 { W } else { w };
    match W {
        1 => out.extend(keep.iter().map(|&e| rows[e as usize])),
        _ => {
            for &e in keep {
                let e = e as usize;
                out.extend_from_slice(&rows[e * w..(e + 1) * w]);
            }
        }
    }
}
