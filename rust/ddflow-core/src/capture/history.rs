//! A capture's completed updates in `History` mode, stored by column: one column of core
//! words per record column, each time's leading coordinates, and the diffs, each in 32 bits
//! while its words fit ([`Narrow`]).
//!
//! A completed batch arrives row-major and consolidated; [`History::append`] writes each of
//! its columns once, into that column (the one change from rows to columns on the way out
//! of the engine). Reading the history ([`History::kept`]) hands out 64-bit copies of those
//! columns, already in the order `Capture.updates()` presents them (by time, then record)
//! when the record dtypes let the words be compared as values; the bindings then copy each
//! into a numpy array without decoding rows again.

use super::narrow::Narrow;
use crate::encoding::{is_null_word, DType};
use crate::lattice::{PartialOrder, Time};
use crate::updates::Updates;
use std::borrow::Cow;
use std::cmp::Ordering;

/// Completed updates, stored compactly by column: a time keeps only its leading `dims`
/// coordinates. Batches are appended as they complete; a `(record, time)` appears at most
/// once, since no update arrives at a time after it is complete.
#[derive(Debug, Default)]
pub(super) struct History {
    dims: usize,
    columns: Vec<Narrow>,
    coords: Narrow,
    /// Each diff's bits as a word.
    diffs: Narrow,
}

impl History {
    /// Marks the kept columns' words.
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.columns.iter().for_each(|c| c.mark_strings(marks));
    }

    /// An empty history of records of `width` columns, times of `dims` coordinates.
    pub(super) fn new(width: usize, dims: usize) -> History {
        History {
            dims,
            columns: vec![Narrow::default(); width],
            ..History::default()
        }
    }

    pub(super) fn len(&self) -> usize {
        self.diffs.len()
    }

    fn time(&self, i: usize) -> Time {
        let mut c = [0u64; crate::lattice::MAX_DIMS];
        for (j, x) in c[..self.dims].iter_mut().enumerate() {
            *x = self.coords.get(i * self.dims + j);
        }
        Time::from_coords(&c[..self.dims])
    }

    /// Appends a consolidated batch: one pass over each of its columns, its times and its
    /// diffs.
    pub(super) fn append(&mut self, upd: &Updates) {
        let w = upd.width;
        // Iterators of known length (slices, `chunks_exact`), so each copy writes without a
        // capacity check per word (see `Narrow::extend`).
        for (c, col) in self.columns.iter_mut().enumerate() {
            col.extend(upd.rows.chunks_exact(w).map(|row| row[c]));
        }
        let dims = self.dims;
        if let Some(t) = upd.times.same() {
            // One time for the whole batch: not written out to be read.
            let n = upd.len();
            self.coords
                .extend((0..n * dims).map(|k| t.0[k % dims.max(1)]));
        } else if dims == 1 {
            // One coordinate per time (the common case), without a division per word.
            let times: &[Time] = &upd.times;
            self.coords.extend(times.iter().map(|t| t.0[0]));
        } else {
            let times: &[Time] = &upd.times;
            self.coords
                .extend((0..upd.len() * dims).map(|k| times[k / dims].0[k % dims]));
        }
        self.diffs.extend(upd.diffs.iter().map(|&d| d as u64));
    }

    /// The history as 64-bit columns. With `schema` given and every record column of a
    /// dtype whose words order as its values (int64, bool) and free of nulls, they come
    /// sorted by time coordinates, then record columns, and `sorted` is set; otherwise in
    /// the order the updates completed.
    pub(super) fn kept(&self, schema: Option<&[DType]>) -> Kept<'static> {
        let view = self.ordered(schema);
        Kept {
            columns: (0..self.columns.len())
                .map(|c| Cow::Owned(view.column(c)))
                .collect(),
            dims: self.dims,
            coords: Cow::Owned(view.coords()),
            diffs: Cow::Owned(view.diffs()),
            sorted: view.sorted(),
        }
    }

    /// The history in the order of [`History::kept`], read one column at a time (so that a
    /// reader converting each column holds at most one 64-bit copy at once).
    pub(super) fn ordered(&self, schema: Option<&[DType]>) -> OrderedHistory<'_> {
        OrderedHistory {
            history: self,
            order: schema.and_then(|s| self.value_order(s)),
        }
    }

    /// The permutation that sorts the updates by time coordinates, then record values, if
    /// the words of every record column compare as its values (see [`History::kept`]).
    fn value_order(&self, schema: &[DType]) -> Option<Vec<u32>> {
        let n = u32::try_from(self.len()).ok()?;
        let signed: Vec<bool> = schema
            .iter()
            .zip(&self.columns)
            .map(|(&d, col)| match d {
                DType::Int64 | DType::Bool
                    if !(0..col.len()).any(|i| is_null_word(d, col.get(i))) =>
                {
                    Some(d == DType::Int64)
                }
                _ => None,
            })
            .collect::<Option<_>>()?;
        if signed.len() != self.columns.len() {
            return None;
        }
        let dims = self.dims;
        let mut order: Vec<u32> = (0..n).collect();
        order.sort_unstable_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            let by_time = (0..dims).fold(Ordering::Equal, |o, j| {
                o.then_with(|| {
                    self.coords
                        .get(a * dims + j)
                        .cmp(&self.coords.get(b * dims + j))
                })
            });
            self.columns
                .iter()
                .zip(&signed)
                .fold(by_time, |o, (col, &signed)| {
                    o.then_with(|| {
                        let (x, y) = (col.get(a), col.get(b));
                        if signed {
                            (x as i64).cmp(&(y as i64))
                        } else {
                            x.cmp(&y)
                        }
                    })
                })
        });
        Some(order)
    }

    /// The updates at times `<= time`, row-major, every time the minimum (not consolidated).
    pub(super) fn up_to(&self, time: &Time) -> Updates {
        let w = self.columns.len();
        let mut acc = Updates::new(w);
        let mut row = vec![0u64; w];
        for i in 0..self.len() {
            if self.time(i).less_equal(time) {
                for (x, col) in row.iter_mut().zip(&self.columns) {
                    *x = col.get(i);
                }
                acc.push(&row, Time::minimum(), self.diffs.get(i) as i64);
            }
        }
        acc
    }

    pub(super) fn heap_bytes(&self) -> usize {
        let cols: usize = self.columns.iter().map(Narrow::heap_bytes).sum();
        cols + self.coords.heap_bytes() + self.diffs.heap_bytes()
    }
}

/// A capture's history in the order `Capture.updates()` presents it where the record dtypes
/// allow (see [`History::kept`]), read column by column.
#[derive(Debug)]
pub struct OrderedHistory<'a> {
    history: &'a History,
    /// The permutation into time-then-record order; `None`: the order of completion.
    order: Option<Vec<u32>>,
}

impl OrderedHistory<'_> {
    /// Whether the updates come sorted by time coordinates, then record values.
    pub fn sorted(&self) -> bool {
        self.order.is_some()
    }

    /// Number of record columns.
    pub fn width(&self) -> usize {
        self.history.columns.len()
    }

    /// Coordinates per time.
    pub fn dims(&self) -> usize {
        self.history.dims
    }

    fn read(&self, col: &Narrow) -> Vec<u64> {
        match &self.order {
            Some(order) => col.gather(order),
            None => col.to_words(),
        }
    }

    /// Record column `c`'s words.
    pub fn column(&self, c: usize) -> Vec<u64> {
        self.read(&self.history.columns[c])
    }

    /// Each update's time, `dims` coordinates each.
    pub fn coords(&self) -> Vec<u64> {
        let h = self.history;
        match &self.order {
            Some(order) => order
                .iter()
                .flat_map(|&i| (0..h.dims).map(move |j| (i as usize) * h.dims + j))
                .map(|k| h.coords.get(k))
                .collect(),
            None => h.coords.to_words(),
        }
    }

    /// Each update's diff.
    pub fn diffs(&self) -> Vec<i64> {
        let words = self.read(&self.history.diffs);
        words.into_iter().map(|d| d as i64).collect()
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
    /// Whether the updates are sorted by time coordinates, then record values.
    pub sorted: bool,
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
            sorted: false,
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
