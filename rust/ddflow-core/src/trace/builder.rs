//! Building batches from updates pushed in key, val, time order.
//!
//! A [`Builder`] accumulates full-width layers (`keys`, `key_offs`, `vals`, `val_offs`,
//! `times`, `diffs`) and chooses the compact representation of each layer in
//! [`Builder::done`]. Built [`Builder::with_layout_in`] a spill directory, it writes every
//! layer through to a file there instead of the heap, and the batch it makes reads them
//! from read-only maps (see `stored.rs`). The push protocol is:
//!
//! ```text
//! for each key (increasing):  push_key(key)
//!     for each val (increasing):  push_val(val)
//!         for each time (increasing):  push_update(time, diff)
//!         seal_val()      // drops zero diffs, and the val if nothing remains
//!     seal_key()          // drops the key if it has no vals
//! ```

use super::batch::{Batch, Diffs, Times, Words, MAX_INDEXED_TIMES};
use super::description::Description;
use super::packed::{self, advance};
use super::stored::Stored;
use super::time_vec::TimeVec;
use crate::lattice::Time;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;

/// Accumulates sorted updates into a [`Batch`].
///
/// Layers that a compact batch omits are only materialized when needed: times while all
/// pushed times are equal, diffs while all are 1, and val offsets while every val has one
/// update. Merging or building data at a single time with unit diffs (static data, or data
/// compacted to one frontier time) thus never writes per-update times or diffs.
#[derive(Clone, Debug)]
pub struct Builder {
    key_width: usize,
    val_width: usize,
    keys: Words,
    key_offs: Stored<usize>,
    vals: Words,
    /// Sealed vals.
    n_vals: usize,
    /// `n_vals + 1` offsets, or `None` while every sealed val has exactly one update.
    val_offs: Option<Stored<usize>>,
    /// Updates pushed.
    n: usize,
    /// The time of every update while `times` is not materialized.
    time0: Time,
    /// Per-update times once two differ (8 bytes each while they fit, `time_vec.rs`).
    times: Option<TimeVec>,
    /// `None` while every diff is 1.
    diffs: Option<Stored<i64>>,
    /// Capacity hint for materialized update layers.
    cap: usize,
    /// The directory layers are written through to (`None`: the heap).
    dir: Option<Arc<PathBuf>>,
}

impl Builder {
    /// An empty builder for keys of `key_width` and vals of `val_width` words.
    pub fn new(key_width: usize, val_width: usize) -> Self {
        Builder::with_capacity(key_width, val_width, 0, 0, 0)
    }

    /// An empty builder with room for the given numbers of keys, vals and updates.
    pub fn with_capacity(
        key_width: usize,
        val_width: usize,
        keys: usize,
        vals: usize,
        updates: usize,
    ) -> Self {
        Builder::with_layout(key_width, val_width, false, false, keys, vals, updates)
    }

    /// As [`Builder::with_capacity`], storing keys (vals) as `u32` from the start if
    /// `narrow_keys` (`narrow_vals`); storage is widened if a word turns out not to fit.
    pub fn with_layout(
        key_width: usize,
        val_width: usize,
        narrow_keys: bool,
        narrow_vals: bool,
        keys: usize,
        vals: usize,
        updates: usize,
    ) -> Self {
        Builder::with_layout_in(
            None,
            key_width,
            val_width,
            narrow_keys,
            narrow_vals,
            keys,
            vals,
            updates,
        )
    }

    /// As [`Builder::with_layout`]; with `dir`, every layer is written through to a new
    /// (unlinked) file in `dir`, with disk blocks reserved for the given numbers, and the
    /// batch [`Builder::done`] makes reads them from read-only maps: the heap holds none of
    /// it. A layer whose file cannot be made or grown stays on (or moves to) the heap.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn with_layout_in(
        dir: Option<Arc<PathBuf>>,
        key_width: usize,
        val_width: usize,
        narrow_keys: bool,
        narrow_vals: bool,
        keys: usize,
        vals: usize,
        updates: usize,
    ) -> Self {
        let d = dir.as_ref();
        let mut key_offs = Stored::with_capacity_in(d, keys + 1);
        key_offs.push(0);
        Builder {
            key_width,
            val_width,
            keys: Words::with_capacity_in(d, narrow_keys, keys * key_width),
            key_offs,
            vals: Words::with_capacity_in(d, narrow_vals, vals * val_width),
            n_vals: 0,
            val_offs: None,
            n: 0,
            time0: Time::minimum(),
            times: None,
            diffs: None,
            cap: updates,
            dir,
        }
    }

    /// Whether the layers are written through to files (see [`Builder::with_layout_in`]).
    #[cfg(test)]
    pub(crate) fn writes_through(&self) -> bool {
        self.dir.is_some()
    }

    /// Opens a key (greater than the previous one).
    #[inline]
    pub fn push_key(&mut self, key: &[u64]) {
        debug_assert_eq!(key.len(), self.key_width);
        self.keys.push_row(key);
    }

    /// Opens key `k` of `batch` (see [`Builder::push_key`]).
    #[inline]
    pub fn push_key_from(&mut self, batch: &Batch, k: usize) {
        self.keys.push_from(&batch.keys, k, self.key_width);
    }

    /// Opens val `v` of `batch` (see [`Builder::push_val`]).
    #[inline]
    pub fn push_val_from(&mut self, batch: &Batch, v: usize) {
        self.vals.push_from(&batch.vals, v, self.val_width);
    }

    /// Opens a val of the open key (greater than the key's previous val).
    #[inline]
    pub fn push_val(&mut self, val: &[u64]) {
        debug_assert_eq!(val.len(), self.val_width);
        self.vals.push_row(val);
    }

    #[cold]
    fn materialize_times(&mut self) {
        let mut t = TimeVec::with_capacity_in(self.dir.as_ref(), self.cap.max(self.n + 1));
        t.push_n(self.time0, self.n);
        self.times = Some(t);
    }

    #[cold]
    fn materialize_diffs(&mut self) {
        let mut d = Stored::with_capacity_in(self.dir.as_ref(), self.cap.max(self.n + 1));
        d.extend(std::iter::repeat_n(1, self.n));
        self.diffs = Some(d);
    }

    #[cold]
    fn materialize_val_offs(&mut self) {
        let mut o = Stored::with_capacity_in(self.dir.as_ref(), self.cap.max(self.n_vals + 2));
        o.extend(0..=self.n_vals);
        self.val_offs = Some(o);
    }

    /// Adds an update to the open val (times increasing).
    // Always in line (as it was over plain `Vec` layers): merges call it in their inner loops.
    #[inline(always)]
    pub fn push_update(&mut self, time: Time, diff: i64) {
        if self.times.is_none() {
            if self.n == 0 {
                self.time0 = time;
            } else if time != self.time0 {
                self.materialize_times();
            }
        }
        if let Some(t) = &mut self.times {
            t.push(time);
        }
        self.push_diff(diff);
    }

    /// As [`Builder::push_update`], with the time packed (`packed.rs`): once times are
    /// materialized as pairs of `u32`, the word is split in two and stored, never unpacked.
    #[inline(always)]
    pub(crate) fn push_update_packed(&mut self, time: u64, diff: i64) {
        match &mut self.times {
            Some(t) => t.push_pair([(time >> 32) as u32, time as u32]),
            None => {
                let t = packed::unpack(time);
                if self.n == 0 {
                    self.time0 = t;
                } else if t != self.time0 {
                    self.materialize_times();
                    if let Some(ts) = &mut self.times {
                        ts.push(t);
                    }
                }
            }
        }
        self.push_diff(diff);
    }

    /// Adds the updates `ups` (packed times increasing, diffs non-zero) to the open val:
    /// once times are stored as pairs of `u32`, times and diffs are each appended in one
    /// step (one capacity check), else update by update.
    #[inline]
    pub(crate) fn extend_packed(&mut self, ups: &[(u64, i64)]) {
        let Some(TimeVec::Narrow(times)) = &mut self.times else {
            for &(p, d) in ups {
                self.push_update_packed(p, d);
            }
            return;
        };
        times.extend(ups.iter().map(|&(p, _)| [(p >> 32) as u32, p as u32]));
        if self.diffs.is_none() && ups.iter().any(|&(_, d)| d != 1) {
            self.materialize_diffs();
        }
        if let Some(diffs) = &mut self.diffs {
            diffs.extend(ups.iter().map(|&(_, d)| d));
        }
        self.n += ups.len();
    }

    /// Records the diff of the update being pushed and counts the update.
    #[inline(always)]
    fn push_diff(&mut self, diff: i64) {
        if diff != 1 && self.diffs.is_none() {
            self.materialize_diffs();
        }
        if let Some(d) = &mut self.diffs {
            d.push(diff);
        }
        self.n += 1;
    }

    /// Adds `diff` to the last pushed update (same row and time). A sum outside `i64` is
    /// kept exact instead: `diff` becomes a further update at the same `time`.
    #[inline]
    pub(crate) fn add_to_last(&mut self, time: Time, diff: i64) {
        if self.diffs.is_none() {
            self.materialize_diffs();
        }
        let d = self.diffs.as_mut().expect("materialized").as_mut_slice();
        let last = d.last_mut().expect("no update to add to");
        match last.checked_add(diff) {
            Some(v) => *last = v,
            None => self.push_update(time, diff),
        }
    }

    /// First update of the open val.
    #[inline(always)]
    fn val_start(&self) -> usize {
        match &self.val_offs {
            Some(o) => o[o.len() - 1],
            None => self.n_vals,
        }
    }

    /// Closes the open val whose updates start at `start`.
    // Always in line (as it was over plain `Vec` layers): merges call it in their inner loops.
    #[inline(always)]
    fn close_val(&mut self, start: usize) {
        let count = self.n - start;
        if count == 0 {
            self.vals.truncate(self.n_vals * self.val_width);
            return;
        }
        if count > 1 && self.val_offs.is_none() {
            self.materialize_val_offs();
        }
        if let Some(o) = &mut self.val_offs {
            o.push(self.n);
        }
        self.n_vals += 1;
    }

    /// Closes the open val: drops its zero-diff updates, and the val if none remain.
    #[inline]
    pub fn seal_val(&mut self) {
        let start = self.val_start();
        if let Some(diffs) = &mut self.diffs {
            let d = diffs.as_mut_slice();
            // Consolidated input (the common case) has no zero diff: nothing moves.
            let Some(first_zero) = d[start..self.n].iter().position(|&x| x == 0) else {
                self.close_val(start);
                return;
            };
            let mut w = start + first_zero;
            for r in w + 1..self.n {
                if d[r] != 0 {
                    d[w] = d[r];
                    if let Some(t) = &mut self.times {
                        t.move_back(r, w);
                    }
                    w += 1;
                }
            }
            diffs.truncate(w);
            if let Some(t) = &mut self.times {
                t.truncate(w);
            }
            self.n = w;
        }
        self.close_val(start);
    }

    /// Closes the open val, whose updates are known to be non-zero: drops it only if it
    /// has no updates.
    // Always in line: merges seal a val per update or so.
    #[inline(always)]
    pub fn seal_val_nonzero(&mut self) {
        let start = self.val_start();
        self.close_val(start);
    }

    /// Appends keys `keys` of `batch` whole (no key may be open), advancing times by
    /// joining them with `meet` if given (a frontier's meet, see `packed::meet_of`); `single`
    /// is the batch's single time already advanced, if it has one. Advancing may leave two
    /// updates of a val at equal times (or out of order): the caller either knows it cannot
    /// (one update per val, one time, or times already advanced) or follows with
    /// [`Builder::consolidate_keys_from`].
    pub(crate) fn extend_keys_from(
        &mut self,
        batch: &Batch,
        keys: Range<usize>,
        meet: Option<&Time>,
        single: Option<Time>,
    ) {
        if keys.is_empty() {
            return;
        }
        let (kw, vw) = (self.key_width, self.val_width);
        self.keys
            .extend_range_from(&batch.keys, keys.start * kw..keys.end * kw);
        let (v0, v1) = (batch.key_offs[keys.start], batch.key_offs[keys.end]);
        let vbase = self.n_vals;
        self.key_offs.extend(
            batch.key_offs[keys.start + 1..=keys.end]
                .iter()
                .map(|&o| vbase + o - v0),
        );
        self.vals.extend_range_from(&batch.vals, v0 * vw..v1 * vw);
        let ubase = self.n;
        let (u0, u1) = match &batch.val_offs {
            None => {
                if let Some(o) = &mut self.val_offs {
                    o.extend((1..=v1 - v0).map(|i| ubase + i));
                }
                (v0, v1)
            }
            Some(bo) => {
                if self.val_offs.is_none() {
                    self.materialize_val_offs();
                }
                let u0 = bo[v0];
                let o = self.val_offs.as_mut().expect("materialized");
                o.extend(bo[v0 + 1..=v1].iter().map(|&x| ubase + x - u0));
                (u0, bo[v1])
            }
        };
        self.n_vals += v1 - v0;
        let count = u1 - u0;
        match &batch.times {
            Times::Single(t) => {
                let t = single.unwrap_or(*t);
                if self.times.is_none() {
                    if self.n == 0 {
                        self.time0 = t;
                    } else if t != self.time0 {
                        self.materialize_times();
                    }
                }
                if let Some(ts) = &mut self.times {
                    ts.push_n(t, count);
                }
            }
            Times::Each(ts) => {
                if self.times.is_none() {
                    self.materialize_times();
                }
                let out = self.times.as_mut().expect("materialized");
                match meet {
                    None => out.extend_from(ts, u0..u1),
                    Some(m) => out.extend_joined(ts, u0..u1, m),
                }
            }
            Times::Indexed { distinct, idx } => {
                if self.times.is_none() {
                    self.materialize_times();
                }
                let out = self.times.as_mut().expect("materialized");
                let mut advanced = [Time::minimum(); MAX_INDEXED_TIMES];
                for (a, &t) in advanced.iter_mut().zip(distinct) {
                    *a = advance(t, meet);
                }
                for &i in &idx[u0..u1] {
                    out.push(advanced[i as usize]);
                }
            }
        }
        match &batch.diffs {
            Diffs::Ones => {
                if let Some(d) = &mut self.diffs {
                    d.extend(std::iter::repeat_n(1, count));
                }
            }
            diffs => {
                if self.diffs.is_none() {
                    self.materialize_diffs();
                }
                let out = self.diffs.as_mut().expect("materialized");
                match diffs {
                    Diffs::Dense(d) => out.extend_from_slice(&d[u0..u1]),
                    _ => batch.for_each_update(u0..u1, |_, d| out.push(d)),
                }
            }
        }
        self.n += count;
    }

    /// Consolidates the keys from `first_key` on (sealed, appended whole by
    /// [`Builder::extend_keys_from`] with their times advanced, which may have made times of
    /// a val equal or out of order): each val's updates are sorted by time where needed,
    /// equal times summed, zero totals dropped, and vals and keys left empty dropped. Leaves
    /// them as they are (after one pass over their times) when every val's times increase.
    pub(crate) fn consolidate_keys_from(&mut self, first_key: usize) {
        let Some(offs) = &self.val_offs else {
            return; // One update per val.
        };
        let n_keys = self.key_offs.len() - 1;
        let v0 = self.key_offs[first_key];
        let increasing = |v: usize| match &self.times {
            Some(t) => t.increasing(offs[v]..offs[v + 1]),
            None => offs[v + 1] - offs[v] <= 1,
        };
        if (v0..self.n_vals).all(increasing) {
            return;
        }
        if self.times.is_none() {
            self.materialize_times();
        }
        if self.diffs.is_none() {
            self.materialize_diffs();
        }
        let (kw, vw) = (self.key_width, self.val_width);
        let offs = self.val_offs.as_mut().expect("checked").as_mut_slice();
        let times = self.times.as_mut().expect("materialized");
        let diffs = self.diffs.as_mut().expect("materialized").as_mut_slice();
        let key_offs = self.key_offs.as_mut_slice();
        let mut scratch: Vec<(Time, i64)> = Vec::new();
        let (mut wk, mut wv, mut wu) = (first_key, v0, offs[v0]);
        let mut val_start = key_offs[first_key];
        let mut upd_start = offs[v0];
        for k in first_key..n_keys {
            let val_end = key_offs[k + 1];
            let key_wv = wv;
            for v in val_start..val_end {
                let upd_end = offs[v + 1];
                let from = wu;
                if times.increasing(upd_start..upd_end) {
                    for u in upd_start..upd_end {
                        times.move_back(u, wu);
                        diffs[wu] = diffs[u];
                        wu += 1;
                    }
                } else {
                    scratch.clear();
                    scratch.extend((upd_start..upd_end).map(|u| (times.get(u), diffs[u])));
                    scratch.sort_by_key(|x| x.0);
                    // A total outside i64 stays exact as several updates; a val's
                    // updates never outnumber what it read, so they fit in place.
                    crate::sort::consolidate::sum_runs_in_pieces(&scratch, |t, d| {
                        times.set(wu, t);
                        diffs[wu] = d;
                        wu += 1;
                    });
                }
                if wu > from {
                    self.vals.copy_row(v, wv, vw);
                    offs[wv + 1] = wu;
                    wv += 1;
                }
                upd_start = upd_end;
            }
            if wv > key_wv {
                self.keys.copy_row(k, wk, kw);
                key_offs[wk + 1] = wv;
                wk += 1;
            }
            val_start = val_end;
        }
        self.keys.truncate(wk * kw);
        self.key_offs.truncate(wk + 1);
        self.vals.truncate(wv * vw);
        self.val_offs.as_mut().expect("checked").truncate(wv + 1);
        self.times.as_mut().expect("materialized").truncate(wu);
        self.diffs.as_mut().expect("materialized").truncate(wu);
        self.n_vals = wv;
        self.n = wu;
    }

    /// Closes the open key: drops it if it has no vals.
    // Always in line (as it was over plain `Vec` layers): merges call it in their inner loops.
    #[inline(always)]
    pub fn seal_key(&mut self) {
        if self.n_vals == self.key_offs[self.key_offs.len() - 1] {
            let n_keys = self.key_offs.len() - 1;
            self.keys.truncate(n_keys * self.key_width);
        } else {
            self.key_offs.push(self.n_vals);
        }
    }

    /// Number of sealed keys.
    #[inline]
    pub(crate) fn n_keys(&self) -> usize {
        self.key_offs.len() - 1
    }

    /// Number of updates pushed so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no update was pushed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Heap bytes held (capacities of the layers allocated so far).
    pub fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes()
            + self.vals.heap_bytes()
            + self.key_offs.capacity() * std::mem::size_of::<usize>()
            + self.val_offs.as_ref().map_or(0, |o| o.capacity()) * std::mem::size_of::<usize>()
            + self.times.as_ref().map_or(0, |t| t.heap_bytes())
            + self.diffs.as_ref().map_or(0, |d| d.capacity()) * 8
    }

    /// Finishes the batch (all keys and vals must be sealed), choosing compact layers.
    pub fn done(self, desc: Description) -> Batch {
        let Builder {
            key_width,
            val_width,
            keys,
            mut key_offs,
            vals,
            n_vals,
            val_offs,
            n,
            time0,
            times,
            diffs,
            cap: _,
            dir: _,
        } = self;
        debug_assert_eq!(keys.len(), (key_offs.len() - 1) * key_width);
        debug_assert_eq!(vals.len(), n_vals * val_width);
        debug_assert_eq!(key_offs[key_offs.len() - 1], n_vals);
        key_offs.shrink_to_fit();
        let val_offs = match val_offs {
            Some(mut o) if n != n_vals => {
                o.shrink_to_fit();
                Some(o)
            }
            _ => None,
        };
        let times = match times {
            None => Times::Single(time0),
            Some(t) => Times::compacted(t),
        };
        let times = if n == 0 {
            Times::Single(Time::minimum())
        } else {
            times
        };
        Batch {
            desc,
            key_width,
            val_width,
            keys: narrow(keys),
            key_offs,
            vals: narrow(vals),
            val_offs,
            times,
            diffs: diffs.map_or(Diffs::Ones, compact_diffs),
        }
    }
}

/// Narrows `u64` storage if every word fits; releases spare capacity.
fn narrow(words: Words) -> Words {
    match words {
        Words::U64(v) => match Words::narrowed(v) {
            Words::U64(mut v) => {
                v.shrink_to_fit();
                Words::U64(v)
            }
            Words::U32(mut v) => {
                v.shrink_to_fit();
                Words::U32(v)
            }
        },
        Words::U32(mut v) => {
            v.shrink_to_fit();
            Words::U32(v)
        }
    }
}

/// Implicit ones, sparse exceptions (when at most a quarter differ from 1), or dense.
pub(crate) fn compact_diffs(diffs: impl Into<Stored<i64>>) -> Diffs {
    let diffs = diffs.into();
    let others = diffs.iter().filter(|&&d| d != 1).count();
    if others == 0 {
        Diffs::Ones
    } else if others * 4 <= diffs.len() {
        let mut idx: Stored<usize> = diffs.with_capacity_like(others);
        let mut ds: Stored<i64> = diffs.with_capacity_like(others);
        for (i, &d) in diffs.iter().enumerate() {
            if d != 1 {
                idx.push(i);
                ds.push(d);
            }
        }
        idx.shrink_to_fit();
        ds.shrink_to_fit();
        Diffs::Sparse { idx, diffs: ds }
    } else {
        let mut d = diffs;
        d.shrink_to_fit();
        Diffs::Dense(d)
    }
}
