//! The differential-dataflow peer of `benches/sssp_side_by_side.py`: weighted
//! single-source shortest paths on differential-dataflow 0.26 / timely 0.32 from crates.io.
//!
//! `dd_sssp VARIANT GRAPH WEIGHTS M UPDATES`
//!
//! * `GRAPH` holds u32 little-endian `(src, dst)` pairs (`benches/gen_graph.py`), `WEIGHTS`
//!   one u32 little-endian weight per edge (`benches/sssp_side_by_side.py`).
//! * The first `M` edges are loaded at time 0 with the root, the source of edge `M - 1`, and
//!   run to completion (*compute*); then update `r` (0-based) adds edge `M + r` and removes
//!   edge `r` at time `r + 1`, all `UPDATES` fed together and run to completion (*update*).
//! * `VARIANT`: `plain` (every proposal at the iteration that produced it), `advanced` (each
//!   proposal's iteration coordinate set to `max(iteration, dist)`),
//!   `delayed` (advanced, then the `delay` operator below, which holds proposals by time and
//!   releases each time's bundle once the input frontier has passed it).
//!
//! Prints one line `RESULT {json}`: compute and update seconds, peak RSS (`VmHWM`) and the
//! final histogram of distances (`[[dist, nodes], ...]`), which the script compares with
//! ddflow's. Options: `-w W` worker threads.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use differential_dataflow::input::Input;
use differential_dataflow::operators::*;
use differential_dataflow::{AsCollection, VecCollection};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::probe::Handle;
use timely::dataflow::operators::vec::Map;
use timely::dataflow::operators::Capability;
use timely::order::Product;

type Node = u32;
type Dist = u32;
type Edge = (Node, (Node, Dist));
type Time = u64;
type Inner = Product<Time, u64>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Plain,
    Advanced,
    Delayed,
}

fn usage(msg: &str) -> ! {
    eprintln!("dd_sssp: {msg}\nusage: dd_sssp plain|advanced|delayed GRAPH WEIGHTS M UPDATES [-w W]");
    std::process::exit(2)
}

fn parse<T: std::str::FromStr>(s: &str) -> T {
    s.parse().unwrap_or_else(|_| usage(&format!("not a number: {s}")))
}

fn read_u32s(path: &str, need: usize) -> Vec<u32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| usage(&format!("cannot read {path}: {e}")));
    if bytes.len() < 4 * need {
        usage(&format!("{path} holds {} words, {need} needed", bytes.len() / 4));
    }
    (0..need).map(|i| u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().unwrap())).collect()
}

/// Sets each proposal's iteration coordinate to `max(iteration, dist)`: a proposal of
/// distance `d` is looked at in round `d`, not before.
fn advance<'scope>(
    proposals: VecCollection<'scope, Inner, (Node, Dist)>,
) -> VecCollection<'scope, Inner, (Node, Dist)> {
    proposals
        .inner
        .map_in_place(|((_, d), t, _)| t.inner = std::cmp::max(t.inner, *d as u64))
        .as_collection()
}

/// Record-level delay: holds each update under a capability for its own time and releases
/// the bundle of a time once the input frontier has passed it, so the next operator receives
/// every time's updates once, in one batch, and only when they can be acted on (timely 0.32
/// has no record-level `delay` of its own). Each activation
/// looks at each distinct held time once, however many updates it holds.
fn delay<'scope, D: Clone + 'static>(
    updates: VecCollection<'scope, Inner, D>,
) -> VecCollection<'scope, Inner, D> {
    updates
        .inner
        .unary_frontier(Pipeline, "Delay", |_cap, _info| {
            let mut held: BTreeMap<Inner, (Capability<Inner>, Vec<(D, Inner, isize)>)> =
                BTreeMap::new();
            move |(input, frontier), output| {
                input.for_each(|cap, data| {
                    for (d, t, r) in data.drain(..) {
                        match held.get_mut(&t) {
                            Some((_, v)) => v.push((d, t, r)),
                            None => {
                                let c = cap.delayed(&t, 0);
                                held.insert(t.clone(), (c, vec![(d, t, r)]));
                            }
                        }
                    }
                });
                let frontier = frontier.frontier();
                let ready: Vec<Inner> =
                    held.keys().filter(|t| !frontier.less_equal(t)).cloned().collect();
                for t in ready {
                    let (cap, mut data) = held.remove(&t).unwrap();
                    output.session(&cap).give_container(&mut data);
                }
            }
        })
        .as_collection()
}

/// Pairs (n, d): the least total weight of a path from a root to n.
fn sssp<'scope>(
    edges: VecCollection<'scope, Time, Edge>,
    roots: VecCollection<'scope, Time, Node>,
    variant: Variant,
) -> VecCollection<'scope, Time, (Node, Dist)> {
    let nodes = roots.map(|x| (x, 0));
    nodes.clone().iterate(|scope, inner| {
        let nodes = nodes.enter(scope);
        let edges = edges.enter(scope);
        let proposals = inner.join_map(edges, |_k, d, (n, w)| (*n, d + w)).concat(nodes);
        let proposals = match variant {
            Variant::Plain => proposals,
            Variant::Advanced => advance(proposals),
            Variant::Delayed => delay(advance(proposals)),
        };
        proposals.reduce(|_, s, t| t.push((*s[0].0, 1)))
    })
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(-1.0, |kb| kb / 1024.0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut workers = 1usize;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-w" | "--workers" => workers = parse(&args.next().unwrap_or_else(|| usage("-w needs a value"))),
            _ if arg.starts_with('-') => usage(&format!("unknown option {arg}")),
            _ => positional.push(arg),
        }
    }
    if positional.len() != 5 {
        usage("five arguments needed");
    }
    let variant = match positional[0].as_str() {
        "plain" => Variant::Plain,
        "advanced" => Variant::Advanced,
        "delayed" => Variant::Delayed,
        other => usage(&format!("unknown variant {other}")),
    };
    let (m, updates): (usize, usize) = (parse(&positional[3]), parse(&positional[4]));
    if m == 0 || updates > m {
        usage("need 0 < UPDATES <= M");
    }
    let words = read_u32s(&positional[1], 2 * (m + updates));
    let weights = read_u32s(&positional[2], m + updates);
    let edges: Arc<Vec<Edge>> =
        Arc::new((0..m + updates).map(|i| (words[2 * i], (words[2 * i + 1], weights[i]))).collect());
    drop((words, weights));
    let root = edges[m - 1].0;

    let config = if workers <= 1 { timely::Config::thread() } else { timely::Config::process(workers) };
    let guards = timely::execute(config, move |worker| {
        let (index, peers) = (worker.index(), worker.peers());
        let out: Rc<RefCell<BTreeMap<Dist, isize>>> = Rc::new(RefCell::new(BTreeMap::new()));
        let probe = Handle::new();
        let sink = out.clone();
        let (mut roots, mut graph) = worker.dataflow::<Time, _, _>(|scope| {
            let (root_input, roots) = scope.new_collection();
            let (edge_input, graph) = scope.new_collection();
            sssp(graph, roots, variant)
                .map(|(_, d)| d)
                .inspect(move |(d, _t, r)| *sink.borrow_mut().entry(*d).or_insert(0) += *r)
                .probe_with(&probe);
            (root_input, edge_input)
        });

        let start = Instant::now();
        if index == 0 {
            roots.insert(root);
        }
        roots.close();
        for i in (index..m).step_by(peers) {
            graph.insert(edges[i]);
        }
        graph.advance_to(1);
        graph.flush();
        worker.step_while(|| probe.less_than(graph.time()));
        let compute = start.elapsed().as_secs_f64();

        let start = Instant::now();
        for r in 0..updates {
            graph.advance_to(r as Time + 1);
            if r % peers == index {
                graph.insert(edges[m + r]);
                graph.remove(edges[r]);
            }
        }
        graph.advance_to(updates as Time + 1);
        graph.flush();
        worker.step_while(|| probe.less_than(graph.time()));
        let update = start.elapsed().as_secs_f64();
        let hist = out.take();
        (compute, update, hist)
    })
    .expect("timely failed to start");

    let (mut compute, mut update) = (0.0f64, 0.0f64);
    let mut hist: BTreeMap<Dist, isize> = BTreeMap::new();
    for result in guards.join() {
        let (c, u, h) = result.expect("worker failed");
        compute = compute.max(c);
        update = update.max(u);
        for (d, n) in h {
            *hist.entry(d).or_insert(0) += n;
        }
    }
    let final_hist: Vec<String> =
        hist.iter().filter(|(_, n)| **n != 0).map(|(d, n)| format!("[{d},{n}]")).collect();
    let reached: isize = hist.values().sum();
    println!(
        "RESULT {{\"system\":\"differential-dataflow 0.26.0\",\"variant\":\"{}\",\"workers\":{workers},\
         \"compute_s\":{compute:.6},\"update_s\":{update:.6},\"updates\":{updates},\"reached\":{reached},\
         \"peak_rss_mb\":{:.1},\"histogram\":[{}]}}",
        positional[0],
        peak_rss_mb(),
        final_hist.join(",")
    );
    std::io::stdout().flush().ok();
}
