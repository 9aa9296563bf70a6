//! The engine's view of an arranged collection: a trace of sorted batches indexed by key.
//!
//! An [`Arrangement`] keeps batches of updates sorted by (row, time) and consolidated, where
//! the first `key_width` words of a row are its key. Batches are merged geometrically (a new
//! batch merges with the last one while it is at least half its size), and every merge
//! advances times to the compaction frontier, so a key's history stays bounded under
//! compaction. Readers (joins, reduces) look up a key's history with a binary search per
//! batch.

use super::util::consolidate;
use crate::lattice::{Antichain, Lattice, Time};
use crate::updates::Updates;

/// A trace of sorted, consolidated batches.
#[derive(Debug)]
pub struct Arrangement {
    /// Key words per row.
    pub key_width: usize,
    /// Words per row (key + val).
    pub width: usize,
    batches: Vec<Updates>,
    compaction: Antichain<Time>,
}

impl Arrangement {
    /// An empty arrangement of rows of `width` words keyed by the first `key_width`.
    pub fn new(key_width: usize, width: usize) -> Self {
        Arrangement {
            key_width,
            width,
            batches: Vec::new(),
            compaction: Antichain::from_elem(Time::minimum()),
        }
    }

    /// Stored updates.
    pub fn len(&self) -> usize {
        self.batches.iter().map(|b| b.len()).sum()
    }

    /// Whether the trace holds no updates.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held by the batches.
    pub fn heap_bytes(&self) -> usize {
        self.batches.iter().map(|b| b.heap_bytes()).sum()
    }

    /// Sets the frontier that merges advance times to.
    pub fn set_compaction(&mut self, frontier: &Antichain<Time>) {
        self.compaction = frontier.clone();
    }

    /// Inserts a batch sorted by (row, time) and consolidated.
    pub fn insert(&mut self, batch: Updates) {
        if batch.is_empty() {
            return;
        }
        self.batches.push(batch);
        while self.batches.len() >= 2 {
            let n = self.batches.len();
            if self.batches[n - 1].len() * 2 < self.batches[n - 2].len() {
                break;
            }
            let last = self.batches.pop().expect("two batches");
            let prev = self.batches.pop().expect("two batches");
            let merged = self.merge(prev, last);
            if !merged.is_empty() {
                self.batches.push(merged);
            }
        }
    }

    fn merge(&self, mut a: Updates, b: Updates) -> Updates {
        a.extend(&b);
        if !self.compaction.is_empty() {
            let f = self.compaction.elements();
            for t in a.times.iter_mut() {
                *t = t.advance_by(f);
            }
        }
        // Diffs were consolidated before, so sums cannot exceed what was accepted; an overflow
        // here would need 2^63 copies of one record and is reported as a panic (caught at the
        // Python boundary) rather than wrapped.
        consolidate(&mut a).expect("diff overflow while merging trace batches");
        a
    }

    /// Appends every update of `key` (from all batches) to `out`, as full rows.
    pub fn key_history(&self, key: &[u64], out: &mut Updates) {
        let kw = self.key_width;
        let w = self.width;
        for b in &self.batches {
            let n = b.len();
            let mut lo = 0;
            let mut hi = n;
            while lo < hi {
                let mid = (lo + hi) / 2;
                if &b.rows[mid * w..mid * w + kw] < key {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let mut i = lo;
            while i < n && &b.rows[i * w..i * w + kw] == key {
                out.push(&b.rows[i * w..(i + 1) * w], b.times[i], b.diffs[i]);
                i += 1;
            }
        }
    }

    /// Reads the whole trace back as one consolidated batch.
    pub fn to_updates(&self) -> Updates {
        let mut all = Updates::new(self.width);
        for b in &self.batches {
            all.extend(b);
        }
        consolidate(&mut all).expect("diff overflow while reading a trace");
        all
    }
}
