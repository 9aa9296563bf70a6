//! Tests of `reduce_work`: a reduce whose activations run chunk by chunk (1, 2 or 3 keys
//! at a time) emits exactly the updates and error updates of one that takes every key at
//! once, over many activations with one- and two-dimensional times, pending times (the
//! reduce's frontier lagging behind its input), sums that overflow int64, compaction, and
//! keys in the batch, pending, or both. Freeing the activation's buffers between
//! activations (an idle engine's `release_scratch`) changes nothing either.

use crate::engine::arrangement::Arrangement;
use crate::engine::operators::reduce::ReduceState;
use crate::engine::operators::reduce_test_activation::{activate, agg_of, step, Step};
use crate::engine::plan::Agg;
use crate::lattice::Time;
use crate::updates::Updates;
use proptest::prelude::*;

const VALS: [i64; 6] = [-3, 0, 2, 5, i64::MAX / 2 + 7, i64::MAX];

/// The aggregates the tests draw from.
const AGGS: [&str; 6] = [
    r#"{"kind":"count"}"#,
    r#"{"kind":"sum","column":0}"#,
    r#"{"kind":"min","column":0}"#,
    r#"{"kind":"top_k","k":2,"column":0,"descending":true}"#,
    r#"{"kind":"distinct"}"#,
    r#"{"kind":"group","aggs":[{"kind":"count"},{"kind":"sum","column":0},{"kind":"mean","column":0}]}"#,
];

/// An update `(key, val, epoch offset, iteration, diff)` (the offset taken modulo the
/// step's `advance`).
type Up = (u64, i64, u64, u64, i64);

/// Per activation: the output updates `(row, time, diff)` and the error updates (sorted).
type Emitted = (Vec<Vec<(Vec<u64>, Time, i64)>>, Vec<Vec<String>>);

fn run(agg: &Agg, steps: &[Step<Up>], chunk: (usize, usize)) -> Emitted {
    run_releasing(agg, steps, chunk, false)
}

/// As [`run`]; with `release`, the activation buffers are freed after every activation.
fn run_releasing(agg: &Agg, steps: &[Step<Up>], chunk: (usize, usize), release: bool) -> Emitted {
    let mut input = Arrangement::new(1, 2);
    let mut st = ReduceState::new(1);
    st.set_chunk(chunk.0, chunk.1);
    let (mut upper, mut reduce_at) = (0u64, 0u64);
    let (mut outs, mut errs) = (Vec::new(), Vec::new());
    for step in steps {
        let mut batch = Updates::new(2);
        if step.advance > 0 {
            for &(k, v, de, i, d) in &step.ups {
                let t = Time([upper + de % step.advance, i, 0, 0]);
                batch.push(&[k, v as u64], t, d);
            }
        }
        upper += step.advance;
        reduce_at = reduce_at.max(upper.saturating_sub(step.lag));
        let (out, mut err) = activate(
            &mut st,
            &mut input,
            agg,
            batch,
            Time::scalar(upper),
            Time::scalar(reduce_at),
            step.compact,
        );
        // Error updates are a collection: phases 1 and 3 add them in their own key orders,
        // so a chunked activation interleaves them differently.
        err.sort();
        if release {
            st.release_scratch(0);
            let fresh = ReduceState::new(1).scratch_bytes();
            assert_eq!(st.scratch_bytes(), fresh, "buffers left after a release");
        }
        outs.push(out);
        errs.push(err);
    }
    (outs, errs)
}

fn random_step() -> impl Strategy<Value = Step<Up>> {
    let up = (0u64..6, 0usize..VALS.len(), 0u64..3, 0u64..3, 0usize..4)
        .prop_map(|(k, v, de, i, d)| (k, VALS[v], de, i, [-2, -1, 1, 2][d]));
    step(up, 14, prop_oneof![3 => Just(0u64), 2 => 1u64..3])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Chunks of 1, 2 or 3 keys, or ended after 1 to 7 times, change no output or error
    /// update, with the last step closing the reduce's lag (every pending time is then
    /// processed).
    #[test]
    fn chunks_change_nothing(
        kind in 0..AGGS.len(),
        mut steps in prop::collection::vec(random_step(), 1..12),
        chunk in prop_oneof![
            (1usize..4).prop_map(|k| (k, usize::MAX)),
            (1usize..8).prop_map(|t| (usize::MAX, t)),
        ],
    ) {
        steps.push(Step::closing());
        let agg = agg_of(AGGS[kind]);
        let want = run(&agg, &steps, (usize::MAX, usize::MAX));
        prop_assert_eq!(run(&agg, &steps, chunk), want);
    }

    /// Freeing the activation buffers after every activation changes no output or error
    /// update.
    #[test]
    fn releasing_buffers_changes_nothing(
        kind in 0..AGGS.len(),
        mut steps in prop::collection::vec(random_step(), 1..12),
        chunk in prop_oneof![Just((2usize, usize::MAX)), Just((usize::MAX, 3)), Just((usize::MAX, usize::MAX))],
    ) {
        steps.push(Step::closing());
        let agg = agg_of(AGGS[kind]);
        let want = run(&agg, &steps, chunk);
        prop_assert_eq!(run_releasing(&agg, &steps, chunk, true), want);
    }
}

proptest! {
    /// A key's times sorted and deduplicated in place (already sorted, packed as words, or
    /// with a coordinate past 32 bits or a third one, sorted as times) equal the sorted
    /// distinct set; a work list built key by key hands each key its own times.
    #[test]
    fn work_times_are_the_sorted_distinct_times(
        keys in prop::collection::vec(
            prop::collection::vec((0u64..4, 0u64..4, 0u64..2), 0..12),
            0..5,
        ),
        more in prop::collection::vec((0u64..4, 0u64..4), 0..4),
        wide in any::<bool>(),
        three_d in any::<bool>(),
    ) {
        let time = |&(x, y, z): &(u64, u64, u64)| {
            let y = if wide && y == 3 { 1u64 << 32 } else { y };
            Time([x, y, if three_d { z } else { 0 }, 0])
        };
        let more: Vec<Time> = more.iter().map(|&(x, y)| time(&(x, y, 0))).collect();
        let mut work = super::Work::default();
        work.clear(2);
        for (k, ts) in keys.iter().enumerate() {
            let n = work.push(&[k as u64, 7], ts.iter().map(time), &more);
            prop_assert_eq!(n, work.times(k).len());
        }
        prop_assert_eq!(work.len(), keys.len());
        for (k, ts) in keys.iter().enumerate() {
            let want: std::collections::BTreeSet<Time> =
                ts.iter().map(time).chain(more.iter().copied()).collect();
            prop_assert_eq!(work.key(k), &[k as u64, 7][..]);
            let want: Vec<Time> = want.into_iter().collect();
            prop_assert_eq!(work.times(k), want.as_slice());
        }
        let all: Vec<Time> = work.iter().flat_map(|(_, ts)| ts.to_vec()).collect();
        prop_assert_eq!(all.as_slice(), work.all_times());
    }
}
