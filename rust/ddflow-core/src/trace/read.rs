//! Reading a trace back as updates: all of it, the histories of given keys, or the keys in
//! ranges of one key column (in value order); times advanced by the trace's logical
//! compaction frontier and consolidated, so reads do not depend on how far merging has
//! progressed. The kernel API's `Trace` reads call these (the bindings only convert).

use super::TraceHandle;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Lattice, Time};
use crate::sort::with_thread_sorter;
use crate::updates::Updates;

/// The whole trace (rows of `width` words).
pub fn read_all(h: &TraceHandle) -> Result<Updates> {
    let frontier = h.logical_compaction();
    let (u, _) = h.to_updates();
    advance_by(u, &frontier, true)
}

/// The histories of the key rows `keys` (`key_width` words each; any order, duplicates
/// allowed), in key order, as rows of `width` words.
pub fn read_keys(h: &TraceHandle, keys: &[u64], key_width: usize, width: usize) -> Result<Updates> {
    let frontier = h.logical_compaction();
    let n = keys.len().checked_div(key_width).unwrap_or(0);
    let key = |i: usize| &keys[i * key_width..(i + 1) * key_width];
    let mut idx: Vec<usize> = (0..n).collect();
    idx.sort_unstable_by(|&a, &b| key(a).cmp(key(b)));
    idx.dedup_by(|a, b| key(*a) == key(*b));
    let mut cursor = h.cursor();
    let mut out = Updates::new(width);
    let mut hist = Updates::new(width - key_width);
    for &i in idx.iter() {
        hist.clear();
        if cursor.key_history(key(i), &mut hist) {
            push_history(key(i), &hist, &mut out);
        }
    }
    advance_by(out, &frontier, true)
}

/// The history of one key, as rows of its `val_width` value words.
pub fn read_key_history(h: &TraceHandle, key: &[u64], val_width: usize) -> Result<Updates> {
    let frontier = h.logical_compaction();
    let mut hist = Updates::new(val_width);
    h.cursor().key_history(key, &mut hist);
    advance_by(hist, &frontier, true)
}

/// The keys (one key word) in the word ranges `ranges` (`[start, end)`, `None` =
/// unbounded), range by range in the order given, as rows of `width` words.
pub fn read_word_ranges(
    h: &TraceHandle,
    ranges: &[(u64, Option<u64>)],
    width: usize,
) -> Result<Updates> {
    let frontier = h.logical_compaction();
    let mut out = Updates::new(width);
    let mut hist = Updates::new(width - 1);
    for &(start, end) in ranges {
        let mut cursor = h.cursor();
        cursor.seek_key(&[start]);
        while cursor.key_valid() {
            let k = cursor.key()[0];
            if end.is_some_and(|e| k >= e) {
                break;
            }
            hist.clear();
            cursor.history(&mut hist);
            push_history(&[k], &hist, &mut out);
            cursor.step_key();
        }
    }
    advance_by(out, &frontier, false)
}

/// The word ranges covering the int64 key values `[lo, hi)` (`None` = unbounded), in value
/// order: int64 words are two's complement, so non-negative values are words `0..2^63`
/// and negative ones `2^63..2^64`.
pub fn int64_word_ranges(lo: Option<i128>, hi: Option<i128>) -> Vec<(u64, Option<u64>)> {
    let lo = lo.unwrap_or(i64::MIN as i128);
    let hi = hi.unwrap_or(i64::MAX as i128 + 1);
    let mut out = Vec::new();
    if lo >= hi {
        return out;
    }
    if lo < 0 {
        let neg_end = hi.min(0);
        let end = (neg_end != 0).then_some((neg_end as i64) as u64);
        out.push(((lo as i64) as u64, end));
    }
    if hi > 0 {
        out.push((lo.max(0) as u64, Some(hi as u64)));
    }
    out
}

/// The word range covering the uint64 key values `[lo, hi)` (`None` = unbounded).
pub fn uint64_word_ranges(lo: Option<i128>, hi: Option<i128>) -> Vec<(u64, Option<u64>)> {
    let lo = lo.unwrap_or(0).max(0);
    match hi {
        Some(h) if h <= lo => vec![],
        Some(h) => vec![(lo as u64, (h <= u64::MAX as i128).then_some(h as u64))],
        None => vec![(lo as u64, None)],
    }
}

/// Appends the history `h` of `key` to `out` as full rows.
fn push_history(key: &[u64], h: &Updates, out: &mut Updates) {
    for j in 0..h.len() {
        out.rows.extend_from_slice(key);
        out.rows.extend_from_slice(h.row(j));
        out.times.push(h.times[j]);
        out.diffs.push(h.diffs[j]);
    }
}

/// Times advanced by `frontier` and consolidated: all of `u` when its rows are in sorted
/// order (`rows_sorted`), else only within each run of equal rows, keeping the runs' order
/// (a range read's value order).
fn advance_by(mut u: Updates, frontier: &Antichain<Time>, rows_sorted: bool) -> Result<Updates> {
    if frontier.is_empty() || frontier.elements() == [Time::minimum()] {
        return Ok(u);
    }
    let f = frontier.elements();
    let mut changed = false;
    u.times.map_each(|t| {
        let a = t.advance_by(f);
        changed |= a != *t;
        *t = a;
    });
    if changed {
        if rows_sorted {
            with_thread_sorter(|s| s.consolidate_updates(&mut u))?;
        } else {
            u = consolidate_within_rows(&u)?;
        }
    }
    Ok(u)
}

/// Consolidates the times of each run of equal rows, keeping the order of the runs.
fn consolidate_within_rows(u: &Updates) -> Result<Updates> {
    let n = u.len();
    let mut out = Updates::with_capacity(u.width, n);
    let mut run: Vec<(Time, i64)> = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && u.row(j) == u.row(i) {
            j += 1;
        }
        run.clear();
        run.extend((i..j).map(|x| (u.times[x], u.diffs[x])));
        run.sort_unstable_by_key(|x| x.0);
        let mut a = 0;
        while a < run.len() {
            let mut total = run[a].1 as i128;
            let mut b = a + 1;
            while b < run.len() && run[b].0 == run[a].0 {
                total += run[b].1 as i128;
                b += 1;
            }
            if total != 0 {
                let d = i64::try_from(total).map_err(|_| {
                    Error::Overflow(format!(
                        "diffs of row {:?} at time {:?} sum to {total}",
                        u.row(i),
                        run[a].0
                    ))
                })?;
                out.push(u.row(i), run[a].0, d);
            }
            a = b;
        }
        i = j;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int64_ranges_cover_exactly_the_values_in_value_order() {
        let values: Vec<i64> = vec![i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        let bounds: Vec<Option<i128>> = vec![
            None,
            Some(i64::MIN as i128),
            Some(-5),
            Some(-1),
            Some(0),
            Some(1),
            Some(8),
            Some(i64::MAX as i128 + 1),
        ];
        for &lo in &bounds {
            for &hi in &bounds {
                let ranges = int64_word_ranges(lo, hi);
                // Values read range by range, each range in word order.
                let mut got = Vec::new();
                for &(s, e) in &ranges {
                    let mut words: Vec<u64> = values
                        .iter()
                        .map(|&v| v as u64)
                        .filter(|&w| w >= s && e.is_none_or(|e| w < e))
                        .collect();
                    words.sort_unstable();
                    got.extend(words.into_iter().map(|w| w as i64));
                }
                let want: Vec<i64> = values
                    .iter()
                    .copied()
                    .filter(|&v| lo.is_none_or(|l| v as i128 >= l))
                    .filter(|&v| hi.is_none_or(|h| (v as i128) < h))
                    .collect();
                assert_eq!(got, want, "lo {lo:?} hi {hi:?}");
            }
        }
    }

    #[test]
    fn uint64_ranges() {
        assert_eq!(uint64_word_ranges(None, None), vec![(0, None)]);
        assert_eq!(uint64_word_ranges(Some(3), Some(3)), vec![]);
        assert_eq!(uint64_word_ranges(Some(3), Some(9)), vec![(3, Some(9))]);
        assert_eq!(
            uint64_word_ranges(Some(1), Some(u64::MAX as i128 + 1)),
            vec![(1, None)]
        );
    }

    #[test]
    fn within_rows_consolidation_keeps_run_order() {
        let mut u = Updates::new(1);
        let t = |x: u64| Time::scalar(x);
        for &(r, time, d) in &[
            (9u64, 2u64, 1i64),
            (9, 1, 2),
            (9, 2, -1),
            (3, 5, 1),
            (3, 5, 4),
        ] {
            u.push(&[r], t(time), d);
        }
        let out = consolidate_within_rows(&u).unwrap();
        assert_eq!(out.rows, vec![9, 3]);
        assert_eq!(out.times, vec![t(1), t(5)]);
        assert_eq!(out.diffs, vec![2, 5]);
    }
}
