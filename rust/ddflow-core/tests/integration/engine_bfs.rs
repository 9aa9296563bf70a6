//! BFS built and run from Rust without Python (the engine is a Rust API): a four-edge example
//! gives exactly its expected distance counts at every time, and random graphs give the same
//! output on one worker and on several running in parallel.

use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{Column, NoCallbacks};
use ddflow_core::engine::plan::Plan;
use ddflow_core::engine::plans::bfs as bfs_plan;
use ddflow_core::engine::Engine;
use ddflow_core::Time;
use std::collections::BTreeMap;
use std::sync::Arc;

fn int_col(v: &[i64]) -> Column {
    Column {
        dtype: DType::Int64,
        words: v.iter().map(|&x| x as u64).collect(),
    }
}

/// Accumulated multiset of distances at time t from captured (node, dist) updates.
fn dist_counts(updates: &[(i64, i64, u64, i64)], t: u64) -> BTreeMap<i64, i64> {
    let mut per: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for &(n, d, time, diff) in updates {
        if time <= t {
            *per.entry((n, d)).or_default() += diff;
        }
    }
    let mut counts = BTreeMap::new();
    for ((_, d), c) in per {
        if c != 0 {
            *counts.entry(d).or_default() += c;
        }
    }
    counts
}

fn run(workers: usize, step_each: bool) -> Vec<(i64, i64, u64, i64)> {
    let plan = Plan::from_json(&bfs_plan()).expect("plan parses");
    let mut e = Engine::new(plan, workers, Arc::new(NoCallbacks)).expect("engine");
    let edges = [
        ((0, 3), 1, 0u64),
        ((0, 2), 1, 5),
        ((2, 3), 1, 10),
        ((0, 3), -1, 11),
    ];
    e.push(1, vec![int_col(&[0])], vec![Time::scalar(0)], vec![1])
        .unwrap();
    let mut captured = Vec::new();
    let mut take = |e: &mut Engine| {
        let c = e.capture_take(14).unwrap();
        for i in 0..c.times.len() {
            captured.push((
                c.columns[0].words[i] as i64,
                c.columns[1].words[i] as i64,
                c.times[i].0[0],
                c.diffs[i],
            ));
        }
    };
    for ((s, d), diff, t) in edges {
        e.push(
            0,
            vec![int_col(&[s]), int_col(&[d])],
            vec![Time::scalar(t)],
            vec![diff],
        )
        .unwrap();
        if step_each {
            e.advance_input(0, Time::scalar(t + 1)).unwrap();
            e.advance_input(1, Time::scalar(t + 1)).unwrap();
            e.run_until(Time::scalar(t + 1)).unwrap();
            take(&mut e);
        }
    }
    e.advance_input(0, Time::scalar(12)).unwrap();
    e.advance_input(1, Time::scalar(12)).unwrap();
    e.run_until(Time::scalar(12)).unwrap();
    take(&mut e);
    captured
}

#[test]
fn four_edge_bfs_example_exact() {
    for workers in [1, 2] {
        for step_each in [false, true] {
            let out = run(workers, step_each);
            let expect = |t: u64| -> BTreeMap<i64, i64> {
                match t {
                    0..=4 => [(0, 1), (1, 1)].into_iter().collect(),
                    5..=10 => [(0, 1), (1, 2)].into_iter().collect(),
                    _ => [(0, 1), (1, 1), (2, 1)].into_iter().collect(),
                }
            };
            for t in 0..12 {
                assert_eq!(
                    dist_counts(&out, t),
                    expect(t),
                    "time {t}, workers {workers}, step_each {step_each}"
                );
            }
        }
    }
}

/// Consolidated `(node, dist, time) -> diff` of a BFS over a random graph with `updates`
/// sliding-window edge changes, each at its own time, all in one batch.
fn random_bfs(
    workers: usize,
    nodes: u64,
    edges: usize,
    updates: usize,
) -> BTreeMap<(i64, i64, u64), i64> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let total = edges + updates;
    let src: Vec<i64> = (0..total).map(|_| rng.gen_range(0..nodes) as i64).collect();
    let dst: Vec<i64> = (0..total).map(|_| rng.gen_range(0..nodes) as i64).collect();
    let plan = Plan::from_json(&bfs_plan()).expect("plan parses");
    let mut e = Engine::new(plan, workers, Arc::new(NoCallbacks)).expect("engine");
    e.push(1, vec![int_col(&[0])], vec![Time::scalar(0)], vec![1])
        .unwrap();
    e.push(
        0,
        vec![int_col(&src[..edges]), int_col(&dst[..edges])],
        vec![Time::scalar(0); edges],
        vec![1; edges],
    )
    .unwrap();
    let (mut s, mut d, mut ts, mut diffs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..updates {
        let t = Time::scalar(1 + i as u64);
        s.extend([src[edges + i], src[i]]);
        d.extend([dst[edges + i], dst[i]]);
        ts.extend([t, t]);
        diffs.extend([1, -1]);
    }
    e.push(0, vec![int_col(&s), int_col(&d)], ts, diffs)
        .unwrap();
    let end = Time::scalar(1 + updates as u64);
    e.advance_input(0, end).unwrap();
    e.advance_input(1, end).unwrap();
    e.run_until(end).unwrap();
    let c = e.capture_take(14).unwrap();
    let mut out = BTreeMap::new();
    for i in 0..c.times.len() {
        let k = (
            c.columns[0].words[i] as i64,
            c.columns[1].words[i] as i64,
            c.times[i].0[0],
        );
        *out.entry(k).or_insert(0) += c.diffs[i];
    }
    out.retain(|_, v| *v != 0);
    out
}

#[test]
fn workers_agree_when_running_in_parallel() {
    // Large enough that nodes get more than 512 input updates per pass, so the workers run
    // them in parallel threads (smaller inputs run the workers one after the other).
    let one = random_bfs(1, 300, 900, 400);
    assert!(one.len() > 100, "the workload should produce many changes");
    assert_eq!(random_bfs(2, 300, 900, 400), one);
    assert_eq!(random_bfs(3, 300, 900, 400), one);
}
