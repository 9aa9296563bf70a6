//! Tests of `reduce_cache`: a reduce whose keys carry their running totals across
//! activations emits exactly the updates (and error updates) of one that never does, over
//! many activations with batches of mixed sizes, cancellations, totals that overflow int64
//! and come back, pending times, compaction, and keys that switch between carried and not.

use super::{TotalsCache, CARRY_MIN_HISTORY};
use crate::engine::operators::reduce::ReduceState;
use crate::engine::operators::reduce_test_activation::{run_steps, step, Output, Step};
use crate::engine::plan::Agg;
use crate::lattice::Time;
use proptest::prelude::*;

/// Vals of the random updates: small ones, and ones whose sums leave int64.
const VALS: [i64; 8] = [
    -3,
    -1,
    0,
    2,
    5,
    i64::MAX / 2 + 7,
    i64::MIN / 2 - 9,
    i64::MAX,
];
/// Diffs. Counts that leave int64 are in `hot_key_over_many_activations`: with random ones,
/// a single val's count (or a partial sum in storage order) can leave int64 while the key's
/// total does not, where the engine's answer already depends on how the history is stored
/// (the general path checks each val's count, the chain path the key's total).
const DIFFS: [i64; 4] = [-2, -1, 1, 2];

fn agg(kind: usize) -> Agg {
    let json = match kind {
        0 => r#"{"kind":"count"}"#,
        1 => {
            r#"{"kind":"group","aggs":[{"kind":"count"},{"kind":"sum","column":0},{"kind":"mean","column":0}]}"#
        }
        _ => r#"{"kind":"sum","column":0}"#,
    };
    serde_json::from_str(json).expect("agg")
}

/// An update `(key, val, time offset, diff)` at the input frontier plus its offset (taken
/// modulo the step's `advance`).
type Up = (u64, i64, u64, i64);

/// What a run emitted: per activation its output updates `(row, time, diff)` and its error
/// updates; and the carried passes.
type Emitted = (Vec<Output>, Vec<Vec<String>>, u64);

fn run(agg: &Agg, steps: &[Step<Up>], carry_min: usize) -> Emitted {
    let mut st = ReduceState::new(1);
    st.cache = TotalsCache::new(carry_min);
    let (outs, errs) = run_steps(
        &mut st,
        agg,
        steps,
        Time::scalar,
        |b, s, upper, &(k, v, dt, d)| {
            b.push(&[k, v as u64], Time::scalar(upper + dt % s.advance), d);
        },
    );
    (outs, errs, st.cache.hits)
}

fn random_step() -> impl Strategy<Value = Step<Up>> {
    let up = (0u64..3, 0usize..VALS.len(), 0u64..3, 0usize..DIFFS.len())
        .prop_map(|(k, v, dt, d)| (k, VALS[v], dt, DIFFS[d]));
    step(up, 12, prop_oneof![4 => Just(0u64), 1 => 1u64..3])
}

/// The steps, then one that closes the reduce's lag.
fn with_flush(mut steps: Vec<Step<Up>>) -> Vec<Step<Up>> {
    steps.push(Step::closing());
    steps
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Carrying every key's totals (threshold 0), or only those of keys past 3 updates
    /// (keys switch between carried and not), changes no output or error update.
    #[test]
    fn carried_totals_change_nothing(
        kind in 0usize..3,
        steps in prop::collection::vec(random_step(), 1..14),
        carry_min in prop_oneof![Just(0usize), Just(3usize)],
    ) {
        let agg = agg(kind);
        let steps = with_flush(steps);
        let (want_out, want_err, none) = run(&agg, &steps, usize::MAX);
        prop_assert_eq!(none, 0);
        let (out, err, _) = run(&agg, &steps, carry_min);
        prop_assert_eq!(out, want_out);
        prop_assert_eq!(err, want_err);
    }
}

/// A hot key (history above [`CARRY_MIN_HISTORY`]) over many activations with batches of
/// 1 to 400 updates, cancellations, a sum and a count that leave int64 and come back, and a
/// second key that grows past the threshold later: same output as without the cache, and
/// most passes start from carried totals.
#[test]
fn hot_key_over_many_activations() {
    let mut steps = Vec::new();
    let mut t = 0u64;
    for round in 0..60u64 {
        let size = [1usize, 7, 400, 30, 0, 260][round as usize % 6];
        let mut ups = Vec::new();
        for i in 0..size as u64 {
            let v = ((round * 31 + i * 7) % 11) as i64 - 5;
            ups.push((0, v, i % 2, 1));
            if round % 4 == 1 {
                // Cancelled within the batch, and a retraction of an earlier round's row.
                ups.push((0, 99, i % 2, 1));
                ups.push((0, 99, i % 2, -1));
                ups.push((0, ((round * 31 - 31 + i * 7) % 11) as i64 - 5, 1, -1));
            }
            if round >= 30 {
                ups.push((1, i as i64, 0, 1));
            }
        }
        match round {
            10 => ups.push((0, i64::MAX, 0, 3)),
            14 => ups.push((0, i64::MAX, 1, -3)),
            20 => ups.push((0, 4, 0, i64::MAX)),
            23 => ups.push((0, 4, 0, -i64::MAX)),
            _ => {}
        }
        steps.push(Step {
            ups,
            advance: 2,
            lag: 0,
            compact: round % 5 == 0,
        });
        t += 2;
    }
    assert_eq!(t, 120);
    for kind in 0..3 {
        let agg = agg(kind);
        let (want_out, want_err, _) = run(&agg, &steps, usize::MAX);
        let (out, err, hits) = run(&agg, &steps, CARRY_MIN_HISTORY);
        assert_eq!(out, want_out, "{agg:?}");
        assert_eq!(err, want_err, "{agg:?}");
        assert!(
            want_err.iter().any(|e| !e.is_empty()),
            "{agg:?}: some total overflows"
        );
        if kind < 2 {
            assert!(hits > 15, "{agg:?}: {hits} carried passes");
        } else {
            assert_eq!(hits, 0, "an integer sum carries nothing");
        }
    }
}
