//! Spines, cursors and trace handles against a naive model: a list of `(key, val, time,
//! diff)` accumulated at probe times in the future of the compaction frontier.

use ddflow_core::lattice::{Antichain, PartialOrder, Time};
use ddflow_core::trace::{Batch, Cursor, Description, Spine, TraceHandle};
use ddflow_core::Updates;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

type Model = Vec<(u64, u64, Time, i64)>;

fn acc_model(m: &Model, p: &Time) -> BTreeMap<(u64, u64), i64> {
    let mut out = BTreeMap::new();
    for &(k, v, t, d) in m {
        if t.less_equal(p) {
            *out.entry((k, v)).or_insert(0) += d;
        }
    }
    out.retain(|_, d| *d != 0);
    out
}

fn acc_updates(u: &Updates, p: &Time) -> BTreeMap<(u64, u64), i64> {
    let mut out = BTreeMap::new();
    for i in 0..u.len() {
        if u.times[i].less_equal(p) {
            *out.entry((u.row(i)[0], u.row(i)[1])).or_insert(0) += u.diffs[i];
        }
    }
    out.retain(|_, d| *d != 0);
    out
}

fn probes(rounds: u64) -> Vec<Time> {
    let mut p = Vec::new();
    for a in 0..rounds + 2 {
        for b in 0..6 {
            p.push(Time::from_coords(&[a, b]));
        }
    }
    p
}

/// Checks the spine's contents against the model at every probe in the future of
/// `frontier`, through `to_updates` and through cursor seeks.
fn check(
    spine_updates: &Updates,
    cursor: &mut Cursor,
    model: &Model,
    frontier: &Antichain<Time>,
    rounds: u64,
) {
    // Sorted and consolidated.
    for i in 1..spine_updates.len() {
        assert!(
            (spine_updates.row(i - 1), spine_updates.times[i - 1])
                < (spine_updates.row(i), spine_updates.times[i])
        );
    }
    for p in probes(rounds) {
        if frontier.less_equal(&p) {
            assert_eq!(
                acc_updates(spine_updates, &p),
                acc_model(model, &p),
                "probe {p:?}"
            );
        }
    }
    // Per-key histories through the cursor.
    let mut h = Updates::new(1);
    for key in 0..8u64 {
        h.clear();
        let found = cursor.key_history(&[key], &mut h);
        let mut expect = Updates::new(2);
        let mut got = Updates::new(2);
        for i in 0..spine_updates.len() {
            if spine_updates.row(i)[0] == key {
                expect.push(
                    spine_updates.row(i),
                    spine_updates.times[i],
                    spine_updates.diffs[i],
                );
            }
        }
        for i in 0..h.len() {
            got.push(&[key, h.row(i)[0]], h.times[i], h.diffs[i]);
        }
        // A key may be present in batches whose updates cancel out: `found` then holds
        // while its consolidated history is empty.
        if !expect.is_empty() {
            assert!(found, "key {key} missing");
        }
        assert_eq!(got, expect);
    }
}

#[derive(Clone, Debug)]
enum Step {
    /// A batch of (key, val, iteration coordinate, diff) at the next round.
    Batch(Vec<(u64, u64, u64, i64)>),
    /// A new compaction frontier (applied if in the future of the current one).
    Frontier(Vec<(u64, u64)>),
    /// Idle work.
    Exert(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => proptest::collection::vec((0u64..7, 0u64..3, 0u64..4, -2i64..3), 0..30).prop_map(Step::Batch),
        2 => proptest::collection::vec((0u64..14, 0u64..5), 1..3).prop_map(Step::Frontier),
        1 => (1usize..50).prop_map(Step::Exert),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn spine_matches_model(steps in proptest::collection::vec(step(), 1..40), effort in 1usize..5) {
        let mut spine = Spine::new(1, 1);
        spine.set_effort(effort);
        let mut model: Model = Vec::new();
        let mut round = 0u64;
        for s in steps {
            match s {
                Step::Batch(ups) => {
                    let mut u = Updates::new(2);
                    for (k, v, it, d) in ups {
                        let t = Time::from_coords(&[round, it]);
                        u.push(&[k, v], t, d);
                        model.push((k, v, t, d));
                    }
                    let desc = Description::interval(
                        Time::from_coords(&[round]),
                        Time::from_coords(&[round + 1]),
                    );
                    spine.insert(Arc::new(Batch::from_updates(u, 1, desc).unwrap()));
                    round += 1;
                }
                Step::Frontier(f) => {
                    let f = Antichain::from_iter_minimal(f.into_iter().map(|(a, b)| Time::from_coords(&[a, b])));
                    if spine.logical_compaction().dominates(&f) {
                        spine.set_logical_compaction(&f).unwrap();
                    } else {
                        prop_assert!(spine.set_logical_compaction(&f).is_err());
                    }
                }
                Step::Exert(fuel) => { spine.exert(fuel); }
            }
            let (u, kw) = spine.to_updates();
            prop_assert_eq!(kw, 1);
            prop_assert!(u.len() <= spine.len());
            check(&u, &mut spine.cursor(), &model, spine.logical_compaction(), round);
        }
        while spine.exert(64) {}
        prop_assert!(spine.n_batches() <= 1);
        let (u, _) = spine.to_updates();
        check(&u, &mut spine.cursor(), &model, spine.logical_compaction(), round);
    }
}

#[test]
fn spine_many_sizes_1d() {
    // Batches of varied sizes exercise roll-ups, carries and descents between levels.
    let mut spine = Spine::new(1, 1);
    let mut model: Model = Vec::new();
    let mut rng: u64 = 12345;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for r in 0..200u64 {
        let n = match next() % 4 {
            0 => next() % 3,
            1 => next() % 40,
            2 => next() % 300,
            _ => next() % 2000,
        };
        let mut u = Updates::new(2);
        for _ in 0..n {
            let (k, v, d) = (next() % 50, next() % 5, (next() % 3) as i64 - 1);
            u.push(&[k, v], Time::scalar(r), d);
            model.push((k, v, Time::scalar(r), d));
        }
        spine.insert(Arc::new(
            Batch::from_updates(u, 1, Description::scalar(r, r + 1)).unwrap(),
        ));
        if r % 7 == 3 {
            spine
                .set_logical_compaction(&Antichain::from_elem(Time::scalar(r.saturating_sub(5))))
                .unwrap();
        }
        assert!(spine.n_batches() <= 2 * 16, "{} batches", spine.n_batches());
    }
    let f = spine.logical_compaction().clone();
    let (u, _) = spine.to_updates();
    for p in (0..205).map(Time::scalar) {
        if f.less_equal(&p) {
            assert_eq!(acc_updates(&u, &p), acc_model(&model, &p));
        }
    }
    assert_eq!(spine.forced_merges(), 0);
}

#[test]
fn handles_hold_back_compaction() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TraceHandle>();

    let h1 = TraceHandle::new(Spine::new(1, 1));
    let h2 = h1.clone();
    assert_eq!(h1.readers(), 2);
    let mut model: Model = Vec::new();
    for r in 0..50u64 {
        let mut u = Updates::new(2);
        u.push(&[r % 4, r % 3], Time::scalar(r), 1);
        u.push(&[(r + 1) % 4, r % 3], Time::scalar(r), -1);
        model.push((r % 4, r % 3, Time::scalar(r), 1));
        model.push(((r + 1) % 4, r % 3, Time::scalar(r), -1));
        h1.insert(Arc::new(
            Batch::from_updates(u, 1, Description::scalar(r, r + 1)).unwrap(),
        ));
        h1.set_logical_compaction(&Antichain::from_elem(Time::scalar(r + 1)))
            .unwrap();
        if r == 10 {
            h2.set_logical_compaction(&Antichain::from_elem(Time::scalar(10)))
                .unwrap();
        }
    }
    // h2 holds the trace at 10: every time from 10 on is still distinguishable.
    assert_eq!(
        h1.trace_compaction(),
        Antichain::from_elem(Time::scalar(10))
    );
    while h1.exert(1000) {}
    let (u, _) = h2.to_updates();
    for p in 10..55 {
        assert_eq!(
            acc_updates(&u, &Time::scalar(p)),
            acc_model(&model, &Time::scalar(p))
        );
    }
    assert!(u.times.iter().any(|t| t.coord(0) > 10));
    assert!(h2
        .set_logical_compaction(&Antichain::from_elem(Time::scalar(3)))
        .is_err());

    // A clone holds h2's frontier; dropping both releases the hold.
    let h3 = h2.clone();
    assert_eq!(
        h3.logical_compaction(),
        Antichain::from_elem(Time::scalar(10))
    );
    drop(h2);
    assert_eq!(
        h1.trace_compaction(),
        Antichain::from_elem(Time::scalar(10))
    );
    drop(h3);
    assert_eq!(h1.readers(), 1);
    assert_eq!(
        h1.trace_compaction(),
        Antichain::from_elem(Time::scalar(50))
    );
    while h1.exert(1000) {}
    let (u, _) = h1.to_updates();
    assert!(u.times.iter().all(|t| *t == Time::scalar(50)));
    assert_eq!(
        acc_updates(&u, &Time::scalar(50)),
        acc_model(&model, &Time::scalar(50))
    );

    // Handles work across threads.
    let h4 = h1.clone();
    let t = std::thread::spawn(move || h4.len());
    assert_eq!(t.join().unwrap(), h1.len());
}
