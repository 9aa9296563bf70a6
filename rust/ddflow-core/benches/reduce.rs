//! `count` with many distinct times per key in one batch: the case the reduce's one-pass
//! path is built for (`cargo bench -p ddflow-core --bench reduce`).
//!
//! * `count_20_keys/T`: 100,000 live records on 20 keys loaded at time 0, then one batch of
//!   `T` distinct times with 20 updates each (one insertion or deletion per key), run to
//!   completion. Reported per batch; divide by `20 T` for the cost per update.
//! * `count_1_key/T`: the same with every update on one key.
//!
//! The input is the projected key column only, as `count(by="k")` arranges it (and as
//! differential-dataflow's `map(|(k, _)| k).count()`).

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{Column, NoCallbacks};
use ddflow_core::engine::plan::Plan;
use ddflow_core::engine::Engine;
use ddflow_core::Time;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

const PLAN: &str = r#"{"version":1,"time_dims":1,"scopes":[{"id":0,"parent":null}],"nodes":[
    {"id":0,"op":"input","name":"recs","scope":0,"inputs":[],"columns":["k"]},
    {"id":1,"op":"arrange","scope":0,"inputs":[0],"columns":["k"],"key":[0]},
    {"id":2,"op":"reduce","scope":0,"inputs":[1],"columns":["k","count"],"agg":{"kind":"count"}},
    {"id":3,"op":"capture","scope":0,"inputs":[2],"columns":["k","count"]}]}"#;

fn keys(v: Vec<i64>) -> Vec<Column> {
    vec![Column {
        dtype: DType::Int64,
        words: v.into_iter().map(|x| x as u64).collect(),
    }]
}

/// An engine holding 100,000 live records on `nkeys` keys at time 0, run to time 1.
fn loaded(nkeys: i64) -> Engine {
    let mut e = Engine::new(Plan::from_json(PLAN).unwrap(), 1, Arc::new(NoCallbacks)).unwrap();
    let n = 100_000;
    e.push(
        0,
        keys((0..n).map(|i| i % nkeys).collect()),
        vec![Time::scalar(0); n as usize],
        vec![1; n as usize],
    )
    .unwrap();
    e.advance_input(0, Time::scalar(1)).unwrap();
    e.run_until(Time::scalar(1)).unwrap();
    e.capture_take(3).unwrap();
    e
}

/// One batch: `times` distinct times from 1, `per_time` updates each on random keys.
fn batch(nkeys: i64, times: usize, per_time: usize) -> (Vec<Column>, Vec<Time>, Vec<i64>) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let n = times * per_time;
    let k: Vec<i64> = (0..n).map(|_| rng.gen_range(0..nkeys)).collect();
    let t: Vec<Time> = (0..n)
        .map(|i| Time::scalar(1 + (i / per_time) as u64))
        .collect();
    let d: Vec<i64> = (0..n)
        .map(|_| if rng.gen_bool(0.5) { 1 } else { -1 })
        .collect();
    (keys(k), t, d)
}

fn run_batch(mut e: Engine, (k, t, d): (Vec<Column>, Vec<Time>, Vec<i64>)) -> usize {
    let end = Time::scalar(t.last().map(|t| t.0[0]).unwrap_or(1) + 1);
    e.push(0, k, t, d).unwrap();
    e.advance_input(0, end).unwrap();
    e.run_until(end).unwrap();
    e.capture_take(3).unwrap().diffs.len()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("count_20_keys");
    g.sample_size(10);
    for times in [1_000usize, 10_000, 100_000] {
        g.throughput(Throughput::Elements((times * 20) as u64));
        g.bench_function(times.to_string(), |b| {
            b.iter_batched(
                || (loaded(20), batch(20, times, 20)),
                |(e, input)| run_batch(e, input),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
    let mut g = c.benchmark_group("count_1_key");
    g.sample_size(10);
    for times in [100_000usize, 1_000_000] {
        g.throughput(Throughput::Elements(times as u64));
        g.bench_function(times.to_string(), |b| {
            b.iter_batched(
                || (loaded(1), batch(1, times, 1)),
                |(e, input)| run_batch(e, input),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
