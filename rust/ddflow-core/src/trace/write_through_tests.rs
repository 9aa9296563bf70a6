//! Tests of writing builders' layers through to files: a merge written through reads
//! exactly as the same merge built on the heap (random batches in every compact form,
//! random compaction frontiers), a builder whose files must grow and widen builds the same
//! batch as on the heap, a spine whose merges write through holds the same updates as one
//! on the heap with its batches in files, and the engine's rule for when to write through.

use super::tests::{batch_pair_strategy, dir, same_reads};
use super::*;
use crate::lattice::{Antichain, Time};
use crate::trace::{Builder, Description, MergeState, Spine};
use crate::updates::Updates;
use proptest::prelude::*;
use std::sync::Arc;

/// Every merge on this thread writes through to the tests' directory while it lives.
fn always() -> WriteThroughScope {
    WriteThroughScope::new(Some(Arc::new(dir())), 0, 0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_merge_written_through_reads_as_the_heap_merge(
        (a, b) in batch_pair_strategy(),
        since in 0u64..45,
        fuel in 1isize..300,
    ) {
        let frontier = Antichain::from_elem(Time::scalar(since));
        let (a, b) = (Arc::new(a), Arc::new(b));
        let heap = MergeState::new(a.clone(), b.clone(), &frontier);
        prop_assert!(!heap.writes_through());
        let mut file = {
            let _scope = always();
            MergeState::new(a, b, &frontier)
        };
        prop_assert!(file.writes_through());
        // In steps, as a spine works on it.
        while !file.is_complete() {
            let mut f = fuel;
            file.work(&mut f);
        }
        let (heap, file) = (heap.finish(), file.finish());
        same_reads(&heap, &file)?;
        if !file.is_empty() {
            prop_assert!(file.is_spilled());
            prop_assert!(file.spilled_bytes() > 0);
        }
        // The heap keeps only the small parts (the description, a few distinct times).
        prop_assert!(file.heap_bytes() <= heap.heap_bytes().min(1024));
    }

    #[test]
    fn a_builder_written_through_builds_the_heap_batch(
        raw in proptest::collection::vec((0u64..30, 0u64..8, 0u64..6, -2i64..3, any::<bool>()), 0..300),
        narrow in any::<bool>(),
    ) {
        // Sorted (key, val, time) with repeats summed: what the push protocol expects;
        // zero sums and big words (which widen narrow layers) included.
        let mut rows: Vec<(u64, u64, u64, i64)> = raw
            .iter()
            .map(|&(k, v, t, d, big)| (if big { k | (1 << 40) } else { k }, v, t, d))
            .collect();
        rows.sort_unstable();
        rows.dedup_by(|x, y| {
            let same = (x.0, x.1, x.2) == (y.0, y.1, y.2);
            if same {
                y.3 += x.3;
            }
            same
        });
        let build = |dir: Option<Arc<PathBuf>>| {
            // Room for one key, val and update: the files must grow.
            let mut bl = Builder::with_layout_in(dir, 1, 1, narrow, narrow, 1, 1, 1);
            let mut i = 0;
            while i < rows.len() {
                let k = rows[i].0;
                bl.push_key(&[k]);
                while i < rows.len() && rows[i].0 == k {
                    let v = rows[i].1;
                    bl.push_val(&[v]);
                    while i < rows.len() && (rows[i].0, rows[i].1) == (k, v) {
                        bl.push_update(Time::scalar(rows[i].2), rows[i].3);
                        i += 1;
                    }
                    bl.seal_val();
                }
                bl.seal_key();
            }
            bl.done(Description::least_time())
        };
        let heap = build(None);
        let file = build(Some(Arc::new(dir())));
        same_reads(&heap, &file)?;
        if !heap.is_empty() {
            prop_assert!(file.is_spilled());
        }
    }

    #[test]
    fn a_spine_whose_merges_write_through_holds_the_same_updates(
        steps in proptest::collection::vec(
            (proptest::collection::vec((0u64..8, 0u64..4, -2i64..3), 0..60), any::<bool>()),
            1..12,
        ),
    ) {
        let (mut plain, mut file) = (Spine::new(1, 1), Spine::new(1, 1));
        for (r, (raw, compact)) in steps.into_iter().enumerate() {
            let r = r as u64;
            let mut u = Updates::new(2);
            for (k, v, d) in raw {
                u.push(&[k, v], Time::scalar(r), d);
            }
            let b = Arc::new(Batch::from_updates(u, 1, Description::scalar(r, r + 1)).unwrap());
            plain.insert(b.clone());
            let _scope = always();
            file.insert(b);
            if compact {
                let f = Antichain::from_elem(Time::scalar(r.saturating_sub(1)));
                plain.set_logical_compaction(&f).unwrap();
                file.set_logical_compaction(&f).unwrap();
            }
            prop_assert_eq!(plain.to_updates(), file.to_updates());
        }
        while plain.exert(1000) {}
        {
            let _scope = always();
            while file.exert(1000) {}
        }
        prop_assert_eq!(plain.to_updates(), file.to_updates());
        prop_assert_eq!(plain.n_batches(), file.n_batches());
        prop_assert!(file.heap_bytes() <= plain.heap_bytes());
    }
}

#[test]
fn merges_write_through_only_large_outputs_past_the_threshold() {
    assert_eq!(write_through_dir(1 << 30), None, "no scope: the heap");
    let d = Arc::new(dir());
    {
        let _scope = WriteThroughScope::new(Some(d.clone()), usize::MAX, 0);
        assert_eq!(write_through_dir(1 << 30), None, "under the threshold");
    }
    {
        let _scope = WriteThroughScope::new(Some(d.clone()), 0, 1 << 20);
        assert_eq!(write_through_dir(1 << 19), None, "too small");
        assert_eq!(write_through_dir(1 << 20), Some(d.clone()));
        {
            let _inner = WriteThroughScope::new(None, 0, 0);
            assert_eq!(
                write_through_dir(1 << 20),
                None,
                "an inner scope without a directory"
            );
        }
        assert_eq!(write_through_dir(1 << 20), Some(d.clone()), "restored");
    }
    assert_eq!(write_through_dir(1 << 30), None, "restored");
}

#[test]
fn a_large_merge_written_through_leaves_the_heap_alone() {
    // Two 200k-edge batches at distinct times: on the heap the merge's builder would hold
    // several MB of layers; written through, the live heap barely moves.
    let pairs = |t: u64| {
        let mut u = Updates::new(2);
        for i in 0..200_000u64 {
            u.push(&[i % 5_000, i], Time::scalar(t), 1);
        }
        Batch::from_updates(u, 1, Description::scalar(t, t + 1)).unwrap()
    };
    let (a, b) = (Arc::new(pairs(0)), Arc::new(pairs(1)));
    let frontier = Antichain::from_elem(Time::scalar(0));
    let heap = MergeState::new(a.clone(), b.clone(), &frontier).finish();
    let file = {
        let _scope = always();
        MergeState::new(a, b, &frontier)
    };
    assert_eq!(file.heap_bytes(), 0);
    let file = file.finish();
    assert_eq!(heap, file);
    assert!(file.is_spilled());
    assert!(file.heap_bytes() < 1024, "{} heap bytes", file.heap_bytes());
    assert!(file.spilled_bytes() >= heap.heap_bytes() / 2);
}

#[test]
fn a_spine_merging_under_the_scope_keeps_its_batches_in_files() {
    let mut s = Spine::new(1, 1);
    let mut plain = Spine::new(1, 1);
    let _scope = always();
    for r in 0..4u64 {
        let mut u = Updates::new(2);
        for i in 0..20_000u64 {
            u.push(&[i % 1_000, i * 4 + r], Time::scalar(r), 1);
        }
        let b = Arc::new(Batch::from_updates(u, 1, Description::scalar(r, r + 1)).unwrap());
        s.insert(b.clone());
        plain.insert(b);
    }
    while s.exert(usize::MAX) {}
    assert_eq!(s.n_batches(), 1);
    assert!(s.spilled_bytes() > 0);
    assert!(s.heap_bytes() < 1024, "{} heap bytes", s.heap_bytes());
    drop(_scope);
    while plain.exert(usize::MAX) {}
    assert_eq!(s.to_updates(), plain.to_updates());
    assert!(plain.heap_bytes() > 100_000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn a_cursor_reads_on_from_spilled_copies_swapped_in(
        (a, b) in batch_pair_strategy(),
        cut in 0u64..25,
    ) {
        let (kw, vw) = (a.key_width(), a.val_width());
        let batches = vec![Arc::new(a), Arc::new(b)];
        let mut plain = crate::trace::Cursor::new(kw, vw, batches.clone());
        let mut swapped = crate::trace::Cursor::new(kw, vw, batches.clone());
        let key = vec![cut; kw];
        plain.seek_key(&key);
        swapped.seek_key(&key);
        let swaps: crate::trace::spine::Swaps = batches
            .iter()
            .map(|b| (b.clone(), Arc::new(b.spill(&dir()).unwrap())))
            .collect();
        swapped.swap_batches(&swaps);
        prop_assert!(swapped.batches().iter().all(|b| b.is_spilled() || b.is_empty()));
        for (old, _) in swaps.iter().filter(|(old, _)| !old.is_empty()) {
            // Held by `batches`, `plain` and `swaps` only: the swapped cursor let go.
            prop_assert_eq!(Arc::strong_count(old), 3);
        }
        // Both read on alike from the cut, after a further seek.
        let next = vec![cut + 3; kw];
        prop_assert_eq!(plain.seek_key(&next), swapped.seek_key(&next));
        prop_assert_eq!(plain.to_updates(), swapped.to_updates());
    }
}
