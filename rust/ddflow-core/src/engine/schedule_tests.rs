//! Whether a node's workers run in parallel threads or one after the other changes nothing
//! in the output: random graphs under random edge changes give the same BFS output history
//! on one worker and on two workers run always in parallel, always serially, or as the
//! estimate of each activation's work decides.

use super::super::column::NoCallbacks;
use super::super::plan::Plan;
use super::super::plans::bfs as bfs_plan;
use super::super::Engine;
use crate::encoding::DType;
use crate::engine::column::Column;
use crate::lattice::Time;
use proptest::prelude::*;
use std::sync::Arc;

fn int_col(v: Vec<i64>) -> Column {
    Column {
        dtype: DType::Int64,
        words: v.into_iter().map(|x| x as u64).collect(),
    }
}

/// The consolidated `(node, dist, time, diff)` output of the BFS from node 0 over `edges`
/// at time 0, then each round's edge changes at times 1, 2, ...
fn bfs_history(
    workers: usize,
    force_parallel: Option<bool>,
    edges: &[(i64, i64)],
    rounds: &[Vec<((i64, i64), i64)>],
) -> Vec<(u64, u64, u64, i64)> {
    let plan = Plan::from_json(&bfs_plan()).expect("plan");
    let mut e = Engine::new(plan, workers, Arc::new(NoCallbacks)).expect("engine");
    e.force_parallel = force_parallel;
    e.push(1, vec![int_col(vec![0])], vec![Time::scalar(0)], vec![1])
        .unwrap();
    let push = |e: &mut Engine, batch: Vec<((i64, i64), i64)>, t: u64| {
        let n = batch.len();
        let (pairs, diffs): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
        let (s, d): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
        e.push(
            0,
            vec![int_col(s), int_col(d)],
            vec![Time::scalar(t); n],
            diffs,
        )
        .unwrap();
        e.advance_input(0, Time::scalar(t + 1)).unwrap();
        e.advance_input(1, Time::scalar(t + 1)).unwrap();
        e.run_until(Time::scalar(t + 1)).unwrap();
    };
    push(&mut e, edges.iter().map(|&p| (p, 1)).collect(), 0);
    for (r, batch) in rounds.iter().enumerate() {
        push(&mut e, batch.clone(), r as u64 + 1);
    }
    let (_, upd) = e.capture_take_updates(14).unwrap();
    let mut out: std::collections::BTreeMap<(u64, u64, u64), i64> = Default::default();
    for i in 0..upd.len() {
        let row = upd.row(i);
        *out.entry((row[0], row[1], upd.times[i].0[0])).or_default() += upd.diffs[i];
    }
    out.into_iter()
        .filter(|&(_, d)| d != 0)
        .map(|((n, d, t), diff)| (n, d, t, diff))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    #[test]
    fn parallel_or_serial_activations_give_the_same_output(
        edges in prop::collection::vec((0i64..40, 0i64..40), 0..120),
        rounds in prop::collection::vec(
            prop::collection::vec(
                ((0i64..40, 0i64..40), prop::sample::select(vec![-1i64, 1])),
                0..30,
            ),
            1..5,
        ),
    ) {
        let one = bfs_history(1, None, &edges, &rounds);
        for force in [None, Some(true), Some(false)] {
            let two = bfs_history(2, force, &edges, &rounds);
            prop_assert_eq!(&two, &one, "two workers, forced parallel: {:?}", force);
        }
    }
}
