//! What merging a trace whole gains over merging only its newer batches, estimated on a
//! sample of keys.
//!
//! A trace's oldest batch is usually its largest (the last full merge). Merging every
//! batch into one re-reads it; merging only the newer batches leaves it as it is, and
//! misses what the oldest batch's updates would cancel or collapse under the current
//! frontier: among themselves (their times advanced to a later meet) or against the newer
//! batches' updates. [`sample_gain`] counts, for every `stride`-th key of the oldest batch,
//! the updates both merges would leave, by advancing (a join with the frontier's meet),
//! sorting and summing the key's updates.

use super::batch::Batch;
use super::packed::advance;
use crate::lattice::Time;
use std::sync::Arc;

/// Updates left for the sampled keys by each kind of merge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gain {
    /// Updates of the sampled keys stored now (every batch).
    pub stored: usize,
    /// Left by merging only the newer batches: the oldest batch's as stored, plus the
    /// newer batches' consolidated.
    pub newer_merged: usize,
    /// Left by merging every batch.
    pub all_merged: usize,
}

impl Gain {
    /// Updates that merging every batch removes and merging the newer ones does not.
    pub fn missed(&self) -> usize {
        self.newer_merged - self.all_merged
    }
}

/// Samples every `stride`-th key of `oldest` (from the first) and counts what merging
/// `newer` alone and merging `oldest` with `newer` leave of them, times advanced by `meet`
/// (`None`: the empty frontier, which advances nothing).
pub fn sample_gain(
    oldest: &Batch,
    newer: &[Arc<Batch>],
    meet: Option<&Time>,
    stride: usize,
) -> Gain {
    let (kw, vw) = (oldest.key_width(), oldest.val_width());
    let mut gain = Gain::default();
    let mut key = Vec::with_capacity(kw);
    // (val, advanced time, diff) of one key: the oldest batch's, then all.
    let mut old_ups: Vec<(Vec<u64>, Time, i64)> = Vec::new();
    let mut new_ups: Vec<(Vec<u64>, Time, i64)> = Vec::new();
    let mut pos = vec![0usize; newer.len()];
    let mut k = 0;
    while k < oldest.n_keys() {
        key.clear();
        oldest.extend_key(k, &mut key);
        old_ups.clear();
        new_ups.clear();
        gather_key(oldest, k, vw, meet, &mut old_ups);
        for (b, p) in newer.iter().zip(pos.iter_mut()) {
            *p = b.seek_key_from(*p, &key);
            if *p < b.n_keys() && b.cmp_key(*p, &key).is_eq() {
                gather_key(b, *p, vw, meet, &mut new_ups);
            }
        }
        let stored_old = oldest.updates_of_key(k).len();
        gain.stored += stored_old + new_ups.len();
        gain.newer_merged += stored_old + consolidated_len(&mut new_ups);
        new_ups.append(&mut old_ups);
        gain.all_merged += consolidated_len(&mut new_ups);
        k += stride.max(1);
    }
    gain
}

/// Appends key `k`'s updates of `batch` as `(val, advanced time, diff)`.
fn gather_key(
    batch: &Batch,
    k: usize,
    vw: usize,
    meet: Option<&Time>,
    out: &mut Vec<(Vec<u64>, Time, i64)>,
) {
    let mut val = Vec::with_capacity(vw);
    for v in batch.vals_of(k) {
        val.clear();
        batch.extend_val(v, &mut val);
        batch.for_each_update(batch.updates_of(v), |t, d| {
            out.push((val.clone(), advance(t, meet), d))
        });
    }
}

/// The number of `(val, time)`s of `ups` whose diffs do not sum to zero (sorts `ups`).
fn consolidated_len(ups: &mut [(Vec<u64>, Time, i64)]) -> usize {
    ups.sort_unstable_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let mut n = 0;
    let mut i = 0;
    while i < ups.len() {
        let mut total: i128 = 0;
        let mut j = i;
        while j < ups.len() && ups[j].0 == ups[i].0 && ups[j].1 == ups[i].1 {
            total += i128::from(ups[j].2);
            j += 1;
        }
        n += usize::from(total != 0);
        i = j;
    }
    n
}
