//! Benchmarks of the radix sorts against `sort_unstable`, of `sort_updates` /
//! `consolidate_updates`, and of the interesting-times sweep against its reference.
//!
//! Run: `cargo bench -p ddflow-core --bench sort` (results: `benches/results/sort.md`).
//! Filters work as usual (`-- crossover`, `-- pairs`, `-- updates`, `-- times`); the 1e7
//! comparison is timed outside criterion (3 samples each, median reported) and runs unless a
//! filter is given that does not match `pairs_1e7`.

use criterion::{
    black_box, criterion_group, BatchSize, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use ddflow_core::sort::RadixSorter;
use ddflow_core::times::{interesting_times, interesting_times_reference};
use ddflow_core::{Time, Updates};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

const NODES: u64 = 1_000_000;

#[derive(Clone, Copy)]
enum Dist {
    /// Keys and values uniform over all of `u64`.
    Full,
    /// Keys and values uniform over node ids `[0, 1M)` (edge lists).
    Nodes,
}

impl Dist {
    fn name(self) -> &'static str {
        match self {
            Dist::Full => "full_u64",
            Dist::Nodes => "node_ids",
        }
    }

    fn pairs(self, n: usize, seed: u64) -> Vec<(u64, u64)> {
        let mut rng = StdRng::seed_from_u64(seed);
        match self {
            Dist::Full => (0..n).map(|_| (rng.gen(), rng.gen())).collect(),
            Dist::Nodes => (0..n)
                .map(|_| (rng.gen_range(0..NODES), rng.gen_range(0..NODES)))
                .collect(),
        }
    }
}

/// Radix (forced, no fallback) vs the comparison fallback on small inputs: where they
/// cross. Each iteration sorts the next of 256 different inputs (copied into a reused
/// buffer, in both variants): sorting one input over and over lets the branch predictor
/// learn it and flatters the comparison sort.
fn crossover(c: &mut Criterion) {
    const POOL: usize = 256;
    let sizes = [32usize, 64, 128, 192, 256, 384, 512, 1024];
    for dist in [Dist::Full, Dist::Nodes] {
        let mut g = c.benchmark_group(format!("crossover_pairs/{}", dist.name()));
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_millis(800));
        for n in sizes {
            let pool: Vec<Vec<(u64, u64)>> = (0..POOL).map(|i| dist.pairs(n, i as u64)).collect();
            g.throughput(Throughput::Elements(n as u64));
            for (name, min_radix) in [("radix", 0), ("sort_unstable", usize::MAX)] {
                let mut sorter = RadixSorter::with_min_radix_len(min_radix);
                let mut v = Vec::with_capacity(n);
                let mut i = 0;
                g.bench_function(BenchmarkId::new(name, n), |b| {
                    b.iter(|| {
                        v.clear();
                        v.extend_from_slice(&pool[i % POOL]);
                        i += 1;
                        sorter.sort_pairs(&mut v);
                    })
                });
            }
        }
        g.finish();
    }
    let mut g = c.benchmark_group("crossover_u64/full_u64");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(800));
    for n in sizes {
        let mut rng = StdRng::seed_from_u64(n as u64);
        let pool: Vec<Vec<u64>> = (0..POOL)
            .map(|_| (0..n).map(|_| rng.gen()).collect())
            .collect();
        g.throughput(Throughput::Elements(n as u64));
        for (name, min_radix) in [("radix", 0), ("sort_unstable", usize::MAX)] {
            let mut sorter = RadixSorter::with_min_radix_len(min_radix);
            let mut v = Vec::with_capacity(n);
            let mut i = 0;
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    v.clear();
                    v.extend_from_slice(&pool[i % POOL]);
                    i += 1;
                    sorter.sort_u64(&mut v);
                })
            });
        }
    }
    g.finish();
    let mut g = c.benchmark_group("crossover_updates/width1_2d_times");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(800));
    for n in sizes {
        let pool: Vec<Updates> = (0..POOL).map(|i| random_updates(n, i as u64)).collect();
        g.throughput(Throughput::Elements(n as u64));
        for (name, min_radix) in [("radix", 0), ("sort_unstable_by", usize::MAX)] {
            let mut sorter = RadixSorter::with_min_radix_len(min_radix);
            let mut u = Updates::with_capacity(1, n);
            let mut i = 0;
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    u.clear();
                    u.extend(&pool[i % POOL]);
                    i += 1;
                    sorter.sort_updates(&mut u);
                })
            });
        }
    }
    g.finish();
}

/// Radix vs `sort_unstable` on 1e3 ..= 1e6 pairs.
fn pairs(c: &mut Criterion) {
    for dist in [Dist::Full, Dist::Nodes] {
        let mut g = c.benchmark_group(format!("pairs/{}", dist.name()));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .sampling_mode(SamplingMode::Flat);
        for n in [1_000usize, 10_000, 100_000, 1_000_000] {
            let data = dist.pairs(n, 7);
            g.throughput(Throughput::Elements(n as u64));
            let mut sorter = RadixSorter::new();
            g.bench_with_input(BenchmarkId::new("radix", n), &data, |b, d| {
                b.iter_batched_ref(
                    || d.clone(),
                    |v| sorter.sort_pairs(v),
                    BatchSize::LargeInput,
                )
            });
            g.bench_with_input(BenchmarkId::new("sort_unstable", n), &data, |b, d| {
                b.iter_batched_ref(|| d.clone(), |v| v.sort_unstable(), BatchSize::LargeInput)
            });
        }
        g.finish();
    }
}

/// `n` updates of width 1 (node ids) with 2-D times (round < 100, iteration < 20).
fn random_updates(n: usize, seed: u64) -> Updates {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut u = Updates::with_capacity(1, n);
    for _ in 0..n {
        let t = Time::from_coords(&[rng.gen_range(0..100), rng.gen_range(0..20)]);
        u.push(
            &[rng.gen_range(0..NODES)],
            t,
            if rng.gen_bool(0.5) { 1 } else { -1 },
        );
    }
    u
}

/// Comparison baseline for updates: sort a permutation with `sort_unstable_by`, then gather.
fn std_sort_updates(u: &mut Updates) {
    let w = u.width;
    let mut perm: Vec<u32> = (0..u.len() as u32).collect();
    perm.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        u.rows[a * w..(a + 1) * w]
            .cmp(&u.rows[b * w..(b + 1) * w])
            .then(u.times[a].cmp(&u.times[b]))
            .then(a.cmp(&b))
    });
    let mut out = Updates::with_capacity(w, u.len());
    for &p in &perm {
        let p = p as usize;
        out.push(&u.rows[p * w..(p + 1) * w], u.times[p], u.diffs[p]);
    }
    *u = out;
}

fn updates(c: &mut Criterion) {
    let data = random_updates(1_000_000, 11);
    let mut g = c.benchmark_group("updates/width1_2d_times");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Elements(data.len() as u64));
    let mut sorter = RadixSorter::new();
    g.bench_function("radix_sort_updates/1000000", |b| {
        b.iter_batched_ref(
            || data.clone(),
            |u| sorter.sort_updates(u),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("radix_consolidate_updates/1000000", |b| {
        b.iter_batched_ref(
            || data.clone(),
            |u| sorter.consolidate_updates(u).unwrap(),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("std_sort_perm_gather/1000000", |b| {
        b.iter_batched_ref(|| data.clone(), std_sort_updates, BatchSize::LargeInput)
    });
    g.finish();
}

/// `dims`-dimensional times: `n` edits and `m` new times, modelled on `(round, iteration,
/// ..)` histories: rounds below 200, other coordinates below 10; new times in later rounds.
fn times_case(dims: usize, n: usize, m: usize, seed: u64) -> (Vec<Time>, Vec<Time>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut gen = |lo: u64| {
        let mut c = [0u64; 4];
        c[0] = rng.gen_range(lo..200);
        for x in c.iter_mut().take(dims).skip(1) {
            *x = rng.gen_range(0..10);
        }
        Time(c)
    };
    let edits: Vec<Time> = (0..n).map(|_| gen(0)).collect();
    let news: Vec<Time> = (0..m).map(|_| gen(150)).collect();
    (edits, news)
}

fn times(c: &mut Criterion) {
    let mut g = c.benchmark_group("interesting_times/1000x100");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sampling_mode(SamplingMode::Flat);
    for dims in [1usize, 2, 3] {
        let (edits, news) = times_case(dims, 1000, 100, dims as u64);
        let mut out = Vec::new();
        interesting_times(&edits, &news, &mut out).expect("no memory limit in benches");
        assert_eq!(out, interesting_times_reference(&edits, &news));
        eprintln!("interesting_times {dims}-D: {} output times", out.len());
        g.bench_function(BenchmarkId::new("sweep", format!("{dims}d")), |b| {
            b.iter(|| interesting_times(black_box(&edits), black_box(&news), &mut out))
        });
        g.bench_function(BenchmarkId::new("reference", format!("{dims}d")), |b| {
            b.iter(|| interesting_times_reference(black_box(&edits), black_box(&news)))
        });
    }
    g.finish();
}

/// Median of `samples` timings of `f` on fresh copies of `data`.
fn median_time<T: Clone>(data: &T, samples: usize, mut f: impl FnMut(&mut T)) -> Duration {
    let mut ts: Vec<Duration> = (0..samples)
        .map(|_| {
            let mut d = data.clone();
            let start = Instant::now();
            f(&mut d);
            let t = start.elapsed();
            black_box(&d);
            t
        })
        .collect();
    ts.sort();
    ts[samples / 2]
}

/// 1e7 pairs, 3 samples each (criterion needs at least 10).
fn pairs_1e7() {
    let n = 10_000_000;
    for dist in [Dist::Full, Dist::Nodes] {
        let data = dist.pairs(n, 7);
        let mut sorter = RadixSorter::new();
        let mut expected = data.clone();
        expected.sort_unstable();
        let mut check = data.clone();
        sorter.sort_pairs(&mut check);
        assert!(check == expected);
        drop((check, expected));
        let radix = median_time(&data, 3, |v| sorter.sort_pairs(v));
        let std = median_time(&data, 3, |v| v.sort_unstable());
        println!(
            "pairs_1e7/{}/{n}: radix {:.1} ms, sort_unstable {:.1} ms, speedup {:.2}x (median of 3)",
            dist.name(),
            radix.as_secs_f64() * 1e3,
            std.as_secs_f64() * 1e3,
            std.as_secs_f64() / radix.as_secs_f64()
        );
    }
}

criterion_group!(benches, crossover, pairs, updates, times);

fn main() {
    // `cargo bench` passes `--bench` and an optional filter; honour the filter for 1e7 too.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    if filter
        .as_deref()
        .is_none_or(|f| "pairs_1e7".contains(f) || f.contains("pairs_1e7"))
    {
        pairs_1e7();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
