//! The differential-dataflow peer of `benches/attach_side_by_side.py`: BFS from
//! scratch vs BFS attached to a live, already-built edge arrangement, on differential-dataflow
//! 0.26 / timely 0.32 from crates.io. Graph files hold u32 little-endian `(src, dst)` pairs
//! (`benches/gen_graph.py`); BFS runs from node 0 and reports the histogram of distances.
//!
//! * `scratch FILE M`: one dataflow arranges the first `M` edges by source and runs BFS over
//!   the arrangement; *bfs* = from the first edge to the BFS being complete.
//! * `attach FILE M`: a first dataflow arranges the edges and keeps the trace (*arrange*);
//!   then a second dataflow imports the trace (`TraceAgent::import`) and runs the same BFS on
//!   it (*bfs*: from building the second dataflow to its BFS being complete).
//! * `latency FILE M SMALL SMALL_M SAMPLES`: a first dataflow holds the arranged large graph
//!   (`FILE`, `M` edges) and a small BFS job (`SMALL`, `SMALL_M` edges, distance counts,
//!   update `r` swaps edge `r` for edge `SMALL_M + r`, modulo the update edges in `SMALL`, the
//!   next pass swapping them back). `SAMPLES` single updates to the
//!   small job, each run to completion and timed (*before*); then a second dataflow imports
//!   the large graph's trace and starts BFS on it, and single updates to the small job go on,
//!   each timed, until the large BFS is complete (*during*); then `SAMPLES` more (*after*).
//!
//! Prints one line `RESULT {json}`. Option `--latencies OUT`: writes every sample as
//! little-endian u64 `(phase, ns)` pairs, phase 0/1/2 = before/during/after.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;
use std::time::Instant;

use differential_dataflow::input::Input;
use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::operators::*;
use differential_dataflow::trace::implementations::ValSpine;
use differential_dataflow::VecCollection;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::Probe;

type Node = u32;
type Edge = (Node, Node);
type Time = u64;
type EdgeTrace = TraceAgent<ValSpine<Node, Node, Time, isize>>;
type Hist = Rc<RefCell<BTreeMap<u32, isize>>>;

fn usage(msg: &str) -> ! {
    eprintln!(
        "dd_attach: {msg}\nusage: dd_attach scratch|attach FILE M\n       \
         dd_attach latency FILE M SMALL SMALL_M SAMPLES [--latencies OUT]"
    );
    std::process::exit(2)
}

fn parse<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| usage(&format!("not a number: {s}")))
}

fn read_edges(path: &str, need: usize) -> Vec<Edge> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| usage(&format!("cannot read {path}: {e}")));
    if bytes.len() < 8 * need {
        usage(&format!("{path} holds {} edges, {need} needed", bytes.len() / 8));
    }
    let word = |i: usize| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap());
    (0..need).map(|i| (word(2 * i), word(2 * i + 1))).collect()
}

/// BFS distances `(n, d)` over edges arranged by source (the attached computation).
fn bfs_arranged<'scope>(
    edges: Arranged<'scope, EdgeTrace>,
    roots: VecCollection<'scope, Time, Node>,
) -> VecCollection<'scope, Time, (Node, u32)> {
    let nodes = roots.map(|x| (x, 0u32));
    nodes.clone().iterate(|scope, inner| {
        let edges = edges.enter(scope);
        let nodes = nodes.enter(scope);
        inner
            .join_core(edges, |_k, l, d| Some((*d, l + 1)))
            .concat(nodes)
            .reduce(|_, s, t| t.push((*s[0].0, 1)))
    })
}

/// BFS distances over an edge collection (the shape of DD's examples/bfs.rs), for the small job.
fn bfs<'scope>(
    edges: VecCollection<'scope, Time, Edge>,
    roots: VecCollection<'scope, Time, Node>,
) -> VecCollection<'scope, Time, (Node, u32)> {
    let nodes = roots.map(|x| (x, 0u32));
    nodes.clone().iterate(|scope, inner| {
        let nodes = nodes.enter(scope);
        let edges = edges.enter(scope);
        inner
            .join_map(edges, |_k, l, d| (*d, l + 1))
            .concat(nodes)
            .reduce(|_, s, t| t.push((*s[0].0, 1)))
    })
}

/// Accumulates the multiset of distances (the distance histogram) into `hist`.
fn histogram<'scope>(dists: VecCollection<'scope, Time, (Node, u32)>, hist: Hist, probe: &Handle<Time>) {
    dists
        .map(|(_, d)| d)
        .inspect(move |(d, _t, r)| *hist.borrow_mut().entry(*d).or_insert(0) += *r)
        .probe_with(probe);
}

fn hist_json(hist: &Hist) -> String {
    let h = hist.borrow();
    let cells: Vec<String> = h.iter().filter(|(_, n)| **n != 0).map(|(d, n)| format!("[{d},{n}]")).collect();
    format!("[{}]", cells.join(","))
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(-1.0, |kb| kb / 1024.0)
}

fn run_bfs(attached: bool, path: &str, m: usize) {
    let edges = read_edges(path, m);
    timely::execute(timely::Config::thread(), move |worker| {
        let hist: Hist = Rc::new(RefCell::new(BTreeMap::new()));
        let probe = Handle::new();
        let start = Instant::now();
        let (arrange_s, bfs_s) = if attached {
            // The live dataflow: edges arranged by source, the trace kept.
            let arr_probe = Handle::new();
            let (mut graph, mut trace) = worker.dataflow::<Time, _, _>(|scope| {
                let (input, graph) = scope.new_collection::<Edge, isize>();
                let arranged = graph.arrange_by_key();
                arranged.stream.clone().probe_with(&arr_probe);
                (input, arranged.trace)
            });
            for e in edges.iter() {
                graph.insert(*e);
            }
            graph.advance_to(1);
            graph.flush();
            worker.step_while(|| arr_probe.less_than(graph.time()));
            let arrange_s = start.elapsed().as_secs_f64();
            // Attached later: BFS over the imported trace.
            let start = Instant::now();
            let sink = hist.clone();
            let mut roots = worker.dataflow::<Time, _, _>(|scope| {
                let edges = trace.import(scope);
                let (input, roots) = scope.new_collection();
                histogram(bfs_arranged(edges, roots), sink, &probe);
                input
            });
            roots.advance_to(1);
            roots.insert(0);
            roots.advance_to(2);
            roots.flush();
            graph.advance_to(2);
            graph.flush();
            worker.step_while(|| probe.less_than(roots.time()));
            (arrange_s, start.elapsed().as_secs_f64())
        } else {
            let sink = hist.clone();
            let (mut graph, mut roots) = worker.dataflow::<Time, _, _>(|scope| {
                let (input, graph) = scope.new_collection::<Edge, isize>();
                let (root_input, roots) = scope.new_collection();
                histogram(bfs_arranged(graph.arrange_by_key(), roots), sink, &probe);
                (input, root_input)
            });
            for e in edges.iter() {
                graph.insert(*e);
            }
            roots.insert(0);
            graph.advance_to(1);
            roots.advance_to(1);
            graph.flush();
            roots.flush();
            worker.step_while(|| probe.less_than(roots.time()));
            (0.0, start.elapsed().as_secs_f64())
        };
        let reached: isize = hist.borrow().values().sum();
        println!(
            "RESULT {{\"system\":\"differential-dataflow 0.26.0\",\"mode\":\"{}\",\"arrange_s\":{arrange_s:.6},\
             \"bfs_s\":{bfs_s:.6},\"reached\":{reached},\"peak_rss_mb\":{:.1},\"histogram\":{}}}",
            if attached { "attach" } else { "scratch" },
            peak_rss_mb(),
            hist_json(&hist)
        );
        std::io::stdout().flush().ok();
    })
    .expect("timely failed to start");
}

fn quantiles(lat: &[u64]) -> String {
    let mut s = lat.to_vec();
    s.sort_unstable();
    let q = |f: f64| s.get(((s.len() as f64 - 1.0) * f).round() as usize).copied().unwrap_or(0);
    format!(
        "{{\"n\":{},\"p50_ns\":{},\"p99_ns\":{},\"max_ns\":{}}}",
        s.len(),
        q(0.5),
        q(0.99),
        s.last().copied().unwrap_or(0)
    )
}

fn run_latency(p: &[String], latencies: Option<String>) {
    let (path, m, small_path, small_m, samples): (String, usize, String, usize, usize) =
        (p[0].clone(), parse(&p[1]), p[2].clone(), parse(&p[3]), parse(&p[4]));
    let big = read_edges(&path, m);
    let small_len = std::fs::metadata(&small_path).map(|md| md.len() as usize / 8).unwrap_or(0);
    if small_len <= small_m {
        usage(&format!("{small_path} holds no update edges after the first {small_m}"));
    }
    let small = read_edges(&small_path, small_len);
    let small_u = small_len - small_m;
    timely::execute(timely::Config::thread(), move |worker| {
        let small_probe = Handle::new();
        let arr_probe = Handle::new();
        let (mut graph, mut trace, mut sgraph, mut sroots) = worker.dataflow::<Time, _, _>(|scope| {
            let (input, graph) = scope.new_collection::<Edge, isize>();
            let arranged = graph.arrange_by_key();
            arranged.stream.clone().probe_with(&arr_probe);
            let (sinput, sgraph) = scope.new_collection::<Edge, isize>();
            let (rinput, sroots) = scope.new_collection();
            bfs(sgraph, sroots).map(|(_, d)| d).count().probe_with(&small_probe);
            (input, arranged.trace, sinput, rinput)
        });
        for e in big.iter() {
            graph.insert(*e);
        }
        for e in small[..small_m].iter() {
            sgraph.insert(*e);
        }
        sroots.insert(0);
        sroots.close();
        graph.advance_to(1);
        sgraph.advance_to(1);
        graph.flush();
        sgraph.flush();
        worker.step_while(|| arr_probe.less_than(graph.time()) || small_probe.less_than(sgraph.time()));

        let mut lat: Vec<(u64, u64)> = Vec::new();
        let mut r = 0usize;
        // One single update to the small job at time r + 1, run to completion; its latency.
        let one = |worker: &mut timely::worker::Worker,
                       graph: &mut differential_dataflow::input::InputSession<Time, Edge, isize>,
                       sgraph: &mut differential_dataflow::input::InputSession<Time, Edge, isize>,
                       r: &mut usize| {
            let t0 = Instant::now();
            // Update r swaps edge i for edge SMALL_M + i; the next pass over the update edges
            // swaps them back, so multiplicities stay 0 or 1.
            let i = *r % small_u;
            let (add, del) = (small[small_m + i], small[i]);
            let (add, del) = if (*r / small_u) % 2 == 0 { (add, del) } else { (del, add) };
            sgraph.insert(add);
            sgraph.remove(del);
            *r += 1;
            sgraph.advance_to(*r as Time + 1);
            graph.advance_to(*r as Time + 1);
            sgraph.flush();
            graph.flush();
            worker.step_while(|| small_probe.less_than(sgraph.time()));
            t0.elapsed().as_nanos() as u64
        };
        for _ in 0..samples {
            let ns = one(worker, &mut graph, &mut sgraph, &mut r);
            lat.push((0, ns));
        }
        // The large BFS attaches to the live arrangement.
        let big_probe = Handle::new();
        let hist: Hist = Rc::new(RefCell::new(BTreeMap::new()));
        let sink = hist.clone();
        let attach_start = Instant::now();
        let mut roots = worker.dataflow::<Time, _, _>(|scope| {
            let edges = trace.import(scope);
            let (input, roots) = scope.new_collection();
            histogram(bfs_arranged(edges, roots), sink, &big_probe);
            input
        });
        let t_attach = r as Time + 1;
        roots.advance_to(t_attach);
        roots.insert(0);
        roots.close();
        let mut attach_s = 0.0;
        loop {
            let ns = one(worker, &mut graph, &mut sgraph, &mut r);
            lat.push((1, ns));
            if !big_probe.less_than(&(t_attach + 1)) {
                attach_s = attach_start.elapsed().as_secs_f64();
                break;
            }
            if lat.len() > 10_000_000 {
                break;
            }
        }
        for _ in 0..samples {
            let ns = one(worker, &mut graph, &mut sgraph, &mut r);
            lat.push((2, ns));
        }
        if let Some(path) = &latencies {
            let buf: Vec<u8> = lat.iter().flat_map(|(p, v)| [p.to_le_bytes(), v.to_le_bytes()]).flatten().collect();
            std::fs::write(path, buf).unwrap_or_else(|e| usage(&format!("cannot write {path}: {e}")));
        }
        let phase = |k: u64| -> Vec<u64> { lat.iter().filter(|(p, _)| *p == k).map(|(_, v)| *v).collect() };
        let reached: isize = hist.borrow().values().sum();
        println!(
            "RESULT {{\"system\":\"differential-dataflow 0.26.0\",\"mode\":\"latency\",\"attach_s\":{attach_s:.6},\
             \"before\":{},\"during\":{},\"after\":{},\"reached\":{reached},\"peak_rss_mb\":{:.1},\"histogram\":{}}}",
            quantiles(&phase(0)),
            quantiles(&phase(1)),
            quantiles(&phase(2)),
            peak_rss_mb(),
            hist_json(&hist)
        );
        std::io::stdout().flush().ok();
    })
    .expect("timely failed to start");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| usage("missing mode"));
    let mut positional = Vec::new();
    let mut latencies = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--latencies" => latencies = Some(args.next().unwrap_or_else(|| usage("--latencies needs a value"))),
            _ if arg.starts_with('-') => usage(&format!("unknown option {arg}")),
            _ => positional.push(arg),
        }
    }
    match (mode.as_str(), positional.len()) {
        ("scratch", 2) => run_bfs(false, &positional[0], parse(&positional[1])),
        ("attach", 2) => run_bfs(true, &positional[0], parse(&positional[1])),
        ("latency", 5) => run_latency(&positional, latencies),
        _ => usage("bad mode or arguments"),
    }
}
