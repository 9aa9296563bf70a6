//! Candidate times of a reduce key that need no evaluation ("quiet" times).
//!
//! At a time `t` where the key's new updates (the activation's batch rows of the key)
//! accumulate to zero for every value, and no pending time of the key is at or below `t`,
//! the key's input accumulates to what it did before the activation. The output there was
//! right before the activation (every time where it might not be is at or above a pending
//! time), so the output at `t` must stay what it was: the difference to emit is minus the
//! output this activation already emitted at times at or below `t`, and nothing when that is
//! zero. differential-dataflow's history replay skips such times the same way: a time is
//! "interesting" only above a new update that has not cancelled, or above a pending or
//! synthesized time. A key whose new updates come and go within one batch (a BFS's
//! candidate distances at batches of thousands of rounds) has many candidate times above
//! new updates that cancel before them; the general path evaluated all of them.

use crate::lattice::{PartialOrder, Time};
use crate::updates::Updates;

/// Most comparisons the quiet-time checks may make for one key (see [`Quiet::affordable`]).
pub(super) const QUIET_MAX_WORK: usize = 1 << 20;

/// One key's new updates by value and its pending times, for [`Quiet::is_quiet`].
#[derive(Default)]
pub(super) struct Quiet {
    /// `(value rank, time, diff)` of the key's batch rows, in value-rank order.
    news: Vec<(u32, Time, i64)>,
    /// The key's pending times (from earlier activations).
    pending: Vec<Time>,
    /// Scratch: the batch rows in value order.
    order: Vec<usize>,
}

impl Quiet {
    /// Loads the key's batch rows `lo..hi` of `batch` (values after the `kw` key words, diffs
    /// not zero) and its pending times. Returns whether the key can have quiet times at all:
    /// every candidate time is at or above a new or a pending time, so only a value with
    /// diffs of both signs can sum to zero above a new time (with one row, or none such, the
    /// key is evaluated at every time as before, and nothing more is loaded).
    pub(super) fn load(
        &mut self,
        batch: &Updates,
        (lo, hi): (usize, usize),
        kw: usize,
        pending: &[Time],
    ) -> bool {
        self.news.clear();
        self.pending.clear();
        if hi - lo < 2 {
            return false;
        }
        let w = batch.width;
        let val = |i: usize| &batch.rows[i * w + kw..(i + 1) * w];
        self.order.clear();
        self.order.extend(lo..hi);
        if !self.order.windows(2).all(|p| val(p[0]) <= val(p[1])) {
            self.order.sort_by(|&a, &b| val(a).cmp(val(b)));
        }
        let mut rank = 0u32;
        for (j, &i) in self.order.iter().enumerate() {
            if j > 0 && val(self.order[j - 1]) != val(i) {
                rank += 1;
            }
            self.news.push((rank, batch.times[i], batch.diffs[i]));
        }
        let mut mixed = false;
        let mut signs = 0u8;
        for (j, &(rank, _, d)) in self.news.iter().enumerate() {
            if j > 0 && self.news[j - 1].0 != rank {
                signs = 0;
            }
            signs |= if d > 0 { 1 } else { 2 };
            mixed |= signs == 3;
        }
        if mixed {
            self.pending.extend_from_slice(pending);
        }
        mixed
    }

    /// Whether checking `candidates` times stays within [`QUIET_MAX_WORK`] comparisons:
    /// [`Quiet::is_quiet`] scans the new updates and pending times per candidate, and
    /// [`take_back`] the key's output so far (at most a few updates per candidate of a
    /// built-in aggregate) per quiet time. A key beyond it (many new updates, or a long
    /// history giving many candidates) is evaluated at every time, as without the check:
    /// its cost stays linear in its candidates instead of quadratic. The 1k/2k BFS at
    /// batches of 10,000 has about 100 new updates and 800 candidates per key.
    pub(super) fn affordable(&self, candidates: usize) -> bool {
        (self.news.len() + self.pending.len() + candidates).saturating_mul(candidates)
            <= QUIET_MAX_WORK
    }

    /// Whether no pending time is at or below `t` and the new updates at or below `t` sum to
    /// zero for every value (sums exact: in 128 bits).
    pub(super) fn is_quiet(&self, t: &Time) -> bool {
        if self.pending.iter().any(|p| p.less_equal(t)) {
            return false;
        }
        let news = &self.news;
        let mut i = 0;
        while i < news.len() {
            let rank = news[i].0;
            let mut sum: i128 = 0;
            while i < news.len() && news[i].0 == rank {
                if news[i].1.less_equal(t) {
                    sum += i128::from(news[i].2);
                }
                i += 1;
            }
            if sum != 0 {
                return false;
            }
        }
        true
    }
}

/// The output differences at a quiet time `t`: minus the net of `emitted` (this activation's
/// output of the key so far, as `(row id, time, diff)`) at or below `t`, per row id, added
/// into `want` (indexed by row id, grown as needed). Returns whether any is non-zero.
pub(super) fn take_back(emitted: &[(u32, Time, i64)], t: &Time, want: &mut Vec<i64>) -> bool {
    let mut any = false;
    for &(id, et, d) in emitted {
        if et.less_equal(t) {
            let id = id as usize;
            if want.len() <= id {
                want.resize(id + 1, 0);
            }
            want[id] -= d;
            any = true;
        }
    }
    any
}

#[cfg(test)]
#[path = "reduce_quiet_tests.rs"]
mod activation_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn t(x: u64, y: u64) -> Time {
        Time::from_coords(&[x, y])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// `is_quiet` against the definition: no pending time at or below `t`, and for every
        /// value the sum of its new updates' diffs at or below `t` is zero.
        #[test]
        fn is_quiet_matches_definition(
            rows in prop::collection::vec((0u64..4, 0u64..4, 0u64..4, prop_oneof![Just(i64::MAX), Just(i64::MIN), -2i64..0, 1i64..3]), 0..12),
            pending in prop::collection::vec((0u64..5, 0u64..5), 0..3),
            probe in (0u64..5, 0u64..5),
        ) {
            // Rows `(key 7, val)`, unsorted by val.
            let mut batch = Updates::new(2);
            for &(v, x, y, d) in &rows {
                batch.push(&[7, v], t(x, y), d);
            }
            let pending: Vec<Time> = pending.iter().map(|&(x, y)| t(x, y)).collect();
            let probe = t(probe.0, probe.1);
            let mut q = Quiet::default();
            let may = q.load(&batch, (0, batch.len()), 1, &pending);
            let mut sums: BTreeMap<u64, i128> = BTreeMap::new();
            for &(v, x, y, d) in &rows {
                if t(x, y).less_equal(&probe) {
                    *sums.entry(v).or_default() += i128::from(d);
                }
            }
            let want = !pending.iter().any(|p| p.less_equal(&probe))
                && sums.values().all(|&s| s == 0);
            if may {
                prop_assert_eq!(q.is_quiet(&probe), want);
            } else {
                // Then no candidate time (at or above a new or pending time) is quiet.
                let above_new = rows.iter().any(|&(_, x, y, _)| t(x, y).less_equal(&probe));
                let above_pending = pending.iter().any(|p| p.less_equal(&probe));
                prop_assert!(!(want && (above_new || above_pending)));
            }
        }

        /// The checks are affordable exactly while their comparisons stay within the bound.
        #[test]
        fn affordable_within_the_bound(news in 0usize..3000, cands in 0usize..3000) {
            let mut q = Quiet::default();
            q.news.resize(news, (0, Time::scalar(0), 1));
            prop_assert_eq!(q.affordable(cands), (news + cands) * cands <= QUIET_MAX_WORK);
        }

        /// `take_back` against summing the emitted diffs at or below `t` per id.
        #[test]
        fn take_back_matches_definition(
            emitted in prop::collection::vec((0u32..5, 0u64..4, 0u64..4, -3i64..4), 0..10),
            probe in (0u64..4, 0u64..4),
        ) {
            let emitted: Vec<(u32, Time, i64)> =
                emitted.iter().map(|&(id, x, y, d)| (id, t(x, y), d)).collect();
            let probe = t(probe.0, probe.1);
            let mut want = Vec::new();
            let any = take_back(&emitted, &probe, &mut want);
            let below: Vec<_> = emitted.iter().filter(|e| e.1.less_equal(&probe)).collect();
            prop_assert_eq!(any, !below.is_empty());
            for id in 0..5u32 {
                let s: i64 = below.iter().filter(|e| e.0 == id).map(|e| e.2).sum();
                prop_assert_eq!(want.get(id as usize).copied().unwrap_or(0), -s);
            }
        }
    }
}
