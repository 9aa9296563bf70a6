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

fn overflow_error(what: String, total: i128) -> Error {
    Error::Overflow(format!(
        "diffs of {what} sum to {total}, outside the 64-bit signed range"
    ))
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
    // A column held as one time stays so: only its length changes.
    let one_time = updates.times.same().is_some();
    let same = |rows: &[u64], i: usize, j: usize| {
        // Word by word: a slice `==` of words calls `memcmp`, dearer than a key of a few words.
        (0..w).all(|c| rows[i * w + c] == rows[j * w + c])
    };
    // The leading updates that are consolidated already (non-zero, each unlike the next)
    // stay where they are: an arrangement's batch of distinct updates is only read.
    let mut i = 0;
    while i < n
        && updates.diffs[i] != 0
        && (i + 1 == n
            || updates.times[i + 1] != updates.times[i]
            || !same(&updates.rows, i, i + 1))
    {
        i += 1;
    }
    let mut err = None;
    let mut out = i;
    while i < n {
        let t = updates.times[i];
        let mut total = updates.diffs[i] as i128;
        let mut j = i + 1;
        while j < n && updates.times[j] == t && same(&updates.rows, i, j) {
            total += updates.diffs[j] as i128;
            j += 1;
        }
        if i64::try_from(total).is_err() && err.is_none() {
            let what = format!(
                "row {:?} at time {:?}",
                &updates.rows[i * w..(i + 1) * w],
                t
            );
            err = Some(overflow_error(what, total));
        }
        let (rows, times, diffs) = (&mut updates.rows, &mut updates.times, &mut updates.diffs);
        pieces(total, |d| {
            // Slots `out..` are at most `j`, and every copy writes row `i` itself, so the
            // source row stays intact even when `out` reaches `i` (then nothing moves).
            if out != i {
                rows.copy_within(i * w..(i + 1) * w, out * w);
                if !one_time {
                    times[out] = t;
                }
            }
            diffs[out] = d;
            out += 1;
        });
        i = j;
    }
    updates.rows.truncate(out * w);
    updates.times.truncate(out);
    updates.diffs.truncate(out);
    err.map_or(Ok(()), Err)
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
