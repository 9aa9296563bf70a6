//! Interesting times: where a reduce output may change given old and new input times.
//!
//! For one key, `edits` are the times already present in its history and `new_times` the
//! times of new updates. The output of `reduce` can only change at the *interesting times*:
//! the lattice joins of any subset of `edits` with a non-empty subset of `new_times`.
//!
//! [`interesting_times_reference`] is the simple quadratic algorithm (pairwise joins, then
//! closure under join; the reference the faster ones are checked against);
//! [`interesting_times`] computes the same sorted set with an output-sensitive sweep over
//! coordinates, described on the function;
//! [`interesting_times_2d`] is the faster sweep `reduce` uses when times have at most two
//! non-zero coordinates (an outer time and one iteration). For one-dimensional times the
//! interesting times are the distinct times at or after the least new time, which
//! `engine/operators/reduce_chain.rs` visits while it accumulates.

use crate::error::Result;
use crate::lattice::{Lattice, PartialOrder, Time, MAX_DIMS};
use crate::trace::packed::{pack_xy, unpack_xy};

#[path = "times_bits.rs"]
mod bits;

/// Reference implementation: the joins of a subset of `edits` with a non-empty subset of
/// `new_times`, sorted (lexicographically) and deduplicated.
///
/// First adds `e ∨ t` for every edit `e` and new time `t` (unless `e <= t`), then closes the
/// set under pairwise joins, visiting it in sorted order. Quadratic in the output size (with a
/// sort per visited time); use [`interesting_times`] instead.
pub fn interesting_times_reference(edits: &[Time], new_times: &[Time]) -> Vec<Time> {
    let mut times: Vec<Time> = new_times.to_vec();
    times.sort();
    times.dedup();
    let len = times.len();
    for position in 0..len {
        for e in edits {
            if !e.less_equal(&times[position]) {
                let join = e.join(&times[position]);
                times.push(join);
            }
        }
    }
    times.sort();
    times.dedup();
    // Every join pushed at `position` is strictly above `times[position]` in the partial
    // order, hence lexicographically after it: the prefix stays sorted and final.
    let mut position = 0;
    while position < times.len() {
        for index in 0..position {
            if !times[index].less_equal(&times[position]) {
                let join = times[index].join(&times[position]);
                times.push(join);
            }
        }
        position += 1;
        times[position..].sort();
        times.dedup();
    }
    times
}

/// The interesting times of `edits` and `new_times` (as [`interesting_times_reference`]):
/// sorted lexicographically and deduplicated, written to `out` (cleared first).
///
/// # Algorithm
///
/// Let `A = edits ∪ new_times` and `d` the number of coordinates in use. The result is the
/// set of joins of non-empty subsets of `A` that lie above some new time (a join above `n`
/// is unchanged by adding `n` to its subset). A time `x` is a join of elements of `A` iff
/// for every coordinate `c` some `a ∈ A` with `a <= x` has `a_c = x_c`. Fixing the first
/// coordinate `x_0 = p` turns both conditions into a problem one dimension lower:
///
/// * only `A_p = {a : a_0 <= p}` can lie below `x`, so `x' = (x_1, ..)` must be a join of
///   projections of `A_p`;
/// * some `a` with `a_0 = p` must lie below `x`: `x'` is above some element of
///   `C_p = {a' : a_0 = p}`;
/// * `x` is above a new time: `x'` is above some element of `{n' : n_0 <= p}`.
///
/// So the general problem is "joins of `A` above some element of each of the sets
/// `U_1 .. U_k`", and fixing a coordinate adds one set (`C_p`). The sweep visits `p` over
/// the distinct values of the coordinate in increasing order (from the largest minimum of the
/// `U_i`, below which some `U_i` has no element), so the output comes out in lexicographic
/// order without sorting. In one dimension the answer is the distinct values of `A` at or
/// above the largest `min U_i`. The last two coordinates are swept together: as `p` grows,
/// the values of the last coordinate in `A_p` are kept in a bitset over their ranks and each
/// `U_i`'s running minimum is advanced, so each `p` costs `O(k + |values| / 64 + its
/// outputs)`. One-dimensional inputs (totally ordered times) take a direct path: the times
/// at or after the least new time.
///
/// Cost: one-dimensional `O(|A| log |A|)`; two-dimensional `O(|A| log |A| + |output|)`;
/// each further dimension multiplies the sorting work by the number of distinct values of
/// the swept coordinate. The reference is `Ω(|output|²)`. The output can be far larger than
/// the input (many dimensions, distinct coordinates): the sweep checks the memory limit as
/// it grows and fails with [`crate::error::Error::MemoryLimit`] past it.
pub fn interesting_times(edits: &[Time], new_times: &[Time], out: &mut Vec<Time>) -> Result<()> {
    out.clear();
    if new_times.is_empty() {
        return Ok(());
    }
    let used = |t: &Time| MAX_DIMS - t.0.iter().rev().take_while(|&&c| c == 0).count();
    let dims = edits
        .iter()
        .chain(new_times)
        .map(used)
        .max()
        .unwrap_or(0)
        .max(1);
    if dims == 1 {
        // Totally ordered: every time at or after the first new time.
        let lo = new_times.iter().map(|t| t.0[0]).min().unwrap_or(0);
        out.extend(edits.iter().chain(new_times).filter(|t| t.0[0] >= lo));
        out.sort_unstable();
        out.dedup();
        return Ok(());
    }
    let mut all: Vec<Time> = Vec::with_capacity(edits.len() + new_times.len());
    all.extend_from_slice(edits);
    all.extend_from_slice(new_times);
    let mut news = new_times.to_vec();
    news.sort_unstable();
    news.dedup();
    let mut sweep = Sweep { dims, out };
    sweep.level(0, &mut all, vec![news], Time::minimum())
}

struct Sweep<'a> {
    dims: usize,
    out: &'a mut Vec<Time>,
}

impl Sweep<'_> {
    /// Emits `prefix` extended by every `x` (coordinates `c..dims`) that is a join of
    /// elements of `a` and lies above some element of each set in `ups`. All of `a` and
    /// `ups` already lie below `prefix` on coordinates before `c`.
    fn level(&mut self, c: usize, a: &mut [Time], ups: Vec<Vec<Time>>, prefix: Time) -> Result<()> {
        if a.is_empty() || ups.iter().any(|u| u.is_empty()) {
            return Ok(());
        }
        if c + 1 == self.dims {
            self.last(c, a, &ups, prefix);
            Ok(())
        } else if c + 2 == self.dims {
            self.last_two(c, a, ups, prefix)
        } else {
            self.general(c, a, ups, prefix)
        }
    }

    /// One coordinate left: distinct values of `a` at or above every set's minimum.
    fn last(&mut self, c: usize, a: &mut [Time], ups: &[Vec<Time>], prefix: Time) {
        let lo = threshold(c, ups);
        let mut vals: Vec<u64> = a.iter().map(|t| t.0[c]).filter(|&v| v >= lo).collect();
        vals.sort_unstable();
        vals.dedup();
        self.out
            .extend(vals.into_iter().map(|v| prefix.with_coord(c, v)));
    }

    /// Sweeps coordinate `c` with a fixed `p`, recursing one dimension lower.
    fn general(
        &mut self,
        c: usize,
        a: &mut [Time],
        mut ups: Vec<Vec<Time>>,
        prefix: Time,
    ) -> Result<()> {
        a.sort_unstable_by_key(|t| t.0[c]);
        for u in ups.iter_mut() {
            u.sort_unstable_by_key(|t| t.0[c]);
        }
        let start = threshold(c, &ups);
        let mut i = a.partition_point(|t| t.0[c] < start);
        // Elements below `start` are still in `A_p`: only the visited `p` start there.
        while i < a.len() {
            let p = a[i].0[c];
            let j = i + a[i..].partition_point(|t| t.0[c] == p);
            let mut sub_ups = Vec::with_capacity(ups.len() + 1);
            sub_ups.push(a[i..j].to_vec());
            for u in ups.iter() {
                let k = u.partition_point(|t| t.0[c] <= p);
                sub_ups.push(u[..k].to_vec());
            }
            let mut sub_a = a[..j].to_vec();
            self.level(c + 1, &mut sub_a, sub_ups, prefix.with_coord(c, p))?;
            i = j;
        }
        Ok(())
    }

    /// Sweeps coordinate `c` with the set of last-coordinate values of `A_p` (a bitset over
    /// the ranks of the distinct values, so emitting the values at or above a bound walks
    /// only set bits and at most `|values| / 64` words).
    fn last_two(
        &mut self,
        c: usize,
        a: &mut [Time],
        mut ups: Vec<Vec<Time>>,
        prefix: Time,
    ) -> Result<()> {
        let e = c + 1;
        a.sort_unstable_by_key(|t| (t.0[c], t.0[e]));
        for u in ups.iter_mut() {
            u.sort_unstable_by_key(|t| t.0[c]);
        }
        let mut vals: Vec<u64> = a.iter().map(|t| t.0[e]).collect();
        vals.sort_unstable();
        vals.dedup();
        let mut present = vec![0u64; vals.len().div_ceil(64)];
        // Per set: next unread element and running minimum of coordinate `e`.
        let mut cursors: Vec<(usize, u64)> = vec![(0, u64::MAX); ups.len()];
        let start = threshold(c, &ups);
        let mut i = 0;
        while i < a.len() {
            let p = a[i].0[c];
            // `a` is sorted by (c, e): the group's first element has the least `e`.
            let group_min = a[i].0[e];
            let j = i + a[i..].partition_point(|t| t.0[c] == p);
            for t in &a[i..j] {
                let r = vals.partition_point(|&v| v < t.0[e]);
                present[r / 64] |= 1 << (r % 64);
            }
            i = j;
            if p < start {
                continue;
            }
            let mut lo = group_min;
            for (u, (next, min)) in ups.iter().zip(cursors.iter_mut()) {
                while *next < u.len() && u[*next].0[c] <= p {
                    *min = (*min).min(u[*next].0[e]);
                    *next += 1;
                }
                lo = lo.max(*min);
            }
            let row = prefix.with_coord(c, p);
            let r0 = vals.partition_point(|&v| v < lo);
            // The row emits at most `vals.len() - r0` times: check before `out` grows (a
            // doubling of a large vector would pass the limit by its whole size at once).
            let room = self.out.capacity() - self.out.len();
            if room < vals.len() - r0 {
                let grown = (self.out.len() + vals.len() - r0).max(2 * self.out.capacity());
                crate::memory::check_grow(
                    (grown - self.out.capacity()) * std::mem::size_of::<Time>(),
                )?;
            }
            for (w, &word) in present.iter().enumerate().skip(r0 / 64) {
                let mut bits = word;
                if w == r0 / 64 {
                    bits &= u64::MAX << (r0 % 64);
                }
                while bits != 0 {
                    let r = w * 64 + bits.trailing_zeros() as usize;
                    self.out.push(row.with_coord(e, vals[r]));
                    bits &= bits - 1;
                }
            }
            // The output can grow by `|values|` per row: stop before it exhausts memory.
            crate::memory::check()?;
        }
        Ok(())
    }
}

/// The largest, over the sets, of the least coordinate `c` in the set: every result lies
/// above some element of each set, so its coordinate `c` is at least this.
fn threshold(c: usize, ups: &[Vec<Time>]) -> u64 {
    ups.iter()
        .map(|u| u.iter().map(|t| t.0[c]).min().unwrap_or(u64::MAX))
        .max()
        .unwrap_or(0)
}

/// Reusable buffers for [`interesting_times_2d`].
#[derive(Default)]
pub struct TimesScratch {
    bits: bits::BitsScratch,
    all: Vec<u128>,
    all64: Vec<u64>,
    news: Vec<(u64, u64)>,
    ys: Vec<u64>,
}

/// Interesting times (as [`interesting_times`]) for times whose coordinates
/// beyond the first two are zero, the common case of an outer time and one iteration.
///
/// A time `(X, Y)` is a join of times of `A = edits ∪ new` lying above a new time iff some
/// `a` in `A` has `a.x == X` and `a.y <= Y`, some `b` in `A` has `b.x <= X` and `b.y == Y`,
/// and some new `n <= (X, Y)`. Sweeping `X` over the distinct first coordinates in order while
/// keeping the sorted set of second coordinates seen so far, each `X` outputs the seen `Y`s at
/// or above `max(min y of a with a.x == X, min y of new n with n.x <= X)`, already in
/// lexicographic order. `O(|A| log |A| + |output|)` with no allocation once warm.
///
/// Times with at most 64 distinct second coordinates whose first coordinates lie within
/// `times_bits::MAX_SPAN` of the least new one (the BFS's keys) take bitsets instead of
/// the sort (`times_bits.rs`). Otherwise, edits with `x` below every new time's produce no
/// output row of their own and only add their `Y` to the seen set, so they seed it
/// directly instead of going through the sweep's sort.
pub fn interesting_times_2d(
    edits: &[Time],
    new_times: &[Time],
    s: &mut TimesScratch,
    out: &mut Vec<Time>,
) {
    out.clear();
    s.all.clear();
    s.all64.clear();
    s.ys.clear();
    let Some(least_new_x) = new_times.iter().map(|t| t.0[0]).min() else {
        return;
    };
    if !bits::interesting_times_bits(edits, new_times, &mut s.bits, out) {
        sorted_2d(edits, new_times, least_new_x, s, out);
    }
}

/// [`interesting_times_2d`] by a sort of the packed times (`out` empty, `new_times` not,
/// their least first coordinate `least_new_x`).
fn sorted_2d(
    edits: &[Time],
    new_times: &[Time],
    least_new_x: u64,
    s: &mut TimesScratch,
    out: &mut Vec<Time>,
) {
    // Times packed as `x << 32 | y` while both coordinates fit 32 bits (the BFS: rounds and
    // iterations), else as `x << 64 | y`: one integer comparison orders them
    // lexicographically, and a one-word sort is the cheaper one.
    let mut bits = 0u64;
    for t in edits {
        if t.0[0] < least_new_x {
            s.ys.push(t.0[1]);
        } else {
            bits |= t.0[0] | t.0[1];
            s.all64.push(pack_xy(t.0[0], t.0[1]));
        }
    }
    for t in new_times {
        bits |= t.0[0] | t.0[1];
        s.all64.push(pack_xy(t.0[0], t.0[1]));
    }
    s.ys.sort_unstable();
    s.ys.dedup();
    // Least second coordinate among new times with first coordinate <= x, as x grows: the new
    // times sorted by x (they usually arrive sorted).
    s.news.clear();
    s.news.extend(new_times.iter().map(|t| (t.0[0], t.0[1])));
    if !s.news.windows(2).all(|w| w[0] <= w[1]) {
        s.news.sort_unstable();
    }
    if bits >> 32 == 0 {
        s.all64.sort_unstable();
        s.all64.dedup();
        sweep_2d(&s.all64, unpack_xy, &s.news, &mut s.ys, out);
    } else {
        let pack = |t: &Time| ((t.0[0] as u128) << 64) | t.0[1] as u128;
        s.all
            .extend(edits.iter().filter(|t| t.0[0] >= least_new_x).map(pack));
        s.all.extend(new_times.iter().map(pack));
        s.all.sort_unstable();
        s.all.dedup();
        let unpack = |p: u128| ((p >> 64) as u64, p as u64);
        sweep_2d(&s.all, unpack, &s.news, &mut s.ys, out);
    }
}

/// The sweep of [`interesting_times_2d`] over the distinct packed times `all` (sorted, of
/// edits at or after the least new first coordinate and of new times), the new times `news`
/// sorted and the second coordinates `ys` of the other edits (sorted, distinct).
#[inline]
fn sweep_2d<P: Copy>(
    all: &[P],
    unpack: impl Fn(P) -> (u64, u64),
    news: &[(u64, u64)],
    ys: &mut Vec<u64>,
    out: &mut Vec<Time>,
) {
    let mut ni = 0;
    let mut min_new_y = u64::MAX;
    let mut i = 0;
    while i < all.len() {
        let (x, c) = unpack(all[i]); // `c`: least y among times with this x (sorted)
        while i < all.len() && unpack(all[i]).0 == x {
            let y = unpack(all[i]).1;
            if let Err(pos) = ys.binary_search(&y) {
                ys.insert(pos, y);
            }
            i += 1;
        }
        while ni < news.len() && news[ni].0 <= x {
            min_new_y = min_new_y.min(news[ni].1);
            ni += 1;
        }
        if min_new_y == u64::MAX {
            continue;
        }
        let lower = c.max(min_new_y);
        let start = ys.partition_point(|&y| y < lower);
        for &y in &ys[start..] {
            out.push(Time([x, y, 0, 0]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Brute force from the definition: joins of every subset of `edits` with every
    /// non-empty subset of `new_times`.
    fn brute_force(edits: &[Time], new_times: &[Time]) -> Vec<Time> {
        let mut out = Vec::new();
        for se in 0u32..(1 << edits.len()) {
            for sn in 1u32..(1 << new_times.len()) {
                let mut j = Time::minimum();
                for (i, e) in edits.iter().enumerate() {
                    if se >> i & 1 == 1 {
                        j = j.join(e);
                    }
                }
                for (i, n) in new_times.iter().enumerate() {
                    if sn >> i & 1 == 1 {
                        j = j.join(n);
                    }
                }
                out.push(j);
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// [`interesting_times_2d`] (by bitsets where the times fit) and its sort alone.
    fn both_2d(edits: &[Time], new_times: &[Time]) -> (Vec<Time>, Vec<Time>) {
        let mut fast = Vec::new();
        interesting_times_2d(edits, new_times, &mut TimesScratch::default(), &mut fast);
        let mut sorted = Vec::new();
        if let Some(x0) = new_times.iter().map(|t| t.0[0]).min() {
            sorted_2d(
                edits,
                new_times,
                x0,
                &mut TimesScratch::default(),
                &mut sorted,
            );
        }
        (fast, sorted)
    }

    fn fast(edits: &[Time], new_times: &[Time]) -> Vec<Time> {
        let mut out = vec![Time::scalar(99)];
        interesting_times(edits, new_times, &mut out).unwrap();
        out
    }

    fn times(dims: usize, range: u64, max_len: usize) -> impl Strategy<Value = Vec<Time>> {
        prop::collection::vec(prop::collection::vec(0..range, dims), 0..max_len)
            .prop_map(|v| v.into_iter().map(|c| Time::from_coords(&c)).collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn agrees_with_reference_1d(e in times(1, 20, 30), n in times(1, 20, 8)) {
            prop_assert_eq!(fast(&e, &n), interesting_times_reference(&e, &n));
        }

        #[test]
        fn agrees_with_reference_2d(e in times(2, 8, 25), n in times(2, 8, 6)) {
            prop_assert_eq!(fast(&e, &n), interesting_times_reference(&e, &n));
        }

        #[test]
        fn agrees_with_reference_3d(e in times(3, 5, 20), n in times(3, 5, 5)) {
            prop_assert_eq!(fast(&e, &n), interesting_times_reference(&e, &n));
        }

        #[test]
        fn agrees_with_reference_4d(e in times(4, 3, 12), n in times(4, 3, 4)) {
            prop_assert_eq!(fast(&e, &n), interesting_times_reference(&e, &n));
        }

        #[test]
        fn agrees_with_reference_no_edits(n in times(3, 6, 10)) {
            prop_assert_eq!(fast(&[], &n), interesting_times_reference(&[], &n));
        }

        #[test]
        fn both_match_brute_force(dims in 1usize..=3, e in times(3, 4, 6), n in times(3, 4, 4)) {
            // Project to `dims` coordinates so 1-D and 2-D tiny sets are covered too.
            let proj = |v: &Vec<Time>| -> Vec<Time> {
                v.iter().map(|t| Time::from_coords(&t.0[..dims])).collect()
            };
            let (e, n) = (proj(&e), proj(&n));
            let expected = brute_force(&e, &n);
            prop_assert_eq!(&interesting_times_reference(&e, &n), &expected);
            prop_assert_eq!(&fast(&e, &n), &expected);
        }
    }

    proptest! {
        #[test]
        fn interesting_times_2d_matches_reference(e in times(2, 6, 10), n in times(2, 6, 10)) {
            let want = interesting_times_reference(&e, &n);
            let (fast, sorted) = both_2d(&e, &n);
            prop_assert_eq!(&fast, &want);
            prop_assert_eq!(sorted, want);
        }

        /// Coordinates past 32 bits take the two-word packing.
        #[test]
        fn interesting_times_2d_wide_matches_reference(
            e in times(2, 6, 10),
            n in times(2, 6, 10),
            (wx, wy) in (any::<bool>(), any::<bool>()),
        ) {
            let shift = |ts: Vec<Time>| -> Vec<Time> {
                ts.into_iter()
                    .map(|t| Time([t.0[0] + (wx as u64) * (1 << 40), t.0[1] + (wy as u64) * (3 << 33), 0, 0]))
                    .collect()
            };
            let (e, n) = (shift(e), shift(n));
            let want = interesting_times_reference(&e, &n);
            let (fast, sorted) = both_2d(&e, &n);
            prop_assert_eq!(&fast, &want);
            prop_assert_eq!(sorted, want);
        }

        #[test]
        fn interesting_times_2d_on_1d_matches_reference(e in times(1, 20, 10), n in times(1, 20, 10)) {
            let want = interesting_times_reference(&e, &n);
            let (fast, sorted) = both_2d(&e, &n);
            prop_assert_eq!(&fast, &want);
            prop_assert_eq!(sorted, want);
        }
    }

    #[test]
    fn examples() {
        let t = |c: &[u64]| Time::from_coords(c);
        assert!(fast(&[t(&[1])], &[]).is_empty());
        // 1-D: new time 3 and the later edits.
        assert_eq!(
            fast(&[t(&[1]), t(&[5]), t(&[7])], &[t(&[3])]),
            vec![t(&[3]), t(&[5]), t(&[7])]
        );
        // 2-D: (0,1) with edit (1,0) joins to (1,1).
        assert_eq!(
            fast(&[t(&[1, 0])], &[t(&[0, 1])]),
            vec![t(&[0, 1]), t(&[1, 1])]
        );
        // Joins among new times themselves.
        assert_eq!(
            fast(&[], &[t(&[2, 0]), t(&[0, 2])]),
            vec![t(&[0, 2]), t(&[2, 0]), t(&[2, 2])]
        );
    }
}
