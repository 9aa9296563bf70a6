//! A spine whose compaction frontier keeps up with its input stays bounded in size.
//!
//! One million updates, each at its own time `i`, insert and later retract records drawn
//! from 1,000 `(key, val)` pairs; they arrive in batches of 1,000 (description
//! `[i, i + 1000)`), and after each batch the compaction frontier advances to the batch's
//! upper. Through the spine's own `len()` (which counts merges in progress), the trace must
//! stay below 10,000 updates throughout, and end up holding exactly the live records.

use ddflow_core::lattice::{Antichain, Time};
use ddflow_core::trace::{Batch, Description, Spine};
use ddflow_core::Updates;
use std::collections::BTreeMap;
use std::sync::Arc;

#[test]
fn spine_stays_bounded_under_compaction() {
    const PAIRS: u64 = 1_000;
    const BATCH: u64 = 1_000;
    const TOTAL: u64 = 1_000_000;
    let mut spine = Spine::new(1, 1);
    let mut present = vec![false; PAIRS as usize];
    let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut max_len = 0;
    let mut updates = Updates::with_capacity(2, BATCH as usize);
    let mut lower = 0;
    while lower < TOTAL {
        let upper = lower + BATCH;
        updates.clear();
        for i in lower..upper {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let p = rng % PAIRS;
            let diff = if present[p as usize] { -1 } else { 1 };
            present[p as usize] = !present[p as usize];
            // (key, val) pair p: 100 keys with 10 vals each.
            updates.push(&[p / 10, p % 10 * 7], Time::scalar(i), diff);
        }
        let batch = Batch::from_updates(updates.clone(), 1, Description::scalar(lower, upper))
            .expect("valid updates");
        spine.insert(Arc::new(batch));
        max_len = max_len.max(spine.len());
        assert!(
            spine.len() < 10_000,
            "spine holds {} updates at time {upper}",
            spine.len()
        );
        spine
            .set_logical_compaction(&Antichain::from_elem(Time::scalar(upper)))
            .unwrap();
        lower = upper;
    }
    assert!(max_len < 10_000);
    assert_eq!(spine.forced_merges(), 0);

    // Accumulated at the final time, the trace holds exactly the live pairs.
    let (u, _) = spine.to_updates();
    let mut acc: BTreeMap<(u64, u64), i64> = BTreeMap::new();
    for i in 0..u.len() {
        *acc.entry((u.row(i)[0], u.row(i)[1])).or_insert(0) += u.diffs[i];
    }
    acc.retain(|_, d| *d != 0);
    let live: Vec<(u64, u64)> = (0..PAIRS)
        .filter(|&p| present[p as usize])
        .map(|p| (p / 10, p % 10 * 7))
        .collect();
    assert_eq!(acc.keys().copied().collect::<Vec<_>>(), live);
    assert!(acc.values().all(|&d| d == 1));
    eprintln!("max len {max_len}, final len {}", spine.len());
}
