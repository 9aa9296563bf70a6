//! The seed's BFS example, built and run from Rust without Python: the engine is a Rust API.

use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{Column, NoCallbacks};
use ddflow_core::engine::plan::Plan;
use ddflow_core::engine::Engine;
use ddflow_core::Time;
use std::collections::BTreeMap;
use std::sync::Arc;

fn bfs_plan() -> String {
    let col = |n: &str| format!(r#"{{"op":"col","name":"{n}"}}"#);
    let nodes = [
        r#"{"id":0,"op":"input","name":"edges","scope":0,"inputs":[],"columns":["src","dst"]}"#.to_string(),
        r#"{"id":1,"op":"input","name":"roots","scope":0,"inputs":[],"columns":["node"]}"#.to_string(),
        format!(
            r#"{{"id":2,"op":"select","scope":0,"inputs":[1],"columns":["node","dist"],"exprs":[{},{{"op":"lit","value":0}}]}}"#,
            col("node")
        ),
        r#"{"id":3,"op":"arrange","scope":0,"inputs":[0],"columns":["src","dst"],"key":[0]}"#.to_string(),
        r#"{"id":4,"op":"enter","scope":1,"inputs":[2],"columns":["node","dist"]}"#.to_string(),
        r#"{"id":5,"op":"variable","scope":1,"inputs":[4],"columns":["node","dist"],"result":12}"#.to_string(),
        r#"{"id":6,"op":"arrange","scope":1,"inputs":[5],"columns":["node","dist"],"key":[0]}"#.to_string(),
        r#"{"id":7,"op":"enter_arrangement","scope":1,"inputs":[3],"columns":["src","dst"]}"#.to_string(),
        r#"{"id":8,"op":"join","scope":1,"inputs":[6,7],"columns":["node","dist","dst"],"kind":"join"}"#.to_string(),
        format!(
            r#"{{"id":9,"op":"select","scope":1,"inputs":[8],"columns":["node","dist"],"exprs":[{},{{"op":"add","args":[{},{{"op":"lit","value":1}}]}}]}}"#,
            col("dst"),
            col("dist")
        ),
        r#"{"id":10,"op":"concat","scope":1,"inputs":[9,4],"columns":["node","dist"]}"#.to_string(),
        r#"{"id":11,"op":"arrange","scope":1,"inputs":[10],"columns":["node","dist"],"key":[0]}"#.to_string(),
        r#"{"id":12,"op":"reduce","scope":1,"inputs":[11],"columns":["node","dist"],"agg":{"kind":"min","column":0}}"#.to_string(),
        r#"{"id":13,"op":"leave","scope":0,"inputs":[12],"columns":["node","dist"]}"#.to_string(),
        r#"{"id":14,"op":"capture","scope":0,"inputs":[13],"columns":["node","dist"]}"#.to_string(),
    ];
    format!(
        r#"{{"version":1,"time_dims":1,"scopes":[{{"id":0,"parent":null}},{{"id":1,"parent":0}}],"nodes":[{}]}}"#,
        nodes.join(",")
    )
}

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
fn seed_bfs_example_exact() {
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
