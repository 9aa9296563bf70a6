//! BFS over a changing random graph driven from Rust: the engine without Python, for
//! profiling. `cargo run --release --example bfs_bench -- NODES EDGES BATCH ROUNDS [WORKERS]`;
//! with `DDFLOW_COUNTS=1` it runs the distance-counts job (BFS, then `count` by
//! distance) instead of the plain BFS, and with `DDFLOW_GRAPH=FILE` it reads the edges
//! from a graph file of the benchmarks (u32 little-endian `(src, dst)` pairs, the first
//! `EDGES` loaded and the next `ROUNDS` inserted, as `benches/peers/dd_bfs` reads them)
//! instead of drawing them at random.

use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{Column, NoCallbacks};
use ddflow_core::engine::plan::Plan;
use ddflow_core::engine::plans::{bfs as bfs_plan, bfs_counts, BFS_COUNTS_CAPTURE};
use ddflow_core::engine::Engine;
use ddflow_core::Time;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

fn int_col(v: Vec<i64>) -> Column {
    Column {
        dtype: DType::Int64,
        words: v.into_iter().map(|x| x as u64).collect(),
    }
}

/// The first `need` edges of a graph file: u32 little-endian `(src, dst)` pairs.
fn read_edges(path: &std::ffi::OsStr, need: usize) -> (Vec<i64>, Vec<i64>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {path:?}: {e}"));
    assert!(
        bytes.len() >= 8 * need,
        "{path:?} holds {} edges, {need} needed",
        bytes.len() / 8
    );
    let word = |i: usize| {
        i64::from(u32::from_le_bytes(
            bytes[4 * i..4 * i + 4].try_into().unwrap(),
        ))
    };
    (0..need).map(|i| (word(2 * i), word(2 * i + 1))).unzip()
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("integer argument"))
        .collect();
    let (nodes, edges, batch, rounds) = (
        args[0],
        args[1] as usize,
        args[2] as usize,
        args[3] as usize,
    );
    let workers = args.get(4).copied().unwrap_or(1) as usize;
    let total = edges + rounds;
    let (src, dst) = match std::env::var_os("DDFLOW_GRAPH") {
        Some(path) => read_edges(&path, total),
        None => {
            let mut rng = rand::rngs::StdRng::seed_from_u64(0);
            let src: Vec<i64> = (0..total).map(|_| rng.gen_range(0..nodes) as i64).collect();
            let dst: Vec<i64> = (0..total).map(|_| rng.gen_range(0..nodes) as i64).collect();
            (src, dst)
        }
    };
    let counts = std::env::var_os("DDFLOW_COUNTS").is_some();
    let plan = Plan::from_json(&if counts { bfs_counts() } else { bfs_plan() }).expect("plan");
    let mut e = Engine::new(plan, workers, Arc::new(NoCallbacks)).expect("engine");
    e.set_logging(std::env::var_os("DDFLOW_PROFILE").is_some());
    let t0 = Instant::now();
    e.push(1, vec![int_col(vec![0])], vec![Time::scalar(0)], vec![1])
        .unwrap();
    e.push(
        0,
        vec![
            int_col(src[..edges].to_vec()),
            int_col(dst[..edges].to_vec()),
        ],
        vec![Time::scalar(0); edges],
        vec![1; edges],
    )
    .unwrap();
    e.advance_input(0, Time::scalar(1)).unwrap();
    // The roots never change again: closed, as the Python peer closes them.
    e.close_input(1).unwrap();
    e.run_until(Time::scalar(1)).unwrap();
    let load = t0.elapsed();
    let t1 = Instant::now();
    let mut done = 0;
    let mut time = 1u64;
    while done < rounds {
        let n = batch.min(rounds - done);
        let mut s = Vec::with_capacity(2 * n);
        let mut d = Vec::with_capacity(2 * n);
        let mut ts = Vec::with_capacity(2 * n);
        let mut diffs = Vec::with_capacity(2 * n);
        for i in done..done + n {
            let t = Time::scalar(time + (i - done) as u64);
            s.push(src[edges + i]);
            d.push(dst[edges + i]);
            ts.push(t);
            diffs.push(1);
            s.push(src[i]);
            d.push(dst[i]);
            ts.push(t);
            diffs.push(-1);
        }
        e.push(0, vec![int_col(s), int_col(d)], ts, diffs).unwrap();
        time += n as u64;
        e.advance_input(0, Time::scalar(time)).unwrap();
        e.run_until(Time::scalar(time)).unwrap();
        e.capture_take(14).unwrap();
        if counts {
            e.capture_take(BFS_COUNTS_CAPTURE).unwrap();
        }
        done += n;
        if std::env::var_os("DDFLOW_SIZES").is_some() {
            eprintln!("after {done}: {:?}", e.sizes());
        }
    }
    let el = t1.elapsed();
    let mut per_node: std::collections::BTreeMap<usize, (u64, usize, usize, usize)> =
        Default::default();
    for l in e.log() {
        let x = per_node.entry(l.node).or_default();
        x.0 += l.nanos;
        x.1 += 1;
        x.2 += l.updates_in;
        x.3 += l.updates_out;
    }
    for (node, (ns, calls, i, o)) in per_node {
        eprintln!(
            "node {node:>2} {:<18} {:>8.1} ms {calls:>6} calls {i:>9} in {o:>9} out",
            e.plan().nodes[node].op_name(),
            ns as f64 / 1e6
        );
    }
    println!(
        "load {:.3}s, {} updates in {:.3}s: {:.0} updates/s, {} passes, {} trace bytes",
        load.as_secs_f64(),
        rounds,
        el.as_secs_f64(),
        rounds as f64 / el.as_secs_f64(),
        e.passes(),
        e.heap_bytes()
    );
}
