//! Tests of [`split_by`]: against a filter of the batch per bucket.

use super::*;
use proptest::prelude::*;

/// How a test batch's times are made.
#[derive(Clone, Copy, Debug)]
enum Times {
    /// One time, held once.
    One,
    /// One time, written out.
    OneWrittenOut,
    /// A few times at random.
    Random,
    /// A time per bucket of 3 parts (each part one time if split in 3).
    PerBucketOf3,
}

/// `n` updates of `width` words from `seed`, their times made as `times` says.
fn batch(width: usize, n: usize, seed: u64, times: Times) -> Updates {
    let mut upd = Updates::new(width);
    let mut x = seed | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for _ in 0..n {
        let row: Vec<u64> = (0..width).map(|_| next() % 50).collect();
        let time = match times {
            Times::One | Times::OneWrittenOut => Time::from_coords(&[3]),
            Times::Random => Time::from_coords(&[next() % 4]),
            Times::PerBucketOf3 => Time::from_coords(&[bucket_of(&row, 3) as u64]),
        };
        upd.push(&row, time, next() as i64 % 5);
    }
    if let Times::OneWrittenOut = times {
        upd.times.make_mut();
    }
    upd
}

/// The updates of `upd` as tuples, in order.
fn tuples(upd: &Updates) -> Vec<(Vec<u64>, Time, i64)> {
    (0..upd.len())
        .map(|i| (upd.row(i).to_vec(), upd.times[i], upd.diffs[i]))
        .collect()
}

/// The bucket of a row: a function of its words (bucket 0 for no words).
fn bucket_of(row: &[u64], parts: usize) -> usize {
    (row.iter()
        .fold(7u64, |h, &w| h.wrapping_mul(31).wrapping_add(w))
        % parts as u64) as usize
}

/// Checks `split_by_steps` against a filter of the batch per bucket: same updates, same
/// order, each part at its size, its time held once if all its updates share one.
fn check(upd: Updates, parts: usize, step_bytes: usize) {
    let all = tuples(&upd);
    let width = upd.width;
    let out = split_by_steps(upd, parts, |row| bucket_of(row, parts), step_bytes);
    assert_eq!(out.len(), parts);
    for (b, part) in out.iter().enumerate() {
        let expected: Vec<_> = all
            .iter()
            .filter(|(row, _, _)| bucket_of(row, parts) == b)
            .cloned()
            .collect();
        assert_eq!(part.width, width);
        assert_eq!(tuples(part), expected, "part {b}");
        assert_eq!(part.rows.len(), part.len() * width);
        assert_eq!(part.diffs.len(), part.len());
        if !part.is_empty() && out.iter().filter(|p| !p.is_empty()).count() > 1 {
            // A copied part is allocated at its size.
            assert_eq!(part.rows.capacity(), part.rows.len());
            assert_eq!(part.diffs.capacity(), part.diffs.len());
        }
        let one_time = expected.iter().all(|(_, t, _)| *t == expected[0].1);
        if !part.is_empty() {
            assert_eq!(part.times.same().is_some(), one_time, "part {b}'s times");
        }
    }
}

proptest! {
    #[test]
    fn matches_a_filter_per_bucket(
        width in 0usize..4,
        n in 0usize..400,
        seed in any::<u64>(),
        parts in 1usize..6,
        times in prop_oneof![
            Just(Times::One),
            Just(Times::OneWrittenOut),
            Just(Times::Random),
            Just(Times::PerBucketOf3),
        ],
        step_bytes in 1usize..2000,
    ) {
        check(batch(width, n, seed, times), parts, step_bytes);
    }
}

#[test]
fn a_large_batch_in_the_default_steps() {
    // Several steps of `RELEASE_STEP_BYTES` (24 bytes per update at one time).
    let n = 3 * RELEASE_STEP_BYTES / 24 + 123;
    check(batch(2, n, 11, Times::One), 3, RELEASE_STEP_BYTES);
}

#[test]
fn one_bucket_returns_the_batch_itself() {
    let upd = batch(2, 1000, 5, Times::Random);
    let rows = upd.rows.as_ptr();
    let out = split_by(upd, 4, |_| 2);
    assert_eq!(out[2].len(), 1000);
    assert_eq!(out[2].rows.as_ptr(), rows, "copied");
    assert!([0, 1, 3].iter().all(|&b| out[b].is_empty()));
}

#[test]
fn one_bucket_holds_a_written_out_time_once() {
    let out = split_by(batch(2, 1000, 5, Times::OneWrittenOut), 2, |_| 1);
    assert_eq!(out[1].times.same(), Some(&Time::from_coords(&[3])));
    assert_eq!(out[1].len(), 1000);
}

#[test]
fn an_empty_batch_gives_empty_parts() {
    let out = split_by(Updates::new(3), 2, |_| 1);
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|p| p.is_empty() && p.width == 3));
}

#[test]
#[should_panic]
fn a_bucket_that_changes_is_caught() {
    let upd = batch(1, 100, 3, Times::One);
    let mut calls = 0usize;
    // Counted all in bucket 0 but one; copied all into bucket 0.
    let _ = split_by(upd, 2, |_| {
        calls += 1;
        usize::from(calls == 1)
    });
}
