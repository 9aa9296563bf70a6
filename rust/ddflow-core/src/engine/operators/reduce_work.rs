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
use crate::trace::packed::{pack, unpack};
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

/// Per key of a chunk's work: its rows in the batch and, if it has two or more (only such a
/// key can have quiet times, `reduce_quiet.rs`), its pending times, flat.
#[derive(Default)]
pub(super) struct PendingOf {
    times: Vec<Time>,
    /// `offs[i]..offs[i + 1]`: the work's key `i`'s times in `times`.
    offs: Vec<usize>,
    /// The work's key `i`'s batch rows `rows[i].0..rows[i].1`.
    rows: Vec<(usize, usize)>,
}

impl PendingOf {
    fn clear(&mut self) {
        self.times.clear();
        self.offs.clear();
        self.offs.push(0);
        self.rows.clear();
    }

    fn push(&mut self, (lo, hi): (usize, usize), times: &[Time]) {
        if hi - lo > 1 {
            self.times.extend_from_slice(times);
        }
        self.offs.push(self.times.len());
        self.rows.push((lo, hi));
    }

    /// The pending times of the chunk's key `i` (in the order they were pending) if it has
    /// two batch rows or more, else none.
    pub(super) fn of(&self, i: usize) -> &[Time] {
        &self.times[self.offs[i]..self.offs[i + 1]]
    }

    /// The batch rows of the chunk's key `i`.
    pub(super) fn rows(&self, i: usize) -> (usize, usize) {
        self.rows[i]
    }
}

/// A chunk's keys with work and each one's times (sorted, distinct), flat: no allocation
/// per key (two per key, a key and a times vector, were 3% of the 1k/2k BFS's instructions
/// at batches of 1,000).
#[derive(Default)]
pub(super) struct Work {
    /// Words per key.
    kw: usize,
    /// Key `i` is `keys[i * kw..(i + 1) * kw]`.
    keys: Vec<u64>,
    times: Vec<Time>,
    /// `offs[i]..offs[i + 1]`: key `i`'s times in `times`.
    offs: Vec<usize>,
    /// One key's times packed while they are sorted (`sort_dedup`).
    packed: Vec<u64>,
}

impl Work {
    /// Empties the list for keys of `kw` words.
    pub(super) fn clear(&mut self, kw: usize) {
        self.kw = kw;
        self.keys.clear();
        self.times.clear();
        self.offs.clear();
        self.offs.push(0);
    }

    /// Number of keys.
    pub(super) fn len(&self) -> usize {
        self.offs.len().saturating_sub(1)
    }

    /// Key `i`.
    pub(super) fn key(&self, i: usize) -> &[u64] {
        &self.keys[i * self.kw..(i + 1) * self.kw]
    }

    /// Key `i`'s times.
    pub(super) fn times(&self, i: usize) -> &[Time] {
        &self.times[self.offs[i]..self.offs[i + 1]]
    }

    /// Every key's times, key after key.
    pub(super) fn all_times(&self) -> &[Time] {
        &self.times
    }

    /// The keys with their times, in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[u64], &[Time])> + '_ {
        (0..self.len()).map(|i| (self.key(i), self.times(i)))
    }

    /// Adds key `key` with the times `times` followed by `more` (both sorted or not),
    /// sorted and deduplicated; returns how many times it has.
    pub(super) fn push(
        &mut self,
        key: &[u64],
        times: impl Iterator<Item = Time>,
        more: &[Time],
    ) -> usize {
        debug_assert_eq!(key.len(), self.kw);
        let from = self.times.len();
        self.keys.extend_from_slice(key);
        self.times.extend(times);
        self.times.extend_from_slice(more);
        let n = sort_dedup(&mut self.times[from..], &mut self.packed);
        self.times.truncate(from + n);
        self.offs.push(self.times.len());
        n
    }

    /// Heap bytes held (the buffers' capacity).
    pub(super) fn heap_bytes(&self) -> usize {
        (self.keys.capacity() + self.offs.capacity() + self.packed.capacity()) * 8
            + self.times.capacity() * size_of::<Time>()
    }
}

/// Sorts `ts` and moves its distinct times to the front; returns how many there are. A run
/// already sorted (a key's one time, or times arriving in order) is not sorted again; times
/// of two coordinates below 2^32 (the BFS's) are sorted as packed words in `packed` (a
/// word compare instead of a four-word one).
fn sort_dedup(ts: &mut [Time], packed: &mut Vec<u64>) -> usize {
    if ts.is_sorted() {
        return dedup_sorted(ts);
    }
    packed.clear();
    packed.extend(ts.iter().map_while(pack));
    if packed.len() < ts.len() {
        ts.sort_unstable();
        return dedup_sorted(ts);
    }
    packed.sort_unstable();
    packed.dedup();
    for (t, &p) in ts.iter_mut().zip(packed.iter()) {
        *t = unpack(p);
    }
    packed.len()
}

/// Moves the distinct times of the sorted `ts` to its front; returns how many there are.
fn dedup_sorted(ts: &mut [Time]) -> usize {
    let mut n = 0;
    for i in 0..ts.len() {
        if n == 0 || ts[i] != ts[n - 1] {
            ts[n] = ts[i];
            n += 1;
        }
    }
    n
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

    /// Appends to `work` (cleared first) the next keys with work, at most `max_keys` of
    /// them, ending once they hold `max_times` times (at least one key), in key order: each with
    /// its new times and complete or not pending times, sorted, and each one's pending times
    /// into `pending_of`. Pending keys passed without a complete time go to `still_pending`.
    pub(super) fn next_chunk(
        &mut self,
        (max_keys, max_times): (usize, usize),
        frontier: &Antichain<Time>,
        work: &mut Work,
        pending_of: &mut PendingOf,
        still_pending: &mut Pending,
    ) {
        work.clear(self.kw);
        pending_of.clear();
        let n = self.batch.len();
        let mut chunk_times = 0;
        while work.len() < max_keys.max(1) && chunk_times < max_times {
            let batch_next = (self.pos < n).then(|| self.batch_key(self.pos));
            let pend_next = self.pending.get(self.next).map(|(k, _)| k.as_slice());
            match (batch_next, pend_next) {
                (None, None) => break,
                (Some(bk), p) if p.is_none_or(|pk| bk < pk) => {
                    let e = self.run_end(self.pos);
                    let ts = self.batch.times.range_iter(self.pos..e).copied();
                    chunk_times += work.push(bk, ts, &[]);
                    pending_of.push((self.pos, e), &[]);
                    self.pos = e;
                }
                (Some(bk), Some(pk)) if bk == pk => {
                    let e = self.run_end(self.pos);
                    let ts = self.batch.times.range_iter(self.pos..e).copied();
                    chunk_times += work.push(bk, ts, &self.pending[self.next].1);
                    pending_of.push((self.pos, e), &self.pending[self.next].1);
                    self.pos = e;
                    self.next += 1;
                }
                _ => {
                    let (key, times) = &mut self.pending[self.next];
                    if times.iter().any(|t| !frontier.less_equal(t)) {
                        // Kept here too until the activation ends (see `restore`).
                        chunk_times += work.push(key, std::iter::empty(), times);
                        pending_of.push((0, 0), work.times(work.len() - 1));
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
