//! Cursors: a merged, key-ordered view across several batches.
//!
//! A [`Cursor`] owns `Arc`s of the batches it reads (oldest first), so it stays valid while
//! the spine it came from keeps merging. It keeps a key position in each batch; the current
//! key is the least key any batch is positioned at. Seeking is forward only (galloping
//! search in each batch); [`Cursor::rewind`] starts over.
//!
//! Beside each batch's position the cursor keeps the first word of the key there (its
//! *head*; `u64::MAX` once the batch is read to its end) in one array, so a seek passes over
//! a batch whose next key starts past the key sought with one compare, without touching the
//! batch; only the batches whose head is at or before the key's first word are searched.
//!
//! Ordering of [`Cursor::for_each_val_update`]: batches in the order given (oldest first);
//! within a batch, vals increasing and each val's times increasing (lexicographic order).
//! Vals are not merged across batches: the same val may be reported by several batches.
//! [`Cursor::history`] gives a key's consolidated `(val, time, diff)` sorted by val, time.

use super::batch::Batch;
use super::packed;
use crate::lattice::Time;
use crate::updates::Updates;
use std::cmp::Ordering;
use std::sync::Arc;

/// A key-ordered cursor over the union of several batches.
#[derive(Clone, Debug)]
pub struct Cursor {
    batches: Vec<Arc<Batch>>,
    key_width: usize,
    val_width: usize,
    /// Current key index in each batch.
    pos: Vec<usize>,
    /// First word of the key at `pos[i]` in batch `i` (0 for keys of no words), or
    /// `u64::MAX` when `pos[i]` is past the batch's last key.
    heads: Vec<u64>,
    /// Indices of the batches positioned at the current key.
    active: Vec<usize>,
    /// The current key (valid if `!active.is_empty()`).
    key: Vec<u64>,
    vbuf: Vec<u64>,
    scratch: Updates,
    perm: Vec<usize>,
    /// One batch's `(packed time, diff)` pairs in [`Cursor::gather_packed`].
    pairs: Vec<(u64, i64)>,
}

impl Cursor {
    /// Replaces each batch that is the original of one of `swaps` with its spilled copy
    /// (which reads exactly as it), so that the heap copy can be freed; positions are kept.
    pub fn swap_batches(&mut self, swaps: &super::spine::Swaps) {
        for b in self.batches.iter_mut() {
            if let Some((_, copy)) = swaps.iter().find(|(old, _)| Arc::ptr_eq(old, b)) {
                *b = copy.clone();
            }
        }
    }

    /// Marks the words of the batches the cursor reads (see [`crate::string_gc`]).
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.batches.iter().for_each(|b| b.mark_strings(marks));
    }

    /// A cursor over `batches` (oldest first), all with the given widths, at the first key.
    ///
    /// Panics if a batch's widths differ from `key_width` / `val_width`.
    pub fn new(key_width: usize, val_width: usize, batches: Vec<Arc<Batch>>) -> Cursor {
        for b in batches.iter() {
            assert!(
                b.key_width() == key_width && b.val_width() == val_width,
                "cursor over batches of widths ({}, {}), expected ({key_width}, {val_width})",
                b.key_width(),
                b.val_width()
            );
        }
        let batches: Vec<Arc<Batch>> = batches.into_iter().filter(|b| !b.is_empty()).collect();
        let mut c = Cursor {
            pos: vec![0; batches.len()],
            heads: batches.iter().map(|b| head(b, 0)).collect(),
            batches,
            key_width,
            val_width,
            active: Vec::new(),
            key: Vec::with_capacity(key_width),
            vbuf: Vec::with_capacity(val_width),
            scratch: Updates::new(val_width),
            perm: Vec::new(),
            pairs: Vec::new(),
        };
        c.settle();
        c
    }

    /// The batches read (non-empty ones, oldest first).
    pub fn batches(&self) -> &[Arc<Batch>] {
        &self.batches
    }

    /// Words per key.
    pub fn key_width(&self) -> usize {
        self.key_width
    }

    /// Words per val.
    pub fn val_width(&self) -> usize {
        self.val_width
    }

    /// Recomputes the current key and the active batches from the positions: only the
    /// batches with the least head can hold the least key.
    fn settle(&mut self) {
        self.active.clear();
        let Some(&least) = self.heads.iter().min() else {
            return;
        };
        for (i, b) in self.batches.iter().enumerate() {
            let p = self.pos[i];
            if self.heads[i] != least || p >= b.n_keys() {
                continue;
            }
            if self.key_width == 1 {
                // One-word keys: the head is the key.
                if self.active.is_empty() {
                    self.key.clear();
                    self.key.push(least);
                }
                self.active.push(i);
                continue;
            }
            let ord = if self.active.is_empty() {
                Ordering::Less
            } else {
                b.cmp_key(p, &self.key)
            };
            match ord {
                Ordering::Less => {
                    self.active.clear();
                    self.active.push(i);
                    self.key.clear();
                    b.extend_key(p, &mut self.key);
                }
                Ordering::Equal => self.active.push(i),
                Ordering::Greater => {}
            }
        }
    }

    /// Whether the cursor is at a key.
    #[inline]
    pub fn key_valid(&self) -> bool {
        !self.active.is_empty()
    }

    /// The current key (only meaningful if [`Cursor::key_valid`]).
    #[inline]
    pub fn key(&self) -> &[u64] {
        &self.key
    }

    /// Moves to the next key.
    pub fn step_key(&mut self) {
        for &i in self.active.iter() {
            self.pos[i] += 1;
            self.heads[i] = head(&self.batches[i], self.pos[i]);
        }
        self.settle();
    }

    /// Moves forward to the first key `>= key`; returns whether that key equals `key`.
    /// Never moves backwards: if the current key is already greater, nothing changes.
    pub fn seek_key(&mut self, key: &[u64]) -> bool {
        debug_assert_eq!(key.len(), self.key_width);
        if self.key_valid() && self.key.as_slice() >= key {
            return self.key.as_slice() == key;
        }
        // The batches holding `key` are the active ones; only when none does is the least
        // key past it looked for. A batch whose head is past the key's first word stays
        // where it is.
        self.active.clear();
        let first = key.first().copied().unwrap_or(0);
        for i in 0..self.batches.len() {
            let h = self.heads[i];
            if h > first {
                continue;
            }
            let b = &self.batches[i];
            let n = b.n_keys();
            let mut p = self.pos[i];
            if p >= n {
                continue;
            }
            if h < first || self.key_width != 1 {
                p = b.seek_key_from(p, key);
                self.pos[i] = p;
                self.heads[i] = head(b, p);
                if p >= n || (self.key_width == 1 && self.heads[i] != first) {
                    continue;
                }
                if self.key_width != 1 && b.cmp_key(p, key) != Ordering::Equal {
                    continue;
                }
            }
            self.active.push(i);
        }
        if self.active.is_empty() {
            self.settle();
            return false;
        }
        self.key.clear();
        self.key.extend_from_slice(key);
        true
    }

    /// Moves back to the first key.
    pub fn rewind(&mut self) {
        for (i, b) in self.batches.iter().enumerate() {
            self.pos[i] = 0;
            self.heads[i] = head(b, 0);
        }
        self.settle();
    }

    /// Calls `f(val, time, diff)` for every update of the current key, batch by batch
    /// (see the module docs for the order).
    pub fn for_each_val_update<F: FnMut(&[u64], Time, i64)>(&mut self, mut f: F) {
        for &i in self.active.iter() {
            let b = &self.batches[i];
            for v in b.vals_of(self.pos[i]) {
                let val = b.val(v, &mut self.vbuf);
                b.for_each_update(b.updates_of(v), |t, d| f(val, t, d));
            }
        }
    }

    /// Appends every update of the current key to `out` as `(val, time, diff)` with the time
    /// packed and joined with `meet` (see [`packed::gather_key`]), batch by batch in the
    /// order of [`Cursor::for_each_val_update`]; vals must be at most one word (`val` is 0
    /// for vals of no words). Returns false when a batch's times do not pack; `out` then
    /// holds the updates of the batches before it.
    pub fn gather_packed(&mut self, meet: u64, out: &mut Vec<(u64, u64, i64)>) -> bool {
        debug_assert!(
            self.val_width <= 1,
            "packed reads take vals of at most one word"
        );
        for &i in self.active.iter() {
            let b = &self.batches[i];
            if !packed::gather_key(b, self.pos[i], meet, &mut self.pairs, out) {
                return false;
            }
        }
        true
    }

    /// Number of updates of the current key across batches.
    pub fn key_len(&self) -> usize {
        self.active
            .iter()
            .map(|&i| self.batches[i].updates_of_key(self.pos[i]).len())
            .sum()
    }

    /// Appends the current key's consolidated history to `out` (width `val_width`): one
    /// `(val, time, diff)` per distinct val and time with non-zero sum, sorted by val then
    /// time. Does nothing if the cursor is not at a key.
    pub fn history(&mut self, out: &mut Updates) {
        debug_assert_eq!(out.width, self.val_width);
        if self.active.len() == 1 {
            // A single batch is already consolidated and sorted.
            let i = self.active[0];
            let b = &self.batches[i];
            for v in b.vals_of(self.pos[i]) {
                let val = b.val(v, &mut self.vbuf);
                b.for_each_update(b.updates_of(v), |t, d| out.push(val, t, d));
            }
            return;
        }
        let s = &mut self.scratch;
        s.clear();
        s.width = self.val_width;
        for &i in self.active.iter() {
            let b = &self.batches[i];
            for v in b.vals_of(self.pos[i]) {
                let val = b.val(v, &mut self.vbuf);
                b.for_each_update(b.updates_of(v), |t, d| s.push(val, t, d));
            }
        }
        self.perm.clear();
        self.perm.extend(0..s.len());
        self.perm
            .sort_unstable_by(|&x, &y| s.row(x).cmp(s.row(y)).then(s.times[x].cmp(&s.times[y])));
        let mut j = 0;
        while j < self.perm.len() {
            let x = self.perm[j];
            let mut d = s.diffs[x] as i128;
            let mut k = j + 1;
            while k < self.perm.len() {
                let y = self.perm[k];
                if s.times[y] != s.times[x] || s.row(y) != s.row(x) {
                    break;
                }
                d += s.diffs[y] as i128;
                k += 1;
            }
            // Exact: a total outside i64 stays as several updates that sum to it.
            crate::sort::consolidate::pieces(d, |p| out.push(s.row(x), s.times[x], p));
            j = k;
        }
    }

    /// Seeks to `key` and appends its consolidated history to `out` (see
    /// [`Cursor::history`]); returns whether the key exists.
    pub fn key_history(&mut self, key: &[u64], out: &mut Updates) -> bool {
        if self.seek_key(key) {
            self.history(out);
            true
        } else {
            false
        }
    }

    /// Reads everything from the current key on as consolidated updates (rows `key ++ val`,
    /// sorted by row then time); leaves the cursor exhausted.
    pub fn to_updates(&mut self) -> Updates {
        let width = self.key_width + self.val_width;
        let mut out = Updates::new(width);
        let mut h = Updates::new(self.val_width);
        while self.key_valid() {
            h.clear();
            self.history(&mut h);
            for i in 0..h.len() {
                out.rows.extend_from_slice(&self.key);
                out.rows.extend_from_slice(h.row(i));
                out.times.push(h.times[i]);
                out.diffs.push(h.diffs[i]);
            }
            self.step_key();
        }
        out
    }
}

/// The head of batch `b` at key position `p` (see [`Cursor`]'s `heads`).
#[inline]
fn head(b: &Batch, p: usize) -> u64 {
    if p < b.n_keys() {
        b.key_head(p)
    } else {
        u64::MAX
    }
}
