//! Columnar batches of updates `(row, time, diff)`.
//!
//! A row is a fixed number of `u64` words (see [`crate::encoding`] for how typed columns map
//! to words). [`Updates`] stores `n` rows flat (`rows.len() == n * width`) beside a time and
//! a diff per row. Arranged data splits each row into a key (the first `key_width` words)
//! and a value (the remaining words).

use crate::error::{Error, Result};
use crate::lattice::Time;
pub use crate::time_column::TimeColumn;

/// A columnar batch of updates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Updates {
    /// Words per row.
    pub width: usize,
    /// Row words, `len() * width` of them.
    pub rows: Vec<u64>,
    /// One time per row (held as one time while all rows share it: [`TimeColumn`]).
    pub times: TimeColumn,
    /// One signed count per row.
    pub diffs: Vec<i64>,
}

impl Updates {
    /// The rows, times (written out) and diffs as plain vectors: what tests compare, whatever
    /// form the time column is held in.
    #[cfg(test)]
    pub(crate) fn columns(&self) -> (Vec<u64>, Vec<Time>, Vec<i64>) {
        (
            self.rows.clone(),
            self.times.iter().copied().collect(),
            self.diffs.clone(),
        )
    }

    /// An empty batch of rows of `width` words.
    pub fn new(width: usize) -> Self {
        Updates {
            width,
            rows: Vec::new(),
            times: TimeColumn::new(),
            diffs: Vec::new(),
        }
    }

    /// An empty batch with room for `n` updates (the times' room is made only if they
    /// differ: [`TimeColumn::with_capacity`]).
    pub fn with_capacity(width: usize, n: usize) -> Self {
        Updates {
            width,
            rows: Vec::with_capacity(n * width),
            times: TimeColumn::with_capacity(n),
            diffs: Vec::with_capacity(n),
        }
    }

    /// Builds a batch from flat columns, checking their lengths agree.
    pub fn from_parts(
        width: usize,
        rows: Vec<u64>,
        times: Vec<Time>,
        diffs: Vec<i64>,
    ) -> Result<Self> {
        if times.len() != diffs.len() || rows.len() != times.len() * width {
            return Err(Error::Shape(format!(
                "{} row words of width {width}, {} times and {} diffs do not describe the same number of updates",
                rows.len(),
                times.len(),
                diffs.len()
            )));
        }
        Ok(Updates {
            width,
            rows,
            times: times.into(),
            diffs,
        })
    }

    /// Number of updates.
    #[inline]
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Whether there are no updates.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The words of row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> &[u64] {
        &self.rows[i * self.width..(i + 1) * self.width]
    }

    /// Appends one update.
    #[inline]
    pub fn push(&mut self, row: &[u64], time: Time, diff: i64) {
        debug_assert_eq!(row.len(), self.width);
        push_words(&mut self.rows, row);
        self.times.push(time);
        self.diffs.push(diff);
    }

    /// Appends one update whose row is `head` followed by `tail` (a key and its value),
    /// without assembling the row elsewhere first.
    #[inline]
    pub fn push_parts(&mut self, head: &[u64], tail: &[u64], time: Time, diff: i64) {
        debug_assert_eq!(head.len() + tail.len(), self.width);
        push_words(&mut self.rows, head);
        push_words(&mut self.rows, tail);
        self.times.push(time);
        self.diffs.push(diff);
    }

    /// Appends all updates of `other` (same width).
    pub fn extend(&mut self, other: &Updates) {
        debug_assert_eq!(self.width, other.width);
        self.rows.extend_from_slice(&other.rows);
        self.times.extend(&other.times);
        self.diffs.extend_from_slice(&other.diffs);
    }

    /// Keeps the first `n` updates.
    pub fn truncate(&mut self, n: usize) {
        self.rows.truncate(n * self.width);
        self.times.truncate(n);
        self.diffs.truncate(n);
    }

    /// Removes all updates, keeping allocations.
    pub fn clear(&mut self) {
        self.rows.clear();
        self.times.clear();
        self.diffs.clear();
    }

    /// Negates every diff. A diff of `i64::MIN`, whose negation does not fit, becomes two
    /// updates `i64::MAX` and `1` of the same row and time (they sum to the exact negation;
    /// consumers sum diffs exactly).
    pub fn negate(&mut self) {
        let mut split = Vec::new();
        for (i, d) in self.diffs.iter_mut().enumerate() {
            match d.checked_neg() {
                Some(n) => *d = n,
                None => {
                    *d = i64::MAX;
                    split.push(i);
                }
            }
        }
        for i in split {
            let row = self.rows[i * self.width..(i + 1) * self.width].to_vec();
            self.push(&row, self.times[i], 1);
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.rows.capacity() * 8
            + self.times.capacity() * std::mem::size_of::<Time>()
            + self.diffs.capacity() * 8
    }
}

/// Appends `words` to `v`. Rows of one or two words (a key, a count) are copied as such:
/// `extend_from_slice` of a slice of unknown length calls `memcpy` per row, a fifth of the
/// CPU samples of the reduce's output pushes in the `count` micro-case.
#[inline]
fn push_words(v: &mut Vec<u64>, words: &[u64]) {
    match *words {
        [] => {}
        [a] => v.push(a),
        [a, b] => v.extend_from_slice(&[a, b]),
        _ => v.extend_from_slice(words),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `push_parts` and `push` of the joined row build the same batch, for rows of every
        /// width the copies distinguish (0, 1, 2 and more words) split anywhere.
        #[test]
        fn push_parts_is_push_of_the_joined_row(
            width in 0usize..5,
            rows in prop::collection::vec(
                (prop::collection::vec(any::<u64>(), 4), 0usize..5, 0u64..3, -2i64..3),
                0..8,
            )
        ) {
            let (mut parts, mut joined) = (Updates::new(width), Updates::new(width));
            for (words, split, t, d) in &rows {
                let row = &words[..width];
                let split = (*split).min(width);
                parts.push_parts(&row[..split], &row[split..], Time::scalar(*t), *d);
                joined.push(row, Time::scalar(*t), *d);
            }
            prop_assert_eq!(&parts, &joined);
            prop_assert_eq!(parts.rows.len(), rows.len() * width);
            for (i, (words, _, t, d)) in rows.iter().enumerate() {
                prop_assert_eq!(parts.row(i), &words[..width]);
                prop_assert_eq!((parts.times[i], parts.diffs[i]), (Time::scalar(*t), *d));
            }
        }
    }
}
