//! One val's updates in a merge: read from an input with their times advanced, then
//! consolidated into the builder's open val.
//!
//! Both merges (`merge.rs`, two batches progressively; `merge_all.rs`, many at once) gather
//! a val's updates from every input that holds it, oldest input first, into a [`ValScratch`],
//! and [`ValScratch::flush`] them. Inputs are consolidated and sorted by time, and advancing
//! (a join with the frontier's meet) rarely reorders times: usually it only makes
//! neighbours equal. So the gathered updates are sorted only when some time is below its
//! predecessor; otherwise equal neighbours are summed in one pass.
//!
//! When every time and the meet pack in one word (`packed.rs`), updates are gathered as
//! 16-byte `(packed time, diff)` pairs and summed as integers. Diffs are summed exactly: a
//! total outside `i64` is kept as several updates of the same time whose diffs sum to it.

use super::batch::Batch;
use super::builder::Builder;
use super::packed::{self, advance, PackedTimes};
use crate::lattice::Time;

/// Scratch for the open val's gathered updates.
#[derive(Debug, Default)]
pub(crate) struct ValScratch {
    /// Updates with full times (the merge's times do not all pack).
    general: Vec<(Time, i64)>,
    /// Updates with packed times.
    packed: Vec<(u64, i64)>,
}

/// How a merge reads one input's times: packed (its [`PackedTimes`] and the packed meet),
/// or in full (its single time already advanced, if it stores one, and the meet).
#[derive(Clone, Copy, Debug)]
pub(crate) enum TimeReading<'a> {
    Packed(&'a PackedTimes, u64),
    Full(Option<Time>, Option<&'a Time>),
}

impl ValScratch {
    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.general.capacity() * std::mem::size_of::<(Time, i64)>()
            + self.packed.capacity() * std::mem::size_of::<(u64, i64)>()
    }

    /// Appends the updates of val `v` of `batch`, advanced; returns how many were read.
    /// Every gather of one val must use the same kind of reading (packed or full).
    #[inline]
    pub(crate) fn gather(&mut self, batch: &Batch, v: usize, reading: TimeReading<'_>) -> usize {
        let range = batch.updates_of(v);
        let n = range.len();
        match reading {
            TimeReading::Packed(times, meet) => {
                packed::gather(batch, times, meet, range, &mut self.packed)
            }
            TimeReading::Full(Some(t), _) => {
                let s = &mut self.general;
                batch.for_each_update(range, |_, d| s.push((t, d)))
            }
            TimeReading::Full(None, meet) => {
                let s = &mut self.general;
                batch.for_each_update(range, |t, d| s.push((advance(t, meet), d)))
            }
        }
        n
    }

    /// Consolidates the gathered updates into the open val of `builder` and seals it (a val
    /// left without updates is dropped).
    #[inline]
    pub(crate) fn flush(&mut self, builder: &mut Builder, packed: bool) {
        if packed {
            self.flush_packed(builder);
        } else {
            self.flush_general(builder);
        }
    }

    /// [`ValScratch::flush`] of packed updates: summed as integers.
    #[inline]
    fn flush_packed(&mut self, builder: &mut Builder) {
        let s = &mut self.packed;
        // One pass, without branches: whether some time is below its predecessor, and
        // whether some equals it.
        let (mut unsorted, mut ties) = (false, false);
        for w in s.windows(2) {
            unsorted |= w[1].0 < w[0].0;
            ties |= w[1].0 == w[0].0;
        }
        if unsorted {
            s.sort_unstable_by_key(|x| x.0);
            ties = true;
        }
        if ties && !sum_equal_times(s) {
            // Rare: a total outside i64. The general path sums them exactly.
            self.general
                .extend(s.iter().map(|&(p, d)| (packed::unpack(p), d)));
            s.clear();
            return self.flush_general(builder);
        }
        builder.extend_packed(s);
        s.clear();
        builder.seal_val_nonzero();
    }

    /// [`ValScratch::flush`] of updates with full times.
    #[inline]
    fn flush_general(&mut self, builder: &mut Builder) {
        let s = &mut self.general;
        if s.len() > 1 && !s.windows(2).all(|w| w[0].0 < w[1].0) {
            if !s.windows(2).all(|w| w[0].0 <= w[1].0) {
                s.sort_unstable_by_key(|x| x.0);
            }
            let mut w = 0;
            let mut big: Vec<(Time, i64)> = Vec::new();
            for r in 1..s.len() {
                if s[r].0 == s[w].0 {
                    match s[w].1.checked_add(s[r].1) {
                        Some(d) => s[w].1 = d,
                        None => big.push(s[r]),
                    }
                } else {
                    w += 1;
                    s[w] = s[r];
                }
            }
            s.truncate(w + 1);
            if !big.is_empty() {
                // Rare: totals outside i64. Re-sum those times exactly and split them.
                s.append(&mut big);
                s.sort_unstable_by_key(|x| x.0);
                let mut exact: Vec<(Time, i64)> = Vec::with_capacity(s.len());
                crate::sort::consolidate::sum_runs_in_pieces(s, |t, d| exact.push((t, d)));
                *s = exact;
            }
        }
        for &(t, d) in s.iter() {
            if d != 0 {
                builder.push_update(t, d);
            }
        }
        s.clear();
        builder.seal_val_nonzero();
    }

    /// Pushes val `v` of `batch`, alone, into the open val of `builder` and seals it;
    /// returns the updates read.
    // Always in line: most vals hold one update, and the calls cost more than the copy.
    #[inline(always)]
    pub(crate) fn copy_val(
        &mut self,
        builder: &mut Builder,
        batch: &Batch,
        v: usize,
        reading: TimeReading<'_>,
    ) -> usize {
        let range = batch.updates_of(v);
        if range.len() != 1 {
            return self.copy_val_many(builder, batch, v, reading);
        }
        // One update (non-zero: inputs are consolidated): no sorting or summing.
        let u = range.start;
        let d = batch.diff(u);
        match reading {
            TimeReading::Packed(times, meet) => {
                builder.push_update_packed(packed::time_of(batch, times, meet, u), d)
            }
            TimeReading::Full(Some(t), _) => builder.push_update(t, d),
            TimeReading::Full(None, meet) => builder.push_update(advance(batch.time(u), meet), d),
        }
        builder.seal_val_nonzero();
        1
    }

    /// [`ValScratch::copy_val`] of a val with several updates.
    #[inline(never)]
    fn copy_val_many(
        &mut self,
        builder: &mut Builder,
        batch: &Batch,
        v: usize,
        reading: TimeReading<'_>,
    ) -> usize {
        let range = batch.updates_of(v);
        let n = range.len();
        match reading {
            TimeReading::Packed(times, meet) => {
                packed::gather(batch, times, meet, range, &mut self.packed);
                self.flush_packed(builder);
            }
            _ => {
                self.gather(batch, v, reading);
                self.flush_general(builder);
            }
        }
        n
    }
}

/// Sums the diffs of equal neighbouring times of `s` (sorted by time) in place and drops
/// zero totals. Returns false, leaving `s` as it was, if a total leaves `i64`.
#[inline]
fn sum_equal_times(s: &mut Vec<(u64, i64)>) -> bool {
    let n = s.len();
    // A first pass checks that every partial sum fits, so that a failure leaves `s` as it
    // was.
    let mut r = 0;
    while r < n {
        let t = s[r].0;
        let mut total: i64 = s[r].1;
        r += 1;
        while r < n && s[r].0 == t {
            match total.checked_add(s[r].1) {
                Some(x) => total = x,
                None => return false,
            }
            r += 1;
        }
    }
    let (mut w, mut r) = (0, 0);
    while r < n {
        let t = s[r].0;
        let mut total = s[r].1;
        r += 1;
        while r < n && s[r].0 == t {
            total += s[r].1;
            r += 1;
        }
        if total != 0 {
            s[w] = (t, total);
            w += 1;
        }
    }
    s.truncate(w);
    true
}
