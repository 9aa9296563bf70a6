//! Two-dimensional interesting times by bitsets, for keys whose times span few rounds and
//! few iterations (the BFS's keys: about 2 distinct second coordinates and 7 first
//! coordinates per key at batches of 1,000; 1.5 and 52 at 10,000).
//!
//! [`super::interesting_times_2d`] sorts the key's packed times and keeps the second
//! coordinates seen in a sorted vector; this computes the same list without a sort: second
//! coordinates, as offsets from the least one, are bits of a word, and first coordinates,
//! as offsets from the least new one, index a bitset of rows and per-row arrays (the second
//! coordinates of the row's times, the least one of a new time in it). The rows are then
//! visited in the order of their bits. A key whose second coordinates span 64 or more, or
//! whose rows span [`MAX_SPAN`] or more, is left to the sort.

use crate::lattice::Time;

/// Most first-coordinate offsets (from the least new first coordinate) the row bitset
/// covers: 256 words to scan at most, and per-row arrays of 16,384 entries (144 KB).
pub(super) const MAX_SPAN: u64 = 1 << 14;

/// "No new time in this row (yet)" for [`BitsScratch::row_new`].
const NO_NEW: u8 = u8::MAX;

/// Buffers of [`interesting_times_bits`], kept between calls. Between calls every word of
/// `rows` and every entry of `row_ys` is zero and every entry of `row_new` is [`NO_NEW`]:
/// a call resets only the entries it set.
#[derive(Default)]
pub(super) struct BitsScratch {
    /// Bit `d` set: some time has first coordinate `least new + d`.
    rows: Vec<u64>,
    /// Per row offset: the second coordinates of its times (bit `b` for `least + b`).
    row_ys: Vec<u64>,
    /// Per row offset: the least second-coordinate offset of a new time in it.
    row_new: Vec<u8>,
}

/// The interesting times of `edits` and `new_times` (2-D) into `out` (appended, sorted
/// lexicographically, distinct) as [`super::interesting_times_2d`] would compute them;
/// returns false, with `out` untouched, when `new_times` is empty, the second coordinates
/// span 64 or more, or a first coordinate lies [`MAX_SPAN`] or more past the least new one.
///
/// The result is, per distinct first coordinate `X` at or after the least new one `x0`,
/// the second coordinates `Y` of times at or before `X` (edits before `x0` included) with
/// `Y` at least the least `Y` of a time at `X` and at least the least `Y` of a new time at
/// or before `X` (see [`super::interesting_times_2d`]).
pub(super) fn interesting_times_bits(
    edits: &[Time],
    new_times: &[Time],
    s: &mut BitsScratch,
    out: &mut Vec<Time>,
) -> bool {
    if new_times.is_empty() {
        return false;
    }
    // Pass 1: the span of the rows and of the second coordinates.
    let (mut x0, mut max_x, mut y0, mut max_y) = (u64::MAX, 0, u64::MAX, 0);
    for t in new_times {
        x0 = x0.min(t.0[0]);
        max_x = max_x.max(t.0[0]);
        y0 = y0.min(t.0[1]);
        max_y = max_y.max(t.0[1]);
    }
    for t in edits {
        max_x = max_x.max(t.0[0]);
        y0 = y0.min(t.0[1]);
        max_y = max_y.max(t.0[1]);
    }
    if max_y - y0 >= 64 || max_x - x0 >= MAX_SPAN {
        return false;
    }
    let span = (max_x - x0) as usize;
    if s.row_ys.len() <= span {
        s.row_ys.resize(span + 1, 0);
        s.row_new.resize(span + 1, NO_NEW);
    }
    let words = span / 64 + 1;
    if s.rows.len() < words {
        s.rows.resize(words, 0);
    }
    let (rows, row_ys, row_new) = (
        &mut s.rows[..words],
        &mut s.row_ys[..=span],
        &mut s.row_new[..=span],
    );
    // Pass 2: each time into its row (edits before `x0` only seed the second coordinates).
    let mut seen: u64 = 0;
    for t in edits {
        let bit = 1u64 << (t.0[1] - y0);
        if t.0[0] < x0 {
            seen |= bit;
        } else {
            let d = (t.0[0] - x0) as usize;
            rows[d / 64] |= 1 << (d % 64);
            row_ys[d] |= bit;
        }
    }
    for t in new_times {
        let b = t.0[1] - y0;
        let d = (t.0[0] - x0) as usize;
        rows[d / 64] |= 1 << (d % 64);
        row_ys[d] |= 1 << b;
        row_new[d] = row_new[d].min(b as u8);
    }
    // The rows in order: the second coordinates seen so far at or above the row's bound.
    let mut least_new = NO_NEW;
    for (w, word) in rows.iter_mut().enumerate() {
        let mut bits = std::mem::take(word);
        while bits != 0 {
            let d = w * 64 + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let row = std::mem::take(&mut row_ys[d]);
            seen |= row;
            least_new = least_new.min(std::mem::replace(&mut row_new[d], NO_NEW));
            if least_new == NO_NEW {
                continue;
            }
            let lower = (row.trailing_zeros() as u8).max(least_new);
            let x = x0 + d as u64;
            let mut emit = seen & (u64::MAX << lower);
            while emit != 0 {
                let b = u64::from(emit.trailing_zeros());
                emit &= emit - 1;
                out.push(Time([x, y0 + b, 0, 0]));
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::{interesting_times_2d, interesting_times_reference, TimesScratch};
    use super::*;
    use proptest::prelude::*;

    fn times(xs: u64, ys: u64, max_len: usize) -> impl Strategy<Value = Vec<Time>> {
        prop::collection::vec((0..xs, 0..ys), 0..max_len)
            .prop_map(|v| v.into_iter().map(|(x, y)| Time([x, y, 0, 0])).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// Equal to the reference wherever it answers, on one scratch reused across cases
        /// (so a call that left an entry set would fail a later one); it answers whenever
        /// the times fit (second coordinates offset by up to 2^40 and spanning up to 63).
        #[test]
        fn bits_match_reference(
            cases in prop::collection::vec((times(12, 6, 14), times(12, 6, 8), 0u64..3, 0u64..3), 1..6),
        ) {
            let mut s = BitsScratch::default();
            for (e, n, shift, y_shift) in cases {
                // Offsets past 32 bits and past one bitset word; second coordinates up to 63
                // apart, past 32 bits.
                let shift = [0, 70, 1 << 40][shift as usize];
                let y_shift = [0, 3, 1 << 40][y_shift as usize];
                let move_x = |v: Vec<Time>| -> Vec<Time> {
                    v.into_iter()
                        .map(|t| Time([t.0[0] * 7 + shift, y_shift + t.0[1] * 12 + t.0[1] / 5, 0, 0]))
                        .collect()
                };
                let (e, n) = (move_x(e), move_x(n));
                let mut out = vec![Time([9, 9, 9, 9])];
                let answered = interesting_times_bits(&e, &n, &mut s, &mut out);
                prop_assert_eq!(answered, !n.is_empty());
                if answered {
                    prop_assert_eq!(&out[1..], &interesting_times_reference(&e, &n)[..]);
                } else {
                    prop_assert_eq!(out.len(), 1);
                }
            }
        }

        /// Times that do not fit (second coordinates 64 apart, or rows `MAX_SPAN` apart) are
        /// left to the sort, and `interesting_times_2d` still matches the reference.
        #[test]
        fn too_wide_falls_back(e in times(5, 4, 10), n in times(5, 4, 6), wide_y in any::<bool>()) {
            prop_assume!(!n.is_empty());
            let mut e = e;
            if wide_y {
                e.push(Time([3, 100, 0, 0]));
            } else {
                e.push(Time([MAX_SPAN + 4, 1, 0, 0]));
            }
            let mut s = BitsScratch::default();
            let mut out = Vec::new();
            prop_assert!(!interesting_times_bits(&e, &n, &mut s, &mut out));
            prop_assert!(out.is_empty());
            interesting_times_2d(&e, &n, &mut TimesScratch::default(), &mut out);
            prop_assert_eq!(out, interesting_times_reference(&e, &n));
        }
    }

    #[test]
    fn one_row_below_the_last_bound_of_the_span() {
        // Rows at offsets 0 and MAX_SPAN - 1 (the last the bitset covers).
        let (e, n) = (
            vec![Time([MAX_SPAN - 1, 0, 0, 0])],
            vec![Time([0, 2, 0, 0])],
        );
        let mut out = Vec::new();
        assert!(interesting_times_bits(
            &e,
            &n,
            &mut BitsScratch::default(),
            &mut out
        ));
        assert_eq!(out, interesting_times_reference(&e, &n));
        assert_eq!(out, vec![Time([0, 2, 0, 0]), Time([MAX_SPAN - 1, 2, 0, 0])]);
    }
}
