//! Building batches from updates pushed in key, val, time order.
//!
//! A [`Builder`] accumulates full-width layers (`keys`, `key_offs`, `vals`, `val_offs`,
//! `times`, `diffs`) and chooses the compact representation of each layer in
//! [`Builder::done`]. The push protocol is:
//!
//! ```text
//! for each key (increasing):  push_key(key)
//!     for each val (increasing):  push_val(val)
//!         for each time (increasing):  push_update(time, diff)
//!         seal_val()      // drops zero diffs, and the val if nothing remains
//!     seal_key()          // drops the key if it has no vals
//! ```

use super::batch::{Batch, Diffs, Times, Words};
use super::description::Description;
use super::merge::advance;
use crate::error::{Error, Result};
use crate::lattice::Time;
use std::ops::Range;

/// Accumulates sorted updates into a [`Batch`].
#[derive(Clone, Debug)]
pub struct Builder {
    key_width: usize,
    val_width: usize,
    keys: Words,
    key_offs: Vec<usize>,
    vals: Words,
    val_offs: Vec<usize>,
    times: Vec<Time>,
    diffs: Vec<i64>,
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
        let mut key_offs = Vec::with_capacity(keys + 1);
        key_offs.push(0);
        let mut val_offs = Vec::with_capacity(vals + 1);
        val_offs.push(0);
        Builder {
            key_width,
            val_width,
            keys: Words::with_capacity(narrow_keys, keys * key_width),
            key_offs,
            vals: Words::with_capacity(narrow_vals, vals * val_width),
            val_offs,
            times: Vec::with_capacity(updates),
            diffs: Vec::with_capacity(updates),
        }
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

    /// Adds an update to the open val (times increasing).
    #[inline]
    pub fn push_update(&mut self, time: Time, diff: i64) {
        self.times.push(time);
        self.diffs.push(diff);
    }

    /// Adds `diff` to the last pushed update (same row and time).
    #[inline]
    pub(crate) fn add_to_last(&mut self, diff: i64) -> Result<()> {
        let last = self.diffs.last_mut().expect("no update to add to");
        *last = last.checked_add(diff).ok_or_else(|| {
            Error::Overflow(format!("summing diffs {last} and {diff} overflows i64"))
        })?;
        Ok(())
    }

    /// Closes the open val: drops its zero-diff updates, and the val if none remain.
    #[inline]
    pub fn seal_val(&mut self) {
        let start = self.val_offs[self.val_offs.len() - 1];
        let mut w = start;
        for r in start..self.diffs.len() {
            if self.diffs[r] != 0 {
                self.diffs[w] = self.diffs[r];
                self.times[w] = self.times[r];
                w += 1;
            }
        }
        self.diffs.truncate(w);
        self.times.truncate(w);
        if w == start {
            let n_vals = self.val_offs.len() - 1;
            self.vals.truncate(n_vals * self.val_width);
        } else {
            self.val_offs.push(w);
        }
    }

    /// Closes the open val, whose updates are known to be non-zero: drops it only if it
    /// has no updates.
    #[inline]
    pub fn seal_val_nonzero(&mut self) {
        let start = self.val_offs[self.val_offs.len() - 1];
        if self.diffs.len() == start {
            let n_vals = self.val_offs.len() - 1;
            self.vals.truncate(n_vals * self.val_width);
        } else {
            self.val_offs.push(self.diffs.len());
        }
    }

    /// Appends keys `keys` of `batch` whole (no key may be open), advancing times by
    /// `frontier` if given; `single` is the batch's single time already advanced, if it
    /// has one. The caller guarantees that advancing merges no two updates of a val.
    pub(crate) fn extend_keys_from(
        &mut self,
        batch: &Batch,
        keys: Range<usize>,
        frontier: Option<&[Time]>,
        single: Option<Time>,
    ) {
        if keys.is_empty() {
            return;
        }
        let (kw, vw) = (self.key_width, self.val_width);
        self.keys
            .extend_range_from(&batch.keys, keys.start * kw..keys.end * kw);
        let (v0, v1) = (batch.key_offs[keys.start], batch.key_offs[keys.end]);
        let vbase = self.val_offs.len() - 1;
        self.key_offs.extend(
            batch.key_offs[keys.start + 1..=keys.end]
                .iter()
                .map(|&o| vbase + o - v0),
        );
        self.vals.extend_range_from(&batch.vals, v0 * vw..v1 * vw);
        let ubase = self.times.len();
        let (u0, u1) = match &batch.val_offs {
            None => {
                self.val_offs.extend((v0 + 1..=v1).map(|v| ubase + v - v0));
                (v0, v1)
            }
            Some(o) => {
                let u0 = o[v0];
                self.val_offs
                    .extend(o[v0 + 1..=v1].iter().map(|&x| ubase + x - u0));
                (u0, o[v1])
            }
        };
        match (&batch.times, frontier) {
            (Times::Single(t), _) => {
                let t = single.unwrap_or(*t);
                self.times.extend(std::iter::repeat_n(t, u1 - u0));
            }
            (Times::Each(ts), None) => self.times.extend_from_slice(&ts[u0..u1]),
            (Times::Each(ts), Some(f)) => {
                self.times.extend(ts[u0..u1].iter().map(|&t| advance(t, f)))
            }
        }
        match &batch.diffs {
            Diffs::Ones => self.diffs.extend(std::iter::repeat_n(1, u1 - u0)),
            Diffs::Dense(d) => self.diffs.extend_from_slice(&d[u0..u1]),
            Diffs::Sparse { .. } => batch.for_each_update(u0..u1, |_, d| self.diffs.push(d)),
        }
    }

    /// Closes the open key: drops it if it has no vals.
    #[inline]
    pub fn seal_key(&mut self) {
        let n_vals = self.val_offs.len() - 1;
        if n_vals == self.key_offs[self.key_offs.len() - 1] {
            let n_keys = self.key_offs.len() - 1;
            self.keys.truncate(n_keys * self.key_width);
        } else {
            self.key_offs.push(n_vals);
        }
    }

    /// Number of updates pushed so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether no update was pushed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes()
            + self.vals.heap_bytes()
            + self.diffs.capacity() * 8
            + (self.key_offs.capacity() + self.val_offs.capacity()) * std::mem::size_of::<usize>()
            + self.times.capacity() * std::mem::size_of::<Time>()
    }

    /// Finishes the batch (all keys and vals must be sealed), choosing compact layers.
    pub fn done(self, desc: Description) -> Batch {
        let Builder {
            key_width,
            val_width,
            keys,
            mut key_offs,
            vals,
            val_offs,
            times,
            diffs,
        } = self;
        debug_assert_eq!(keys.len(), (key_offs.len() - 1) * key_width);
        debug_assert_eq!(vals.len(), (val_offs.len() - 1) * val_width);
        let n_vals = val_offs.len() - 1;
        let n = times.len();
        key_offs.shrink_to_fit();
        let val_offs = if n == n_vals {
            None
        } else {
            let mut v = val_offs;
            v.shrink_to_fit();
            Some(v)
        };
        let times = match times.first() {
            None => Times::Single(Time::minimum()),
            Some(t0) if times.iter().all(|t| t == t0) => Times::Single(*t0),
            Some(_) => {
                let mut t = times;
                t.shrink_to_fit();
                Times::Each(t)
            }
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
            diffs: compact_diffs(diffs),
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
            w => w,
        },
        Words::U32(mut v) => {
            v.shrink_to_fit();
            Words::U32(v)
        }
    }
}

/// Implicit ones, sparse exceptions (when at most a quarter differ from 1), or dense.
pub(crate) fn compact_diffs(diffs: Vec<i64>) -> Diffs {
    let others = diffs.iter().filter(|&&d| d != 1).count();
    if others == 0 {
        Diffs::Ones
    } else if others * 4 <= diffs.len() {
        let mut idx = Vec::with_capacity(others);
        let mut ds = Vec::with_capacity(others);
        for (i, &d) in diffs.iter().enumerate() {
            if d != 1 {
                idx.push(i);
                ds.push(d);
            }
        }
        Diffs::Sparse { idx, diffs: ds }
    } else {
        let mut d = diffs;
        d.shrink_to_fit();
        Diffs::Dense(d)
    }
}
