//! Merges against the naive reference: the union of both inputs with every time advanced
//! by the frontier (`advance_by`, the lattice's own definition), sorted and consolidated.
//! Random batches cover one- and two-word keys and vals, times of one to three coordinates
//! (some past 32 bits, where the packed kernel must not be used), every stored form of
//! times and diffs, and diffs whose totals leave `i64`.

use super::*;
use crate::lattice::Lattice;
use crate::updates::Updates;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// One random batch's updates: `(row, time coordinates, diff)`.
type Raw = Vec<(Vec<u64>, Vec<u64>, i64)>;

/// A word: small mostly, sometimes past 32 bits (stored wide).
fn word() -> impl Strategy<Value = u64> {
    prop_oneof![8 => 0u64..4, 1 => Just(1u64 << 33)]
}

/// A coordinate below `spread`, or (rarely, if `wide`) past 32 bits.
fn coord(spread: u64, wide: bool) -> BoxedStrategy<u64> {
    if wide {
        prop_oneof![12 => 0..spread, 1 => (0u64..2).prop_map(|c| (1 << 32) + c)].boxed()
    } else {
        (0..spread).boxed()
    }
}

/// Diffs: all ones (implicit), small of either sign, or some near the ends of `i64`.
fn diff(mode: u8) -> BoxedStrategy<i64> {
    match mode {
        0 => Just(1i64).boxed(),
        1 => prop_oneof![4 => Just(1i64), 1 => -2i64..3].boxed(),
        _ => prop_oneof![6 => -2i64..3, 1 => Just(i64::MAX), 1 => Just(i64::MIN + 1)].boxed(),
    }
}

/// `(width, dims, raw updates)` of one batch. A spread of 1 gives a batch of one time,
/// small spreads a few indexed times, larger ones a time per update.
fn raw(width: usize, dims: usize) -> impl Strategy<Value = Raw> {
    (
        prop_oneof![Just(1u64), Just(3), Just(9)],
        any::<bool>(),
        0u8..3,
    )
        .prop_flat_map(move |(spread, wide, mode)| {
            proptest::collection::vec(
                (
                    proptest::collection::vec(word(), width),
                    proptest::collection::vec(coord(spread, wide), dims),
                    diff(mode),
                ),
                0..60,
            )
            .prop_map(fit)
        })
}

/// `raw` consolidated per `(row, time)`, dropping totals outside `i64` (a batch is built
/// from updates whose totals fit; merges may still sum two batches past `i64`).
fn fit(raw: Raw) -> Raw {
    let mut m: BTreeMap<(Vec<u64>, Vec<u64>), i128> = BTreeMap::new();
    for (row, t, d) in raw {
        *m.entry((row, t)).or_insert(0) += d as i128;
    }
    m.into_iter()
        .filter_map(|((row, t), d)| Some((row, t, i64::try_from(d).ok()?)))
        .collect()
}

fn to_updates(width: usize, raw: &Raw) -> Updates {
    let mut u = Updates::new(width);
    for (row, t, d) in raw {
        u.push(row, Time::from_coords(t), *d);
    }
    u
}

/// The reference: `(row, advanced time) -> exact total`, zero totals dropped.
fn reference(all: &[&Raw], frontier: &Antichain<Time>) -> BTreeMap<(Vec<u64>, Time), i128> {
    let mut m = BTreeMap::new();
    for raw in all {
        for (row, t, d) in raw.iter() {
            let t = Time::from_coords(t).advance_by(frontier.elements());
            *m.entry((row.clone(), t)).or_insert(0i128) += *d as i128;
        }
    }
    m.retain(|_, d| *d != 0);
    m
}

/// Checks that `out` is sorted and consolidated (a `(row, time)` repeats only to carry a
/// total outside `i64`, no zero diff) and returns its exact totals.
fn totals(out: &Updates) -> Result<BTreeMap<(Vec<u64>, Time), i128>, TestCaseError> {
    let mut m: BTreeMap<(Vec<u64>, Time), i128> = BTreeMap::new();
    for i in 0..out.len() {
        prop_assert!(out.diffs[i] != 0, "zero diff at {}", i);
        if i > 0 {
            prop_assert!(
                (out.row(i - 1), out.times[i - 1]) <= (out.row(i), out.times[i]),
                "unsorted at {}",
                i
            );
        }
        *m.entry((out.row(i).to_vec(), out.times[i])).or_insert(0) += out.diffs[i] as i128;
    }
    for i in 1..out.len() {
        if (out.row(i - 1), out.times[i - 1]) == (out.row(i), out.times[i]) {
            let total = m[&(out.row(i).to_vec(), out.times[i])];
            prop_assert!(i64::try_from(total).is_err(), "unconsolidated at {}", i);
        }
    }
    Ok(m)
}

fn merge(a: Arc<Batch>, b: Arc<Batch>, frontier: &Antichain<Time>, fuel: isize) -> Batch {
    let mut m = MergeState::new(a, b, frontier);
    while !m.is_complete() {
        let mut f = fuel;
        m.work(&mut f);
    }
    m.finish()
}

fn case() -> impl Strategy<Value = (usize, usize, Raw, Raw, Raw, Vec<Vec<u64>>, isize)> {
    (1usize..3, 1usize..3, 1usize..4).prop_flat_map(|(kw, vw, dims)| {
        (
            Just(kw),
            Just(kw + vw),
            raw(kw + vw, dims),
            raw(kw + vw, dims),
            raw(kw + vw, dims),
            proptest::collection::vec(proptest::collection::vec(coord(4, true), dims), 0..3),
            1isize..40,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn merge_is_the_advanced_consolidated_union(
        (kw, width, a, b, c, f, fuel) in case()
    ) {
        let frontier = Antichain::from_iter_minimal(f.iter().map(|t| Time::from_coords(t)));
        let batch = |raw: &Raw, lo: u64| {
            let desc = Description::scalar(lo, lo + 1);
            Arc::new(Batch::from_updates(to_updates(width, raw), kw, desc).unwrap())
        };
        let (ba, bb) = (batch(&a, 0), batch(&b, 1));
        let merged = merge(ba, bb, &frontier, fuel);
        prop_assert_eq!(merged.since(), &frontier);
        prop_assert_eq!(totals(&merged.to_updates())?, reference(&[&a, &b], &frontier));
        // Merging the result (whose since is the frontier, so runs copy in bulk) again.
        let out = merge(Arc::new(merged), batch(&c, 2), &frontier, fuel);
        prop_assert_eq!(totals(&out.to_updates())?, reference(&[&a, &b, &c], &frontier));
    }
}

/// A directory for spilled test batches.
fn spill_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join("ddflow-merge-all-tests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Merges `batches` (oldest first) pairwise from the newest, as the spine's idle merges do
/// (a lone batch with an empty one, to compact it).
fn merge_chain(batches: &[Arc<Batch>], frontier: &Antichain<Time>) -> Batch {
    let newest = &batches[batches.len() - 1];
    let mut acc = if batches.len() == 1 {
        let desc = Description::new(
            newest.upper().clone(),
            newest.upper().clone(),
            frontier.clone(),
        );
        let empty = Batch::empty(newest.key_width(), newest.val_width(), desc);
        return merge(newest.clone(), Arc::new(empty), frontier, isize::MAX);
    } else {
        (**newest).clone()
    };
    for b in batches[..batches.len() - 1].iter().rev() {
        acc = merge(b.clone(), Arc::new(acc), frontier, isize::MAX);
    }
    acc
}

/// `(key width, row width, batches' updates, frontier, which batches to spill, whether the
/// first input is already compacted)`.
type ManyCase = (usize, usize, Vec<Raw>, Vec<Vec<u64>>, Vec<bool>, bool);

fn many_case() -> impl Strategy<Value = ManyCase> {
    (1usize..3, 1usize..3, 1usize..4).prop_flat_map(|(kw, vw, dims)| {
        (
            Just(kw),
            Just(kw + vw),
            proptest::collection::vec(raw(kw + vw, dims), 1..6),
            proptest::collection::vec(proptest::collection::vec(coord(4, true), dims), 0..3),
            proptest::collection::vec(any::<bool>(), 6),
            any::<bool>(),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// One k-way pass gives the advanced consolidated union of its inputs, as the pairwise
    /// chain does, whatever their forms: spilled inputs (`spill`), and a first input already
    /// compacted to the frontier (`compacted`: its since is the frontier, so runs of it are
    /// copied without advancing).
    #[test]
    fn merge_all_is_the_pairwise_chain(
        (kw, width, raws, f, spill, compacted) in many_case()
    ) {
        let frontier = Antichain::from_iter_minimal(f.iter().map(|t| Time::from_coords(t)));
        let batch = |raw: &Raw, lo: u64| {
            let desc = Description::scalar(lo, lo + 1);
            Arc::new(Batch::from_updates(to_updates(width, raw), kw, desc).unwrap())
        };
        let mut batches: Vec<Arc<Batch>> =
            raws.iter().enumerate().map(|(i, r)| batch(r, i as u64)).collect();
        if compacted && batches.len() > 1 {
            let first = merge(batches[0].clone(), batches[1].clone(), &frontier, isize::MAX);
            batches.splice(0..2, [Arc::new(first)]);
        }
        for (b, &s) in batches.iter_mut().zip(&spill) {
            if s {
                *b = Arc::new(b.spill(&spill_dir()).unwrap());
            }
        }
        let all = super::super::merge_all::merge_all(&batches, &frontier);
        prop_assert_eq!(all.since(), &frontier);
        prop_assert_eq!(all.lower(), batches[0].lower());
        prop_assert_eq!(all.upper(), batches[batches.len() - 1].upper());
        let refs: Vec<&Raw> = raws.iter().collect();
        let expect = reference(&refs, &frontier);
        prop_assert_eq!(totals(&all.to_updates())?, expect.clone());
        let chain = merge_chain(&batches, &frontier);
        prop_assert_eq!(totals(&chain.to_updates())?, expect);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// `Spine::merge_all` leaves one batch holding what the spine's idle merges
    /// (`Spine::exert` with unbounded fuel) leave, with merges in progress and spilled
    /// batches among the inputs.
    #[test]
    fn spine_merge_all_is_exert(
        (kw, width, raws, f, spill, _) in many_case(),
        fuel in 0usize..2,
    ) {
        let frontier = Antichain::from_iter_minimal(f.iter().map(|t| Time::from_coords(t)));
        let build = || {
            let mut s = crate::trace::Spine::new(kw, width - kw);
            for (i, r) in raws.iter().enumerate() {
                let desc = Description::scalar(i as u64, i as u64 + 1);
                let b = Batch::from_updates(to_updates(width, r), kw, desc).unwrap();
                s.insert(Arc::new(b));
                if spill[i] {
                    s.spill(&spill_dir(), usize::MAX, 0).unwrap();
                }
            }
            // Some merges left in progress (no fuel) or advanced a little.
            s.exert(fuel);
            s.set_logical_compaction(&frontier).unwrap();
            s
        };
        let (mut all, mut idle) = (build(), build());
        all.merge_all();
        idle.exert(usize::MAX);
        prop_assert!(all.n_batches() <= 1);
        let refs: Vec<&Raw> = raws.iter().collect();
        let expect = reference(&refs, &frontier);
        prop_assert_eq!(totals(&all.to_updates().0)?, expect.clone());
        prop_assert_eq!(totals(&idle.to_updates().0)?, expect);
        for b in all.batches() {
            prop_assert_eq!(b.since(), &frontier);
        }
    }
}
