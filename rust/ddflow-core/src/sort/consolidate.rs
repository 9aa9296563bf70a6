//! Consolidation of sorted updates: summing the diffs of equal `(row, time)` (or equal
//! `(key, val)`) runs and dropping zero sums, with overflow reported instead of wrapped.
//!
//! Sums are accumulated in `i128`, so only a *total* outside the `i64` range is an overflow
//! (partial sums such as `i64::MAX + 1 - 1` are fine). On overflow the data is still left
//! sorted and equivalent: every other run is consolidated, and the overflowing run is kept as
//! several updates of the same `(row, time)` whose diffs sum to the true total. The error
//! names the first overflowing run.

use crate::error::{Error, Result};
use crate::lattice::Time;
use crate::updates::Updates;

/// Splits a run total into `i64` pieces that sum to it: one piece if it fits, otherwise
/// pieces of `i64::MAX` (or `i64::MIN`) and a remainder. A run of `k` updates never needs
/// more than `k` pieces, so the pieces fit in the run's own slots when compacting in place.
#[inline]
pub(crate) fn pieces(mut total: i128, mut emit: impl FnMut(i64)) {
    while total != 0 {
        let piece = match i64::try_from(total) {
            Ok(v) => v,
            Err(_) if total > 0 => i64::MAX,
            Err(_) => i64::MIN,
        };
        emit(piece);
        total -= piece as i128;
    }
}

/// Sums each run of equal keys in `sorted` (sorted by key) exactly and calls `emit(key,
/// piece)` for the [`pieces`] of each run's total: none for a total of zero, several for
/// one outside `i64`. A run never yields more pieces than it has updates.
pub(crate) fn sum_runs_in_pieces<K: PartialEq + Copy>(
    sorted: &[(K, i64)],
    mut emit: impl FnMut(K, i64),
) {
    let mut i = 0;
    while i < sorted.len() {
        let key = sorted[i].0;
        let mut total: i128 = 0;
        while i < sorted.len() && sorted[i].0 == key {
            total += sorted[i].1 as i128;
            i += 1;
        }
        pieces(total, |d| emit(key, d));
    }
}

fn overflow_error(what: String, total: i128) -> Error {
    Error::Overflow(format!(
        "diffs of {what} sum to {total}, outside the 64-bit signed range"
    ))
}

/// The error for updates of `row` at `t` whose diffs sum to `total`, outside `i64`.
pub(crate) fn row_time_overflow(row: &[u64], t: &Time, total: i128) -> Error {
    overflow_error(format!("row {row:?} at time {t:?}"), total)
}

/// Consolidates updates already sorted by `(row, time)` (equal pairs adjacent suffice):
/// sums diffs of equal `(row, time)`, drops zero sums, compacts in place.
///
/// # Errors
/// [`Error::Overflow`] naming the row words and time whose total does not fit an `i64`
/// (the batch is left equivalent, see the module docs).
pub fn consolidate_sorted(updates: &mut Updates) -> Result<()> {
    let w = updates.width;
    let n = updates.len();
    let same = |rows: &[u64], i: usize, j: usize| match w {
        // Word by word: a slice `==` of words calls `memcmp`, dearer than a key of a few words.
        1 => rows[i] == rows[j],
        2 => rows[2 * i] == rows[2 * j] && rows[2 * i + 1] == rows[2 * j + 1],
        _ => (0..w).all(|c| rows[i * w + c] == rows[j * w + c]),
    };
    // The leading updates that are consolidated already (non-zero, each unlike the next)
    // stay where they are: an arrangement's batch of distinct updates is only read.
    let start = {
        let (rows, times, diffs) = (&updates.rows[..], &updates.times, &updates.diffs[..]);
        let mut i = 0;
        while i < n
            && diffs[i] != 0
            && (i + 1 == n || times[i + 1] != times[i] || !same(rows, i, i + 1))
        {
            i += 1;
        }
        i
    };
    if start == n {
        return Ok(());
    }
    // A column held as one time stays so: only its length changes. Otherwise its times
    // are compacted as a plain slice (not through the column's index, per update).
    let one_time = updates.times.same().copied();
    let mut err = None;
    let out = match one_time {
        Some(t) => compact(
            w,
            &mut updates.rows,
            &mut updates.diffs,
            start,
            &mut err,
            |_| t,
            |_, _| {},
            same,
        ),
        None => {
            let times = updates.times.make_mut();
            let times_cell = std::cell::Cell::from_mut(&mut times[..]).as_slice_of_cells();
            compact(
                w,
                &mut updates.rows,
                &mut updates.diffs,
                start,
                &mut err,
                |i| times_cell[i].get(),
                |out, t| times_cell[out].set(t),
                same,
            )
        }
    };
    updates.rows.truncate(out * w);
    updates.times.truncate(out);
    updates.diffs.truncate(out);
    err.map_or(Ok(()), Err)
}

/// The compaction of [`consolidate_sorted`] from update `i` on (the updates before it stay):
/// sums the diffs of each stretch of equal (row, time), writes the sum (or its pieces, see
/// [`pieces`]) at the next output slot, and returns the number of updates kept. `time(i)`
/// reads update `i`'s time, `set_time(out, t)` writes it at slot `out` (nothing for a
/// column held as one time); `same(rows, i, j)` says whether rows `i` and `j` are equal.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn compact(
    w: usize,
    rows: &mut [u64],
    diffs: &mut [i64],
    mut i: usize,
    err: &mut Option<Error>,
    time: impl Fn(usize) -> Time,
    set_time: impl Fn(usize, Time),
    same: impl Fn(&[u64], usize, usize) -> bool,
) -> usize {
    let n = diffs.len();
    let mut out = i;
    while i < n {
        let t = time(i);
        let mut j = i + 1;
        let first = diffs[i];
        let mut total = first as i128;
        while j < n && time(j) == t && same(rows, i, j) {
            total += diffs[j] as i128;
            j += 1;
        }
        match i64::try_from(total) {
            Ok(0) => {}
            Ok(d) => {
                // Slot `out` is at most `i`: the row and time move down (or stay).
                if out != i {
                    rows.copy_within(i * w..(i + 1) * w, out * w);
                    set_time(out, t);
                }
                diffs[out] = d;
                out += 1;
            }
            Err(_) => {
                if err.is_none() {
                    *err = Some(row_time_overflow(&rows[i * w..(i + 1) * w], &t, total));
                }
                pieces(total, |d| {
                    // Slots `out..` are at most `j`, and every copy writes row `i` itself,
                    // so the source row stays intact even when `out` reaches `i`.
                    if out != i {
                        rows.copy_within(i * w..(i + 1) * w, out * w);
                        set_time(out, t);
                    }
                    diffs[out] = d;
                    out += 1;
                });
            }
        }
        i = j;
    }
    out
}

/// Consolidates `(key, val, diff)` triples already sorted by `(key, val)`: sums diffs of
/// equal pairs, drops zero sums, compacts in place.
///
/// # Errors
/// [`Error::Overflow`] naming the key and value whose total does not fit an `i64`.
pub fn consolidate_sorted_triples(data: &mut Vec<(u64, u64, i64)>) -> Result<()> {
    let n = data.len();
    let mut err = None;
    let mut out = 0;
    let mut i = 0;
    while i < n {
        let (k, v, d) = data[i];
        let mut total = d as i128;
        let mut j = i + 1;
        while j < n && data[j].0 == k && data[j].1 == v {
            total += data[j].2 as i128;
            j += 1;
        }
        if i64::try_from(total).is_err() && err.is_none() {
            err = Some(overflow_error(format!("key {k}, value {v}"), total));
        }
        pieces(total, |d| {
            data[out] = (k, v, d);
            out += 1;
        });
        i = j;
    }
    data.truncate(out);
    err.map_or(Ok(()), Err)
}

/// Compares two updates of `updates` by `(row, time)`.
#[inline]
pub(crate) fn cmp_updates(
    rows: &[u64],
    times: &[Time],
    w: usize,
    a: usize,
    b: usize,
) -> std::cmp::Ordering {
    rows[a * w..(a + 1) * w]
        .cmp(&rows[b * w..(b + 1) * w])
        .then_with(|| times[a].cmp(&times[b]))
}
