//! LSD radix sort and consolidation of updates.
//!
//! [`RadixSorter`] owns reusable scratch buffers (nothing is allocated per call once they
//! have grown) and sorts `u64`s, `(u64, u64)` pairs and columnar [`Updates`], and
//! consolidates updates: sums the diffs of equal `(row, time)`, drops zero sums and reports
//! an `i64` overflow as [`Error::Overflow`](crate::Error::Overflow) instead of wrapping.
//!
//! # Algorithm
//!
//! The kernel (the `radix` submodule) is a least-significant-digit radix sort with digits of at most
//! 11 bits, made cache-conscious:
//!
//! * one read finds, per word, the bits that vary across the input; digits only cover the
//!   span between the lowest and highest varying bit (node ids below 2^20 need two 10-bit
//!   passes per word, not eight byte passes);
//! * one more read computes the histograms of all digits; a digit with a single non-empty
//!   bucket is skipped;
//! * each remaining digit is one stable scatter pass, ping-ponging between the input and a
//!   scratch buffer (the two `Vec`s are swapped at the end instead of copied back);
//! * inputs larger than 256 KiB first get one stable pass on their top (up to 10) varying
//!   bits, splitting them into cache-sized buckets that are then sorted on their own, so
//!   the LSD passes run in L2 instead of DRAM (the read that finds the varying bits also
//!   counts the split digit, guessed from a strided sample and re-counted if wrong);
//! * when the varying bits far exceed `log2(n)` (e.g. keys spread over all of `u64`), only
//!   the top `log2(n) + 6` varying bits get passes; the resulting groups of equal prefix
//!   are nearly all singletons and are finished by insertion sort (or recursively when
//!   large), instead of paying passes over the value's 64 bits.
//!
//! [`Updates`] are sorted through a permutation: the varying bit spans of all row words and
//! time coordinates are packed, least significant first, into as few 64-bit chunk keys as
//! possible (`packed_key.rs`; a width-1 row of node ids and a 2-D time of small coordinates
//! is a single chunk). When a chunk and the element index fit one `u64` together, the sort
//! moves plain `u64`s (`key << idx_bits | idx`); otherwise it moves `(key, idx)` pairs.
//! Chunks are sorted least significant first with stable passes, then rows, times and diffs
//! are gathered once: into scratch columns swapped with the batch's for a small batch, in
//! place from [`IN_PLACE_MIN_BYTES`] on (no second copy of a large batch; cache-sized blocks
//! first, then each update within its block: `permute.rs`).
//!
//! [`RadixSorter::consolidate_updates`] of a batch whose key is one chunk that fits beside
//! the element index (and below [`IN_PLACE_MIN_BYTES`]) fuses the sort with the summing
//! (`consolidate_packed.rs`): the sorted `key << idx_bits | idx` words are read once, run
//! by run; each run's diffs are summed, and only an update whose total is not zero is
//! gathered into the output columns (no permutation, no full gather, no comparison of rows
//! and times).
//!
//! Inputs below a measured threshold use `sort_unstable` (see [`SMALL_PAIRS`],
//! [`SMALL_U64`], [`SMALL_UPDATES`]).

pub(crate) mod consolidate;
mod consolidate_packed;
mod packed_key;
mod pairs;
mod permute;
pub(crate) mod radix;

pub use consolidate::{consolidate_sorted, consolidate_sorted_triples};
pub use pairs::sort_pairs_by_key;

use crate::error::Result;
use crate::lattice::Time;
use crate::updates::Updates;
use consolidate::cmp_updates;
use packed_key::{chunk_key, pack_with_index, KeyLayout};
use radix::{index_bits, KeyIdx, Lsd, RadixKey, SortKey};

/// Below this many pairs [`RadixSorter::sort_pairs`] uses `sort_unstable`.
///
/// Measured with `cargo bench -p ddflow-core --bench sort -- crossover` (AMD EPYC, 2 shared
/// cores, 256 distinct inputs per size; full table in `benches/results/sort.md`): forced
/// radix vs `sort_unstable` on full-range pairs 0.96 vs 0.53 µs at 32, 0.93 vs 0.98 µs at
/// 64, 1.57 vs 2.48 µs at 128; on node-id pairs 0.95 vs 0.91 µs at 64, 2.09 vs 3.69 µs at
/// 128. The crossover is between 64 and 128: below it the fixed costs of the radix passes
/// (histograms, the varying-bits read) dominate.
pub const SMALL_PAIRS: usize = 128;

/// Below this many values [`RadixSorter::sort_u64`] uses `sort_unstable`.
///
/// Measured as for [`SMALL_PAIRS`] on full-range `u64`s: radix vs `sort_unstable` 1.68 vs
/// 1.11 µs at 128, 2.46 vs 2.64 µs at 192, 2.97 vs 3.19 µs at 256, 4.08 vs 5.16 µs at 384
/// (8-byte elements make the comparison sort cheaper, so the crossover, about 192, is later
/// than for pairs; 256 leaves a margin).
pub const SMALL_U64: usize = 256;

/// Below this many updates [`RadixSorter::sort_updates`] sorts the permutation with
/// `sort_unstable_by` (comparing row words and times).
///
/// Measured as for [`SMALL_PAIRS`] on width-1 rows with 2-D times: radix vs comparison
/// 1.90 vs 1.30 µs at 32, 3.23 vs 2.80 µs at 64, 4.96 vs 7.02 µs at 128, 9.4 vs 14.4 µs at
/// 256 (the comparison sort pays for slice comparisons through the permutation).
pub const SMALL_UPDATES: usize = 96;

/// Scratch bytes a sorter keeps between calls; more is freed after the call that grew it
/// (`RadixSorter::trim`).
pub const KEEP_BYTES: usize = 64 << 20;

/// From this many bytes of updates on, [`RadixSorter::sort_updates`] moves them into order
/// in place, along the permutation's cycles, instead of gathering them into scratch columns
/// (which then held a second copy of the batch until the sorter was trimmed: 18 MB for the
/// 320,000 output updates of the count micro-case). Below it, the gather's sequential
/// writes into reused buffers are the cheaper way, and what it keeps is small.
pub const IN_PLACE_MIN_BYTES: usize = 4 << 20;

/// A radix sorter with reusable scratch buffers.
///
/// Keep one per operator (or thread) and call it repeatedly: buffers grow to the largest
/// input seen and are then reused.
///
/// # Examples
/// ```
/// use ddflow_core::sort::RadixSorter;
/// let mut sorter = RadixSorter::new();
/// let mut pairs = vec![(3, 1), (1, 9), (3, 0), (1, 2)];
/// sorter.sort_pairs(&mut pairs);
/// assert_eq!(pairs, vec![(1, 2), (1, 9), (3, 0), (3, 1)]);
/// ```
#[derive(Debug, Default)]
pub struct RadixSorter {
    lsd: Lsd,
    u64_buf: Vec<u64>,
    pairs_buf: Vec<(u64, u64)>,
    triples_buf: Vec<(u64, u64, i64)>,
    packed: Vec<u64>,
    keyed: Vec<KeyIdx>,
    keyed_buf: Vec<KeyIdx>,
    perm: Vec<u32>,
    rows_buf: Vec<u64>,
    times_buf: Vec<Time>,
    diffs_buf: Vec<i64>,
    /// The packed sort key of the batch being sorted (`packed_key.rs`).
    layout: KeyLayout,
    /// Overrides the small-input thresholds (benchmarks, tests).
    min_radix: Option<usize>,
    /// Overrides [`IN_PLACE_MIN_BYTES`] (tests).
    in_place_min: Option<usize>,
    /// Each update's destination while a large batch is moved in place (`permute.rs`).
    dest: Vec<u32>,
}

/// `buf` as a scratch slice of length `n` (grown with copies of `fill` when shorter).
fn scratch<T: Copy>(buf: &mut Vec<T>, n: usize, fill: T) -> &mut [T] {
    if buf.len() < n {
        buf.resize(n, fill);
    }
    &mut buf[..n]
}

/// Every bit of a word takes part in the order.
const ALL: u64 = u64::MAX;

/// Places the sorted result in `data`: swaps with `buf` when the passes ended there.
fn finish<T>(data: &mut Vec<T>, buf: &mut Vec<T>, in_buf: bool) {
    if in_buf {
        buf.truncate(data.len());
        std::mem::swap(data, buf);
    }
}

/// Sorts two-word elements by `(word 0, word 1)`; see the module docs for the strategy.
fn sort_two_words<T: RadixKey>(small: usize, data: &mut Vec<T>, buf: &mut Vec<T>, lsd: &mut Lsd) {
    debug_assert_eq!(T::WORDS, 2);
    let n = data.len();
    if n < small.max(2) {
        data.sort_unstable_by_key(|x| (x.word(0), x.word(1)));
        return;
    }
    let keys = [
        SortKey { word: 1, mask: ALL },
        SortKey { word: 0, mask: ALL },
    ];
    let fill = data[0];
    let in_buf = lsd.sort(data.as_mut_slice(), scratch(buf, n, fill), &keys);
    finish(data, buf, in_buf);
}

impl RadixSorter {
    /// A sorter with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// A sorter that uses radix sort from `n` elements on, instead of the measured
    /// thresholds [`SMALL_PAIRS`], [`SMALL_U64`], [`SMALL_UPDATES`]. For benchmarks and
    /// tests (`0` forces radix sort on every input).
    pub fn with_min_radix_len(n: usize) -> Self {
        RadixSorter {
            min_radix: Some(n),
            ..Self::default()
        }
    }

    /// A sorter that reorders updates in place from `bytes` bytes of updates on, instead
    /// of [`IN_PLACE_MIN_BYTES`] (tests: `0` always does).
    pub fn with_in_place_from(mut self, bytes: usize) -> Self {
        self.in_place_min = Some(bytes);
        self
    }

    /// Sorts pairs by `(key, val)`.
    ///
    /// Radix sort (see the module docs) over the varying bits of both words, skipping
    /// constant digits; `sort_unstable` below [`SMALL_PAIRS`] elements. Equal pairs are indistinguishable, so the result is
    /// the unique sorted order (stability is moot).
    pub fn sort_pairs(&mut self, data: &mut Vec<(u64, u64)>) {
        sort_two_words(
            self.min_radix.unwrap_or(SMALL_PAIRS),
            data,
            &mut self.pairs_buf,
            &mut self.lsd,
        );
    }

    /// Sorts `u64`s ascending: radix sort over the varying bits, `sort_unstable` below
    /// [`SMALL_U64`] elements.
    pub fn sort_u64(&mut self, data: &mut Vec<u64>) {
        if data.len() < self.min_radix.unwrap_or(SMALL_U64).max(2) {
            data.sort_unstable();
            return;
        }
        let n = data.len();
        let scratch = scratch(&mut self.u64_buf, n, 0);
        let in_buf = self.lsd.sort(
            data.as_mut_slice(),
            scratch,
            &[SortKey { word: 0, mask: ALL }],
        );
        finish(data, &mut self.u64_buf, in_buf);
    }

    /// Sorts updates stably by row words (lexicographically), then time (the lexicographic
    /// `Ord` of [`Time`]). Updates with equal `(row, time)` keep their relative order.
    ///
    /// # Panics
    /// If the batch holds more than `u32::MAX` updates.
    pub fn sort_updates(&mut self, updates: &mut Updates) {
        let n = updates.len();
        assert!(
            n <= u32::MAX as usize,
            "sort_updates: at most 2^32 - 1 updates per call"
        );
        debug_assert_eq!(updates.rows.len(), n * updates.width);
        if n < 2 || order(updates) != Order::Unsorted {
            return;
        }
        self.sort_unsorted(updates);
    }

    /// [`sort_updates`](Self::sort_updates) of a batch known to be out of order.
    fn sort_unsorted(&mut self, updates: &mut Updates) {
        let n = updates.len();
        if !self.permutation(updates) {
            return;
        }
        // The packed keys are spent once the permutation is known: free them before the
        // gather allocates the new rows if together they would pass `KEEP_BYTES` (10M
        // two-word rows: 160 MB of keys and their scratch beside 160 MB of new rows).
        let keys = (self.packed.capacity() + self.u64_buf.capacity()) * 8
            + (self.keyed.capacity() + self.keyed_buf.capacity()) * std::mem::size_of::<KeyIdx>();
        if keys + n * updates.width * 8 > KEEP_BYTES {
            self.packed = Vec::new();
            self.u64_buf = Vec::new();
            self.keyed = Vec::new();
            self.keyed_buf = Vec::new();
        }
        self.gather(updates);
    }

    /// Computes the sorting permutation of `updates` into `self.perm`. Returns `false` when
    /// the input is already in order (all keys equal).
    fn permutation(&mut self, updates: &Updates) -> bool {
        let n = updates.len();
        let w = updates.width;
        self.perm.clear();
        self.perm.extend(0..n as u32);
        if n < self.min_radix.unwrap_or(SMALL_UPDATES) {
            let (rows, times) = (&updates.rows[..], &updates.times[..]);
            self.perm.sort_unstable_by(|&a, &b| {
                cmp_updates(rows, times, w, a as usize, b as usize).then(a.cmp(&b))
            });
            return true;
        }

        let times: &[Time] = match updates.times.same() {
            Some(_) => &[],
            None => &updates.times[..],
        };
        let rows = &updates.rows[..];
        if !self.layout.plan(rows, times, w) {
            return false;
        }

        let ib = index_bits(n);
        let mut start = 0;
        for (chunk, &(end, bits)) in self.layout.chunks.iter().enumerate() {
            let parts = &self.layout.parts[start..end];
            start = end;
            let perm = &mut self.perm;
            if bits + ib <= 64 {
                let packed = &mut self.packed;
                if chunk == 0 {
                    // The first chunk is packed in batch order.
                    pack_with_index(parts, rows, times, w, n, ib, packed);
                } else {
                    packed.clear();
                    packed.extend(
                        perm.iter().map(|&e| {
                            chunk_key(parts, rows, times, w, e as usize) << ib | e as u64
                        }),
                    );
                }
                let key_mask = if bits + ib == 64 {
                    u64::MAX
                } else {
                    (1u64 << (bits + ib)) - 1
                };
                let keys = [SortKey {
                    word: 0,
                    mask: key_mask & !((1u64 << ib) - 1),
                }];
                let scratch = scratch(&mut self.u64_buf, n, 0);
                let in_buf = self.lsd.sort(packed.as_mut_slice(), scratch, &keys);
                let sorted = if in_buf {
                    &self.u64_buf[..n]
                } else {
                    &packed[..]
                };
                let idx_mask = (1u64 << ib) - 1;
                for (p, &x) in perm.iter_mut().zip(sorted) {
                    *p = (x & idx_mask) as u32;
                }
            } else {
                let keyed = &mut self.keyed;
                keyed.clear();
                keyed.extend(perm.iter().map(|&e| KeyIdx {
                    key: chunk_key(parts, rows, times, w, e as usize),
                    idx: e,
                }));
                let key_mask = if bits == 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                let keys = [SortKey {
                    word: 0,
                    mask: key_mask,
                }];
                let scratch = scratch(&mut self.keyed_buf, n, KeyIdx::default());
                let in_buf = self.lsd.sort(keyed.as_mut_slice(), scratch, &keys);
                let sorted = if in_buf {
                    &self.keyed_buf[..n]
                } else {
                    &keyed[..]
                };
                for (p, x) in perm.iter_mut().zip(sorted) {
                    *p = x.idx;
                }
            }
        }
        true
    }

    /// Reorders rows, times and diffs by `self.perm`: in place when the batch is large (see
    /// [`IN_PLACE_MIN_BYTES`]), else through the scratch buffers, which are swapped with the
    /// batch's columns.
    fn gather(&mut self, updates: &mut Updates) {
        let w = updates.width;
        // A column whose values are all equal (one time for a whole load, diffs all 1) is
        // already in order: it is not moved (for 10M updates, 320 MB of times not rewritten).
        let move_times = updates.times.first().is_some_and(|t0| {
            updates.times.same().is_none() && !updates.times.iter().all(|t| t == t0)
        });
        let move_diffs = updates
            .diffs
            .first()
            .is_some_and(|d0| !updates.diffs.iter().all(|d| d == d0));
        let n = updates.len();
        let bytes = n
            * (w * 8
                + if move_times { size_of::<Time>() } else { 0 }
                + if move_diffs { 8 } else { 0 });
        if bytes >= self.in_place_min.unwrap_or(IN_PLACE_MIN_BYTES) {
            permute::permute_in_place(updates, &self.perm, &mut self.dest, move_times, move_diffs);
            self.trim();
            return;
        }
        empty_with_room(&mut self.rows_buf, n * w);
        empty_with_room(&mut self.times_buf, if move_times { n } else { 0 });
        empty_with_room(&mut self.diffs_buf, if move_diffs { n } else { 0 });
        let perm = &self.perm;
        match w {
            0 => {}
            1 => self
                .rows_buf
                .extend(perm.iter().map(|&p| updates.rows[p as usize])),
            2 => {
                for &p in perm {
                    let p = p as usize;
                    self.rows_buf
                        .extend_from_slice(&updates.rows[2 * p..2 * p + 2]);
                }
            }
            _ => {
                for &p in perm {
                    let p = p as usize;
                    self.rows_buf
                        .extend_from_slice(&updates.rows[p * w..(p + 1) * w]);
                }
            }
        }
        std::mem::swap(&mut self.rows_buf, &mut updates.rows);
        if move_times {
            self.times_buf
                .extend(perm.iter().map(|&p| updates.times[p as usize]));
            std::mem::swap(&mut self.times_buf, updates.times.make_mut());
        }
        if move_diffs {
            self.diffs_buf
                .extend(perm.iter().map(|&p| updates.diffs[p as usize]));
            std::mem::swap(&mut self.diffs_buf, &mut updates.diffs);
        }
        // The old columns are not needed any more: free them now if large (see `trim`).
        self.trim();
    }

    /// Frees the scratch buffers when together they hold more than [`KEEP_BYTES`]: buffers
    /// are reused across calls, but a sorter (one per thread) must not keep the largest
    /// batch it ever sorted. Loading 10M edges left 200 MB of permutation, packed keys and
    /// their scratch behind, for the life of the thread, beside the 49 MB arrangement.
    pub fn trim(&mut self) {
        if self.heap_bytes() > KEEP_BYTES {
            let (lsd, min_radix) = (std::mem::take(&mut self.lsd), self.min_radix);
            *self = RadixSorter {
                lsd,
                min_radix,
                in_place_min: self.in_place_min,
                ..RadixSorter::default()
            };
        }
    }

    /// Sorts updates (as [`sort_updates`](Self::sort_updates)), then sums the diffs of
    /// equal `(row, time)` and drops zero sums.
    ///
    /// # Errors
    /// [`Error::Overflow`](crate::Error::Overflow) naming the row words and time whose total
    /// diff does not fit an `i64`. Sums never wrap; the batch is still left sorted and
    /// equivalent (the overflowing update is split into several that sum to the total).
    pub fn consolidate_updates(&mut self, updates: &mut Updates) -> Result<()> {
        // One look at the order: a sorted batch is not looked at again by the sort.
        match order(updates) {
            Order::Consolidated => return Ok(()),
            Order::Sorted => {}
            Order::Unsorted => {
                // A batch small enough to be gathered into scratch columns, whose key fits
                // one word with the index, is sorted and summed in one go
                // (`consolidate_packed.rs`); a large one is moved in place (`permute.rs`).
                let bytes = updates.len() * (updates.width * 8 + size_of::<Time>() + 8);
                if bytes < self.in_place_min.unwrap_or(IN_PLACE_MIN_BYTES) {
                    let times: &[Time] = match updates.times.same() {
                        Some(_) => &[],
                        None => &updates.times[..],
                    };
                    if !self.layout.plan(&updates.rows, times, updates.width) {
                        // One row and time throughout: in order as it is.
                        return consolidate_sorted(updates);
                    }
                    if let Some(done) = self.consolidate_packed(updates) {
                        return done;
                    }
                }
                self.sort_unsorted(updates);
            }
        }
        consolidate_sorted(updates)
    }

    /// Consolidates static (untimed) `(key, val, diff)` triples: sorts them by `(key, val)`,
    /// sums the diffs of equal pairs and drops zero sums.
    ///
    /// # Errors
    /// [`Error::Overflow`](crate::Error::Overflow) naming the key and value whose total does
    /// not fit an `i64` (the data is left sorted and equivalent).
    pub fn consolidate_pairs_with_diffs(&mut self, data: &mut Vec<(u64, u64, i64)>) -> Result<()> {
        sort_two_words(
            self.min_radix.unwrap_or(SMALL_PAIRS),
            data,
            &mut self.triples_buf,
            &mut self.lsd,
        );
        consolidate_sorted_triples(data)
    }

    /// Heap bytes held by the scratch buffers.
    pub fn heap_bytes(&self) -> usize {
        self.u64_buf.capacity() * 8
            + self.pairs_buf.capacity() * 16
            + self.triples_buf.capacity() * 24
            + self.packed.capacity() * 8
            + (self.keyed.capacity() + self.keyed_buf.capacity()) * std::mem::size_of::<KeyIdx>()
            + self.perm.capacity() * 4
            + self.rows_buf.capacity() * 8
            + self.times_buf.capacity() * std::mem::size_of::<Time>()
            + self.diffs_buf.capacity() * 8
            + self.dest.capacity() * 4
    }
}

/// How far a batch of updates is already in `(row, time)` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    /// Some neighbouring pair is out of order.
    Unsorted,
    /// In order, ties allowed: a stable sort leaves the batch as it is.
    Sorted,
    /// Strictly increasing with no zero diff: consolidated already.
    Consolidated,
}

/// Where `updates` stand (see [`Order`]): one comparison per neighbouring pair, stopping at
/// the first out of order. A batch a consolidating operator already sorted and summed (a
/// reduce's output reaching a capture or an `arrange`) skips the key packing, the radix
/// passes, the gather and the summing pass.
fn order(updates: &Updates) -> Order {
    use std::cmp::Ordering::{Equal, Greater};
    let w = updates.width;
    let rows = &updates.rows[..];
    let mut strict = !updates.diffs.contains(&0);
    let mut note = |o: std::cmp::Ordering| {
        strict &= o != Equal;
        o != Greater
    };
    let sorted = match updates.times.same() {
        Some(_) if w == 0 => {
            strict &= updates.len() < 2;
            true
        }
        Some(_) => rows
            .chunks_exact(w)
            .zip(rows.chunks_exact(w).skip(1))
            .all(|(a, b)| note(a.cmp(b))),
        // Rows of one or two words (the common widths) compared as integers, without the
        // call and slice compare of `cmp_updates` (this look runs on every batch a
        // consolidating operator emits, and again where it is consolidated next).
        None if w == 1 => {
            let times = &updates.times[..];
            (1..updates.len()).all(|i| {
                note(
                    rows[i - 1]
                        .cmp(&rows[i])
                        .then_with(|| cmp_time(&times[i - 1], &times[i])),
                )
            })
        }
        None if w == 2 => {
            let times = &updates.times[..];
            let pairs = rows.chunks_exact(2);
            pairs
                .clone()
                .zip(pairs.skip(1))
                .zip(times.windows(2))
                .all(|((a, b), t)| {
                    note(
                        (a[0], a[1])
                            .cmp(&(b[0], b[1]))
                            .then_with(|| cmp_time(&t[0], &t[1])),
                    )
                })
        }
        None => {
            let times = &updates.times[..];
            (1..updates.len()).all(|i| note(cmp_updates(rows, times, w, i - 1, i)))
        }
    };
    match (sorted, strict) {
        (false, _) => Order::Unsorted,
        (true, false) => Order::Sorted,
        (true, true) => Order::Consolidated,
    }
}

/// The lexicographic order of two times (as their derived `Ord`), one coordinate at a time.
#[inline(always)]
fn cmp_time(a: &Time, b: &Time) -> std::cmp::Ordering {
    (a.0[0], a.0[1], a.0[2], a.0[3]).cmp(&(b.0[0], b.0[1], b.0[2], b.0[3]))
}

/// Empties `v` with room for `n` items. A buffer too small is replaced, not grown: growing
/// an emptied vector reallocates, and `realloc` copies the whole old allocation (stale
/// items a column swapped in from a message left there) before freeing it.
fn empty_with_room<T>(v: &mut Vec<T>, n: usize) {
    v.clear();
    if v.capacity() < n {
        *v = Vec::with_capacity(n);
    }
}

#[cfg(test)]
mod tests;

thread_local! {
    /// The thread's radix sorter: one per thread, its buffers reused by every caller (the
    /// engine's operators, trace batches, the bindings' kernels).
    static THREAD_SORTER: std::cell::RefCell<RadixSorter> =
        std::cell::RefCell::new(RadixSorter::new());
}

/// Runs `f` with this thread's radix sorter. A nested call (a caller already holding it)
/// gets a fresh sorter instead of a panic. Scratch past [`KEEP_BYTES`] is freed after `f`.
pub fn with_thread_sorter<R>(f: impl FnOnce(&mut RadixSorter) -> R) -> R {
    THREAD_SORTER.with(|s| match s.try_borrow_mut() {
        Ok(mut sorter) => {
            let out = f(&mut sorter);
            sorter.trim();
            out
        }
        Err(_) => f(&mut RadixSorter::new()),
    })
}

/// Frees this thread's sorter buffers if they hold more than `keep` bytes.
pub fn release_thread_sorter_above(keep: usize) {
    THREAD_SORTER.with(|s| {
        if let Ok(mut sorter) = s.try_borrow_mut() {
            if sorter.heap_bytes() > keep {
                *sorter = RadixSorter::new();
            }
        }
    });
}

/// Frees this thread's sorter buffers (they grow back on the next sort).
pub fn release_thread_sorter() {
    THREAD_SORTER.with(|s| {
        if let Ok(mut sorter) = s.try_borrow_mut() {
            *sorter = RadixSorter::new();
        }
    });
}
