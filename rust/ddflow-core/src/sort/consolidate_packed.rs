//! Consolidation fused with the sort, for a batch whose whole `(row, time)` key packs into
//! one `u64` beside the update's index (`packed_key.rs`): the common case (node ids, small
//! values and 2-D times of a BFS: about 30 key bits and 11 index bits).
//!
//! Each update becomes one word, `key << index_bits | index`; the words are sorted (radix
//! passes over the key's varying bits only, or `sort_unstable` when few: the index makes
//! every word distinct, so either order is the stable one). Equal keys are equal
//! `(row, time)`, so the sorted words are read once, run by run: each run's diffs are
//! summed (exactly, as `consolidate.rs` does: a total outside `i64` is kept as pieces and
//! reported) and only a non-zero total gathers its row and time into the output columns.
//! No permutation is extracted, no update that cancels is moved, and no row or time is
//! compared.

use super::consolidate::{pieces, row_time_overflow};
use super::packed_key::pack_with_index;
use super::radix::{index_bits, SortKey};
use super::{empty_with_room, scratch, RadixSorter, SMALL_U64};
use crate::error::{Error, Result};
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
        empty_with_room(&mut self.rows_buf, n * w);
        empty_with_room(&mut self.times_buf, if times.is_some() { n } else { 0 });
        empty_with_room(&mut self.diffs_buf, n);
        let out = Columns {
            rows: &mut self.rows_buf,
            times: &mut self.times_buf,
            diffs: &mut self.diffs_buf,
        };
        let first_time = updates.times.first().copied().unwrap_or_default();
        let err = match w {
            1 => sum_runs::<1>(
                sorted,
                ib,
                &updates.rows,
                1,
                times,
                first_time,
                &updates.diffs,
                out,
            ),
            2 => sum_runs::<2>(
                sorted,
                ib,
                &updates.rows,
                2,
                times,
                first_time,
                &updates.diffs,
                out,
            ),
            _ => sum_runs::<0>(
                sorted,
                ib,
                &updates.rows,
                w,
                times,
                first_time,
                &updates.diffs,
                out,
            ),
        };
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

/// The output columns of [`sum_runs`], with room for every update of the batch.
struct Columns<'a> {
    rows: &'a mut Vec<u64>,
    times: &'a mut Vec<Time>,
    diffs: &'a mut Vec<i64>,
}

/// Reads `sorted` (`key << ib | index` words in key order) run by run, and for each run of
/// equal keys with a non-zero total appends the row (`W` words, or `w` when `W` is 0), the
/// time (when `times` is given; else all updates are at `one_time`) and the total (or its
/// pieces) to `out`. Returns the error naming the first run whose total does not fit an
/// `i64`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn sum_runs<const W: usize>(
    sorted: &[u64],
    ib: u32,
    rows: &[u64],
    w: usize,
    times: Option<&[Time]>,
    one_time: Time,
    diffs: &[i64],
    out: Columns<'_>,
) -> Option<Error> {
    let w = if W > 0 { W } else { w };
    let n = sorted.len();
    // Written through the spare capacity (a run keeps at most as many updates as it has),
    // without a capacity check per push.
    assert!(
        out.rows.capacity() >= n * w
            && out.diffs.capacity() >= n
            && (times.is_none() || out.times.capacity() >= n)
    );
    let rows_out = &mut out.rows.spare_capacity_mut()[..n * w];
    let times_out = &mut out.times.spare_capacity_mut()[..];
    let diffs_out = &mut out.diffs.spare_capacity_mut()[..n];
    let mut kept = 0;
    // Appends update `e` with diff `d` at slot `kept`.
    macro_rules! emit {
        ($e:expr, $d:expr) => {{
            let (e, d): (usize, i64) = ($e, $d);
            for c in 0..w {
                rows_out[kept * w + c].write(rows[e * w + c]);
            }
            if let Some(times) = times {
                times_out[kept].write(times[e]);
            }
            diffs_out[kept].write(d);
            kept += 1;
        }};
    }
    let index_mask = (1u64 << ib) - 1;
    let mut err = None;
    let mut i = 0;
    while i < n {
        let x = sorted[i];
        let e = (x & index_mask) as usize;
        let d = diffs[e];
        // Most runs are single updates: no wide sum then.
        if i + 1 == n || (sorted[i + 1] ^ x) > index_mask {
            if d != 0 {
                emit!(e, d);
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
            Ok(d) => emit!(e, d),
            Err(_) => {
                if err.is_none() {
                    let t = times.map_or(one_time, |ts| ts[e]);
                    err = Some(row_time_overflow(&rows[e * w..(e + 1) * w], &t, total));
                }
                pieces(total, |d| emit!(e, d));
            }
        }
        i = j;
    }
    // SAFETY: the first `kept` updates' slots (`kept * w` row words, `kept` times when
    // times move, `kept` diffs) were written above, within the capacity asserted.
    unsafe {
        out.rows.set_len(kept * w);
        if times.is_some() {
            out.times.set_len(kept);
        }
        out.diffs.set_len(kept);
    }
    err
}
