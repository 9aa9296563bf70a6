//! The keys with work in a `reduce` activation, handed out in key-ordered chunks.
//!
//! A key has work when the activation's batch has updates of it or one of its pending times
//! is complete. [`WorkSource`] merges the batch's key runs with the pending keys and hands
//! out at most `max_keys` keys with their times at a time, so that the per-key structures
//! of an activation (the work list, the output histories read for phase 3, the desired
//! groups) hold one chunk's keys instead of every key's: on the 1M/10M BFS the `min`
//! reduce's largest activation had ~1M keys with work, and those structures took ~250 MB
//! at once (see "Memory of a large load" in `ENGINE.md`).
//!
//! The pending keys without a complete time go to `still_pending` as they are passed. The
//! source keeps the other pending keys' times until the activation ends, so that a failed
//! activation can put everything that was pending or new back ([`WorkSource::restore`]).

use super::reduce::Pending;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// The default chunk of keys per pass of phases 1-3 (`DDFLOW_REDUCE_CHUNK_KEYS` overrides
/// it). 65,536 keys with one time each hold about 8 MB of work list.
pub const CHUNK_KEYS: usize = 1 << 16;

/// A chunk also ends once its keys hold this many new or complete pending times (a key
/// with more is a chunk of its own). Phase 1 evaluates each key at its interesting times,
/// a multiple of these, and the desired groups, histories and work list grow with them:
/// on the 1k/2k BFS at batches of 10,000 the `min` had ~100,000 new times on its 1,000
/// keys in one activation, whose groups alone took 10 MB at once.
pub const CHUNK_TIMES: usize = 1 << 12;

/// The chunk size of reduces built now: `DDFLOW_REDUCE_CHUNK_KEYS` if set to a positive
/// integer (tests set 1 so that every key is its own chunk), else [`CHUNK_KEYS`].
pub fn chunk_keys() -> usize {
    std::env::var("DDFLOW_REDUCE_CHUNK_KEYS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(CHUNK_KEYS)
}

/// The batch's keys merged with the pending keys, walked forward chunk by chunk.
pub(super) struct WorkSource<'a> {
    batch: &'a Updates,
    kw: usize,
    /// The next batch row not yet handed out.
    pos: usize,
    /// The pending keys at the activation's start (sorted by key, times sorted); an entry
    /// moved to `still_pending` is left empty.
    pending: Vec<(Vec<u64>, Vec<Time>)>,
    /// The next pending entry not yet looked at.
    next: usize,
}

impl<'a> WorkSource<'a> {
    /// Work from `batch` (sorted by key, keys of `kw` words) and the pending keys.
    pub(super) fn new(batch: &'a Updates, kw: usize, pending: Pending) -> Self {
        WorkSource {
            batch,
            kw,
            pos: 0,
            pending: pending.0,
            next: 0,
        }
    }

    /// At least as many as the times of the keys not handed out yet: the batch's rows left
    /// (one time each) and the pending times not looked at.
    pub(super) fn times_bound(&self) -> usize {
        let pending: usize = self.pending[self.next..].iter().map(|(_, t)| t.len()).sum();
        (self.batch.len() - self.pos.min(self.batch.len())) + pending
    }

    /// Whether every key has been handed out.
    pub(super) fn is_done(&self) -> bool {
        self.pos >= self.batch.len() && self.next >= self.pending.len()
    }

    fn batch_key(&self, row: usize) -> &'a [u64] {
        let (b, w) = (self.batch, self.batch.width);
        &b.rows[row * w..row * w + self.kw]
    }

    /// The end of the key run that starts at batch row `s`.
    fn run_end(&self, s: usize) -> usize {
        let key = self.batch_key(s);
        let mut e = s + 1;
        while e < self.batch.len() && self.batch_key(e) == key {
            e += 1;
        }
        e
    }

    /// The batch run `s..e`'s distinct times, sorted, with `more` (sorted) merged in.
    fn run_times(&self, s: usize, e: usize, more: &[Time]) -> Vec<Time> {
        let mut ts: Vec<Time> = Vec::with_capacity(e - s + more.len());
        ts.extend(self.batch.times.range_iter(s..e).copied());
        ts.extend_from_slice(more);
        ts.sort_unstable();
        ts.dedup();
        ts
    }

    /// Appends to `work` (cleared first) the next keys with work, at most `max_keys` of
    /// them, ending once they hold `max_times` times (at least one key), in key order: each with
    /// its new times and complete or not pending times, sorted. Pending keys passed
    /// without a complete time go to `still_pending`.
    pub(super) fn next_chunk(
        &mut self,
        (max_keys, max_times): (usize, usize),
        frontier: &Antichain<Time>,
        work: &mut Vec<(Vec<u64>, Vec<Time>)>,
        still_pending: &mut Pending,
    ) {
        work.clear();
        let n = self.batch.len();
        let mut chunk_times = 0;
        while work.len() < max_keys.max(1) && chunk_times < max_times {
            let batch_next = (self.pos < n).then(|| self.batch_key(self.pos));
            let pend_next = self.pending.get(self.next).map(|(k, _)| k.as_slice());
            match (batch_next, pend_next) {
                (None, None) => break,
                (Some(bk), p) if p.is_none_or(|pk| bk < pk) => {
                    let e = self.run_end(self.pos);
                    let ts = self.run_times(self.pos, e, &[]);
                    chunk_times += ts.len();
                    work.push((bk.to_vec(), ts));
                    self.pos = e;
                }
                (Some(bk), Some(pk)) if bk == pk => {
                    let e = self.run_end(self.pos);
                    let ts = self.run_times(self.pos, e, &self.pending[self.next].1);
                    chunk_times += ts.len();
                    work.push((bk.to_vec(), ts));
                    self.pos = e;
                    self.next += 1;
                }
                _ => {
                    let (key, times) = &mut self.pending[self.next];
                    if times.iter().any(|t| !frontier.less_equal(t)) {
                        // Kept here too until the activation ends (see `restore`).
                        let mut ts = times.clone();
                        ts.sort_unstable();
                        chunk_times += ts.len();
                        work.push((key.clone(), ts));
                    } else {
                        still_pending.insert(std::mem::take(key), std::mem::take(times));
                    }
                    self.next += 1;
                }
            }
        }
    }

    /// After a failed activation: every time that was pending or new, with `still_pending`
    /// (what the activation had set pending so far), normalized.
    pub(super) fn restore(mut self, mut still_pending: Pending) -> Pending {
        for (key, times) in std::mem::take(&mut self.pending) {
            if !times.is_empty() {
                still_pending.insert(key, times);
            }
        }
        let mut s = 0;
        while s < self.batch.len() {
            let e = self.run_end(s);
            let key = self.batch_key(s);
            for &t in self.batch.times.range_iter(s..e) {
                still_pending.push(key, t);
            }
            s = e;
        }
        still_pending.normalize();
        still_pending
    }
}

#[cfg(test)]
#[path = "reduce_work_tests.rs"]
mod tests;
