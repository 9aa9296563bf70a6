//! Tests of [`Arrangement`]'s full merges: a trace merged whole as its compaction frontier
//! moves keeps every accumulation in the future of that frontier, and equals the trace the
//! spine's own merges leave.

use super::Arrangement;
use crate::lattice::{Antichain, PartialOrder, Time};
use crate::updates::Updates;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Rows `(key, val)` and their summed diffs at time `t`: the updates at or before `t`.
fn accumulate(u: &Updates, t: &Time) -> BTreeMap<Vec<u64>, i64> {
    let mut acc = BTreeMap::new();
    for i in 0..u.len() {
        if u.times[i].less_equal(t) {
            *acc.entry(u.row(i).to_vec()).or_insert(0) += u.diffs[i];
        }
    }
    acc.retain(|_, d| *d != 0);
    acc
}

/// Sorts and consolidates a batch by (row, time), as the engine inserts them.
fn sorted(mut ups: Vec<(u64, u64, Time, i64)>) -> Updates {
    ups.sort_by_key(|&(k, v, t, _)| (k, v, t));
    let mut u = Updates::new(2);
    for (k, v, t, d) in ups {
        let n = u.len();
        if n > 0 && u.row(n - 1) == [k, v] && u.times[n - 1] == t {
            u.diffs[n - 1] += d;
            if u.diffs[n - 1] == 0 {
                u.truncate(n - 1);
            }
        } else {
            u.push(&[k, v], t, d);
        }
    }
    u
}

/// Batch `s` holds times `(s, y)`; after it the compaction frontier moves to
/// `{(c, d)}` with `c <= s + 1` (never back). Returns the trace and every update inserted.
fn run(
    ratio: usize,
    batches: &[Vec<(u64, u64, u64, i64)>],
    moves: &[(u64, u64)],
) -> (Arrangement, Updates, Antichain<Time>) {
    let mut a = Arrangement::new(1, 2);
    a.set_full_merge_ratio(ratio);
    let mut all = Updates::new(2);
    let mut frontier = Antichain::from_elem(Time::minimum());
    for (s, ups) in batches.iter().enumerate() {
        let s = s as u64;
        let b = sorted(
            ups.iter()
                .map(|&(k, v, y, d)| (k, v, Time::from_coords(&[s, y]), d))
                .collect(),
        );
        all.extend(&b);
        a.insert(&b, &Antichain::from_elem(Time::from_coords(&[s + 1, 0])));
        let (c, d) = moves[s as usize];
        let next = Time::from_coords(&[c.min(s + 1), d]);
        if frontier.less_equal(&next) {
            frontier = Antichain::from_elem(next);
            a.set_compaction(&frontier);
        }
    }
    (a, all, frontier)
}

proptest! {
    /// At every time in the future of the final compaction frontier, the trace with full
    /// merges (ratio 1 and 4) accumulates to the inserted updates, as the trace without.
    #[test]
    fn full_merges_keep_accumulations(
        batches in prop::collection::vec(
            prop::collection::vec((0u64..4, 0u64..3, 0u64..4, -2i64..3), 0..12), 1..12),
        moves in prop::collection::vec((0u64..14, 0u64..4), 12),
        probes in prop::collection::vec((0u64..14, 0u64..6), 1..8),
    ) {
        let (plain, all, frontier) = run(0, &batches, &moves);
        for ratio in [1, 4] {
            let (merged, _, f) = run(ratio, &batches, &moves);
            prop_assert_eq!(&f, &frontier);
            let (p, m) = (plain.to_updates(), merged.to_updates());
            for &(x, y) in &probes {
                let t = Time::from_coords(&[x, y]);
                if !frontier.less_equal(&t) {
                    continue;
                }
                let want = accumulate(&all, &t);
                prop_assert_eq!(&accumulate(&p, &t), &want);
                prop_assert_eq!(&accumulate(&m, &t), &want);
            }
        }
    }
}

/// With ratio 4, moving the frontier past the updates inserted on top of the first batch
/// once they reach a quarter of the trace merges it into one batch; with ratio 0 the spine
/// keeps one per level (batches of decreasing size).
#[test]
fn ratio_merges_whole() {
    let sizes = [1u64, 32, 16, 8, 4, 2];
    let batches: Vec<Vec<(u64, u64, u64, i64)>> = sizes
        .iter()
        .map(|&n| (0..n).map(|i| (i % 5, i % 3, i % 2, 1)).collect())
        .collect();
    let moves: Vec<(u64, u64)> = (0..sizes.len() as u64).map(|s| (s, 0)).collect();
    let past = Antichain::from_elem(Time::from_coords(&[sizes.len() as u64 + 1, 0]));
    let (mut merged, _, _) = run(4, &batches, &moves);
    merged.set_compaction(&past);
    assert_eq!(merged.n_batches(), 1);
    let (mut plain, _, _) = run(0, &batches, &moves);
    plain.set_compaction(&past);
    assert!(plain.n_batches() > 1, "{} batches", plain.n_batches());
}

/// A batch counts toward a full merge once the frontier has passed its upper: a frontier
/// that stays behind it merges nothing, the one that passes it merges the trace whole.
#[test]
fn a_batch_counts_once_the_frontier_passes_it() {
    let t = |s: u64| Time::from_coords(&[s, 0]);
    let upto = |s: u64| Antichain::from_elem(t(s));
    let mut a = Arrangement::new(1, 2);
    a.set_full_merge_ratio(4);
    a.insert(&sorted((0..8).map(|k| (k, 0, t(0), 1)).collect()), &upto(1));
    a.insert(
        &sorted((8..12).map(|k| (k, 0, t(1), 1)).collect()),
        &upto(5),
    );
    a.set_compaction(&upto(1));
    a.set_compaction(&upto(4));
    assert_eq!(
        a.n_batches(),
        2,
        "merged before the frontier passed the batch"
    );
    a.set_compaction(&upto(5));
    assert_eq!(a.n_batches(), 1);
}

/// A window's close: every row of the trace retracted in one insert, at a time the
/// compaction frontier has not reached (it trails the inserts, as the engine's does: the
/// readers' frontier as of their previous activation). The full merge the retractions
/// bring about then cannot cancel them; they count once the frontier passes their batch,
/// and that move merges the trace again: nothing of the window is left. The
/// accumulations agree with the inserted updates.
#[test]
fn retractions_inserted_ahead_of_the_frontier_cancel_once_it_passes_them() {
    // Step `s` inserts at time 10s + 5 up to 10(s + 1); the frontier then moves to 10s.
    let at = |s: u64| Time::from_coords(&[10 * s + 5, 0]);
    let upto = |x: u64| Antichain::from_elem(Time::from_coords(&[x, 0]));
    let mut a = Arrangement::new(1, 2);
    a.set_full_merge_ratio(4);
    let mut all = Updates::new(2);
    let mut insert = |a: &mut Arrangement, s: u64, ups: Vec<(u64, u64, Time, i64)>| {
        let b = sorted(ups);
        all.extend(&b);
        a.insert(&b, &upto(10 * (s + 1)));
        a.set_compaction(&upto(10 * s));
    };
    let row = |s: u64, i: u64| (s * 100 + i, i % 7);
    for s in 0..10 {
        let ups = (0..100)
            .map(|i| (row(s, i).0, row(s, i).1, at(s), 1))
            .collect();
        insert(&mut a, s, ups);
    }
    let close = (0..10)
        .flat_map(|s| (0..100).map(move |i| (row(s, i).0, row(s, i).1, at(10), -1)))
        .collect();
    insert(&mut a, 10, close);
    assert!(
        a.len() >= 2000,
        "cancelled before the frontier reached them"
    );
    insert(
        &mut a,
        11,
        (0..10).map(|i| (5_000 + i, 0, at(11), 1)).collect(),
    );
    assert_eq!(
        a.len(),
        10,
        "the window's rows and retractions are still held"
    );
    let end = Time::from_coords(&[200, 0]);
    assert_eq!(accumulate(&a.to_updates(), &end), accumulate(&all, &end));
}

/// A 2-D time.
fn t2(a: u64, b: u64) -> Time {
    Time::from_coords(&[a, b])
}

/// An antichain of the minimal 2-D times among `pairs`.
fn chain(pairs: &[(u64, u64)]) -> Antichain<Time> {
    Antichain::from_iter_minimal(pairs.iter().map(|&(a, b)| t2(a, b)))
}

#[test]
fn a_batch_is_passed_by_a_frontier_element_it_cannot_reach() {
    // The distances of a BFS whose roots input is closed: iteration 1 and up at the next
    // input time; the join reading them keeps iteration 0 of the input time after.
    let a = super::Ahead {
        lower: chain(&[(5, 12), (1001, 1)]),
        upper: chain(&[(5, 13), (1001, 1)]),
        len: 1,
    };
    let frontier = chain(&[(1361, 24), (2001, 0)]);
    assert!(!a.upper.dominates(&frontier));
    assert!(a.passed_by(&frontier));
    // A frontier behind the batch's upper on its own coordinates does not pass it.
    assert!(!a.passed_by(&chain(&[(5, 12), (2001, 0)])));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// `passed_by` holds exactly when no time of the batch (in the future of `lower`, not of
    /// `upper`) is in the future of the frontier, checked over a grid of 2-D times; it
    /// holds whenever the frontier dominates the upper.
    #[test]
    fn passed_by_matches_the_batch_times(
        lower in proptest::collection::vec((0u64..5, 0u64..5), 1..3),
        upper in proptest::collection::vec((0u64..7, 0u64..7), 1..3),
        frontier in proptest::collection::vec((0u64..8, 0u64..8), 0..3),
    ) {
        let a = super::Ahead { lower: chain(&lower), upper: chain(&upper), len: 1 };
        let f = chain(&frontier);
        let mut reached = false;
        for x in 0..12 {
            for y in 0..12 {
                let t = t2(x, y);
                if a.lower.less_equal(&t) && !a.upper.less_equal(&t) && f.less_equal(&t) {
                    reached = true;
                }
            }
        }
        prop_assert_eq!(a.passed_by(&f), !reached);
        if a.upper.dominates(&f) {
            prop_assert!(a.passed_by(&f));
        }
    }
}

proptest! {
    /// Full merges decided by the caller (as the engine decides them for all workers at
    /// once) keep every accumulation in the future of the final frontier, whichever moves
    /// they come at; a move that keeps the frontier merges nothing.
    #[test]
    fn caller_decided_full_merges_keep_accumulations(
        batches in prop::collection::vec(
            prop::collection::vec((0u64..4, 0u64..3, 0u64..4, -2i64..3), 0..12), 1..12),
        moves in prop::collection::vec((0u64..14, 0u64..4, 0u8..3), 12),
        probes in prop::collection::vec((0u64..14, 0u64..6), 1..8),
    ) {
        let mut a = Arrangement::new(1, 2);
        a.set_full_merge_ratio(4);
        let mut all = Updates::new(2);
        let mut frontier = Antichain::from_elem(Time::minimum());
        for (s, ups) in batches.iter().enumerate() {
            let s = s as u64;
            let b = sorted(
                ups.iter()
                    .map(|&(k, v, y, d)| (k, v, Time::from_coords(&[s, y]), d))
                    .collect(),
            );
            all.extend(&b);
            a.insert(&b, &Antichain::from_elem(Time::from_coords(&[s + 1, 0])));
            let (c, d, decide) = moves[s as usize];
            let merge_whole = [None, Some(false), Some(true)][decide as usize];
            let next = Time::from_coords(&[c.min(s + 1), d]);
            let before = a.n_batches();
            if frontier.less_equal(&next) {
                let moved = frontier != Antichain::from_elem(next);
                frontier = Antichain::from_elem(next);
                a.set_compaction_merging(&frontier, merge_whole);
                if moved && merge_whole == Some(true) {
                    prop_assert!(a.n_batches() <= 1);
                }
                if !moved || merge_whole == Some(false) {
                    prop_assert!(a.n_batches() <= before);
                }
            }
        }
        let m = a.to_updates();
        for &(x, y) in &probes {
            let t = Time::from_coords(&[x, y]);
            if frontier.less_equal(&t) {
                prop_assert_eq!(accumulate(&m, &t), accumulate(&all, &t));
            }
        }
    }
}

/// A trace's share of a full merge: nothing passed while it is one batch; once a batch
/// on top of it has been passed, the passed updates times the ratio against its size.
#[test]
fn full_merge_share_counts_passed_updates() {
    let t = |s: u64| Time::from_coords(&[s, 0]);
    let upto = |s: u64| Antichain::from_elem(t(s));
    let mut a = Arrangement::new(1, 2);
    a.set_full_merge_ratio(4);
    a.insert(&sorted((0..8).map(|k| (k, 0, t(0), 1)).collect()), &upto(1));
    assert_eq!(a.full_merge_share(), (0, 8));
    a.insert(
        &sorted((8..10).map(|k| (k, 0, t(1), 1)).collect()),
        &upto(2),
    );
    // Decided by the caller: not merged, however much was passed.
    a.set_compaction_merging(&upto(2), Some(false));
    assert_eq!(a.n_batches(), 2);
    assert_eq!(a.full_merge_share(), (8, 10));
    a.set_compaction_merging(&upto(2), Some(true));
    assert_eq!(a.n_batches(), 2, "merged with the frontier standing still");
    a.set_compaction_merging(&upto(3), Some(true));
    assert_eq!(a.n_batches(), 1);
    assert_eq!(a.full_merge_share(), (0, 10));
    // Merged whole by the engine after the compaction (several workers), not by it.
    a.insert(
        &sorted((10..12).map(|k| (k, 0, t(3), 1)).collect()),
        &upto(4),
    );
    a.set_compaction_merging(&upto(4), Some(false));
    assert_eq!(a.full_merge_share(), (8, 12));
    a.merge_whole();
    assert_eq!(a.n_batches(), 1);
    assert_eq!(a.full_merge_share(), (0, 12));
    let end = t(10);
    let want: BTreeMap<Vec<u64>, i64> = (0..12).map(|k| (vec![k, 0], 1)).collect();
    assert_eq!(accumulate(&a.to_updates(), &end), want);
}
