//! The engine's view of an arranged collection: a [`Spine`] of immutable batches indexed by
//! key, plus a forward-only [`Reader`] that returns a key's history as full rows.
//!
//! Rows are `key ++ val` (`key_width` + `val_width` words). Each inserted batch is sorted by
//! (row, time) and consolidated; its description runs from the spine's upper to the
//! frontier of the inserting operator. Merges happen progressively inside the spine and
//! advance times by the compaction frontier (the meet of the readers' frontiers, set by the
//! engine), so a key's history stays bounded as frontiers advance.

use super::column::Schema;
use crate::lattice::{Antichain, Lattice, Time};
use crate::trace::batch::Batch;
use crate::trace::cursor::Cursor;
use crate::trace::description::Description;
use crate::trace::spine::Spine;
use crate::updates::Updates;
use std::sync::Arc;

/// A trace of batches, keyed by the first `key_width` words of each row.
pub struct Arrangement {
    /// Key words per row.
    pub key_width: usize,
    /// Words per row (key + val).
    pub width: usize,
    /// Dtypes of the rows (key columns first), fixed by the first batch.
    pub schema: Option<Schema>,
    spine: Spine,
    /// Updates the compaction frontier has passed since the trace was last merged into one
    /// compacted batch (counted when it passes their batch's upper).
    since_full: usize,
    /// Batches inserted (their upper and length) that the compaction frontier has not yet
    /// passed: a merge cannot compact them yet (see [`Arrangement::set_compaction`]).
    ahead: Vec<Ahead>,
    /// See [`full_merge_ratio`].
    full_merge_ratio: usize,
}

impl std::fmt::Debug for Arrangement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Arrangement(key_width={}, width={}, len={})",
            self.key_width,
            self.width,
            self.len()
        )
    }
}

/// Reads key histories from an arrangement, keys in increasing order.
pub struct Reader {
    cursor: Cursor,
}

impl Reader {
    /// Marks the words of the batches the reader reads: a reader kept across activations
    /// (a fueled join's rest) holds batches the trace may have merged away since.
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.cursor.mark_strings(marks);
    }

    /// Appends every update of `key` to `out` as full rows (`key ++ val`), batch by batch
    /// and not consolidated (readers sum diffs themselves). Keys must be asked for in
    /// increasing order.
    pub fn key_history(&mut self, key: &[u64], out: &mut Updates) {
        if self.cursor.seek_key(key) {
            self.cursor.for_each_val_update(|val, t, d| {
                out.rows.extend_from_slice(key);
                out.rows.extend_from_slice(val);
                out.times.push(t);
                out.diffs.push(d);
            });
        }
    }

    /// Calls `f(val, time, diff)` for every update of `key`, batch by batch and not
    /// consolidated (as [`Reader::key_history`], without writing rows out); returns whether
    /// the key has updates. Keys must be asked for in increasing order.
    #[inline]
    pub fn for_each_key_update<F: FnMut(&[u64], Time, i64)>(&mut self, key: &[u64], f: F) -> bool {
        let found = self.cursor.seek_key(key);
        if found {
            self.cursor.for_each_val_update(f);
        }
        found
    }

    /// Appends every update of `key` to `out` as `(val, time, diff)`, the time packed as
    /// `x << 32 | y` and joined with `meet` (see [`Cursor::gather_packed`]), batch by batch
    /// and not consolidated; for vals of at most one word. Returns false when some batch's
    /// times do not pack (`out` then holds part of the key's updates). Keys must be asked
    /// for in increasing order; asking for the same key again reads it again.
    #[inline]
    pub fn gather_key_packed(
        &mut self,
        key: &[u64],
        meet: u64,
        out: &mut Vec<(u64, u64, i64)>,
    ) -> bool {
        !self.cursor.seek_key(key) || self.cursor.gather_packed(meet, out)
    }
}

impl Reader {
    /// Reads on from the spilled copies of the batches in `swaps` (see
    /// [`Cursor::swap_batches`]).
    pub fn swap_batches(&mut self, swaps: &crate::trace::spine::Swaps) {
        self.cursor.swap_batches(swaps)
    }
}

impl Arrangement {
    /// Marks the words of the trace (see [`crate::string_gc`]).
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.spine.mark_strings(marks);
    }

    /// An empty arrangement of rows of `width` words keyed by the first `key_width`.
    pub fn new(key_width: usize, width: usize) -> Self {
        Arrangement {
            key_width,
            width,
            schema: None,
            spine: Spine::new(key_width, width - key_width),
            since_full: 0,
            ahead: Vec::new(),
            full_merge_ratio: full_merge_ratio(),
        }
    }

    /// Stored updates.
    pub fn len(&self) -> usize {
        self.spine.len()
    }

    /// Whether the trace holds no updates.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held by the batches.
    pub fn heap_bytes(&self) -> usize {
        self.spine.heap_bytes()
    }

    /// Bytes of the batches held in spill files.
    pub fn spilled_bytes(&self) -> usize {
        self.spine.spilled_bytes()
    }

    /// Spills cold batches to `dir` until `want` heap bytes were freed (see
    /// [`Spine::spill_into`]); returns the bytes freed.
    pub fn spill(
        &mut self,
        dir: &std::path::Path,
        want: usize,
        min_bytes: usize,
        swaps: &mut crate::trace::spine::Swaps,
    ) -> crate::error::Result<usize> {
        self.spine.spill_into(dir, want, min_bytes, swaps)
    }

    /// Sets the frontier that merges advance times to. A frontier that is not in the future
    /// of the current one is ignored (compaction never goes back).
    ///
    /// When the frontier moves and the updates it has passed since the trace was last one
    /// batch reach `1 / FULL_MERGE_RATIO` of its size, every batch is merged into one,
    /// advanced to the new frontier (see [`full_merge_ratio`]).
    ///
    /// An inserted batch counts once the frontier has passed its upper (the frontier
    /// dominates it), when a merge can compact it, not when it is inserted: the frontier the
    /// engine sets trails the inserts (the readers' frontier as of their previous
    /// activation). A window's close (`group_by_dynamic(emit="final")`) retracts a whole
    /// window in one insert; counted on insert, it brought about a full merge that could
    /// not cancel the retractions yet, and they then waited beside the rows they cancel
    /// until a quarter of the trace was inserted again (20 of the 36 ticks of an hour in
    /// `benches/soak.py`, 4 of the trace's 5.5 MB). Counted once passed, the merge comes
    /// when it cancels them. "Passed" looks only at times the batch can hold
    /// (`Ahead::passed_by`).
    pub fn set_compaction(&mut self, frontier: &Antichain<Time>) {
        self.set_compaction_merging(frontier, None);
    }

    /// As [`Arrangement::set_compaction`], with the full merge decided by the caller
    /// (`merge_whole`; `None`: by this trace's own share of passed updates): with several
    /// workers the engine merges the traces of one arrangement whole together
    /// ([`Arrangement::merge_whole`]) when one is due ([`Arrangement::full_merge_share`]),
    /// so that no worker waits at the pass's end for another's merge. Nothing is
    /// merged while the frontier stands still.
    pub fn set_compaction_merging(
        &mut self,
        frontier: &Antichain<Time>,
        merge_whole: Option<bool>,
    ) {
        if self.spine.logical_compaction() != frontier {
            let _ = self.spine.set_logical_compaction(frontier);
            let mut passed = 0;
            self.ahead.retain(|a| {
                let done = a.passed_by(frontier);
                if done {
                    passed += a.len;
                }
                !done
            });
            self.since_full += passed;
            if self.spine.n_batches() <= 1 {
                self.since_full = 0;
            } else if merge_whole.unwrap_or_else(|| self.full_merge_due()) {
                self.spine.merge_all();
                self.since_full = 0;
            }
        }
    }

    /// Merges the trace into one batch at its compaction frontier, if it holds several (as
    /// [`Arrangement::set_compaction`] does when a full merge is due).
    pub fn merge_whole(&mut self) {
        if self.spine.n_batches() > 1 {
            self.spine.merge_all();
        }
        self.since_full = 0;
    }

    /// Whether a full merge is due: the share of passed updates
    /// ([`Arrangement::full_merge_share`]) is not zero and has reached the trace's size.
    pub fn full_merge_due(&self) -> bool {
        let (passed, size) = self.full_merge_share();
        passed > 0 && passed >= size
    }

    /// `(passed * ratio, size)`: the updates the compaction frontier has passed since the
    /// trace was last one batch times its [`full_merge_ratio`] (0 for a trace never merged
    /// whole, or of one batch), and its size. A full merge is due when the first reaches
    /// the second.
    pub fn full_merge_share(&self) -> (usize, usize) {
        if self.spine.n_batches() <= 1 {
            return (0, self.spine.len());
        }
        (self.since_full * self.full_merge_ratio, self.spine.len())
    }

    /// Sets this trace's [`full_merge_ratio`] (0: never merge it whole).
    pub fn set_full_merge_ratio(&mut self, ratio: usize) {
        self.full_merge_ratio = ratio;
    }

    /// Number of batches held (a merge in progress counts two).
    pub fn n_batches(&self) -> usize {
        self.spine.n_batches()
    }

    /// Inserts a batch sorted by (row, time) and consolidated, whose times are not in the
    /// future of `upper`.
    pub fn insert(&mut self, batch: &Updates, upper: &Antichain<Time>) {
        let lower = self.spine.upper().clone();
        let desc = Description::new(
            lower.clone(),
            upper.clone(),
            self.spine.logical_compaction().clone(),
        );
        let b = Batch::from_sorted(batch, self.key_width, desc)
            .expect("engine batches are sorted and consolidated");
        // The first batch of an empty trace is its base (a static graph): merging it again
        // pays off only once as much again has been inserted on top of it.
        if !self.spine.is_empty() && !b.is_empty() {
            if self.ahead.len() >= MAX_AHEAD {
                // Uppers only grow: the first two count once the second's is passed.
                let first = self.ahead.remove(0);
                self.ahead[0].lower = first.lower;
                self.ahead[0].len += first.len;
            }
            self.ahead.push(Ahead {
                lower,
                upper: upper.clone(),
                len: b.len(),
            });
        }
        self.spine.insert(Arc::new(b));
    }

    /// A reader over the current batches.
    pub fn reader(&self) -> Reader {
        Reader {
            cursor: self.spine.cursor(),
        }
    }

    /// Spends up to `fuel` units of idle merge work (merging batches and advancing their
    /// times to the compaction frontier); returns whether idle work remains.
    pub fn exert(&mut self, fuel: usize) -> bool {
        self.spine.exert(fuel)
    }

    /// Reads the whole trace back as one consolidated batch of full rows.
    pub fn to_updates(&self) -> Updates {
        self.spine.to_updates().0
    }
}

/// An inserted batch the compaction frontier has not yet passed: its bounds and length.
#[derive(Clone, Debug)]
struct Ahead {
    lower: Antichain<Time>,
    upper: Antichain<Time>,
    len: usize,
}

impl Ahead {
    /// Whether no time of the batch is in the future of `frontier`, so that a merge
    /// advances every one of them. The batch's times lie in the future of its `lower` and
    /// not of its `upper`; a time in the future of an element `e` of `frontier` is then in
    /// the future of some `e ∨ l`, `l` in `lower`, and it cannot be if each such join is in
    /// the future of `upper`. Asking it of `e` itself would miss batches that `e` can never
    /// reach: in a BFS whose roots input is closed, the distances fed back hold iteration
    /// 1 and up, while the join reading them keeps iteration 0 of the next input time in
    /// its frontier, and the batches never counted.
    fn passed_by(&self, frontier: &Antichain<Time>) -> bool {
        frontier.elements().iter().all(|e| {
            self.lower
                .elements()
                .iter()
                .all(|l| self.upper.less_equal(&e.join(l)))
        })
    }
}

/// Batches an arrangement tracks until the compaction frontier passes them (a trace
/// handle can hold the frontier back for many inserts); beyond, the oldest two count as one.
const MAX_AHEAD: usize = 32;

/// Default of [`full_merge_ratio`].
pub const FULL_MERGE_RATIO: usize = 4;

/// How eagerly a trace whose compaction frontier moves is merged into one batch: when the
/// updates inserted since it was last one batch times this ratio reach its size (0: never;
/// the spine's own size-tiered merges only). The spine merges lazily, so without this the
/// key histories a `reduce` or `join` reads on a small graph with many distinct times carry
/// updates that cancel or collapse under the current frontier (on the 1k/2k BFS with
/// batches of 1,000: 36 input updates read per reduce key visit, 10 after advancing and
/// consolidating; 18 with full merges). A full merge costs about the trace's size, so its
/// cost per inserted update is at most the ratio. `DDFLOW_FULL_MERGE_RATIO` overrides it
/// (read once per process).
pub fn full_merge_ratio() -> usize {
    static RATIO: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *RATIO.get_or_init(|| {
        std::env::var("DDFLOW_FULL_MERGE_RATIO")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(FULL_MERGE_RATIO)
    })
}

#[cfg(test)]
#[path = "arrangement_tests.rs"]
mod tests;
