//! Tests of skipping quiet times: a reduce emits exactly the output and error updates it
//! emits when it evaluates every candidate time, over many activations with 2-D times whose
//! new updates cancel within a batch, partial frontiers (pending times), retractions,
//! multiplicities, compaction, sums and counts that leave int64, with and without the 2-D
//! sweep.

use crate::encoding::encode_i64;
use crate::engine::operators::reduce::ReduceState;
use crate::engine::operators::reduce_test_activation::{agg_of, run_steps, step, Emitted, Step};
use crate::engine::plan::Agg;
use crate::lattice::Time;
use proptest::prelude::*;

/// Vals: small ones (repeated, so vals have multiplicities), ones whose sums leave int64, and
/// null (`i64::MIN`).
const VALS: [i64; 6] = [-3, 0, 2, 5, i64::MAX / 2 + 7, i64::MIN];

/// The aggregates the tests draw from.
const AGGS: [&str; 6] = [
    r#"{"kind":"count"}"#,
    r#"{"kind":"sum","column":0}"#,
    r#"{"kind":"min","column":0}"#,
    r#"{"kind":"distinct"}"#,
    r#"{"kind":"top_k","k":2,"column":0}"#,
    r#"{"kind":"group","aggs":[{"kind":"count"},{"kind":"sum","column":0},{"kind":"max","column":0}]}"#,
];

/// An update `(key, val, x offset, y, diff)`; with `cancel` the same val and y get the
/// opposite diff `later` rounds on (within the step when the frontier moves far enough).
type Up = (u64, i64, u64, u64, i64, bool, u64);

fn run(agg: &Agg, steps: &[Step<Up>], quiet_off: bool, sweep_min: Option<usize>) -> Emitted {
    let mut st = ReduceState::new(1);
    st.set_quiet_off(quiet_off);
    if let Some(n) = sweep_min {
        st.set_sweep_min(n);
    }
    let at = |x| Time::from_coords(&[x, 0]);
    run_steps(
        &mut st,
        agg,
        steps,
        at,
        |b, s, upper, &(k, v, dx, y, d, cancel, later)| {
            let x = upper + dx % s.advance;
            b.push(&[k, encode_i64(v)], Time::from_coords(&[x, y]), d);
            let x2 = x + later;
            if cancel && x2 < upper + s.advance {
                b.push(&[k, encode_i64(v)], Time::from_coords(&[x2, y]), -d);
            }
        },
    )
}

fn random_step() -> impl Strategy<Value = Step<Up>> {
    let up = (
        0u64..2,
        0usize..VALS.len(),
        0u64..6,
        0u64..4,
        prop_oneof![Just(-1i64), Just(1), Just(2)],
        any::<bool>(),
        1u64..4,
    )
        .prop_map(|(k, v, dx, y, d, c, l)| (k, VALS[v], dx, y, d, c, l));
    step(up, 10, prop_oneof![3 => Just(0u64), 2 => 1u64..4]).prop_map(|mut s| {
        // Frontier moves of up to 6 rounds, so that cancelling updates share a batch.
        s.advance *= 2;
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Skipping quiet times emits what evaluating every candidate time emits.
    #[test]
    fn quiet_times_match_evaluating_every_time(
        kind in 0..AGGS.len(),
        sweep in any::<bool>(),
        mut steps in prop::collection::vec(random_step(), 1..8),
    ) {
        steps.push(Step::closing());
        let agg = agg_of(AGGS[kind]);
        let sweep_min = sweep.then_some(0);
        let (want_out, want_err) = run(&agg, &steps, true, sweep_min);
        let (out, err) = run(&agg, &steps, false, sweep_min);
        prop_assert_eq!(out, want_out);
        prop_assert_eq!(err, want_err);
    }
}
