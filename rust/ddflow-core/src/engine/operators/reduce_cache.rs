//! Running input totals of linear `reduce` keys, carried from one activation to the next.
//!
//! `count` and a `group` whose parts are all counts and int64 sums / means
//! ([`reduce_chain::carries`]) fold each input update into running totals. On the chain
//! path (one-dimensional times), a key whose input history is large keeps its totals after
//! a pass ([`TotalsCache`]): they are the sum of all of the key's input updates in the trace,
//! all at times `<= upto`. At its next activation, if `upto` is at or before its least new
//! time, the key's accumulation at every time it visits is the carried totals plus its new
//! updates there, so the pass reads only the activation's batch rows of the key
//! (`Histories::read_key_carried`) and its output history, and never its input history.
//!
//! An entry is dropped whenever that could stop being true: the key's pass leaves a time
//! pending (later updates at earlier times could arrive), fails (an overflow sends the key
//! to the general path), or the activation fails (its batch is redone from pending work,
//! so the whole cache is dropped). Dropping is always safe: the key then reads its whole
//! history once, as it would without the cache.

use super::reduce::{Pending, ReduceInput, ReduceState};
use super::reduce_chain::{self, ChainScratch};
use super::reduce_history::Histories;
use crate::engine::arrangement::Reader;
use crate::lattice::{PartialOrder, Time};
use crate::updates::Updates;
use std::collections::HashMap;

/// Keys whose input history has more updates than this keep their totals (a `group_by`
/// over millions of small keys would otherwise keep millions of entries, while reading a
/// small history costs about as much as a hash-map lookup). Entries are thus at most one per
/// 256 updates of the input trace.
pub const CARRY_MIN_HISTORY: usize = 256;

/// The carry threshold of reduces built now: `DDFLOW_REDUCE_CARRY_MIN` if set to an integer
/// (tests set 0 so that every key carries its totals), else [`CARRY_MIN_HISTORY`].
pub fn carry_min_history() -> usize {
    std::env::var("DDFLOW_REDUCE_CARRY_MIN")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(CARRY_MIN_HISTORY)
}

/// One key's carried totals: its whole input, all at times `<= upto`.
struct Entry {
    carry: reduce_chain::Carry,
    upto: Time,
}

/// The carried totals of the keys of one reduce (on one worker).
pub struct TotalsCache {
    keys: HashMap<Vec<u64>, Entry>,
    /// Parts of the `group` aggregate (for [`TotalsCache::heap_bytes`]).
    parts: usize,
    /// Keys whose whole input history has more updates than this start carrying their
    /// totals (`usize::MAX`: none).
    pub min_history: usize,
    /// Passes that started from carried totals (tests check the cache is exercised).
    pub hits: u64,
}

impl std::fmt::Debug for TotalsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TotalsCache({} keys)", self.keys.len())
    }
}

impl TotalsCache {
    /// Marks the cached keys and the values their totals keep.
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        for (k, e) in &self.keys {
            marks.words(k);
            e.carry.totals.mark_strings(marks);
        }
    }

    /// An empty cache for keys with more than `min_history` input updates.
    pub fn new(min_history: usize) -> Self {
        TotalsCache {
            keys: HashMap::new(),
            parts: 0,
            min_history,
            hits: 0,
        }
    }

    /// Drops every entry.
    pub fn clear(&mut self) {
        self.keys = HashMap::new();
    }

    /// Number of keys with carried totals.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key has carried totals.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Heap bytes of the entries (table, keys and running totals: two 128-bit words per
    /// part, plus the values of `min` / `max` / `count_distinct` parts).
    pub fn heap_bytes(&self) -> usize {
        let slot = std::mem::size_of::<(Vec<u64>, Entry)>() + 1;
        let per_key: usize = self
            .keys
            .iter()
            .map(|(k, e)| k.capacity() * 8 + e.carry.totals.heap_bytes())
            .sum();
        self.keys.capacity() * slot + per_key + self.keys.len() * self.parts * 32
    }
}

/// The rows of each key in an activation's batch (sorted by key), found by walking forward
/// as keys are asked for in increasing order.
pub(super) struct BatchKeys<'a> {
    batch: &'a Updates,
    kw: usize,
    pos: usize,
}

impl<'a> BatchKeys<'a> {
    pub(super) fn new(batch: &'a Updates, kw: usize) -> Self {
        BatchKeys { batch, kw, pos: 0 }
    }

    /// The batch rows `lo..hi` of `key` (empty when it has none).
    pub(super) fn range(&mut self, key: &[u64]) -> (usize, usize) {
        let (b, w, kw) = (self.batch, self.batch.width, self.kw);
        let key_at = |i: usize| &b.rows[i * w..i * w + kw];
        while self.pos < b.len() && key_at(self.pos) < key {
            self.pos += 1;
        }
        let lo = self.pos;
        while self.pos < b.len() && key_at(self.pos) == key {
            self.pos += 1;
        }
        (lo, self.pos)
    }
}

impl ReduceState {
    /// A key with carried totals valid at its least new time: one chain pass from them over
    /// its new batch rows (`rows`) and its output history. Returns whether the key was done;
    /// otherwise its entry is gone and nothing of it was read or written (the caller reads
    /// its whole history).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn carried_chain_key(
        &mut self,
        inp: &ReduceInput<'_>,
        (key, new_times): (&[u64], &[Time]),
        rows: (usize, usize),
        (hist, reader_out): (&mut Histories, &mut Reader),
        chain: &mut ChainScratch,
        output: &mut Updates,
        still_pending: &mut Pending,
    ) -> bool {
        let Some(e) = self.cache.keys.get_mut(key) else {
            return false;
        };
        if !new_times.first().is_some_and(|t| e.upto.less_equal(t)) {
            self.cache.keys.remove(key);
            return false;
        }
        chain.seed = Some(std::mem::take(&mut e.carry));
        let out_lo =
            hist.read_key_carried(key, (inp.batch, rows.0, rows.1), reader_out, &self.errors);
        let pending_keys = still_pending.0.len();
        let done = self.reduce_chain_key(
            inp,
            (key, new_times),
            (hist, out_lo),
            chain,
            output,
            still_pending,
        );
        chain.seed = None;
        if !done {
            self.cache.keys.remove(key);
            hist.unread_key(out_lo);
            return false;
        }
        self.cache.hits += 1;
        self.keep_carry(inp, key, chain, still_pending.0.len() != pending_keys);
        true
    }

    /// After a successful chain pass of a [`reduce_chain::carries`] aggregate over `key`'s
    /// whole input history (the caller checks that it is large) or from its carried totals:
    /// keeps (or updates) its totals, unless the pass left times pending (`pended`) or its
    /// count is zero (nothing worth carrying).
    pub(super) fn keep_carry(
        &mut self,
        inp: &ReduceInput<'_>,
        key: &[u64],
        chain: &mut ChainScratch,
        pended: bool,
    ) {
        let upto = chain.times.last().copied();
        let carry = chain.take_carry(inp.agg);
        match upto {
            Some(upto) if !pended && carry.count != 0 => {
                if let Some(e) = self.cache.keys.get_mut(key) {
                    *e = Entry { carry, upto };
                } else {
                    if let crate::engine::plan::Agg::Group { aggs } = inp.agg {
                        self.cache.parts = aggs.len();
                    }
                    self.cache.keys.insert(key.to_vec(), Entry { carry, upto });
                }
            }
            _ => {
                self.cache.keys.remove(key);
            }
        }
    }
}

#[cfg(test)]
#[path = "reduce_cache_tests.rs"]
mod tests;
