//! A capture's completed updates in `History` mode, stored by column: one vector of core
//! words per record column, each time's leading coordinates, and the diffs.
//!
//! A completed batch arrives row-major and consolidated; [`History::append`] writes each of
//! its columns once, into that column's vector (the one change from rows to columns on the
//! way out of the engine). Reading the history ([`Kept`]) then hands out those vectors as
//! they are: the bindings copy each into a numpy array without decoding rows again.

use crate::lattice::{PartialOrder, Time};
use crate::updates::Updates;
use std::borrow::Cow;

/// Completed updates, stored compactly by column: a time keeps only its leading `dims`
/// coordinates. Batches are appended as they complete; a `(record, time)` appears at most
/// once, since no update arrives at a time after it is complete.
#[derive(Debug, Default)]
pub(super) struct History {
    dims: usize,
    columns: Vec<Vec<u64>>,
    coords: Vec<u64>,
    diffs: Vec<i64>,
}

impl History {
    /// Marks the kept columns' words.
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.columns.iter().for_each(|c| marks.words(c));
    }

    /// An empty history of records of `width` columns, times of `dims` coordinates.
    pub(super) fn new(width: usize, dims: usize) -> History {
        History {
            dims,
            columns: vec![Vec::new(); width],
            ..History::default()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.diffs.len()
    }

    fn time(&self, i: usize) -> Time {
        Time::from_coords(&self.coords[i * self.dims..(i + 1) * self.dims])
    }

    /// Appends a consolidated batch: one pass over each of its columns, its times and its
    /// diffs.
    pub(super) fn append(&mut self, upd: &Updates) {
        let w = upd.width;
        for (c, col) in self.columns.iter_mut().enumerate() {
            col.extend(upd.rows.iter().skip(c).step_by(w));
        }
        for t in &upd.times {
            self.coords.extend_from_slice(&t.0[..self.dims]);
        }
        self.diffs.extend_from_slice(&upd.diffs);
    }

    /// The history as borrowed columns.
    pub(super) fn kept(&self) -> Kept<'_> {
        Kept {
            columns: self.columns.iter().map(|c| Cow::Borrowed(&c[..])).collect(),
            dims: self.dims,
            coords: Cow::Borrowed(&self.coords),
            diffs: Cow::Borrowed(&self.diffs),
        }
    }

    /// The updates at times `<= time`, row-major, every time the minimum (not consolidated).
    pub(super) fn up_to(&self, time: &Time) -> Updates {
        let w = self.columns.len();
        let mut acc = Updates::new(w);
        let mut row = vec![0u64; w];
        for i in 0..self.len() {
            if self.time(i).less_equal(time) {
                for (x, col) in row.iter_mut().zip(&self.columns) {
                    *x = col[i];
                }
                acc.push(&row, Time::minimum(), self.diffs[i]);
            }
        }
        acc
    }

    pub(super) fn heap_bytes(&self) -> usize {
        let cols: usize = self.columns.iter().map(|c| c.capacity()).sum();
        (cols + self.coords.capacity() + self.diffs.capacity()) * 8
    }
}

/// What a capture keeps of its completed updates, by column (see
/// [`CaptureState::kept`](super::CaptureState::kept)).
#[derive(Debug)]
pub struct Kept<'a> {
    /// One vector of core words per record column.
    pub columns: Vec<Cow<'a, [u64]>>,
    /// Coordinates per time.
    pub dims: usize,
    /// Each update's time, `dims` coordinates each.
    pub coords: Cow<'a, [u64]>,
    /// Each update's diff.
    pub diffs: Cow<'a, [i64]>,
}

impl Kept<'_> {
    /// Kept columns of row-major updates (a copy of each column).
    pub fn from_updates(upd: &Updates, dims: usize) -> Kept<'static> {
        let w = upd.width;
        Kept {
            columns: (0..w)
                .map(|c| Cow::Owned(upd.rows.iter().skip(c).step_by(w).copied().collect()))
                .collect(),
            dims,
            coords: Cow::Owned(
                upd.times
                    .iter()
                    .flat_map(|t| t.0[..dims].to_vec())
                    .collect(),
            ),
            diffs: Cow::Owned(upd.diffs.clone()),
        }
    }

    /// Number of updates.
    pub fn len(&self) -> usize {
        self.diffs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.diffs.is_empty()
    }

    /// The updates row-major (a copy).
    pub fn to_updates(&self) -> Updates {
        let w = self.columns.len();
        let n = self.len();
        let mut rows = vec![0u64; n * w];
        for (c, col) in self.columns.iter().enumerate() {
            for (i, &x) in col.iter().enumerate() {
                rows[i * w + c] = x;
            }
        }
        let dims = self.dims.max(1);
        Updates {
            width: w,
            rows,
            times: self
                .coords
                .chunks_exact(dims)
                .map(Time::from_coords)
                .collect(),
            diffs: self.diffs.to_vec(),
        }
    }
}
