//! Unit tests of batches, builders and cursors.

use super::*;
use crate::lattice::Time;
use crate::updates::Updates;
use crate::Error;
use std::sync::Arc;

fn ups(width: usize, rows: &[(&[u64], u64, i64)]) -> Updates {
    let mut u = Updates::new(width);
    for (r, t, d) in rows {
        u.push(r, Time::scalar(*t), *d);
    }
    u
}

#[test]
fn batch_from_sorted_layers() {
    let u = ups(
        2,
        &[
            (&[1, 10], 0, 1),
            (&[1, 10], 2, -1),
            (&[1, 11], 1, 2),
            (&[3, 5], 0, 1),
            (&[3, 5], 0, -1), // cancels: key 3 disappears
            (&[4, 1 << 40], 0, 1),
        ],
    );
    let b = Batch::from_sorted(&u, 1, Description::scalar(0, 3)).unwrap();
    assert_eq!(b.len(), 4);
    assert_eq!(b.n_keys(), 2);
    assert_eq!(b.n_vals(), 3);
    assert!(b.keys_narrow());
    assert!(!b.vals_narrow());
    let back = b.to_updates();
    assert_eq!(back.len(), 4);
    assert_eq!(back.row(3), &[4, 1 << 40]);
    assert_eq!(back.diffs, vec![1, -1, 2, 1]);
}

#[test]
fn batch_rejects_unsorted() {
    let u = ups(1, &[(&[2], 0, 1), (&[1], 0, 1)]);
    assert!(matches!(
        Batch::from_sorted(&u, 1, Description::empty()),
        Err(Error::Unsorted(_))
    ));
    let u = ups(1, &[(&[1], 3, 1), (&[1], 2, 1)]);
    assert!(matches!(
        Batch::from_sorted(&u, 1, Description::empty()),
        Err(Error::Unsorted(_))
    ));
}

#[test]
fn compact_single_time_batch() {
    let u = ups(2, &[(&[1, 2], 0, 1), (&[1, 3], 0, 1), (&[2, 2], 0, 1)]);
    let b = Batch::from_sorted(&u, 1, Description::least_time()).unwrap();
    assert_eq!(b.single_time(), Some(Time::minimum()));
    // 2 keys (u32) + 3 key offsets + 3 vals (u32), no times, no diffs.
    let expected = 2 * 4 + 3 * 8 + 3 * 4;
    assert!(b.heap_bytes() <= expected + 6 * std::mem::size_of::<Time>());
}

#[test]
fn cursor_merges_batches() {
    let b1 = Batch::from_sorted(
        &ups(2, &[(&[1, 1], 0, 1), (&[3, 1], 0, 1), (&[5, 1], 0, 1)]),
        1,
        Description::scalar(0, 1),
    )
    .unwrap();
    let b2 = Batch::from_sorted(
        &ups(2, &[(&[2, 1], 1, 1), (&[3, 1], 1, -1), (&[3, 2], 1, 1)]),
        1,
        Description::scalar(1, 2),
    )
    .unwrap();
    let mut c = Cursor::new(1, 1, vec![Arc::new(b1), Arc::new(b2)]);
    let mut keys = Vec::new();
    while c.key_valid() {
        keys.push(c.key()[0]);
        c.step_key();
    }
    assert_eq!(keys, vec![1, 2, 3, 5]);
    c.rewind();
    assert!(c.seek_key(&[3]));
    let mut seen = Vec::new();
    c.for_each_val_update(|v, t, d| seen.push((v[0], t.coord(0), d)));
    assert_eq!(seen, vec![(1, 0, 1), (1, 1, -1), (2, 1, 1)]);
    assert!(!c.seek_key(&[4]));
    assert_eq!(c.key(), &[5]);
    let mut h = Updates::new(1);
    assert!(!c.key_history(&[6], &mut h));
    assert!(!c.key_valid());
}

use crate::lattice::{Antichain, PartialOrder};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Accumulates `(row, time, diff)` at `probe`: row -> count (non-zero only).
fn accumulate(u: &Updates, probe: &Time) -> BTreeMap<Vec<u64>, i64> {
    let mut m = BTreeMap::new();
    for i in 0..u.len() {
        if u.times[i].less_equal(probe) {
            *m.entry(u.row(i).to_vec()).or_insert(0) += u.diffs[i];
        }
    }
    m.retain(|_, c| *c != 0);
    m
}

/// Past `u32`: a batch holding such a time keeps full times (`time_vec.rs`).
const WIDE: u64 = 1 << 32;

/// Mostly small times; some with a first coordinate past `u32` (after every small one).
fn time2() -> impl Strategy<Value = Time> {
    prop_oneof![
        6 => (0u64..5, 0u64..4).prop_map(|(a, b)| Time::from_coords(&[a, b])),
        1 => (0u64..3, 0u64..4).prop_map(|(a, b)| Time::from_coords(&[WIDE + a, b])),
    ]
}

fn updates2() -> impl Strategy<Value = Updates> {
    proptest::collection::vec((0u64..4, 0u64..3, time2(), -2i64..3), 0..40).prop_map(|v| {
        let mut u = Updates::new(2);
        for (k, val, t, d) in v {
            u.push(&[k, val], t, d);
        }
        u
    })
}

fn probes() -> Vec<Time> {
    let mut p = Vec::new();
    for a in (0..7).chain(WIDE..WIDE + 4) {
        for b in 0..6 {
            p.push(Time::from_coords(&[a, b]));
        }
    }
    p
}

proptest! {
    #[test]
    fn merge_preserves_future_accumulations(
        a in updates2(),
        b in updates2(),
        c in updates2(),
        f in proptest::collection::vec(time2(), 0..3),
        fuel in 1isize..20,
    ) {
        let frontier = Antichain::from_iter_minimal(f);
        let ba = Arc::new(Batch::from_updates(a.clone(), 1, Description::scalar(0, 1)).unwrap());
        let bb = Arc::new(Batch::from_updates(b.clone(), 1, Description::scalar(1, 2)).unwrap());
        let mut m = MergeState::new(ba.clone(), bb.clone(), &frontier);
        while !m.is_complete() {
            let mut f = fuel;
            m.work(&mut f);
            prop_assert!(f <= 0 || m.is_complete());
        }
        let merged = m.finish();
        prop_assert_eq!(merged.lower(), ba.lower());
        prop_assert_eq!(merged.upper(), bb.upper());
        prop_assert_eq!(merged.since(), &frontier);
        let out = merged.to_updates();
        // Output is consolidated and sorted.
        for i in 1..out.len() {
            prop_assert!((out.row(i - 1), out.times[i - 1]) < (out.row(i), out.times[i]));
        }
        prop_assert!(out.diffs.iter().all(|&d| d != 0));
        let mut all = a.clone();
        all.extend(&b);
        for p in probes() {
            if frontier.is_empty() || frontier.less_equal(&p) {
                prop_assert_eq!(accumulate(&out, &p), accumulate(&all, &p), "probe {:?}", p);
            }
        }
        // Merging the result (whose since is the frontier) again: bulk copies of its keys.
        let bc = Arc::new(Batch::from_updates(c.clone(), 1, Description::scalar(2, 3)).unwrap());
        let mut m = MergeState::new(Arc::new(merged), bc, &frontier);
        while !m.is_complete() {
            let mut f = fuel;
            m.work(&mut f);
        }
        let out = m.finish().to_updates();
        all.extend(&c);
        for p in probes() {
            if frontier.is_empty() || frontier.less_equal(&p) {
                prop_assert_eq!(accumulate(&out, &p), accumulate(&all, &p), "probe {:?}", p);
            }
        }
    }

    #[test]
    fn batch_roundtrip_and_cursor_history(a in updates2(), b in updates2()) {
        let ba = Arc::new(Batch::from_updates(a.clone(), 1, Description::scalar(0, 1)).unwrap());
        let bb = Arc::new(Batch::from_updates(b.clone(), 1, Description::scalar(1, 2)).unwrap());
        let mut all = a.clone();
        all.extend(&b);
        let expected = all.clone();
        let mut c = Cursor::new(1, 1, vec![ba, bb]);
        let got = c.to_updates();
        // Consolidate `expected` naively.
        let mut cons: BTreeMap<(Vec<u64>, Time), i64> = BTreeMap::new();
        for i in 0..expected.len() {
            *cons.entry((expected.row(i).to_vec(), expected.times[i])).or_insert(0) += expected.diffs[i];
        }
        cons.retain(|_, d| *d != 0);
        let mut want = Updates::new(2);
        for ((r, t), d) in cons { want.push(&r, t, d); }
        prop_assert_eq!(got, want);
    }
}

#[test]
fn spine_merges_and_compacts() {
    let mut s = Spine::new(1, 1);
    for r in 0..100u64 {
        let mut u = Updates::new(2);
        u.push(&[r % 3, 7], Time::scalar(r), 1);
        u.push(&[r % 3, 7], Time::scalar(r), 0);
        if r > 0 {
            u.push(&[(r - 1) % 3, 7], Time::scalar(r), -1);
        }
        let b = Batch::from_updates(u, 1, Description::scalar(r, r + 1)).unwrap();
        s.set_logical_compaction(&Antichain::from_elem(Time::scalar(r + 1)))
            .unwrap();
        s.insert(Arc::new(b));
        assert!(s.n_batches() <= 8, "{} batches", s.n_batches());
    }
    while s.exert(1000) {}
    assert_eq!(s.n_batches(), 1);
    let (u, kw) = s.to_updates();
    assert_eq!(kw, 1);
    assert_eq!(u.len(), 1);
    assert_eq!(u.row(0), &[99 % 3, 7]);
    assert_eq!(u.times[0], Time::scalar(100));
    assert!(s
        .set_logical_compaction(&Antichain::from_elem(Time::scalar(5)))
        .is_err());
}

#[test]
fn static_pairs_compact_and_counted() {
    let src = [3u64, 1, 3, 1, 2, 3];
    let dst = [9u64, 4, 9, 5, 0, 1];
    let b = Batch::from_static_pairs(&src, &dst).unwrap();
    assert!(b.keys_narrow() && b.vals_narrow());
    assert_eq!(b.single_time(), Some(Time::minimum()));
    assert_eq!(b.len(), 5);
    let u = b.to_updates();
    let rows: Vec<(u64, u64, i64)> = (0..u.len())
        .map(|i| (u.row(i)[0], u.row(i)[1], u.diffs[i]))
        .collect();
    assert_eq!(
        rows,
        vec![(1, 4, 1), (1, 5, 1), (2, 0, 1), (3, 1, 1), (3, 9, 2)]
    );
    // Wide ids: keys narrow, vals not.
    let b = Batch::from_static_pairs(&[1, 0], &[1 << 40, 7]).unwrap();
    assert!(b.keys_narrow() && !b.vals_narrow());
    let u = b.to_updates();
    assert_eq!(u.rows, vec![0, 7, 1, 1 << 40]);
    assert!(Batch::from_static_pairs(&[1], &[]).is_err());
    // For a trace of 2-D times the upper holds the two unit times only.
    let b = Batch::from_static_pairs_in(&[1, 0], &[2, 3], 2).unwrap();
    let units: Vec<Time> = (0..2).map(|i| Time::minimum().with_coord(i, 1)).collect();
    assert_eq!(b.upper().elements(), &units[..]);
    assert_eq!(b.to_updates().rows, vec![0, 3, 1, 2]);
    // Same as the general path.
    let mut g = Updates::new(2);
    for (s, d) in src.iter().zip(dst.iter()) {
        g.push(&[*s, *d], Time::minimum(), 1);
    }
    let general = Batch::from_updates(g, 1, Description::least_time()).unwrap();
    assert_eq!(general, Batch::from_static_pairs(&src, &dst).unwrap());
    // A spine accepts it and merges it with later updates.
    let mut s = Spine::new(1, 1);
    s.insert(Arc::new(general));
    let mut later = Updates::new(2);
    later.push(&[3, 9], Time::scalar(1), -2);
    s.insert(Arc::new(
        Batch::from_updates(later, 1, Description::scalar(1, 2)).unwrap(),
    ));
    s.set_logical_compaction(&Antichain::from_elem(Time::scalar(2)))
        .unwrap();
    while s.exert(100) {}
    let (u, _) = s.to_updates();
    assert_eq!(u.len(), 4);
    assert!(u.times.iter().all(|t| *t == Time::scalar(2)));
}

#[test]
fn static_pairs_bytes_per_edge() {
    // 200k edges over 20k nodes: ~4 bytes of val per edge plus ~12 bytes per node.
    let mut x: u64 = 99;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % 20_000
    };
    let src: Vec<u64> = (0..200_000).map(|_| next()).collect();
    let dst: Vec<u64> = (0..200_000).map(|_| next()).collect();
    let b = Batch::from_static_pairs(&src, &dst).unwrap();
    let per_edge = b.heap_bytes() as f64 / src.len() as f64;
    assert!(per_edge <= 8.0, "{per_edge} bytes per edge");
    let wide = |v: &Vec<u64>| -> Vec<u64> { v.iter().map(|&x| x | (1 << 40)).collect() };
    let b = Batch::from_static_pairs(&wide(&src), &wide(&dst)).unwrap();
    let per_edge = b.heap_bytes() as f64 / src.len() as f64;
    assert!(per_edge <= 16.0, "{per_edge} bytes per edge");
}

#[test]
fn spine_len_counts_merges_in_progress() {
    let mut s = Spine::new(1, 1);
    let batch = |lo: u64, n: u64| {
        let mut u = Updates::new(2);
        for i in 0..n {
            u.push(&[i, 0], Time::scalar(lo), 1);
        }
        Arc::new(Batch::from_updates(u, 1, Description::scalar(lo, lo + 1)).unwrap())
    };
    s.insert(batch(0, 100));
    s.insert(batch(1, 100));
    // Same size class: a merge was started but not yet worked on.
    assert_eq!(s.n_batches(), 2);
    assert_eq!(s.len(), 200);
    assert!(s.exert(10));
    // Partially merged: inputs plus the output written so far.
    assert!(s.len() > 200);
    while s.exert(10) {}
    assert_eq!(s.n_batches(), 1);
    assert_eq!(s.len(), 200);
    assert_eq!(s.batches()[0].n_vals(), 100);
}

proptest! {
    /// The compact time layers hold every update's time: one time, a few indexed (at most
    /// `MAX_INDEXED_TIMES` distinct), or each its own.
    #[test]
    fn compacted_times_hold_every_time(
        picks in proptest::collection::vec(0usize..24, 0..200),
        pool in proptest::collection::vec(time2(), 24),
    ) {
        use crate::trace::batch::{Times, MAX_INDEXED_TIMES};
        let times: Vec<Time> = picks.iter().map(|&i| pool[i]).collect();
        let mut distinct = times.clone();
        distinct.sort();
        distinct.dedup();
        let mut tv = crate::trace::time_vec::TimeVec::with_capacity(times.len());
        times.iter().for_each(|&t| tv.push(t));
        let compacted = Times::compacted(tv);
        for (u, t) in times.iter().enumerate() {
            prop_assert_eq!(compacted.get(u), *t);
        }
        match &compacted {
            Times::Single(_) => prop_assert!(distinct.len() <= 1),
            Times::Indexed { distinct: d, idx } => {
                prop_assert!(distinct.len() > 1 && distinct.len() <= MAX_INDEXED_TIMES);
                prop_assert_eq!(d.len(), distinct.len());
                prop_assert_eq!(idx.len(), times.len());
            }
            Times::Each(v) => {
                prop_assert!(distinct.len() > MAX_INDEXED_TIMES);
                prop_assert_eq!((0..v.len()).map(|u| v.get(u)).collect::<Vec<_>>(), times.clone());
            }
        }
    }
}

#[test]
fn a_batch_of_two_ticks_holds_a_byte_per_time() {
    let mut u = Updates::new(2);
    for k in 0..1000u64 {
        u.push(&[k, k + 1], Time::from_coords(&[k % 2]), 1);
    }
    let b = Batch::from_updates(u.clone(), 1, Description::scalar(0, 2)).unwrap();
    assert!(matches!(
        b.times,
        crate::trace::batch::Times::Indexed { .. }
    ));
    // Keys, vals (u32), key offsets and a byte per time: about 17 bytes per update, where
    // one time per update would add 32.
    assert!(b.heap_bytes() < 1000 * 20, "{} bytes", b.heap_bytes());
    assert_eq!(b.to_updates(), u); // pushed sorted, one update per row
}

proptest! {
    /// Seeking a cursor over several batches (keys of one or two words, at most 5 distinct
    /// words each) forward to random keys: it reports whether the key is in some batch, stops
    /// at the least key at or past it, and reads every update of that key from every batch,
    /// as the union of the batches says.
    #[test]
    fn cursor_seek_matches_union(
        kw in 1usize..3,
        batches in proptest::collection::vec(
            proptest::collection::btree_set((0u64..5, 0u64..5, 0u64..3), 0..12),
            1..5,
        ),
        targets in proptest::collection::vec((0u64..6, 0u64..6), 1..8),
    ) {
        let key_of = |a: u64, b: u64| if kw == 1 { vec![a] } else { vec![a, b] };
        let mut union = std::collections::BTreeMap::<Vec<u64>, Vec<(u64, u64)>>::new();
        let mut built = Vec::new();
        for (s, set) in batches.iter().enumerate() {
            let mut rows: Vec<(Vec<u64>, u64)> = set
                .iter()
                .map(|&(a, b, v)| {
                    let mut r = key_of(a, b);
                    r.push(v);
                    (r, s as u64)
                })
                .collect();
            rows.sort();
            rows.dedup();
            let mut u = Updates::new(kw + 1);
            for (r, t) in &rows {
                u.push(r, Time::scalar(*t), 1);
                union.entry(r[..kw].to_vec()).or_default().push((r[kw], *t));
            }
            let desc = Description::scalar(s as u64, s as u64 + 1);
            built.push(Arc::new(Batch::from_sorted(&u, kw, desc).unwrap()));
        }
        let mut c = Cursor::new(kw, 1, built);
        let mut ts: Vec<Vec<u64>> = targets.iter().map(|&(a, b)| key_of(a, b)).collect();
        ts.sort();
        for t in &ts {
            let found = c.seek_key(t);
            let next = union.range(t.clone()..).next();
            prop_assert_eq!(found, next.is_some_and(|(k, _)| k == t));
            match next {
                None => prop_assert!(!c.key_valid()),
                Some((k, want)) => {
                    prop_assert_eq!(c.key(), k.as_slice());
                    let mut got = Vec::new();
                    c.for_each_val_update(|v, tm, _| got.push((v[0], tm.coord(0))));
                    got.sort();
                    let mut want = want.clone();
                    want.sort();
                    prop_assert_eq!(got, want);
                }
            }
        }
    }
}

proptest! {
    /// Rows of one and two words compared across batches' storages (narrow or wide on
    /// either side) order as the rows' words do.
    #[test]
    fn rows_compare_as_their_words(
        width in 1usize..3,
        x in proptest::collection::vec(prop_oneof![0u64..4, Just(1u64 << 32), Just(u64::MAX)], 2),
        y in proptest::collection::vec(prop_oneof![0u64..4, Just(1u64 << 32), Just(u64::MAX)], 2),
    ) {
        use super::batch::Words;
        let (x, y) = (&x[..width], &y[..width]);
        let want = x.cmp(y);
        let mut wide_x = Words::U64(Vec::new().into());
        wide_x.push_row(&[0; 2][..width]);
        wide_x.push_row(x);
        let narrow_y = Words::narrowed(y.to_vec());
        let wide_y = Words::U64(y.to_vec().into());
        prop_assert_eq!(wide_x.cmp_rows(1, &wide_y, 0, width), want);
        prop_assert_eq!(wide_x.cmp_rows(1, &narrow_y, 0, width), want);
        prop_assert_eq!(narrow_y.cmp_rows(0, &wide_x, 1, width), want.reverse());
        let narrow_x = Words::narrowed(x.to_vec());
        prop_assert_eq!(narrow_x.cmp_rows(0, &narrow_y, 0, width), want);
    }
}
