//! Progress tracking against from-scratch references: the fixed point of `reach_into` and
//! the input frontiers against sweeping every edge until nothing changes (random graphs with
//! loops and every kind of summary), and whole BFS runs, where the refresh of a node that did
//! not run (its pass-start pointstamps, not read again) is checked by `refresh` itself in
//! test builds, every frontier after every pass is checked to be a lower bound of the
//! fixed point recomputed from all pointstamps, and the output is checked against a BFS
//! computed naively at every time.

use super::super::column::{Column, NoCallbacks};
use super::super::plan::Plan;
use super::super::plans::{bfs as bfs_plan, BFS_CAPTURE};
use super::super::progress_graph::{ProgressGraph, Summary};
use super::super::Engine;
use crate::encoding::DType;
use crate::lattice::{Antichain, Time};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// The fixed point by sweeping every edge of every node until no sweep adds a time (the
/// algorithm `reach_into` replaced).
fn sweep_reach(
    ports: &[Vec<Vec<usize>>],
    summary: &dyn Fn(usize, usize) -> Summary,
    own: &[Antichain<Time>],
) -> Vec<Antichain<Time>> {
    let mut reach: Vec<Antichain<Time>> = own.to_vec();
    loop {
        let mut changed = false;
        for node in 0..ports.len() {
            for (port, ups) in ports[node].iter().enumerate() {
                for &u in ups {
                    if u == node {
                        continue;
                    }
                    for t in reach[u].elements().to_vec() {
                        if let Some(s) = summary(node, port).apply(&t) {
                            changed |= reach[node].insert(s);
                        }
                    }
                }
            }
        }
        if !changed {
            return reach;
        }
    }
}

/// The input frontier of `node`: every upstream time through its port's summary.
fn sweep_frontier_in(
    ports: &[Vec<Vec<usize>>],
    summary: &dyn Fn(usize, usize) -> Summary,
    reach: &[Antichain<Time>],
    node: usize,
) -> Antichain<Time> {
    let mut f = Antichain::new();
    for (port, ups) in ports[node].iter().enumerate() {
        for &u in ups {
            for t in reach[u].elements() {
                if let Some(s) = summary(node, port).apply(t) {
                    f.insert(s);
                }
            }
        }
    }
    f
}

fn t2(a: u64, b: u64) -> Time {
    Time::from_coords(&[a, b])
}

fn summary_strategy() -> impl Strategy<Value = Summary> {
    prop_oneof![
        3 => Just(Summary::Identity),
        2 => (1u64..6).prop_map(|m| Summary::Increment {
            coord: 1,
            max: if m == 5 { u64::MAX } else { m },
        }),
        1 => Just(Summary::Reset { coord: 1 }),
        1 => Just(Summary::Never),
    ]
}

/// A random graph: per node up to 3 ports of up to 3 upstream nodes each (any node,
/// itself included, so loops of every shape), a summary per port, and the node's own
/// pointstamps (2-D times).
#[allow(clippy::type_complexity)]
fn graph_strategy() -> impl Strategy<
    Value = (
        Vec<Vec<Vec<usize>>>,
        Vec<Vec<Summary>>,
        Vec<Antichain<Time>>,
    ),
> {
    (1usize..10).prop_flat_map(|n| {
        let node = (
            prop::collection::vec(
                (prop::collection::vec(0..n, 0..3), summary_strategy()),
                0..3,
            ),
            prop::collection::vec((0u64..5, 0u64..5), 0..3),
        );
        prop::collection::vec(node, n).prop_map(|nodes| {
            let mut ports = Vec::new();
            let mut sums = Vec::new();
            let mut own = Vec::new();
            for (ps, times) in nodes {
                ports.push(ps.iter().map(|(ups, _)| ups.clone()).collect());
                sums.push(ps.iter().map(|(_, s)| *s).collect());
                own.push(Antichain::from_iter_minimal(
                    times.into_iter().map(|(a, b)| t2(a, b)),
                ));
            }
            (ports, sums, own)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// `reach_into` (visits in plan order, a node again only when an edge into it added a
    /// time) equals sweeping every edge to the fixed point, also when its buffers hold an
    /// earlier result; input frontiers equal the sweep's.
    #[test]
    fn reach_matches_sweeping_fixed_point(
        (ports, sums, own) in graph_strategy(),
        (_, _, stale) in graph_strategy(),
    ) {
        let summary = |node: usize, port: usize| sums[node][port];
        let g = ProgressGraph::from_ports(&ports, summary);
        let want = sweep_reach(&ports, &summary, &own);
        let mut reach = stale.clone();
        let mut dirty = vec![false; 3];
        g.reach_into(&own, &mut reach, &mut dirty);
        reach.truncate(ports.len());
        prop_assert_eq!(&reach, &want);
        for node in 0..ports.len() {
            prop_assert_eq!(
                g.frontier_in(&reach, node),
                sweep_frontier_in(&ports, &summary, &want, node)
            );
        }
    }
}

#[test]
fn summaries_of_the_bfs_plan() {
    let plan = Plan::from_json(&bfs_plan()).expect("plan");
    // Node 5 is the variable (port 1 its feedback), 13 the leave; times are (round, iteration).
    assert_eq!(
        Summary::of(&plan, 5, 1),
        Summary::Increment {
            coord: 1,
            max: u64::MAX
        }
    );
    assert_eq!(Summary::of(&plan, 5, 0), Summary::Identity);
    assert_eq!(Summary::of(&plan, 13, 0), Summary::Reset { coord: 1 });
    assert_eq!(Summary::of(&plan, 12, 0), Summary::Identity);
    let inc = Summary::Increment { coord: 1, max: 3 };
    assert_eq!(inc.apply(&t2(7, 1)), Some(t2(7, 2)));
    assert_eq!(inc.apply(&t2(7, 2)), None);
    let unbounded = Summary::Increment {
        coord: 1,
        max: u64::MAX,
    };
    assert_eq!(unbounded.apply(&t2(7, u64::MAX - 1)), None);
    assert_eq!(unbounded.apply(&t2(7, u64::MAX)), None);
    assert_eq!(Summary::Reset { coord: 1 }.apply(&t2(7, 9)), Some(t2(7, 0)));
    assert_eq!(Summary::Never.apply(&t2(7, 9)), None);
}

fn int_col(v: &[i64]) -> Column {
    Column {
        dtype: DType::Int64,
        words: v.iter().map(|&x| x as u64).collect(),
    }
}

/// Every node's fixed point recomputed from all pointstamps now.
fn from_scratch(e: &Engine) -> Vec<Antichain<Time>> {
    let mut per_port = Vec::new();
    let own: Vec<Antichain<Time>> = (0..e.plan.nodes.len())
        .map(|node| {
            let mut o = Antichain::new();
            e.own_pointstamps(node, &mut per_port, &mut o);
            o
        })
        .collect();
    let plan = &e.plan;
    sweep_reach(&e.ports, &|node, port| Summary::of(plan, node, port), &own)
}

/// Distances from node 0 over the edges with a positive count.
fn naive_bfs(edges: &BTreeMap<(i64, i64), i64>) -> BTreeSet<(i64, i64)> {
    let mut dist = BTreeMap::from([(0i64, 0i64)]);
    let mut queue = VecDeque::from([0i64]);
    while let Some(u) = queue.pop_front() {
        let d = dist[&u];
        for (&(s, t), &c) in edges.range((u, i64::MIN)..=(u, i64::MAX)) {
            if s == u && c > 0 && !dist.contains_key(&t) {
                dist.insert(t, d + 1);
                queue.push_back(t);
            }
        }
    }
    dist.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// BFS over a random graph, one or two workers, updates in random batches run pass by
    /// pass: after every pass each frontier is at or below the fixed point of all current
    /// pointstamps, and the output at every time is the naive BFS of that time's edges.
    #[test]
    fn bfs_frontiers_are_lower_bounds_and_output_exact(
        workers in 1usize..3,
        nodes in 2i64..12,
        edges in prop::collection::vec((0i64..12, 0i64..12), 1..30),
        changes in prop::collection::vec(((0i64..12, 0i64..12), any::<bool>()), 1..40),
        batches in prop::collection::vec(1usize..8, 1..12),
    ) {
        let edges: Vec<(i64, i64)> = edges.iter().map(|&(s, d)| (s % nodes, d % nodes)).collect();
        let plan = Plan::from_json(&bfs_plan()).expect("plan");
        let mut e = Engine::new(plan, workers, Arc::new(NoCallbacks)).expect("engine");
        e.push(1, vec![int_col(&[0])], vec![Time::scalar(0)], vec![1]).unwrap();
        let (s, d): (Vec<i64>, Vec<i64>) = edges.iter().copied().unzip();
        e.push(0, vec![int_col(&s), int_col(&d)], vec![Time::scalar(0); s.len()], vec![1; s.len()])
            .unwrap();
        let mut live: BTreeMap<(i64, i64), i64> = BTreeMap::new();
        for &k in &edges {
            *live.entry(k).or_default() += 1;
        }
        let mut want = vec![naive_bfs(&live)];
        // Change `i` (at time i + 1) inserts its edge, or removes one live edge.
        let mut ups: Vec<((i64, i64), i64)> = Vec::new();
        for ((s, d), insert) in &changes {
            let k = (s % nodes, d % nodes);
            let k = if *insert { k } else {
                match live.iter().find(|(_, &c)| c > 0) {
                    Some((&k, _)) => k,
                    None => k,
                }
            };
            let diff = if *insert || live.get(&k).copied().unwrap_or(0) == 0 { 1 } else { -1 };
            *live.entry(k).or_default() += diff;
            ups.push((k, diff));
            want.push(naive_bfs(&live));
        }
        let mut out: BTreeMap<(i64, i64, u64), i64> = BTreeMap::new();
        let mut done = 0;
        let mut time = 1u64;
        for b in batches.iter().cycle() {
            let n = (*b).min(ups.len() - done);
            let chunk = &ups[done..done + n];
            let s: Vec<i64> = chunk.iter().map(|((s, _), _)| *s).collect();
            let d: Vec<i64> = chunk.iter().map(|((_, d), _)| *d).collect();
            let ts: Vec<Time> = (0..n).map(|i| Time::scalar(time + i as u64)).collect();
            let diffs: Vec<i64> = chunk.iter().map(|(_, c)| *c).collect();
            e.push(0, vec![int_col(&s), int_col(&d)], ts, diffs).unwrap();
            time += n as u64;
            e.advance_input(0, Time::scalar(time)).unwrap();
            e.advance_input(1, Time::scalar(time)).unwrap();
            let end = Time::scalar(time);
            let mut passes = 0;
            while !e.reached(&end) {
                prop_assert!(e.step().unwrap());
                passes += 1;
                prop_assert!(passes < 10_000);
                let exact = from_scratch(&e);
                for (node, fixed) in exact.iter().enumerate() {
                    for t in fixed.elements() {
                        prop_assert!(
                            e.reach_out[node].less_equal(t),
                            "node {} frontier {:?} above {:?} of the fixed point {:?}",
                            node, e.reach_out[node], t, fixed
                        );
                    }
                }
            }
            let c = e.capture_take(BFS_CAPTURE).unwrap();
            for i in 0..c.times.len() {
                let k = (
                    c.columns[0].words[i] as i64,
                    c.columns[1].words[i] as i64,
                    c.times[i].0[0],
                );
                *out.entry(k).or_default() += c.diffs[i];
            }
            done += n;
            if done == ups.len() {
                break;
            }
        }
        for (t, expect) in want.iter().enumerate() {
            let mut at: BTreeMap<(i64, i64), i64> = BTreeMap::new();
            for (&(node, dist, time), &diff) in &out {
                if time <= t as u64 {
                    *at.entry((node, dist)).or_default() += diff;
                }
            }
            let got: BTreeSet<(i64, i64)> =
                at.into_iter().filter(|(_, c)| *c != 0).map(|(k, c)| {
                    assert_eq!(c, 1, "{k:?} at time {t}");
                    k
                }).collect();
            prop_assert_eq!(&got, expect, "time {}", t);
        }
    }
}
