//! Benchmarks of traces: batch building, merging with compaction, spine inserts, and
//! arranging a static graph at the least time.
//!
//! Run: `cargo bench -p ddflow-core --bench trace` (results: `benches/results/trace.md`).
//! The criterion part measures batch building and merge throughput; the one-shot part
//! (timed outside criterion, median of 3 runs where noted, printed as markdown) measures
//! 10M spine inserts and the 10M-edge static graph. Pass a filter to criterion as usual;
//! the one-shot parts run when no filter is given or the filter names them (`spine_10m`,
//! `static_graph`).

use criterion::{black_box, BatchSize, Criterion, Throughput};
use ddflow_core::lattice::{Antichain, Time};
use ddflow_core::sort::RadixSorter;
use ddflow_core::trace::{Batch, Description, MergeState, Spine};
use ddflow_core::Updates;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `n` consolidated updates `(key in [0, keys), val in [0, 8))` at distinct times from
/// `t0`, diffs +-1.
fn random_updates(n: usize, keys: u64, t0: u64, seed: u64) -> Updates {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut u = Updates::with_capacity(2, n);
    for i in 0..n {
        let d = if rng.gen_bool(0.7) { 1 } else { -1 };
        u.push(
            &[rng.gen_range(0..keys), rng.gen_range(0..8)],
            Time::scalar(t0 + i as u64),
            d,
        );
    }
    RadixSorter::new().consolidate_updates(&mut u).unwrap();
    u
}

fn build_and_merge(c: &mut Criterion) {
    const N: usize = 1_000_000;
    let mut g = c.benchmark_group("batch");
    g.throughput(Throughput::Elements(N as u64));
    let u = random_updates(N, 100_000, 0, 1);
    g.bench_function("from_sorted_1M", |b| {
        b.iter(|| Batch::from_sorted(black_box(&u), 1, Description::scalar(0, N as u64)).unwrap())
    });
    let raw = {
        let mut rng = StdRng::seed_from_u64(2);
        let mut r = Updates::with_capacity(2, N);
        for i in 0..N {
            r.push(
                &[rng.gen_range(0..100_000), rng.gen_range(0..8)],
                Time::scalar(i as u64),
                1,
            );
        }
        r
    };
    g.bench_function("from_updates_unsorted_1M", |b| {
        b.iter_batched(
            || raw.clone(),
            |r| Batch::from_updates(r, 1, Description::scalar(0, N as u64)).unwrap(),
            BatchSize::LargeInput,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("merge");
    g.throughput(Throughput::Elements(2 * N as u64));
    let a = Arc::new(Batch::from_sorted(&u, 1, Description::scalar(0, N as u64)).unwrap());
    let u2 = random_updates(N, 100_000, N as u64, 3);
    let b2 =
        Arc::new(Batch::from_sorted(&u2, 1, Description::scalar(N as u64, 2 * N as u64)).unwrap());
    for (name, f) in [
        ("1M+1M_no_compaction", Time::minimum()),
        ("1M+1M_compact_to_upper", Time::scalar(2 * N as u64)),
    ] {
        let frontier = Antichain::from_elem(f);
        g.bench_function(name, |b| {
            b.iter(|| MergeState::new(a.clone(), b2.clone(), &frontier).finish())
        });
    }
    // Progressive: the same merge in slices of 10k units of fuel.
    let frontier = Antichain::from_elem(Time::scalar(2 * N as u64));
    g.bench_function("1M+1M_compact_fuel_10k", |b| {
        b.iter(|| {
            let mut m = MergeState::new(a.clone(), b2.clone(), &frontier);
            while !m.is_complete() {
                let mut fuel = 10_000;
                m.work(&mut fuel);
            }
            m.finish()
        })
    });
    g.finish();
}

/// CPU time (user + system) of the calling thread, from `/proc/thread-self/stat` (10 ms
/// resolution): unlike wall time, it is not inflated by other processes on a shared machine.
fn thread_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after ')'.
    (ticks(11) + ticks(12)) / 100.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// 10M updates in batches of 100k at increasing times, compaction frontier following.
fn spine_10m() {
    const BATCH: usize = 100_000;
    const BATCHES: usize = 100;
    const KEYS: u64 = 1_000_000;
    // Toggle records drawn from 1M keys x 4 vals: inserts, later retractions.
    let mut rng = StdRng::seed_from_u64(7);
    let mut present = vec![false; (KEYS * 4) as usize];
    let mut sorter = RadixSorter::new();
    let mut batches = Vec::with_capacity(BATCHES);
    let t = Instant::now();
    let build_cpu0 = thread_cpu();
    for b in 0..BATCHES {
        let mut u = Updates::with_capacity(2, BATCH);
        for i in 0..BATCH {
            let p = rng.gen_range(0..KEYS * 4);
            let d = if present[p as usize] { -1 } else { 1 };
            present[p as usize] = !present[p as usize];
            u.push(&[p / 4, p % 4], Time::scalar((b * BATCH + i) as u64), d);
        }
        let lower = (b * BATCH) as u64;
        let desc = Description::scalar(lower, lower + BATCH as u64);
        batches.push(Arc::new(
            Batch::from_updates_with(&mut sorter, &mut u, 1, desc).unwrap(),
        ));
    }
    let build = t.elapsed();
    let build_cpu = thread_cpu() - build_cpu0;
    let live = present.iter().filter(|&&p| p).count();
    println!("\n### spine_10m: 10M updates, 100 batches of 100k, compaction following\n");
    println!(
        "Building the 100 batches (consolidate + layers): {:.3} s wall, {build_cpu:.2} s thread CPU. \
         Live records at the end: {live}.\n",
        build.as_secs_f64()
    );
    println!("| effort | insert total (wall) | thread CPU | updates/s (CPU) | max single insert (wall) | max len | final len | batches | forced merges |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for effort in [1, 2, 4] {
        let mut spine = Spine::new(1, 1);
        spine.set_effort(effort);
        let mut max_insert = Duration::ZERO;
        let mut max_len = 0;
        let t = Instant::now();
        let cpu0 = thread_cpu();
        for b in batches.iter() {
            let upper = b.upper().clone();
            let ti = Instant::now();
            spine.insert(b.clone());
            max_insert = max_insert.max(ti.elapsed());
            spine.set_logical_compaction(&upper).unwrap();
            max_len = max_len.max(spine.len());
        }
        let total = t.elapsed();
        let cpu = thread_cpu() - cpu0;
        println!(
            "| {effort}{} | {:.3} s | {cpu:.2} s | {:.1} M | {:.1} ms | {max_len} | {} | {} | {} |",
            if effort == ddflow_core::trace::DEFAULT_EFFORT {
                " (default)"
            } else {
                ""
            },
            total.as_secs_f64(),
            10.0 / cpu.max(0.01),
            max_insert.as_secs_f64() * 1e3,
            spine.len(),
            spine.n_batches(),
            spine.forced_merges()
        );
    }
}

/// Arranging a static graph: 10M random edges over 1M nodes at the least time.
fn static_graph() {
    const EDGES: usize = 10_000_000;
    const NODES: u64 = 1_000_000;
    let mut rng = StdRng::seed_from_u64(11);
    let src: Vec<u64> = (0..EDGES).map(|_| rng.gen_range(0..NODES)).collect();
    let dst: Vec<u64> = (0..EDGES).map(|_| rng.gen_range(0..NODES)).collect();
    // The same graph with ids spread over u64 (1M distinct ids that do not fit u32).
    let wide = |x: u64| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) | (1 << 63);
    let src_w: Vec<u64> = src.iter().map(|&x| wide(x)).collect();
    let dst_w: Vec<u64> = dst.iter().map(|&x| wide(x)).collect();
    println!("\n### static_graph: 10M random edges, 1M nodes, least time\n");
    println!("| ids | build, wall (median of 3) | thread CPU (median) | edges/s (wall) | stored updates | heap bytes/edge |");
    println!("|---|---|---|---|---|---|");
    for (name, s, d) in [
        ("u32 (< 2^20)", &src, &dst),
        ("u64 (spread)", &src_w, &dst_w),
    ] {
        let mut times = Vec::new();
        let mut cpus = Vec::new();
        let mut bytes = 0;
        let mut len = 0;
        for _ in 0..3 {
            let t = Instant::now();
            let c = thread_cpu();
            let b = Batch::from_static_pairs(s, d).unwrap();
            let mut spine = Spine::new(1, 1);
            spine.insert(Arc::new(b));
            times.push(t.elapsed().as_secs_f64());
            cpus.push(thread_cpu() - c);
            bytes = spine.heap_bytes();
            len = spine.len();
        }
        let m = median(times);
        let cpu = median(cpus);
        println!(
            "| {name} | {m:.3} s | {cpu:.2} s | {:.1} M | {len} | {:.2} |",
            EDGES as f64 / m / 1e6,
            bytes as f64 / EDGES as f64
        );
    }
    // The general path for comparison: Updates at the least time -> from_updates.
    let t = Instant::now();
    let c = thread_cpu();
    let mut u = Updates::with_capacity(2, EDGES);
    for i in 0..EDGES {
        u.push(&[src[i], dst[i]], Time::minimum(), 1);
    }
    let b = Batch::from_updates(u, 1, Description::least_time()).unwrap();
    let (wall, cpu) = (t.elapsed().as_secs_f64(), thread_cpu() - c);
    println!(
        "| u32 via general `from_updates` (1 run) | {wall:.3} s | {cpu:.2} s | {:.1} M | {} | {:.2} |",
        EDGES as f64 / wall / 1e6,
        b.len(),
        b.heap_bytes() as f64 / EDGES as f64
    );
}

fn main() {
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .configure_from_args();
    build_and_merge(&mut c);
    c.final_summary();
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    if wants("spine_10m") {
        spine_10m();
    }
    if wants("static_graph") {
        static_graph();
    }
}
