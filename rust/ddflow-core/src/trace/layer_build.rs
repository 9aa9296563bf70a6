//! Building a batch from consolidated updates layer by layer, not update by update.
//!
//! Every arrangement's batch and every reduce's output batch is made by
//! [`Batch::from_sorted`](super::Batch::from_sorted) from updates sorted by (row, time).
//! Its general path pushes each update through a [`Builder`](super::Builder), which at
//! every update checks whether times, diffs or val offsets must now be materialized, and at
//! every val scans for zero diffs. Updates that are consolidated (no two of one row and
//! time, no zero diff: what `sort::consolidate` and the reduce's output produce) need none
//! of that. One scan compares each row with the one before: where they first differ says
//! whether a key or only a val starts there, and that row's key or val is written out. The
//! time and diff columns are then each converted in one pass. A row out of order, two
//! updates of one row and time, or a zero diff ends the scan: the caller takes the general
//! path, which consolidates what it can and reports what is out of order.

use super::batch::{Batch, Diffs, Times, Words};
use super::builder::compact_diffs;
use super::description::Description;
use super::stored::Stored;
use super::time_vec::TimeVec;
use crate::lattice::Time;
use crate::updates::Updates;

/// The batch of `updates` (sorted by row, then time) with keys of `key_width` words, when
/// they are consolidated; `None` when they are not (or are empty, or out of order). Keys
/// (vals) are stored as `u32` if `narrow_keys` (`narrow_vals`): every word must fit.
pub(crate) fn from_consolidated(
    updates: &Updates,
    key_width: usize,
    narrow_keys: bool,
    narrow_vals: bool,
    desc: &Description,
) -> Option<Batch> {
    let n = updates.len();
    let width = updates.width;
    let (zero, all_ones) = updates
        .diffs
        .iter()
        .fold((false, true), |(z, o), &d| (z | (d == 0), o & (d == 1)));
    if n == 0 || zero {
        return None;
    }
    let val_width = width - key_width;
    // Room as the general path makes it (every update its own key and val), given back at
    // the end: growing by doubling would copy the layers again.
    let mut keys = RowWords::with_capacity(narrow_keys, n * key_width);
    let mut vals = RowWords::with_capacity(narrow_vals, n * val_width);
    let mut key_offs: Vec<usize> = Vec::with_capacity(n + 1);
    let mut n_vals = 0;
    // Where each val's updates start: made only once a val has several updates (until then
    // val `v` owns update `v`, and a batch stores no offsets).
    let mut val_offs: Option<Vec<usize>> = None;
    let rows = &updates.rows;
    // With one time for all updates, equal rows are a duplicate; times need no comparing.
    // Otherwise the column is a vector already, and read as a slice.
    let one_time = updates.times.same().copied();
    let times: &[Time] = match one_time {
        Some(_) => &[],
        None => &updates.times[..],
    };
    for i in 0..n {
        let row = &rows[i * width..(i + 1) * width];
        let starts_at = if i == 0 {
            Some(0)
        } else {
            let prev = &rows[(i - 1) * width..i * width];
            // Most rows that start something differ in their first word.
            let differ = if width == 0 {
                None
            } else if row[0] != prev[0] {
                Some(0)
            } else {
                row.iter().zip(prev).position(|(a, b)| a != b)
            };
            match differ {
                Some(j) if row[j] < prev[j] => return None,
                Some(j) => Some(j),
                None if one_time.is_some() || times[i] <= times[i - 1] => return None,
                None => {
                    // A further update of the open val.
                    if val_offs.is_none() {
                        let mut o = Vec::with_capacity(n + 1);
                        o.extend(0..n_vals);
                        val_offs = Some(o);
                    }
                    None
                }
            }
        };
        if let Some(j) = starts_at {
            if i == 0 || j < key_width {
                key_offs.push(n_vals);
                keys.push(&row[..key_width]);
            }
            if let Some(o) = &mut val_offs {
                o.push(i);
            }
            n_vals += 1;
            vals.push(&row[key_width..]);
        }
    }
    key_offs.push(n_vals);
    key_offs.shrink_to_fit();
    let val_offs = val_offs.map(|mut o| {
        o.push(n);
        o.shrink_to_fit();
        Stored::from(o)
    });
    let times = match one_time {
        Some(t) => Times::Single(t),
        None => Times::compacted(time_vec_of(times)),
    };
    let diffs = if all_ones {
        Diffs::Ones
    } else {
        compact_diffs(Stored::from(updates.diffs.clone()))
    };
    Some(Batch {
        desc: desc.clone(),
        key_width,
        val_width,
        keys: keys.done(),
        key_offs: Stored::from(key_offs),
        vals: vals.done(),
        val_offs,
        times,
        diffs,
    })
}

/// The times `ts` as a batch stores them: two `u32`s each if all fit, else full times.
fn time_vec_of(ts: &[Time]) -> TimeVec {
    let fits = ts
        .iter()
        .fold(0u64, |m, t| m | (t.0[0] | t.0[1]) >> 32 | t.0[2] | t.0[3])
        == 0;
    if fits {
        let pairs: Vec<[u32; 2]> = ts.iter().map(|t| [t.0[0] as u32, t.0[1] as u32]).collect();
        TimeVec::Narrow(Stored::from(pairs))
    } else {
        TimeVec::Wide(Stored::from(ts.to_vec()))
    }
}

/// Rows written out one after another, as `u32` words or `u64` ones.
enum RowWords {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl RowWords {
    fn with_capacity(narrow: bool, words: usize) -> Self {
        if narrow {
            RowWords::Narrow(Vec::with_capacity(words))
        } else {
            RowWords::Wide(Vec::with_capacity(words))
        }
    }

    /// Appends a row (every word fits `u32` if narrow: the caller checked).
    #[inline]
    fn push(&mut self, row: &[u64]) {
        match self {
            RowWords::Narrow(v) => v.extend(row.iter().map(|&w| w as u32)),
            RowWords::Wide(v) => v.extend_from_slice(row),
        }
    }

    /// The words, spare room given back.
    fn done(self) -> Words {
        match self {
            RowWords::Narrow(mut v) => {
                v.shrink_to_fit();
                Words::U32(Stored::from(v))
            }
            RowWords::Wide(mut v) => {
                v.shrink_to_fit();
                Words::U64(Stored::from(v))
            }
        }
    }
}
