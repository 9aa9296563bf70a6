//! Two-coordinate times packed in one word, for the inner loops of merges.
//!
//! Most traces hold times `[x, y, 0, 0]` with `x` and `y` below 2^32 (an outer time and one
//! iteration: the BFS's `(epoch, round)`), which batches already store as two `u32`s
//! (`time_vec.rs`). Packed as the word `x << 32 | y`, such times compare as integers in the
//! order of [`Time`]'s `Ord` (lexicographic), and joining two of them is a maximum per half.
//!
//! A merge advances every time by its compaction frontier, that is, joins it with the
//! frontier's meet (see [`meet_of`]). When every time of both inputs and that meet pack,
//! the merge reads each val's updates here as `(packed time, diff)` pairs of 16 bytes
//! ([`gather`]), sorts and sums them as integers, and pushes them into the builder's
//! two-`u32` times without unpacking ([`super::Builder::push_update_packed`]).
//!
//! The reduce reads a key's histories the same way ([`gather_key`]): each update as
//! `(val, packed time, diff)` with its time joined with the meet of the key's new times.

use super::batch::{Batch, Diffs, Times, Words, MAX_INDEXED_TIMES};
use super::time_vec::TimeVec;
use crate::lattice::{Lattice, Time};
use std::ops::Range;

/// The low half of a packed time (its second coordinate).
const LO: u64 = 0xffff_ffff;

/// The word `x << 32 | y` for coordinates below 2^32 (the caller checks: a larger `x` or
/// `y` gives a word that stands for another time). The one packing of two coordinates,
/// also used by the reduce's interesting times (`times.rs`).
#[inline]
pub(crate) fn pack_xy(x: u64, y: u64) -> u64 {
    x << 32 | (y & LO)
}

/// The coordinates `(x, y)` of a word from [`pack_xy`].
#[inline]
pub(crate) fn unpack_xy(p: u64) -> (u64, u64) {
    (p >> 32, p & LO)
}

/// `t` packed as `x << 32 | y`, if `t` is `[x, y, 0, 0]` with `x`, `y` below 2^32.
#[inline]
pub(crate) fn pack(t: &Time) -> Option<u64> {
    let [x, y, z, w] = t.0;
    (z == 0 && w == 0 && (x | y) >> 32 == 0).then(|| pack_xy(x, y))
}

/// The time a packed word stands for.
#[inline]
pub(crate) fn unpack(p: u64) -> Time {
    let (x, y) = unpack_xy(p);
    Time([x, y, 0, 0])
}

/// A stored pair of `u32`s (`time_vec.rs`) as a packed word.
#[inline]
fn pack_pair(p: [u32; 2]) -> u64 {
    (p[0] as u64) << 32 | p[1] as u64
}

/// The join (least upper bound) of two packed times: the maximum of each coordinate.
#[inline]
pub(crate) fn join(p: u64, q: u64) -> u64 {
    (p >> 32).max(q >> 32) << 32 | (p & LO).max(q & LO)
}

/// The meet of a frontier's elements, by which advancing is a join; `None` for the empty
/// frontier (advancing by it changes nothing).
///
/// Advancing `t` by a frontier `F` is the meet over `f` in `F` of `t ∨ f`. Times are
/// products of totally ordered coordinates, a distributive lattice, where that meet equals
/// `t ∨ (∧ F)`: per coordinate, the least of the maxima `max(t, f)` is the maximum of `t`
/// and the least `f`. So one join per update replaces a join and a meet per frontier element.
pub(crate) fn meet_of(frontier: &[Time]) -> Option<Time> {
    let (first, rest) = frontier.split_first()?;
    Some(rest.iter().fold(*first, |m, f| m.meet(f)))
}

/// Advances `t` by a frontier whose meet is `meet` (see [`meet_of`]).
#[inline]
pub(crate) fn advance(t: Time, meet: Option<&Time>) -> Time {
    match meet {
        Some(m) => t.join(m),
        None => t,
    }
}

/// How a merge reads the times of one input packed: each distinct time already advanced,
/// where the batch stores a single time or a few indexed ones.
#[derive(Clone, Debug)]
pub(crate) enum PackedTimes {
    /// Every update has this (advanced) time.
    Single(u64),
    /// Per-update times, advanced as they are read.
    Each,
    /// Update `u` has time `table[idx[u]]` (advanced).
    Indexed([u64; MAX_INDEXED_TIMES]),
}

impl PackedTimes {
    /// How to read `batch`'s times packed and joined with `meet`, if all of them pack.
    pub(crate) fn of(batch: &Batch, meet: u64) -> Option<PackedTimes> {
        match &batch.times {
            Times::Single(t) => Some(PackedTimes::Single(join(pack(t)?, meet))),
            Times::Each(TimeVec::Narrow(_)) => Some(PackedTimes::Each),
            Times::Each(TimeVec::Wide(_)) => None,
            Times::Indexed { distinct, .. } => {
                let mut table = [0u64; MAX_INDEXED_TIMES];
                for (slot, t) in table.iter_mut().zip(distinct) {
                    *slot = join(pack(t)?, meet);
                }
                Some(PackedTimes::Indexed(table))
            }
        }
    }
}

/// The time of update `u` of `batch`, packed and joined with `meet`; `times` is
/// [`PackedTimes::of`] the batch.
#[inline(always)]
pub(crate) fn time_of(batch: &Batch, times: &PackedTimes, meet: u64, u: usize) -> u64 {
    match (times, &batch.times) {
        (PackedTimes::Single(p), _) => *p,
        (PackedTimes::Each, Times::Each(TimeVec::Narrow(ts))) => join(pack_pair(ts[u]), meet),
        (PackedTimes::Indexed(table), Times::Indexed { idx, .. }) => table[idx[u] as usize],
        _ => unreachable!("packed times read from a batch they do not describe"),
    }
}

/// Appends the updates `range` of `batch` to `out` as `(packed time, diff)`, each time
/// joined with `meet`; `times` is [`PackedTimes::of`] the batch.
#[inline]
pub(crate) fn gather(
    batch: &Batch,
    times: &PackedTimes,
    meet: u64,
    range: Range<usize>,
    out: &mut Vec<(u64, i64)>,
) {
    // Per-update times with dense or implicit diffs (the common forms): one pass.
    if let (PackedTimes::Each, Times::Each(TimeVec::Narrow(ts))) = (times, &batch.times) {
        let ts = &ts[range.clone()];
        match &batch.diffs {
            Diffs::Dense(ds) => {
                let joined = ts.iter().zip(&ds[range]);
                return out.extend(joined.map(|(&q, &d)| (join(pack_pair(q), meet), d)));
            }
            Diffs::Ones => {
                return out.extend(ts.iter().map(|&q| (join(pack_pair(q), meet), 1)));
            }
            Diffs::Sparse { .. } => {}
        }
    }
    let start = out.len();
    match (times, &batch.times) {
        (PackedTimes::Single(p), _) => out.extend(range.clone().map(|_| (*p, 1))),
        (PackedTimes::Each, Times::Each(TimeVec::Narrow(ts))) => out.extend(
            ts[range.clone()]
                .iter()
                .map(|&q| (join(pack_pair(q), meet), 1)),
        ),
        (PackedTimes::Indexed(table), Times::Indexed { idx, .. }) => {
            out.extend(idx[range.clone()].iter().map(|&i| (table[i as usize], 1)))
        }
        _ => unreachable!("packed times read from a batch they do not describe"),
    }
    let added = &mut out[start..];
    match &batch.diffs {
        Diffs::Ones => {}
        Diffs::Dense(ds) => {
            for (u, &d) in added.iter_mut().zip(&ds[range]) {
                u.1 = d;
            }
        }
        Diffs::Sparse { idx, diffs } => {
            let from = idx.partition_point(|&x| x < range.start);
            for (&i, &d) in idx[from..].iter().zip(&diffs[from..]) {
                if i >= range.end {
                    break;
                }
                added[i - range.start].1 = d;
            }
        }
    }
}

/// Appends the updates of key `k` of `batch`, whose vals are at most one word, to `out` as
/// `(val, packed time, diff)`, each time joined with `meet` (`val` is the val's word, 0 for
/// vals of no words), in the batch's order. Returns false, appending nothing, when the
/// batch's times do not pack. `pairs` is scratch.
///
/// The reduce's key histories ([`crate::trace::Cursor::gather_packed`]): a key holds a few
/// updates in each batch, so the batch's forms (times, diffs, vals with or without offsets)
/// are matched once per key and the updates written in one pass.
pub(crate) fn gather_key(
    batch: &Batch,
    k: usize,
    meet: u64,
    pairs: &mut Vec<(u64, i64)>,
    out: &mut Vec<(u64, u64, i64)>,
) -> bool {
    debug_assert!(
        batch.val_width() <= 1,
        "packed key reads take vals of at most one word"
    );
    let Some(times) = PackedTimes::of(batch, meet) else {
        return false;
    };
    let vals = batch.key_offs[k]..batch.key_offs[k + 1];
    let ups = match &batch.val_offs {
        Some(o) => o[vals.start]..o[vals.end],
        None => vals.clone(),
    };
    // Times and diffs as iterators over the key's updates (no index checks per update).
    let (u0, u1) = (ups.start, ups.end);
    let n = u1 - u0;
    match (&times, &batch.times, &batch.diffs) {
        (PackedTimes::Each, Times::Each(TimeVec::Narrow(ts)), Diffs::Ones) => {
            let ts = ts[u0..u1].iter().map(|&q| join(pack_pair(q), meet));
            fill_key(batch, vals, ts, std::iter::repeat_n(1, n), out)
        }
        (PackedTimes::Each, Times::Each(TimeVec::Narrow(ts)), Diffs::Dense(ds)) => {
            let ts = ts[u0..u1].iter().map(|&q| join(pack_pair(q), meet));
            fill_key(batch, vals, ts, ds[u0..u1].iter().copied(), out)
        }
        (PackedTimes::Indexed(table), Times::Indexed { idx, .. }, Diffs::Ones) => {
            let ts = idx[u0..u1].iter().map(|&i| table[i as usize]);
            fill_key(batch, vals, ts, std::iter::repeat_n(1, n), out)
        }
        (PackedTimes::Indexed(table), Times::Indexed { idx, .. }, Diffs::Dense(ds)) => {
            let ts = idx[u0..u1].iter().map(|&i| table[i as usize]);
            fill_key(batch, vals, ts, ds[u0..u1].iter().copied(), out)
        }
        (PackedTimes::Single(p), _, Diffs::Ones) => fill_key(
            batch,
            vals,
            std::iter::repeat_n(*p, n),
            std::iter::repeat_n(1, n),
            out,
        ),
        (PackedTimes::Single(p), _, Diffs::Dense(ds)) => fill_key(
            batch,
            vals,
            std::iter::repeat_n(*p, n),
            ds[u0..u1].iter().copied(),
            out,
        ),
        _ => {
            // Sparse diffs: the exceptions to one found once for the key's range.
            pairs.clear();
            gather(batch, &times, meet, ups, pairs);
            let (ts, ds) = (pairs.iter().map(|p| p.0), pairs.iter().map(|p| p.1));
            fill_key(batch, vals, ts, ds, out);
        }
    }
    true
}

/// Appends `(val, time, diff)` for the updates of the vals `vals` of `batch` (one key's),
/// their times and diffs taken from `times` and `diffs` in update order, the val's word read
/// by the vals' form.
#[inline(always)]
fn fill_key(
    batch: &Batch,
    vals: Range<usize>,
    times: impl Iterator<Item = u64>,
    diffs: impl Iterator<Item = i64>,
    out: &mut Vec<(u64, u64, i64)>,
) {
    let mut ups = times.zip(diffs);
    if batch.val_width() == 0 {
        return out.extend(ups.map(|(t, d)| (0, t, d)));
    }
    match (&batch.val_offs, &batch.vals) {
        // Val `v` owns update `v`.
        (None, Words::U32(w)) => {
            out.extend(w[vals].iter().zip(ups).map(|(&v, (t, d))| (v as u64, t, d)))
        }
        (None, Words::U64(w)) => out.extend(w[vals].iter().zip(ups).map(|(&v, (t, d))| (v, t, d))),
        (Some(offs), words) => {
            for v in vals {
                let val = words.word(v);
                let n = offs[v + 1] - offs[v];
                out.extend(ups.by_ref().take(n).map(|(t, d)| (val, t, d)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::PartialOrder;
    use proptest::prelude::*;

    fn coord() -> impl Strategy<Value = u64> {
        prop_oneof![4 => 0u64..6, 1 => Just(u32::MAX as u64), 1 => Just(1u64 << 32)]
    }

    fn time() -> impl Strategy<Value = Time> {
        (coord(), coord(), 0u64..3, 0u64..2).prop_map(|(a, b, c, d)| Time([a, b, c, d]))
    }

    proptest! {
        #[test]
        fn advancing_is_joining_the_meet(
            t in time(),
            f in proptest::collection::vec(time(), 0..4),
        ) {
            let frontier = crate::lattice::Antichain::from_iter_minimal(f);
            let f = frontier.elements();
            prop_assert_eq!(advance(t, meet_of(f).as_ref()), t.advance_by(f));
        }

        #[test]
        fn packed_order_and_join_are_the_times(a in time(), b in time()) {
            if let (Some(p), Some(q)) = (pack(&a), pack(&b)) {
                prop_assert_eq!(unpack(p), a);
                prop_assert_eq!(p.cmp(&q), a.cmp(&b));
                prop_assert_eq!(unpack(join(p, q)), a.join(&b));
                prop_assert_eq!(a.less_equal(&b), join(p, q) == q);
            } else {
                prop_assert!(a.0[2] != 0 || a.0[3] != 0 || (a.0[0] | a.0[1]) >> 32 != 0
                    || b.0[2] != 0 || b.0[3] != 0 || (b.0[0] | b.0[1]) >> 32 != 0);
            }
        }
    }
}
