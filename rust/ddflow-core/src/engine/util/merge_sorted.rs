//! Merging batches of updates that are each sorted by (row, time) and consolidated into one
//! batch in that order, with equal (row, time) updates of different batches summed.
//!
//! An `arrange` (or `consolidate`) releases several messages in one pass: slices of held
//! messages and messages that arrived whole. Many are sorted already (a reduce's output, a
//! slice of one time of it); concatenating them and radix sorting the concatenation paid a
//! sort per update for an order that was mostly there. A merge pays a comparison per switch
//! between batches and copies the stretches between switches whole: the next stretch of the
//! least batch, up to the head of the next least, is found by galloping (doubling steps,
//! then a binary search), so a small batch merged into a large one costs about its own size
//! in comparisons, not the large one's. The batches' heads are kept in a small binary heap.

use crate::lattice::Time;
use crate::sort::consolidate::pieces;
use crate::updates::{TimeColumn, Updates};
use std::cmp::Ordering;

/// Compares update `i` of `a` with update `j` of `b` by (row, time) (the order of
/// [`crate::sort::RadixSorter::sort_updates`]).
#[inline]
fn cmp_at(a: &Updates, i: usize, b: &Updates, j: usize) -> Ordering {
    let w = a.width;
    let rows = match w {
        0 => Ordering::Equal,
        1 => a.rows[i].cmp(&b.rows[j]),
        2 => (a.rows[2 * i], a.rows[2 * i + 1]).cmp(&(b.rows[2 * j], b.rows[2 * j + 1])),
        _ => a.rows[i * w..(i + 1) * w].cmp(&b.rows[j * w..(j + 1) * w]),
    };
    rows.then_with(|| cmp_time(&a.times[i], &b.times[j]))
}

/// Whether `upd` is in (row, time) order (ties allowed).
pub fn is_sorted(upd: &Updates) -> bool {
    (1..upd.len()).all(|i| cmp_at(upd, i - 1, upd, i) != Ordering::Greater)
}

#[inline]
fn cmp_time(a: &Time, b: &Time) -> Ordering {
    (a.0[0], a.0[1], a.0[2], a.0[3]).cmp(&(b.0[0], b.0[1], b.0[2], b.0[3]))
}

/// The first index in `from..a.len()` whose update is at or after update `j` of `b`
/// (`a` is sorted from `from` on and its update `from` is before `b`'s `j`): doubling
/// steps, then a binary search in the last step.
fn gallop(a: &Updates, from: usize, b: &Updates, j: usize) -> usize {
    let n = a.len();
    let (mut lo, mut step) = (from + 1, 1);
    // Invariant: every update before `lo` is before `b[j]`.
    let mut hi = loop {
        let probe = lo + step - 1;
        if probe >= n {
            break n;
        }
        if cmp_at(a, probe, b, j) != Ordering::Less {
            break probe;
        }
        lo = probe + 1;
        step *= 2;
    };
    // The answer is in `lo..=hi` (`hi` is at or after, or the end).
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if cmp_at(a, mid, b, j) == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A binary min-heap of batch indexes, ordered by each batch's head update.
struct Heads<'a> {
    parts: &'a [Updates],
    at: Vec<usize>,
    heap: Vec<usize>,
}

impl Heads<'_> {
    #[inline]
    fn less(&self, p: usize, q: usize) -> bool {
        cmp_at(&self.parts[p], self.at[p], &self.parts[q], self.at[q]) == Ordering::Less
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut least = i;
            if l < n && self.less(self.heap[l], self.heap[least]) {
                least = l;
            }
            if r < n && self.less(self.heap[r], self.heap[least]) {
                least = r;
            }
            if least == i {
                return;
            }
            self.heap.swap(i, least);
            i = least;
        }
    }

    /// The batch with the least head among the others than the top's (the top's children).
    fn second(&self) -> Option<usize> {
        match self.heap.len() {
            0 | 1 => None,
            2 => Some(self.heap[1]),
            _ if self.less(self.heap[2], self.heap[1]) => Some(self.heap[2]),
            _ => Some(self.heap[1]),
        }
    }

    /// Moves the top batch's head to `to`; drops the batch from the heap if that is its end.
    fn advance_top(&mut self, to: usize) {
        let p = self.heap[0];
        self.at[p] = to;
        if to == self.parts[p].len() {
            let last = self.heap.pop().expect("a top");
            if self.heap.is_empty() {
                return;
            }
            self.heap[0] = last;
        }
        self.sift_down(0);
    }
}

/// Merges `parts`, each sorted by (row, time) with no two updates of one (row, time) (as
/// [`crate::sort::consolidate_sorted`] leaves them), into one batch in that order in which
/// the updates of one (row, time) from different parts are summed and zero sums dropped.
/// Sums are exact: a total outside `i64` is kept as several updates that sum to it, as
/// [`super::consolidate`] does. All parts have rows of `width` words.
pub fn merge_consolidated(mut parts: Vec<Updates>, width: usize) -> Updates {
    parts.retain(|p| !p.is_empty());
    let Some(first) = parts.first() else {
        return Updates::new(width);
    };
    let w = width;
    debug_assert!(parts.iter().all(|p| p.width == w));
    if parts.len() == 1 {
        return parts.pop().expect("one part");
    }
    let total: usize = parts.iter().map(|p| p.len()).sum();
    // All parts at one time: the output is too (its column is not written out).
    let one_time = first
        .times
        .same()
        .copied()
        .filter(|t| parts.iter().all(|p| p.times.same() == Some(t)));
    let mut rows: Vec<u64> = Vec::with_capacity(total * w);
    let mut times: Vec<Time> = Vec::with_capacity(if one_time.is_some() { 0 } else { total });
    let mut diffs: Vec<i64> = Vec::with_capacity(total);

    let mut heads = Heads {
        parts: &parts,
        at: vec![0; parts.len()],
        heap: (0..parts.len()).collect(),
    };
    for i in (0..heads.heap.len() / 2).rev() {
        heads.sift_down(i);
    }
    while let Some(&p) = heads.heap.first() {
        let part = &parts[p];
        let s = heads.at[p];
        let Some(q) = heads.second() else {
            // The last batch left: the rest of it.
            copy(
                &mut rows,
                &mut times,
                &mut diffs,
                part,
                s,
                part.len(),
                one_time,
            );
            break;
        };
        let (other, j) = (&parts[q], heads.at[q]);
        if cmp_at(part, s, other, j) == Ordering::Equal {
            // Equal heads: sum every batch's update of this (row, time).
            let mut total = 0i128;
            while let Some(&r) = heads.heap.first() {
                if cmp_at(&parts[r], heads.at[r], part, s) != Ordering::Equal {
                    break;
                }
                total += parts[r].diffs[heads.at[r]] as i128;
                heads.advance_top(heads.at[r] + 1);
            }
            pieces(total, |d| {
                rows.extend_from_slice(part.row(s));
                if one_time.is_none() {
                    times.push(part.times[s]);
                }
                diffs.push(d);
            });
            continue;
        }
        // The head of `part` is the least: copy it and what follows it below `other`'s head.
        let e = gallop(part, s, other, j);
        copy(&mut rows, &mut times, &mut diffs, part, s, e, one_time);
        heads.advance_top(e);
    }
    let times = match one_time {
        Some(t) => TimeColumn::repeat(t, diffs.len()),
        None => TimeColumn::from(times),
    };
    Updates {
        width: w,
        rows,
        times,
        diffs,
    }
}

/// Appends updates `s..e` of `from` to the output columns (no times when they are all one).
#[inline]
fn copy(
    rows: &mut Vec<u64>,
    times: &mut Vec<Time>,
    diffs: &mut Vec<i64>,
    from: &Updates,
    s: usize,
    e: usize,
    one_time: Option<Time>,
) {
    let w = from.width;
    rows.extend_from_slice(&from.rows[s * w..e * w]);
    if one_time.is_none() {
        times.extend(from.times.range_iter(s..e));
    }
    diffs.extend_from_slice(&from.diffs[s..e]);
}

#[cfg(test)]
mod tests {
    //! The merge against a naive reference: the parts concatenated and consolidated.

    use super::*;
    use proptest::prelude::*;

    fn batch(width: usize, ups: &[(Vec<u64>, [u64; 2], i64)]) -> Updates {
        let mut u = Updates::new(width);
        for (r, t, d) in ups {
            u.push(&r[..width], Time::from_coords(t), *d);
        }
        u
    }

    fn consolidated(mut u: Updates) -> Updates {
        super::super::consolidate(&mut u).unwrap();
        u
    }

    proptest! {
        // Random parts of few distinct rows and times (so heads collide and cancel), each
        // consolidated first; widths 0 to 3; some parts at one time.
        #[test]
        fn merge_is_consolidation_of_the_concatenation(
            width in 0usize..4,
            parts in prop::collection::vec(
                (
                    prop::collection::vec(
                        (prop::collection::vec(0u64..3, 3), [0u64..3, 0u64..3], -2i64..3),
                        0..40,
                    ),
                    any::<bool>(),
                ),
                0..7,
            ),
        ) {
            let parts: Vec<Updates> = parts
                .into_iter()
                .map(|(mut ups, one_time)| {
                    if one_time {
                        for u in &mut ups {
                            u.1 = [1, 2];
                        }
                    }
                    consolidated(batch(width, &ups))
                })
                .collect();
            let mut all = Updates::new(width);
            for p in &parts {
                all.extend(p);
            }
            let want = consolidated(all);
            let got = merge_consolidated(parts, width);
            prop_assert_eq!(got.width, width);
            prop_assert_eq!(got.columns(), want.columns());
        }

        // Diffs near the ends of `i64`: sums are exact (kept as pieces when too large).
        #[test]
        fn sums_beyond_i64_are_kept_exact(
            parts in prop::collection::vec(
                prop::collection::vec((0u64..2, 0u64..2, prop_oneof![Just(i64::MAX), Just(i64::MIN), -1i64..2]), 0..6),
                2..5,
            ),
        ) {
            let mut want: std::collections::BTreeMap<(u64, u64), i128> = Default::default();
            let parts: Vec<Updates> = parts
                .into_iter()
                .map(|ups| {
                    let mut u = Updates::new(1);
                    for (r, t, d) in ups {
                        *want.entry((r, t)).or_default() += d as i128;
                        u.push(&[r], Time::scalar(t), d);
                    }
                    consolidated(u)
                })
                .collect();
            let got = merge_consolidated(parts, 1);
            let mut sums: std::collections::BTreeMap<(u64, u64), i128> = Default::default();
            for i in 0..got.len() {
                if i > 0 {
                    prop_assert!(cmp_at(&got, i - 1, &got, i) != Ordering::Greater);
                }
                *sums.entry((got.rows[i], got.times[i].0[0])).or_default() += got.diffs[i] as i128;
            }
            want.retain(|_, d| *d != 0);
            sums.retain(|_, d| *d != 0);
            prop_assert_eq!(sums, want);
        }
    }

    #[test]
    fn a_small_part_inside_a_large_one() {
        let large = batch(
            1,
            &(0..1000).map(|r| (vec![r], [0, 0], 1)).collect::<Vec<_>>(),
        );
        let small = batch(1, &[(vec![10], [0, 0], -1), (vec![500], [1, 0], 1)]);
        let got = merge_consolidated(vec![small, large], 1);
        assert_eq!(got.len(), 1000);
        assert!(!got.rows.contains(&10));
        assert_eq!(got.times[500], Time::from_coords(&[1, 0]));
        assert_eq!(got.times.same(), None);
    }

    #[test]
    fn parts_at_one_time_stay_at_one_time() {
        let a = batch(1, &[(vec![1], [3, 0], 1), (vec![4], [3, 0], 1)]);
        let b = batch(1, &[(vec![2], [3, 0], 1), (vec![4], [3, 0], 1)]);
        let got = merge_consolidated(vec![a, b], 1);
        assert_eq!(got.rows, vec![1, 2, 4]);
        assert_eq!(got.diffs, vec![1, 1, 2]);
        assert_eq!(got.times.same(), Some(&Time::from_coords(&[3, 0])));
    }
}
