//! Tests of the radix sorts and consolidation against std sorts and `BTreeMap` accumulation.

use super::*;
use crate::error::Error;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// Sorters to check: the default one, ones forcing radix sort on tiny inputs, and ones
/// reordering updates in place whatever their size.
fn sorters() -> [RadixSorter; 5] {
    [
        RadixSorter::new(),
        RadixSorter::with_min_radix_len(0),
        RadixSorter::with_min_radix_len(3),
        RadixSorter::new().with_in_place_from(0),
        RadixSorter::with_min_radix_len(0).with_in_place_from(0),
    ]
}

fn check_pairs(v: Vec<(u64, u64)>) {
    let mut expected = v.clone();
    expected.sort();
    for mut sorter in sorters() {
        let mut v = v.clone();
        sorter.sort_pairs(&mut v);
        assert_eq!(v, expected);
    }
}

fn random_pairs(
    rng: &mut StdRng,
    n: usize,
    key: impl Fn(&mut StdRng) -> u64,
    val: impl Fn(&mut StdRng) -> u64,
) -> Vec<(u64, u64)> {
    (0..n).map(|_| (key(rng), val(rng))).collect()
}

#[test]
fn pairs_edge_cases() {
    check_pairs(vec![]);
    check_pairs(vec![(1, 2)]);
    check_pairs(vec![(7, 7); 1000]);
    check_pairs((0..1000).rev().map(|i| (i, i)).collect());
    check_pairs((0..1000).map(|i| (5, 1000 - i)).collect());
    check_pairs((0..1000).map(|i| (u64::MAX - i, u64::MAX)).collect());
}

#[test]
fn pairs_distributions() {
    let mut rng = StdRng::seed_from_u64(1);
    for &n in &[10, 255, 256, 257, 1000, 5000, 40_000] {
        check_pairs(random_pairs(&mut rng, n, |r| r.gen(), |r| r.gen()));
        check_pairs(random_pairs(
            &mut rng,
            n,
            |r| r.gen_range(0..1_000_000),
            |r| r.gen_range(0..1_000_000),
        ));
        check_pairs(random_pairs(
            &mut rng,
            n,
            |r| r.gen_range(0..10),
            |r| r.gen(),
        ));
        // Keys varying only in high bits; values in a middle byte.
        check_pairs(random_pairs(
            &mut rng,
            n,
            |r| r.gen_range(0..64u64) << 50,
            |r| r.gen_range(0..256u64) << 20,
        ));
        // Wide keys with a few heavy keys: key-first path with long equal-key runs.
        check_pairs(random_pairs(
            &mut rng,
            n,
            |r| if r.gen_bool(0.5) { 42 } else { r.gen() },
            |r| r.gen(),
        ));
    }
}

#[test]
fn u64_sorts() {
    let mut rng = StdRng::seed_from_u64(2);
    let mut sorter = RadixSorter::new();
    for &n in &[0, 1, 100, 300, 10_000] {
        for range in [u64::MAX, 1_000_000, 3] {
            let mut v: Vec<u64> = (0..n).map(|_| rng.gen_range(0..=range)).collect();
            let mut e = v.clone();
            e.sort_unstable();
            sorter.sort_u64(&mut v);
            assert_eq!(v, e);
        }
    }
}

#[test]
fn buffers_are_reused() {
    let mut rng = StdRng::seed_from_u64(3);
    let mut sorter = RadixSorter::new();
    let make = |rng: &mut StdRng| random_pairs(rng, 10_000, |r| r.gen(), |r| r.gen());
    let mut v = make(&mut rng);
    sorter.sort_pairs(&mut v);
    let bytes = sorter.heap_bytes();
    for _ in 0..3 {
        let mut v = make(&mut rng);
        v.reserve_exact(0);
        sorter.sort_pairs(&mut v);
        assert!(sorter.heap_bytes() <= bytes.max(10_000 * 16 * 2));
    }
}

/// Reference: a stable sort of `(row, time)` with original order for ties.
fn reference_sort(u: &Updates) -> Updates {
    let mut idx: Vec<usize> = (0..u.len()).collect();
    idx.sort_by(|&a, &b| u.row(a).cmp(u.row(b)).then(u.times[a].cmp(&u.times[b])));
    let mut out = Updates::new(u.width);
    for i in idx {
        out.push(u.row(i), u.times[i], u.diffs[i]);
    }
    out
}

/// Reference: accumulate in a `BTreeMap`, drop zeros.
fn reference_consolidate(u: &Updates) -> Updates {
    let mut acc: BTreeMap<(Vec<u64>, Time), i128> = BTreeMap::new();
    for i in 0..u.len() {
        *acc.entry((u.row(i).to_vec(), u.times[i])).or_default() += u.diffs[i] as i128;
    }
    let mut out = Updates::new(u.width);
    for ((row, t), d) in acc {
        if d != 0 {
            out.push(&row, t, i64::try_from(d).unwrap());
        }
    }
    out
}

fn time_strategy() -> impl Strategy<Value = Time> {
    (1usize..=3, 0u64..4, 0u64..4, 0u64..4)
        .prop_map(|(dims, a, b, c)| Time::from_coords(&[a, b, c][..dims]))
}

fn word_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..4,
        0u64..1_000_000,
        any::<u64>(),
        (0u64..8).prop_map(|x| x << 61)
    ]
}

fn updates_strategy(max_len: usize) -> impl Strategy<Value = Updates> {
    (0usize..=3).prop_flat_map(move |width| {
        prop::collection::vec(
            (
                prop::collection::vec(word_strategy(), width),
                time_strategy(),
                -3i64..=3,
            ),
            0..max_len,
        )
        .prop_map(move |items| {
            let mut u = Updates::new(width);
            for (row, t, d) in items {
                u.push(&row, t, d);
            }
            u
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn prop_pairs_match_std(v in prop::collection::vec((word_strategy(), word_strategy()), 0..1200)) {
        check_pairs(v);
    }

    #[test]
    fn prop_u64_match_std(v in prop::collection::vec(word_strategy(), 0..1200)) {
        let mut e = v.clone();
        e.sort_unstable();
        for mut sorter in sorters() {
            let mut v = v.clone();
            sorter.sort_u64(&mut v);
            prop_assert_eq!(&v, &e);
        }
    }

    #[test]
    fn prop_sort_updates_is_stable_sort(u in updates_strategy(1000)) {
        let expected = reference_sort(&u);
        for mut sorter in sorters() {
            let mut u = u.clone();
            sorter.sort_updates(&mut u);
            prop_assert_eq!(&u, &expected);
            // Sorting again (reused buffers, sorted input) changes nothing.
            sorter.sort_updates(&mut u);
            prop_assert_eq!(&u, &expected);
        }
    }

    #[test]
    fn prop_consolidate_matches_btreemap(u in updates_strategy(1000)) {
        let expected = reference_consolidate(&u);
        for mut sorter in sorters() {
            let mut u = u.clone();
            sorter.consolidate_updates(&mut u).unwrap();
            prop_assert_eq!(&u, &expected);
        }
    }

    #[test]
    fn prop_consolidate_triples_matches_btreemap(
        v in prop::collection::vec((word_strategy(), word_strategy(), -2i64..=2), 0..1000)
    ) {
        let mut acc: BTreeMap<(u64, u64), i64> = BTreeMap::new();
        for &(k, x, d) in &v {
            *acc.entry((k, x)).or_default() += d;
        }
        let expected: Vec<_> = acc.into_iter().filter(|&(_, d)| d != 0).map(|((k, x), d)| (k, x, d)).collect();
        for mut sorter in sorters() {
            let mut v = v.clone();
            sorter.consolidate_pairs_with_diffs(&mut v).unwrap();
            prop_assert_eq!(&v, &expected);
        }
    }
}

#[test]
fn sort_updates_large_multi_chunk() {
    // Larger than the kernel's cache budget, so the out-of-cache split runs: width 1 and 3
    // of full-range words (several chunks, some needing (key, idx) pairs, with a heavy
    // value), and width 1 of node ids with 2-D times (one packed chunk).
    let mut rng = StdRng::seed_from_u64(4);
    for (width, n, full) in [(1, 40_000, true), (3, 25_000, true), (1, 100_000, false)] {
        let mut u = Updates::new(width);
        for _ in 0..n {
            let row: Vec<u64> = (0..width)
                .map(|_| match (full, rng.gen_bool(0.3)) {
                    (true, true) => 7,
                    (true, false) => rng.gen(),
                    (false, _) => rng.gen_range(0..1_000_000),
                })
                .collect();
            let t = Time::from_coords(&[rng.gen_range(0..100), rng.gen_range(0..20)]);
            u.push(&row, t, rng.gen_range(-2..=2));
        }
        let expected = reference_sort(&u);
        // In place whatever the size, through scratch columns whatever the size, and the
        // default (in place from `IN_PLACE_MIN_BYTES`: the last of these batches).
        for in_place_from in [0, usize::MAX, IN_PLACE_MIN_BYTES] {
            let sorter = || RadixSorter::new().with_in_place_from(in_place_from);
            let mut sorted = u.clone();
            sorter().sort_updates(&mut sorted);
            assert_eq!(sorted, expected);
            let mut consolidated = u.clone();
            sorter().consolidate_updates(&mut consolidated).unwrap();
            assert_eq!(consolidated, reference_consolidate(&expected));
        }
    }
}

#[test]
fn consolidate_cancels_to_empty() {
    let mut u = Updates::new(1);
    for i in 0..1000u64 {
        u.push(&[i % 17], Time::from_coords(&[i % 3, 1]), 1);
        u.push(&[i % 17], Time::from_coords(&[i % 3, 1]), -1);
    }
    RadixSorter::new().consolidate_updates(&mut u).unwrap();
    assert!(u.is_empty() && u.rows.is_empty());
}

#[test]
fn consolidate_overflow_is_an_error_and_keeps_the_collection() {
    let mut u = Updates::new(2);
    let t = Time::from_coords(&[3, 1]);
    u.push(&[5, 6], t, i64::MAX);
    u.push(&[1, 1], Time::scalar(0), 4);
    u.push(&[5, 6], t, 2);
    u.push(&[1, 1], Time::scalar(0), -1);
    let before = reference_consolidate_i128(&u);
    let err = RadixSorter::new().consolidate_updates(&mut u).unwrap_err();
    match &err {
        Error::Overflow(m) => {
            assert!(m.contains("[5, 6]") && m.contains("(3,1)"), "{m}");
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert_eq!(reference_consolidate_i128(&u), before);
    assert_eq!(u.row(0), &[1, 1]);
    assert_eq!(u.diffs[0], 3);
    assert_eq!(u.len(), 3);

    // Negative overflow, and intermediate overflow whose total fits.
    let mut u = Updates::new(1);
    u.push(&[1], Time::scalar(1), i64::MIN);
    u.push(&[1], Time::scalar(1), -1);
    assert!(matches!(
        RadixSorter::new().consolidate_updates(&mut u),
        Err(Error::Overflow(_))
    ));
    let mut u = Updates::new(1);
    u.push(&[1], Time::scalar(1), i64::MAX);
    u.push(&[1], Time::scalar(1), 1);
    u.push(&[1], Time::scalar(1), -1);
    RadixSorter::new().consolidate_updates(&mut u).unwrap();
    assert_eq!(u.diffs, vec![i64::MAX]);

    let mut v = vec![(1, 2, i64::MAX), (1, 2, 1), (0, 0, 1)];
    let err = RadixSorter::new()
        .consolidate_pairs_with_diffs(&mut v)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Overflow(m) if m.contains("key 1, value 2")),
        "{err:?}"
    );
    assert_eq!(v, vec![(0, 0, 1), (1, 2, i64::MAX), (1, 2, 1)]);
}

fn reference_consolidate_i128(u: &Updates) -> BTreeMap<(Vec<u64>, Time), i128> {
    let mut acc = BTreeMap::new();
    for i in 0..u.len() {
        *acc.entry((u.row(i).to_vec(), u.times[i])).or_default() += u.diffs[i] as i128;
    }
    acc.retain(|_, d| *d != 0);
    acc
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Sorted input with one pair of updates swapped (anywhere, so the in-order check may fail
    /// on the last pair) still sorts to the reference.
    #[test]
    fn prop_sort_updates_nearly_sorted(u in updates_strategy(300), a in any::<prop::sample::Index>(), b in any::<prop::sample::Index>()) {
        let sorted = reference_sort(&u);
        let mut swapped = Updates::new(u.width);
        let n = sorted.len();
        let (i, j) = if n == 0 { (0, 0) } else { (a.index(n), b.index(n)) };
        for k in 0..n {
            let src = if k == i { j } else if k == j { i } else { k };
            swapped.push(sorted.row(src), sorted.times[src], sorted.diffs[src]);
        }
        let expected = reference_sort(&swapped);
        let summed = reference_consolidate(&swapped);
        for mut sorter in sorters() {
            let mut v = swapped.clone();
            sorter.sort_updates(&mut v);
            prop_assert_eq!(&v, &expected);
            let mut v = swapped.clone();
            sorter.consolidate_updates(&mut v).unwrap();
            prop_assert_eq!(&v, &summed);
            // Consolidated input (the fast path) comes back as it is.
            sorter.consolidate_updates(&mut v).unwrap();
            prop_assert_eq!(&v, &summed);
            // Sorted input with ties or zero diffs is still summed.
            let mut v = expected.clone();
            sorter.consolidate_updates(&mut v).unwrap();
            prop_assert_eq!(&v, &reference_consolidate(&expected));
        }
    }
}

#[test]
fn empty_with_room_keeps_a_large_buffer_and_replaces_a_small_one() {
    let mut v: Vec<u64> = Vec::with_capacity(100);
    v.extend(0..50);
    let p = v.as_ptr();
    empty_with_room(&mut v, 80);
    assert!(v.is_empty() && v.capacity() >= 100 && v.as_ptr() == p);
    empty_with_room(&mut v, 1000);
    assert!(v.is_empty() && v.capacity() >= 1000);
}

proptest! {
    /// Runs of equal keys summed in pieces: each run's pieces sum to its exact total, none
    /// is zero, they fit `i64`, and a run yields no more pieces than it has updates.
    #[test]
    fn runs_sum_exactly_in_pieces(
        mut ups in proptest::collection::vec(
            (0u8..4, prop_oneof![Just(i64::MAX), Just(i64::MIN), -3i64..4]),
            0..30,
        )
    ) {
        ups.sort_by_key(|u| u.0);
        let mut out: Vec<(u8, i64)> = Vec::new();
        crate::sort::consolidate::sum_runs_in_pieces(&ups, |k, d| out.push((k, d)));
        for key in 0u8..4 {
            let exact: i128 = ups.iter().filter(|u| u.0 == key).map(|u| u.1 as i128).sum();
            let run = ups.iter().filter(|u| u.0 == key).count();
            let got: Vec<i64> = out.iter().filter(|u| u.0 == key).map(|u| u.1).collect();
            prop_assert_eq!(got.iter().map(|&d| d as i128).sum::<i128>(), exact);
            prop_assert!(got.iter().all(|&d| d != 0));
            prop_assert!(got.len() <= run);
        }
        prop_assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
    }
}

/// Updates of `width` words from small ranges (so that the key packs into one word with
/// the index), times of 1 to 3 coordinates, optionally all at one time (a column held as
/// one time), and diffs that often cancel or overflow.
fn packable_updates_strategy(max_len: usize) -> impl Strategy<Value = Updates> {
    let diff = prop_oneof![
        4 => -2i64..=2,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ];
    (0usize..=3, any::<bool>(), 0u64..3).prop_flat_map(move |(width, one_time, spread)| {
        let word = (0u64..5).prop_map(move |x| x << (spread * 20));
        prop::collection::vec(
            (
                prop::collection::vec(word, width),
                time_strategy(),
                diff.clone(),
            ),
            0..max_len,
        )
        .prop_map(move |items| {
            let mut u = Updates::new(width);
            let t0 = items.first().map(|i| i.1);
            for (row, t, d) in items {
                u.push(&row, if one_time { t0.unwrap() } else { t }, d);
            }
            if one_time {
                let n = u.len();
                u.times = crate::updates::TimeColumn::repeat(t0.unwrap_or_default(), n);
            }
            u
        })
    })
}

/// Consolidates `u` through the sort, then `consolidate_sorted` (what the fused path
/// replaces): the sorter reorders in place whatever the size, so it never fuses.
fn unfused_consolidate(u: &Updates) -> (Updates, Result<()>) {
    let mut v = u.clone();
    let r = RadixSorter::new()
        .with_in_place_from(0)
        .consolidate_updates(&mut v);
    (v, r)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The fused sort and sum gives exactly what sorting and then summing gives (the same
    /// updates, pieces of an overflowing total and error), and the reference's totals.
    #[test]
    fn prop_fused_consolidation_matches_sort_then_sum(u in packable_updates_strategy(700)) {
        let (expected, expected_err) = unfused_consolidate(&u);
        let totals = reference_consolidate_i128(&u);
        for mut sorter in [
            RadixSorter::new(),
            RadixSorter::with_min_radix_len(0),
            RadixSorter::with_min_radix_len(3),
        ] {
            let mut v = u.clone();
            let r = sorter.consolidate_updates(&mut v);
            prop_assert_eq!(&v, &expected);
            prop_assert_eq!(format!("{r:?}"), format!("{expected_err:?}"));
            prop_assert_eq!(reference_consolidate_i128(&v), totals.clone());
            prop_assert_eq!(v.times.same().is_some(), u.times.same().is_some() && !v.is_empty());
            if expected_err.is_ok() {
                prop_assert_eq!(&v, &reference_consolidate(&u));
            }
        }
    }
}

/// `n` updates of one-word rows whose varying bits span exactly `span` bits (bit 0 and bit
/// `span - 1` both vary), in descending order, each twice with diffs that sum to 3.
fn spanning_rows(n: usize, span: u32) -> Updates {
    let mut u = Updates::new(1);
    let top = 1u64 << (span - 1);
    for i in (0..n as u64 / 2).rev() {
        let row = if i % 2 == 0 { top | i } else { i };
        u.push(&[row], Time::from_coords(&[1, 2]), 1);
        u.push(&[row], Time::from_coords(&[1, 2]), 2);
    }
    u
}

#[test]
fn fused_path_applies_up_to_a_key_and_index_of_64_bits() {
    // 1,024 updates: a 10-bit index. A 54-bit key fits beside it, a 55-bit one does not.
    for (span, fused) in [(54, true), (55, false)] {
        let u = spanning_rows(1024, span);
        assert_eq!(index_bits(u.len()), 10);
        let mut sorter = RadixSorter::new();
        let mut v = u.clone();
        assert!(sorter.layout.plan(&v.rows, &v.times[..], 1));
        assert_eq!(sorter.layout.chunks.len(), 1);
        assert_eq!(sorter.layout.chunks[0].1, span);
        let done = sorter.consolidate_packed(&mut v);
        assert_eq!(done.is_some(), fused, "span {span}");
        let mut v = u.clone();
        RadixSorter::new().consolidate_updates(&mut v).unwrap();
        assert_eq!(v, reference_consolidate(&u));
        assert!(v.diffs.iter().all(|&d| d == 3));
    }
}

#[test]
fn fused_path_edges() {
    // Empty and single updates (a zero diff dropped), one (row, time) throughout, and a
    // batch that cancels to nothing.
    let mut sorter = RadixSorter::with_min_radix_len(0);
    let mut u = Updates::new(2);
    sorter.consolidate_updates(&mut u).unwrap();
    assert!(u.is_empty());
    u.push(&[1, 2], Time::scalar(3), 5);
    sorter.consolidate_updates(&mut u).unwrap();
    assert_eq!(u.diffs, vec![5]);
    let mut u = Updates::new(2);
    for d in [3, -1, 4, -1] {
        u.push(&[7, 7], Time::scalar(1), d);
    }
    sorter.consolidate_updates(&mut u).unwrap();
    assert_eq!((u.rows.clone(), u.diffs.clone()), (vec![7, 7], vec![5]));
    let mut u = Updates::new(1);
    for i in (0..500u64).rev() {
        u.push(&[i % 7], Time::from_coords(&[i % 3, 1]), 1);
        u.push(&[i % 7], Time::from_coords(&[i % 3, 1]), -1);
    }
    sorter.consolidate_updates(&mut u).unwrap();
    assert!(u.is_empty() && u.rows.is_empty());
}

#[test]
fn fused_overflow_names_the_first_overflowing_update() {
    // Out of order, so the fused path runs; two (row, time) overflow, the smaller named.
    let mut u = Updates::new(1);
    let t = Time::from_coords(&[2, 0]);
    for row in [9u64, 4, 9, 4, 1] {
        u.push(&[row], t, if row == 1 { 1 } else { i64::MAX });
    }
    let (expected, expected_err) = unfused_consolidate(&u);
    let err = RadixSorter::new().consolidate_updates(&mut u).unwrap_err();
    assert!(
        matches!(&err, Error::Overflow(m) if m.contains("row [4]")),
        "{err:?}"
    );
    assert_eq!(
        format!("{:?}", Err::<(), _>(err)),
        format!("{expected_err:?}")
    );
    assert_eq!(u, expected);
    assert_eq!(u.diffs, vec![1, i64::MAX, i64::MAX, i64::MAX, i64::MAX]);
}
