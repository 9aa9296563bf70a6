//! Immutable batches (layers): keys -> vals -> (time, diff), linked by offsets.
//!
//! A [`Batch`] stores consolidated updates sorted by key, then val, then time:
//!
//! * `keys`: `n_keys * key_width` words; key `k`'s vals are `key_offs[k]..key_offs[k + 1]`;
//! * `vals`: `n_vals * val_width` words; val `v`'s updates are `val_offs[v]..val_offs[v + 1]`;
//! * `times`, `diffs`: one per update.
//!
//! Compact forms are chosen automatically when a batch is built (see [`Builder`]):
//!
//! * keys and vals whose words all fit in `u32` are stored as `u32` (decoded on access);
//! * when every `(key, val)` has exactly one update, `val_offs` is omitted (val `v` owns
//!   update `v`);
//! * when every update has the same time (e.g. static data at the least time, or data
//!   compacted to one frontier time), the time is stored once;
//! * when the updates have at most [`MAX_INDEXED_TIMES`] distinct times (a merge of a few
//!   ticks, a compacted batch with a few live times), each is stored once and every update
//!   holds a one-byte index into them instead of its own time;
//! * otherwise times of the form `[x, y, 0, 0]` with `x`, `y` below 2^32 take 8 bytes each
//!   (`time_vec.rs`), others 32;
//! * diffs equal to 1 are implicit: no diff vector if all are 1, a sparse list of
//!   exceptions if few are not, a dense vector otherwise.
//!
//! Together these store a static graph at the least time in `u32` vals + `u32` keys +
//! key offsets, i.e. a little over 4 bytes per edge for `u32` node ids.
//!
//! [`Builder`]: super::Builder

use super::builder::Builder;
use super::description::Description;
use super::stored::Stored;
use super::time_vec::{self, TimeVec};
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::sort::RadixSorter;
use crate::updates::Updates;
use std::cmp::Ordering;
use std::ops::Range;

/// Row words, stored as `u64` or narrowed to `u32` when every word fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Words {
    /// Full-width words.
    U64(Stored<u64>),
    /// Narrowed words (every word `< 2^32`).
    U32(Stored<u32>),
}

impl Words {
    /// Marks every word (see [`crate::string_gc`]).
    pub(crate) fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        match self {
            Words::U64(v) => marks.words(v),
            Words::U32(v) => v.iter().for_each(|&w| marks.word(w as u64)),
        }
    }

    /// Narrows `words` to `u32` storage when every word fits.
    /// The narrow copy is written through to a file as `words` is, if it is.
    pub(crate) fn narrowed(words: impl Into<Stored<u64>>) -> Words {
        let words = words.into();
        if words.iter().fold(0u64, |m, &w| m | w) >> 32 == 0 {
            let mut n: Stored<u32> = words.with_capacity_like(words.len());
            n.extend(words.iter().map(|&w| w as u32));
            Words::U32(n)
        } else {
            Words::U64(words)
        }
    }

    /// Empty storage with room for `words` words, narrow or not, written through to a new
    /// file in `dir` if given (see `stored.rs`).
    pub(crate) fn with_capacity_in(
        dir: Option<&std::sync::Arc<std::path::PathBuf>>,
        narrow: bool,
        words: usize,
    ) -> Words {
        if narrow {
            Words::U32(Stored::with_capacity_in(dir, words))
        } else {
            Words::U64(Stored::with_capacity_in(dir, words))
        }
    }

    /// Number of stored words.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        match self {
            Words::U64(v) => v.len(),
            Words::U32(v) => v.len(),
        }
    }

    /// Keeps the first `len` words.
    #[inline]
    pub(crate) fn truncate(&mut self, len: usize) {
        match self {
            Words::U64(v) => v.truncate(len),
            Words::U32(v) => v.truncate(len),
        }
    }

    /// Widens narrow storage to `u64`.
    #[cold]
    fn widen(&mut self) {
        if let Words::U32(v) = self {
            let mut w: Stored<u64> = v.with_capacity_like(v.len().max(v.capacity()));
            w.extend(v.iter().map(|&w| w as u64));
            *self = Words::U64(w);
        }
    }

    /// Appends a row (widening the storage if a word does not fit `u32`).
    #[inline]
    pub(crate) fn push_row(&mut self, row: &[u64]) {
        if let Words::U32(v) = self {
            if row.iter().all(|&w| w >> 32 == 0) {
                v.extend(row.iter().map(|&w| w as u32));
                return;
            }
            self.widen();
        }
        if let Words::U64(v) = self {
            v.extend_from_slice(row);
        }
    }

    /// Appends row `row` of `src` (of `width` words).
    // Always in line: merges copy a val per update or so; one-word rows take one push.
    #[inline(always)]
    pub(crate) fn push_from(&mut self, src: &Words, row: usize, width: usize) {
        if width == 1 {
            match (&mut *self, src) {
                (Words::U64(d), Words::U64(s)) => return d.push(s[row]),
                (Words::U32(d), Words::U32(s)) => return d.push(s[row]),
                (Words::U64(d), Words::U32(s)) => return d.push(s[row] as u64),
                (Words::U32(_), Words::U64(_)) => {}
            }
        }
        self.push_rows_from(src, row, width)
    }

    /// [`Words::push_from`] of rows wider than a word, or that may widen the storage.
    #[inline(never)]
    fn push_rows_from(&mut self, src: &Words, row: usize, width: usize) {
        let start = row * width;
        match (&mut *self, src) {
            (Words::U64(d), Words::U64(s)) => d.extend_from_slice(&s[start..start + width]),
            (Words::U32(d), Words::U32(s)) => d.extend_from_slice(&s[start..start + width]),
            (Words::U64(d), Words::U32(s)) => {
                d.extend(s[start..start + width].iter().map(|&w| w as u64))
            }
            (Words::U32(_), Words::U64(s)) => self.push_row(&s[start..start + width]),
        }
    }

    /// Copies row `from` to row `to` (rows of `width` words).
    #[inline]
    pub(crate) fn copy_row(&mut self, from: usize, to: usize, width: usize) {
        if from == to {
            return;
        }
        let (f, t) = (from * width, to * width);
        match self {
            Words::U64(v) => v.as_mut_slice().copy_within(f..f + width, t),
            Words::U32(v) => v.as_mut_slice().copy_within(f..f + width, t),
        }
    }

    /// Compares row `i` of `self` with row `j` of `other` (both of `width` words).
    // Always in line: one-word rows (node ids) take one comparison.
    #[inline(always)]
    pub(crate) fn cmp_rows(&self, i: usize, other: &Words, j: usize, width: usize) -> Ordering {
        if width == 1 {
            return self.word(i).cmp(&other.word(j));
        }
        self.cmp_wide_rows(i, other, j, width)
    }

    /// [`Words::cmp_rows`] of rows wider than a word.
    #[inline(never)]
    fn cmp_wide_rows(&self, i: usize, other: &Words, j: usize, width: usize) -> Ordering {
        let (a, b) = (i * width, j * width);
        match (self, other) {
            (Words::U64(x), Words::U64(y)) => x[a..a + width].cmp(&y[b..b + width]),
            (Words::U32(x), Words::U32(y)) => x[a..a + width].cmp(&y[b..b + width]),
            (Words::U32(_), Words::U64(y)) => self.cmp_row(i, width, &y[b..b + width]),
            (Words::U64(x), Words::U32(_)) => other.cmp_row(j, width, &x[a..a + width]).reverse(),
        }
    }

    /// Word `i`.
    #[inline(always)]
    pub(crate) fn word(&self, i: usize) -> u64 {
        match self {
            Words::U64(v) => v[i],
            Words::U32(v) => v[i] as u64,
        }
    }

    /// Appends words `range` of `src`.
    #[inline]
    pub(crate) fn extend_range_from(&mut self, src: &Words, range: Range<usize>) {
        match (&mut *self, src) {
            (Words::U64(d), Words::U64(s)) => d.extend_from_slice(&s[range]),
            (Words::U32(d), Words::U32(s)) => d.extend_from_slice(&s[range]),
            (Words::U64(d), Words::U32(s)) => d.extend(s[range].iter().map(|&w| w as u64)),
            (Words::U32(_), Words::U64(s)) => self.push_row(&s[range]),
        }
    }

    /// Compares row `row` (of `width` words) with `target`.
    #[inline]
    pub(crate) fn cmp_row(&self, row: usize, width: usize, target: &[u64]) -> Ordering {
        let start = row * width;
        if width == 1 {
            // One-word keys (node ids): one comparison.
            return match self {
                Words::U64(v) => v[start].cmp(&target[0]),
                Words::U32(v) => (v[start] as u64).cmp(&target[0]),
            };
        }
        match self {
            Words::U64(v) => v[start..start + width].cmp(target),
            Words::U32(v) => {
                for (w, t) in v[start..start + width].iter().zip(target) {
                    match (*w as u64).cmp(t) {
                        Ordering::Equal => {}
                        o => return o,
                    }
                }
                Ordering::Equal
            }
        }
    }

    /// Appends row `row` (of `width` words) to `out`.
    #[inline]
    pub(crate) fn extend_row(&self, row: usize, width: usize, out: &mut Vec<u64>) {
        let start = row * width;
        match self {
            Words::U64(v) => out.extend_from_slice(&v[start..start + width]),
            Words::U32(v) => out.extend(v[start..start + width].iter().map(|&w| w as u64)),
        }
    }

    /// Row `row` as a slice: borrowed directly for `u64` storage, decoded into `buf` otherwise.
    #[inline]
    pub(crate) fn row<'a>(&'a self, row: usize, width: usize, buf: &'a mut Vec<u64>) -> &'a [u64] {
        let start = row * width;
        match self {
            Words::U64(v) => &v[start..start + width],
            Words::U32(v) => {
                buf.clear();
                buf.extend(v[start..start + width].iter().map(|&w| w as u64));
                &buf[..]
            }
        }
    }

    /// Whether words are stored narrowed to `u32`.
    pub(crate) fn is_narrow(&self) -> bool {
        matches!(self, Words::U32(_))
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Words::U64(v) => v.capacity() * 8,
            Words::U32(v) => v.capacity() * 4,
        }
    }
}

/// The most distinct times a batch stores as [`Times::Indexed`] (one-byte indices).
pub(crate) const MAX_INDEXED_TIMES: usize = 16;

/// Update times: one per update, a single time shared by all, or a few distinct times.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Times {
    /// Every update has this time.
    Single(Time),
    /// One time per update (8 bytes each while they fit, see `time_vec.rs`).
    Each(TimeVec),
    /// Update `u` has time `distinct[idx[u]]` (at most [`MAX_INDEXED_TIMES`] distinct).
    Indexed {
        distinct: Vec<Time>,
        idx: Stored<u8>,
    },
}

impl Times {
    /// The compact form of one time per update: one time, a few indexed, or each its own.
    pub(crate) fn compacted(mut times: TimeVec) -> Times {
        if times.len() == 0 {
            return Times::Single(Time::minimum());
        }
        let t0 = times.get(0);
        let mut distinct = vec![t0];
        let mut idx: Stored<u8> = Stored::default();
        let mut last = 0u8;
        for u in 0..times.len() {
            let t = &times.get(u);
            if distinct[last as usize] == *t {
                if !idx.is_empty() {
                    idx.push(last);
                }
                continue;
            }
            let found = match distinct.iter().position(|d| d == t) {
                Some(i) => i,
                None if distinct.len() < MAX_INDEXED_TIMES => {
                    distinct.push(*t);
                    distinct.len() - 1
                }
                None => {
                    times.shrink_to_fit();
                    return Times::Each(times);
                }
            };
            if idx.is_empty() {
                idx = times.with_capacity_like(times.len());
                idx.extend(std::iter::repeat_n(0u8, u));
            }
            last = found as u8;
            idx.push(last);
        }
        if distinct.len() == 1 {
            Times::Single(t0)
        } else {
            idx.shrink_to_fit();
            Times::Indexed { distinct, idx }
        }
    }

    /// Time of update `u`.
    #[inline]
    pub(crate) fn get(&self, u: usize) -> Time {
        match self {
            Times::Single(t) => *t,
            Times::Each(v) => v.get(u),
            Times::Indexed { distinct, idx } => distinct[idx[u] as usize],
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Times::Single(_) => 0,
            Times::Each(t) => t.heap_bytes(),
            Times::Indexed { distinct, idx } => {
                distinct.capacity() * std::mem::size_of::<Time>() + idx.capacity()
            }
        }
    }
}

/// Update diffs: implicit ones, sparse exceptions to one, or one per update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Diffs {
    /// Every diff is 1.
    Ones,
    /// Diffs are 1 except at the (increasing) update indices `idx`, which have `diffs`.
    Sparse {
        idx: Stored<usize>,
        diffs: Stored<i64>,
    },
    /// One diff per update.
    Dense(Stored<i64>),
}

/// An immutable, consolidated batch of updates indexed by key, then val (see module docs).
///
/// Batches are shared as `Arc<Batch>` between spines, cursors and operators.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Batch {
    pub(crate) desc: Description,
    pub(crate) key_width: usize,
    pub(crate) val_width: usize,
    pub(crate) keys: Words,
    /// `n_keys + 1` offsets into vals.
    pub(crate) key_offs: Stored<usize>,
    pub(crate) vals: Words,
    /// `n_vals + 1` offsets into updates, or `None` when val `v` owns exactly update `v`.
    pub(crate) val_offs: Option<Stored<usize>>,
    pub(crate) times: Times,
    pub(crate) diffs: Diffs,
}

impl Batch {
    /// Marks every key and val word (see [`crate::string_gc`]).
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.keys.mark_strings(marks);
        self.vals.mark_strings(marks);
    }

    /// An empty batch with the given widths and description.
    pub fn empty(key_width: usize, val_width: usize, desc: Description) -> Batch {
        Builder::new(key_width, val_width).done(desc)
    }

    /// Builds a batch from updates sorted by row words, then time (as produced by
    /// consolidation). Rows are split into a key (`key_width` words) and a val (the rest).
    /// Updates at equal `(row, time)` are summed and zero diffs dropped, so the input need
    /// only be sorted, not consolidated. Consolidated input is built layer by layer
    /// (`layer_build.rs`); other input update by update, through a [`Builder`].
    ///
    /// Errors: [`Error::Shape`] if `key_width > updates.width`, [`Error::Unsorted`] if the
    /// updates are not sorted. Sums outside `i64` stay exact as several updates.
    pub fn from_sorted(updates: &Updates, key_width: usize, desc: Description) -> Result<Batch> {
        let width = updates.width;
        if key_width > width {
            return Err(Error::Shape(format!(
                "key width {key_width} exceeds row width {width}"
            )));
        }
        // Which of key and val words all fit u32: decides the storage up front.
        let (kor, vor) = key_and_val_bits(&updates.rows, width, key_width);
        let (narrow_keys, narrow_vals) = (kor >> 32 == 0, vor >> 32 == 0);
        // Consolidated input (the common case) is built layer by layer.
        if let Some(b) = super::layer_build::from_consolidated(
            updates,
            key_width,
            narrow_keys,
            narrow_vals,
            &desc,
        ) {
            return Ok(b);
        }
        Batch::from_sorted_by_update(updates, key_width, narrow_keys, narrow_vals, desc)
    }

    /// As [`Batch::from_sorted`], every update pushed through a [`Builder`] (which sums
    /// updates of one row and time, drops zero diffs and finds updates out of order).
    pub(crate) fn from_sorted_by_update(
        updates: &Updates,
        key_width: usize,
        narrow_keys: bool,
        narrow_vals: bool,
        desc: Description,
    ) -> Result<Batch> {
        let width = updates.width;
        let n = updates.len();
        let mut b = Builder::with_layout(
            key_width,
            width - key_width,
            narrow_keys,
            narrow_vals,
            n,
            n,
            n,
        );
        for i in 0..n {
            let row = updates.row(i);
            let (t, d) = (updates.times[i], updates.diffs[i]);
            if i == 0 {
                b.push_key(&row[..key_width]);
                b.push_val(&row[key_width..]);
                b.push_update(t, d);
                continue;
            }
            let prev = updates.row(i - 1);
            // First word at which the rows differ.
            let diff_at = row.iter().zip(prev).position(|(a, b)| a != b);
            match diff_at {
                Some(j) => {
                    if row[j] < prev[j] {
                        return Err(unsorted(i));
                    }
                    b.seal_val();
                    if j < key_width {
                        b.seal_key();
                        b.push_key(&row[..key_width]);
                    }
                    b.push_val(&row[key_width..]);
                    b.push_update(t, d);
                }
                None => match t.cmp(&updates.times[i - 1]) {
                    Ordering::Less => return Err(unsorted(i)),
                    Ordering::Equal => b.add_to_last(t, d),
                    Ordering::Greater => b.push_update(t, d),
                },
            }
        }
        if n > 0 {
            b.seal_val();
            b.seal_key();
        }
        Ok(b.done(desc))
    }

    /// Builds a batch from unsorted updates: consolidates them (radix sort by row then
    /// time, sum, drop zeros) with a thread-local [`RadixSorter`], then as
    /// [`Batch::from_sorted`].
    pub fn from_updates(
        mut updates: Updates,
        key_width: usize,
        desc: Description,
    ) -> Result<Batch> {
        crate::sort::with_thread_sorter(|s| {
            Batch::from_updates_with(s, &mut updates, key_width, desc)
        })
    }

    /// As [`Batch::from_updates`] with the caller's sorter; leaves `updates` consolidated.
    pub fn from_updates_with(
        sorter: &mut RadixSorter,
        updates: &mut Updates,
        key_width: usize,
        desc: Description,
    ) -> Result<Batch> {
        sorter.consolidate_updates(updates)?;
        Batch::from_sorted(updates, key_width, desc)
    }

    /// Replaces the description.
    pub fn with_description(mut self, desc: Description) -> Batch {
        self.desc = desc;
        self
    }

    /// Number of stored updates.
    #[inline]
    pub fn len(&self) -> usize {
        match &self.val_offs {
            Some(o) => o[o.len() - 1],
            None => self.n_vals(),
        }
    }

    /// Whether the batch holds no updates.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of distinct keys.
    #[inline]
    pub fn n_keys(&self) -> usize {
        self.key_offs.len() - 1
    }

    /// Number of distinct `(key, val)` pairs.
    #[inline]
    pub fn n_vals(&self) -> usize {
        self.key_offs[self.key_offs.len() - 1]
    }

    /// Words per key.
    #[inline]
    pub fn key_width(&self) -> usize {
        self.key_width
    }

    /// Words per val.
    #[inline]
    pub fn val_width(&self) -> usize {
        self.val_width
    }

    /// The batch's description.
    #[inline]
    pub fn description(&self) -> &Description {
        &self.desc
    }

    /// Lower frontier of the batch's times.
    pub fn lower(&self) -> &Antichain<Time> {
        &self.desc.lower
    }

    /// Upper frontier of the batch's times.
    pub fn upper(&self) -> &Antichain<Time> {
        &self.desc.upper
    }

    /// Frontier the batch's times were advanced by.
    pub fn since(&self) -> &Antichain<Time> {
        &self.desc.since
    }

    /// The time shared by all updates, if the batch stores a single time.
    pub fn single_time(&self) -> Option<Time> {
        match self.times {
            Times::Single(t) => Some(t),
            Times::Each(_) | Times::Indexed { .. } => None,
        }
    }

    /// Whether keys are stored narrowed to `u32`.
    pub fn keys_narrow(&self) -> bool {
        self.keys.is_narrow()
    }

    /// Whether vals are stored narrowed to `u32`.
    pub fn vals_narrow(&self) -> bool {
        self.vals.is_narrow()
    }

    /// Compares key `k` with `target`.
    #[inline]
    pub fn cmp_key(&self, k: usize, target: &[u64]) -> Ordering {
        self.keys.cmp_row(k, self.key_width, target)
    }

    /// Compares key `k` with key `j` of `other` (same key width).
    #[inline]
    pub fn cmp_key_with(&self, k: usize, other: &Batch, j: usize) -> Ordering {
        self.keys.cmp_rows(k, &other.keys, j, self.key_width)
    }

    /// Compares val `v` with val `j` of `other` (same val width).
    #[inline]
    pub fn cmp_val_with(&self, v: usize, other: &Batch, j: usize) -> Ordering {
        self.vals.cmp_rows(v, &other.vals, j, self.val_width)
    }

    /// Compares val `v` with `target`.
    #[inline]
    pub fn cmp_val(&self, v: usize, target: &[u64]) -> Ordering {
        self.vals.cmp_row(v, self.val_width, target)
    }

    /// Key `k`, borrowed or decoded into `buf`.
    #[inline]
    pub fn key<'a>(&'a self, k: usize, buf: &'a mut Vec<u64>) -> &'a [u64] {
        self.keys.row(k, self.key_width, buf)
    }

    /// Val `v`, borrowed or decoded into `buf`.
    #[inline]
    pub fn val<'a>(&'a self, v: usize, buf: &'a mut Vec<u64>) -> &'a [u64] {
        self.vals.row(v, self.val_width, buf)
    }

    /// Appends key `k`'s words to `out`.
    #[inline]
    pub fn extend_key(&self, k: usize, out: &mut Vec<u64>) {
        self.keys.extend_row(k, self.key_width, out)
    }

    /// Appends val `v`'s words to `out`.
    #[inline]
    pub fn extend_val(&self, v: usize, out: &mut Vec<u64>) {
        self.vals.extend_row(v, self.val_width, out)
    }

    /// The vals of key `k`.
    #[inline]
    pub fn vals_of(&self, k: usize) -> Range<usize> {
        self.key_offs[k]..self.key_offs[k + 1]
    }

    /// The updates of val `v`.
    #[inline]
    pub fn updates_of(&self, v: usize) -> Range<usize> {
        match &self.val_offs {
            Some(o) => o[v]..o[v + 1],
            None => v..v + 1,
        }
    }

    /// The updates of all vals of key `k`.
    #[inline]
    pub fn updates_of_key(&self, k: usize) -> Range<usize> {
        let vals = self.vals_of(k);
        match &self.val_offs {
            Some(o) => o[vals.start]..o[vals.end],
            None => vals,
        }
    }

    /// Time of update `u`.
    #[inline]
    pub fn time(&self, u: usize) -> Time {
        self.times.get(u)
    }

    /// Diff of update `u` (a binary search for sparse diffs; prefer
    /// [`Batch::for_each_update`] for ranges).
    #[inline]
    pub fn diff(&self, u: usize) -> i64 {
        match &self.diffs {
            Diffs::Ones => 1,
            Diffs::Dense(d) => d[u],
            Diffs::Sparse { idx, diffs } => match idx.binary_search(&u) {
                Ok(p) => diffs[p],
                Err(_) => 1,
            },
        }
    }

    /// Calls `f(time, diff)` for each update in `range`, in order.
    #[inline]
    pub fn for_each_update<F: FnMut(Time, i64)>(&self, range: Range<usize>, mut f: F) {
        match (&self.times, &self.diffs) {
            (Times::Single(t), Diffs::Ones) => {
                for _ in range {
                    f(*t, 1);
                }
            }
            (Times::Each(TimeVec::Narrow(ts)), Diffs::Dense(ds)) => {
                for (p, d) in ts[range.clone()].iter().zip(&ds[range]) {
                    f(time_vec::wide(*p), *d);
                }
            }
            (Times::Each(TimeVec::Wide(ts)), Diffs::Dense(ds)) => {
                for (t, d) in ts[range.clone()].iter().zip(&ds[range]) {
                    f(*t, *d);
                }
            }
            (Times::Each(TimeVec::Narrow(ts)), Diffs::Ones) => {
                for p in ts[range].iter() {
                    f(time_vec::wide(*p), 1);
                }
            }
            (Times::Each(TimeVec::Wide(ts)), Diffs::Ones) => {
                for t in ts[range].iter() {
                    f(*t, 1);
                }
            }
            (Times::Indexed { distinct, idx }, Diffs::Ones) => {
                for &i in idx[range].iter() {
                    f(distinct[i as usize], 1);
                }
            }
            (Times::Indexed { distinct, idx }, Diffs::Dense(ds)) => {
                for (&i, d) in idx[range.clone()].iter().zip(&ds[range]) {
                    f(distinct[i as usize], *d);
                }
            }
            (_, Diffs::Sparse { idx, diffs }) => {
                let mut p = idx.partition_point(|&x| x < range.start);
                for u in range {
                    let d = if p < idx.len() && idx[p] == u {
                        p += 1;
                        diffs[p - 1]
                    } else {
                        1
                    };
                    f(self.time(u), d);
                }
            }
            _ => {
                for u in range {
                    f(self.time(u), self.diff(u));
                }
            }
        }
    }

    /// The first word of key `k` (0 for keys of no words): a cursor compares it before
    /// the whole key.
    #[inline]
    pub fn key_head(&self, k: usize) -> u64 {
        if self.key_width == 0 {
            return 0;
        }
        self.keys.word(k * self.key_width)
    }

    /// The first key at or after `from` that is `>= target` (galloping search; one-word
    /// keys are compared as integers of the storage's width).
    pub fn seek_key_from(&self, from: usize, target: &[u64]) -> usize {
        let n = self.n_keys();
        if self.key_width == 1 {
            let t = target[0];
            return match &self.keys {
                Words::U64(v) => {
                    let v: &[u64] = v;
                    gallop(from, n, |k| v[k] < t)
                }
                Words::U32(v) => {
                    let v: &[u32] = v;
                    gallop(from, n, |k| (v[k] as u64) < t)
                }
            };
        }
        gallop(from, n, |k| self.cmp_key(k, target) == Ordering::Less)
    }

    /// The first val in `from..end` that is `>= target` (galloping search).
    pub fn seek_val_from(&self, from: usize, end: usize, target: &[u64]) -> usize {
        gallop(from, end, |v| self.cmp_val(v, target) == Ordering::Less)
    }

    /// Heap bytes held by the batch's own vectors.
    pub fn heap_bytes(&self) -> usize {
        let mut bytes = self.keys.heap_bytes() + self.vals.heap_bytes();
        bytes += self.key_offs.capacity() * std::mem::size_of::<usize>();
        if let Some(o) = &self.val_offs {
            bytes += o.capacity() * std::mem::size_of::<usize>();
        }
        bytes += self.times.heap_bytes();
        match &self.diffs {
            Diffs::Ones => {}
            Diffs::Sparse { idx, diffs } => {
                bytes += idx.capacity() * std::mem::size_of::<usize>() + diffs.capacity() * 8
            }
            Diffs::Dense(d) => bytes += d.capacity() * 8,
        }
        let d = &self.desc;
        bytes += (d.lower.elements().len() + d.upper.elements().len() + d.since.elements().len())
            * std::mem::size_of::<Time>();
        bytes
    }

    /// All updates as rows `key ++ val`, sorted by row then time.
    pub fn to_updates(&self) -> Updates {
        let mut out = Updates::with_capacity(self.key_width + self.val_width, self.len());
        for k in 0..self.n_keys() {
            for v in self.vals_of(k) {
                self.for_each_update(self.updates_of(v), |t, d| {
                    self.extend_key(k, &mut out.rows);
                    self.extend_val(v, &mut out.rows);
                    out.times.push(t);
                    out.diffs.push(d);
                });
            }
        }
        out
    }
}

/// The bitwise or of every key word and of every val word of `rows` (rows of `width`
/// words, keys their first `key_width`): one flat pass for the common shapes.
fn key_and_val_bits(rows: &[u64], width: usize, key_width: usize) -> (u64, u64) {
    let or = |ws: &[u64]| ws.iter().fold(0u64, |m, &w| m | w);
    match (width, key_width) {
        (0, _) => (0, 0),
        (w, k) if w == k => (or(rows), 0),
        (_, 0) => (0, or(rows)),
        (2, 1) => rows
            .chunks_exact(2)
            .fold((0, 0), |(k, v), r| (k | r[0], v | r[1])),
        _ => rows.chunks_exact(width).fold((0, 0), |(k, v), r| {
            (k | or(&r[..key_width]), v | or(&r[key_width..]))
        }),
    }
}

fn unsorted(i: usize) -> Error {
    Error::Unsorted(format!(
        "batch updates must be sorted by row words, then time; update {i} is out of order"
    ))
}

/// Galloping (exponential then binary) search: the first index in `from..end` for which
/// `less` is false, assuming `less` is true on a prefix of the range.
#[inline]
pub(crate) fn gallop<F: Fn(usize) -> bool>(from: usize, end: usize, less: F) -> usize {
    if from >= end || !less(from) {
        return from;
    }
    // Invariant: less(lo) is true.
    let mut lo = from;
    let mut step = 1;
    while lo + step < end && less(lo + step) {
        lo += step;
        step <<= 1;
    }
    let mut hi = (lo + step).min(end);
    // less(lo) true; answer in (lo, hi].
    lo += 1;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if less(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}
