//! Tests of `reduce_rows`: a reduce whose keys take the row sweep emits exactly the output
//! and error updates of the general path, over many activations with 2-D times, partial
//! frontiers (pending times), retractions, multiplicities, compaction, and sums and counts
//! that leave int64 (the row sweep then leaves the key to the general path).

use crate::encoding::encode_i64;
use crate::engine::operators::reduce::{long_rows, ReduceState};
use crate::engine::operators::reduce_test_activation::{agg_of, run_steps, step, Emitted, Step};
use crate::engine::plan::Agg;
use crate::lattice::Time;
use proptest::prelude::*;

/// Vals: small ones (repeated, so vals have multiplicities), ones whose sums leave int64, and
/// null (`i64::MIN`).
const VALS: [i64; 8] = [-3, 0, 2, 5, 9, i64::MAX / 2 + 7, i64::MIN / 2 - 9, i64::MIN];
const DIFFS: [i64; 5] = [-2, -1, 1, 2, 3];

/// The aggregates the tests draw from.
const AGGS: [&str; 7] = [
    r#"{"kind":"count"}"#,
    r#"{"kind":"sum","column":0}"#,
    r#"{"kind":"min","column":0}"#,
    r#"{"kind":"distinct"}"#,
    r#"{"kind":"top_k","k":2,"column":0}"#,
    r#"{"kind":"max","column":0}"#,
    r#"{"kind":"group","aggs":[{"kind":"count"},{"kind":"sum","column":0},{"kind":"max","column":0},{"kind":"count_distinct","column":0}]}"#,
];

/// An update `(key, val, x offset, y, diff)` at or after the input frontier (the first
/// coordinate offset taken modulo the step's `advance`).
type Up = (u64, i64, u64, u64, i64);

fn run(agg: &Agg, steps: &[Step<Up>], rows_min: usize) -> Emitted {
    let mut st = ReduceState::new(1);
    st.set_rows_min(rows_min);
    let at = |x| Time::from_coords(&[x, 0]);
    run_steps(&mut st, agg, steps, at, |b, s, upper, &(k, v, dx, y, d)| {
        let t = Time::from_coords(&[upper + dx % s.advance, y]);
        b.push(&[k, encode_i64(v)], t, d);
    })
}

fn random_step() -> impl Strategy<Value = Step<Up>> {
    let up = (
        0u64..2,
        0usize..VALS.len(),
        0u64..4,
        0u64..5,
        0usize..DIFFS.len(),
    )
        .prop_map(|(k, v, dx, y, d)| (k, VALS[v], dx, y, DIFFS[d]));
    step(up, 16, prop_oneof![3 => Just(0u64), 2 => 1u64..4])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Every key on the row sweep (threshold 0) emits what the general path emits.
    #[test]
    fn row_sweep_matches_general_path(
        kind in 0..AGGS.len(),
        mut steps in prop::collection::vec(random_step(), 1..10),
    ) {
        steps.push(Step::closing());
        let agg = agg_of(AGGS[kind]);
        let (want_out, want_err) = run(&agg, &steps, usize::MAX);
        let (out, err) = run(&agg, &steps, 0);
        prop_assert_eq!(out, want_out);
        prop_assert_eq!(err, want_err);
    }

    /// With the product threshold at 1 and the default row length, some keys take the row
    /// sweep and others (short rows) the general path: the output is the general path's.
    #[test]
    fn row_sweep_by_row_length_matches_general_path(
        kind in 0..AGGS.len(),
        mut steps in prop::collection::vec(random_step(), 1..10),
    ) {
        steps.push(Step::closing());
        let agg = agg_of(AGGS[kind]);
        let (want_out, want_err) = run(&agg, &steps, usize::MAX);
        let (out, err) = run(&agg, &steps, 1);
        prop_assert_eq!(out, want_out);
        prop_assert_eq!(err, want_err);
    }

    /// `long_rows` against counting the distinct first coordinates.
    #[test]
    fn long_rows_matches_counting_rows(
        mut xys in prop::collection::vec((0u64..6, 0u64..6), 0..40),
        min_len in 0usize..8,
    ) {
        xys.sort_unstable();
        xys.dedup();
        let cands: Vec<Time> = xys.iter().map(|&(x, y)| Time::from_coords(&[x, y])).collect();
        let rows = xys.iter().map(|p| p.0).collect::<std::collections::BTreeSet<_>>().len();
        let want = min_len <= 1 || cands.len() >= rows * min_len;
        prop_assert_eq!(long_rows(&cands, min_len), want);
    }
}
