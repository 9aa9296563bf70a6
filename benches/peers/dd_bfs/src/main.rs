//! The differential-dataflow peer of `benches/side_by_side.py` and `benches/latency_cdf.py`.
//!
//! Runs, on differential-dataflow 0.26 / timely 0.32 from crates.io, the jobs that ddflow runs
//! in `benches/peers/ddflow_peer.py`, on the same input:
//!
//! * `bfs FILE M UPDATES BATCH`: distance counts, `bfs(edges, roots).map(|(_, d)| d).count()`
//!   from node 0. `FILE` holds u32 little-endian `(src, dst)` pairs (`benches/gen_graph.py`);
//!   the first `M` edges are loaded at time 0, then update `r` (0-based) adds edge `M + r` and
//!   removes edge `r` at time `r + 1`, in batches of `BATCH` updates, each batch run to
//!   completion.
//! * `count TIMES`: the count micro-case. `RECORDS` records `(i % KEYS, i)` at time 0, then one
//!   batch of `TIMES` distinct times; at time `t` (1-based) key `k` gets the new record
//!   `(k, RECORDS + (t - 1) * KEYS + k)`; `recs.map(|(k, _)| k).count()` run to completion.
//! * `latency FILE M PRIOR SAMPLES`: the BFS job after `PRIOR` updates (batches of
//!   `--prior-batch`), then `SAMPLES` single updates, each run to completion and timed.
//!
//! Options: `-w W` worker threads; `--history OUT` writes the consolidated output history as
//! little-endian i64 rows `(record, count, time, diff)`; `--records N`, `--keys K` (count);
//! `--prior-batch B`, `--latencies OUT` (latency: u64 ns per sample). Prints one line
//! `RESULT {json}` with the timings and the final output (for `bfs`: the distance histogram).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use differential_dataflow::input::Input;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::*;
use differential_dataflow::VecCollection;
use timely::dataflow::operators::probe::Handle;

type Node = u32;
type Edge = (Node, Node);
type Time = u64;
/// One output change: (record, count, time, diff).
type Change = (i64, i64, u64, i64);

/// Command-line options shared by the modes.
struct Opts {
    mode: String,
    positional: Vec<String>,
    workers: usize,
    history: Option<String>,
    records: usize,
    keys: usize,
    prior_batch: usize,
    latencies: Option<String>,
}

fn parse_opts() -> Opts {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| usage("missing mode"));
    let mut opts = Opts {
        mode,
        positional: Vec::new(),
        workers: 1,
        history: None,
        records: 100_000,
        keys: 20,
        prior_batch: 1_000,
        latencies: None,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().unwrap_or_else(|| usage(&format!("{name} needs a value")));
        match arg.as_str() {
            "-w" | "--workers" => opts.workers = parse(&value("-w")),
            "--history" => opts.history = Some(value("--history")),
            "--records" => opts.records = parse(&value("--records")),
            "--keys" => opts.keys = parse(&value("--keys")),
            "--prior-batch" => opts.prior_batch = parse(&value("--prior-batch")),
            "--latencies" => opts.latencies = Some(value("--latencies")),
            _ if arg.starts_with('-') => usage(&format!("unknown option {arg}")),
            _ => opts.positional.push(arg),
        }
    }
    opts
}

fn usage(msg: &str) -> ! {
    eprintln!(
        "dd_bfs: {msg}\nusage: dd_bfs bfs FILE M UPDATES BATCH [-w W] [--history OUT]\n       \
         dd_bfs count TIMES [-w W] [--records N] [--keys K] [--history OUT]\n       \
         dd_bfs latency FILE M PRIOR SAMPLES [-w W] [--prior-batch B] [--latencies OUT]"
    );
    std::process::exit(2)
}

fn parse<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| usage(&format!("not a number: {s}")))
}

fn positional(opts: &Opts, n: usize) -> &[String] {
    if opts.positional.len() != n {
        usage(&format!("{} takes {n} arguments", opts.mode));
    }
    &opts.positional
}

fn config(workers: usize) -> timely::Config {
    if workers <= 1 {
        timely::Config::thread()
    } else {
        timely::Config::process(workers)
    }
}

/// Reads `need` edges from a file of u32 little-endian (src, dst) pairs.
fn read_edges(path: &str, need: usize) -> Vec<Edge> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| usage(&format!("cannot read {path}: {e}")));
    if bytes.len() < 8 * need {
        usage(&format!("{path} holds {} edges, {need} needed", bytes.len() / 8));
    }
    let word = |i: usize| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap());
    (0..need).map(|i| (word(2 * i), word(2 * i + 1))).collect()
}

/// Pairs (n, d): node n is reached from a root in d steps (the shape of DD's examples/bfs.rs).
fn bfs<'scope, T>(
    edges: VecCollection<'scope, T, Edge>,
    roots: VecCollection<'scope, T, Node>,
) -> VecCollection<'scope, T, (Node, u32)>
where
    T: timely::progress::Timestamp + Lattice + Ord,
{
    let nodes = roots.map(|x| (x, 0));
    nodes.clone().iterate(|scope, inner| {
        let nodes = nodes.enter(scope);
        let edges = edges.enter(scope);
        inner
            .join_map(edges, |_k, l, d| (*d, l + 1))
            .concat(nodes)
            .reduce(|_, s, t| t.push((*s[0].0, 1)))
    })
}

/// Sorts changes by (time, record, count), sums diffs of equal (record, count, time), drops zeros.
fn consolidate(mut changes: Vec<Change>) -> Vec<Change> {
    changes.sort_by_key(|&(r, c, t, _)| (t, r, c));
    let mut out: Vec<Change> = Vec::with_capacity(changes.len());
    for (r, c, t, d) in changes {
        match out.last_mut() {
            Some(last) if (last.0, last.1, last.2) == (r, c, t) => last.3 += d,
            _ => out.push((r, c, t, d)),
        }
        if out.last().is_some_and(|l| l.3 == 0) {
            out.pop();
        }
    }
    out
}

/// The accumulated output at the end: (record, count) -> multiplicity, zeros dropped.
fn final_state(changes: &[Change]) -> Vec<(i64, i64, i64)> {
    let mut acc: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for &(r, c, _, d) in changes {
        *acc.entry((r, c)).or_insert(0) += d;
    }
    acc.into_iter().filter(|&(_, m)| m != 0).map(|((r, c), m)| (r, c, m)).collect()
}

fn write_history(path: &str, changes: &[Change]) {
    let mut buf = Vec::with_capacity(changes.len() * 32);
    for &(r, c, t, d) in changes {
        for v in [r, c, t as i64, d] {
            buf.extend_from_slice(&v.to_le_bytes());
        }
    }
    std::fs::write(path, buf).unwrap_or_else(|e| usage(&format!("cannot write {path}: {e}")));
}

/// What each worker hands back: load time, update time, its share of the output changes.
type WorkerResult = (Duration, Duration, Vec<Change>);

fn join_workers(guards: timely::communication::WorkerGuards<WorkerResult>) -> (f64, f64, Vec<Change>) {
    let mut load: f64 = 0.0;
    let mut update: f64 = 0.0;
    let mut changes = Vec::new();
    for result in guards.join() {
        let (l, u, mut c) = result.expect("worker failed");
        load = load.max(l.as_secs_f64());
        update = update.max(u.as_secs_f64());
        changes.append(&mut c);
    }
    (load, update, consolidate(changes))
}

/// The peak resident set size of this process in MB (`VmHWM`, which starts afresh at `exec`,
/// unlike the parent's `wait4` figure, which also covers the forking parent's pages).
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(-1.0, |kb| kb / 1024.0)
}

fn report(mode: &str, workers: usize, load: f64, update: f64, units: usize, extra: &str, out: &[Change]) {
    let state = final_state(out);
    let state_json: Vec<String> = state.iter().map(|(r, c, m)| format!("[{r},{c},{m}]")).collect();
    let rate = if update > 0.0 { units as f64 / update } else { f64::INFINITY };
    println!(
        "RESULT {{\"system\":\"differential-dataflow 0.26.0\",\"mode\":\"{mode}\",\"workers\":{workers},\
         \"load_s\":{load:.6},\"update_s\":{update:.6},\"updates\":{units},\"updates_per_s\":{rate:.1},\
         \"changes\":{},\"peak_rss_mb\":{:.1},\"final\":[{}]{extra}}}",
        out.len(),
        peak_rss_mb(),
        state_json.join(",")
    );
    std::io::stdout().flush().ok();
}

fn run_bfs(opts: &Opts) {
    let p = positional(opts, 4);
    let (path, m, updates, batch): (String, usize, usize, usize) =
        (p[0].clone(), parse(&p[1]), parse(&p[2]), parse(&p[3]));
    if batch == 0 {
        usage("BATCH must be positive");
    }
    let edges = Arc::new(read_edges(&path, m + updates));
    let guards = timely::execute(config(opts.workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let out: Rc<RefCell<Vec<Change>>> = Rc::new(RefCell::new(Vec::new()));
        let probe = Handle::new();
        let sink = out.clone();
        let (mut roots, mut graph) = worker.dataflow::<Time, _, _>(|scope| {
            let (root_input, roots) = scope.new_collection();
            let (edge_input, graph) = scope.new_collection();
            bfs(graph, roots)
                .map(|(_, d)| d)
                .count()
                .inspect(move |((d, c), t, r)| {
                    sink.borrow_mut().push((*d as i64, *c as i64, *t, *r as i64))
                })
                .probe_with(&probe);
            (root_input, edge_input)
        });

        let start = Instant::now();
        if index == 0 {
            roots.insert(0);
        }
        roots.close();
        for i in (index..m).step_by(peers) {
            graph.insert(edges[i]);
        }
        graph.advance_to(1);
        graph.flush();
        worker.step_while(|| probe.less_than(graph.time()));
        let load = start.elapsed();

        let start = Instant::now();
        let mut lo = 0;
        while lo < updates {
            let hi = (lo + batch).min(updates);
            for r in lo..hi {
                graph.advance_to(r as Time + 1);
                if r % peers == index {
                    graph.insert(edges[m + r]);
                    graph.remove(edges[r]);
                }
            }
            graph.advance_to(hi as Time + 1);
            graph.flush();
            worker.step_while(|| probe.less_than(graph.time()));
            lo = hi;
        }
        let update = start.elapsed();
        let changes = out.take();
        (load, update, changes)
    })
    .expect("timely failed to start");
    let (load, update, out) = join_workers(guards);
    if let Some(h) = &opts.history {
        write_history(h, &out);
    }
    report("bfs", opts.workers, load, update, updates, "", &out);
}

fn run_count(opts: &Opts) {
    let p = positional(opts, 1);
    let times: usize = parse(&p[0]);
    let (records, keys) = (opts.records, opts.keys);
    if keys == 0 {
        usage("--keys must be positive");
    }
    let guards = timely::execute(config(opts.workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let out: Rc<RefCell<Vec<Change>>> = Rc::new(RefCell::new(Vec::new()));
        let probe = Handle::new();
        let sink = out.clone();
        let mut input = worker.dataflow::<Time, _, _>(|scope| {
            let (input, recs) = scope.new_collection::<(u64, u64), isize>();
            recs.map(|(k, _)| k)
                .count()
                .inspect(move |((k, c), t, r)| {
                    sink.borrow_mut().push((*k as i64, *c as i64, *t, *r as i64))
                })
                .probe_with(&probe);
            input
        });

        let start = Instant::now();
        for i in (index..records).step_by(peers) {
            input.insert(((i % keys) as u64, i as u64));
        }
        input.advance_to(1);
        input.flush();
        worker.step_while(|| probe.less_than(input.time()));
        let load = start.elapsed();

        let start = Instant::now();
        for t in 1..=times {
            input.advance_to(t as Time);
            for k in (index..keys).step_by(peers) {
                input.insert((k as u64, (records + (t - 1) * keys + k) as u64));
            }
        }
        input.advance_to(times as Time + 1);
        input.flush();
        worker.step_while(|| probe.less_than(input.time()));
        let update = start.elapsed();
        let changes = out.take();
        (load, update, changes)
    })
    .expect("timely failed to start");
    let (load, update, out) = join_workers(guards);
    if let Some(h) = &opts.history {
        write_history(h, &out);
    }
    let n = times * keys;
    let extra = format!(",\"times\":{times},\"ns_per_update\":{:.1}", update * 1e9 / n as f64);
    report("count", opts.workers, load, update, n, &extra, &out);
}

fn run_latency(opts: &Opts) {
    let p = positional(opts, 4);
    let (path, m, prior, samples): (String, usize, usize, usize) =
        (p[0].clone(), parse(&p[1]), parse(&p[2]), parse(&p[3]));
    let prior_batch = opts.prior_batch.max(1);
    let edges = Arc::new(read_edges(&path, m + prior + samples));
    let guards = timely::execute(config(opts.workers), move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let probe = Handle::new();
        let (mut roots, mut graph) = worker.dataflow::<Time, _, _>(|scope| {
            let (root_input, roots) = scope.new_collection();
            let (edge_input, graph) = scope.new_collection();
            bfs(graph, roots).map(|(_, d)| d).count().probe_with(&probe);
            (root_input, edge_input)
        });
        if index == 0 {
            roots.insert(0);
        }
        roots.close();
        for i in (index..m).step_by(peers) {
            graph.insert(edges[i]);
        }
        graph.advance_to(1);
        graph.flush();
        worker.step_while(|| probe.less_than(graph.time()));
        let start = Instant::now();
        let mut lo = 0;
        while lo < prior {
            let hi = (lo + prior_batch).min(prior);
            for r in lo..hi {
                graph.advance_to(r as Time + 1);
                if r % peers == index {
                    graph.insert(edges[m + r]);
                    graph.remove(edges[r]);
                }
            }
            graph.advance_to(hi as Time + 1);
            graph.flush();
            worker.step_while(|| probe.less_than(graph.time()));
            lo = hi;
        }
        let prior_time = start.elapsed();
        let mut lat = Vec::with_capacity(samples);
        for r in prior..prior + samples {
            let t0 = Instant::now();
            if r % peers == index {
                graph.insert(edges[m + r]);
                graph.remove(edges[r]);
            }
            graph.advance_to(r as Time + 2);
            graph.flush();
            worker.step_while(|| probe.less_than(graph.time()));
            lat.push(t0.elapsed().as_nanos() as u64);
        }
        (prior_time, lat)
    })
    .expect("timely failed to start");
    let results: Vec<(Duration, Vec<u64>)> =
        guards.join().into_iter().map(|r| r.expect("worker failed")).collect();
    // A sample is complete when every worker is done with it: the slowest worker's time.
    let mut lat = vec![0u64; samples];
    for (_, l) in &results {
        for (a, b) in lat.iter_mut().zip(l) {
            *a = (*a).max(*b);
        }
    }
    let prior_s = results.iter().map(|(d, _)| d.as_secs_f64()).fold(0.0, f64::max);
    if let Some(path) = &opts.latencies {
        let buf: Vec<u8> = lat.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(path, buf).unwrap_or_else(|e| usage(&format!("cannot write {path}: {e}")));
    }
    let mut sorted = lat.clone();
    sorted.sort_unstable();
    let q = |f: f64| sorted.get(((sorted.len() as f64 - 1.0) * f).round() as usize).copied().unwrap_or(0);
    println!(
        "RESULT {{\"system\":\"differential-dataflow 0.26.0\",\"mode\":\"latency\",\"workers\":{},\
         \"prior\":{prior},\"prior_s\":{prior_s:.6},\"samples\":{samples},\"p50_ns\":{},\"p99_ns\":{},\"peak_rss_mb\":{:.1}}}",
        opts.workers,
        q(0.5),
        q(0.99),
        peak_rss_mb()
    );
}

fn main() {
    let opts = parse_opts();
    match opts.mode.as_str() {
        "bfs" => run_bfs(&opts),
        "count" => run_count(&opts),
        "latency" => run_latency(&opts),
        other => usage(&format!("unknown mode {other}")),
    }
}
