//! The dataflow's edges as progress tracking reads them, built once per plan: for each
//! edge the path summary of the input port it enters, as a small value ([`Summary`]) that
//! applies to a time without looking at the plan; and the frontier fixed point over them.
//!
//! A pass reads every edge several times (the fixed point at its start, each node's input
//! frontier, the refresh after each node), so the per-edge work is kept to applying a
//! summary and inserting into an antichain.

use super::plan::{Op, Plan};
use crate::lattice::{Antichain, Time};

/// How a time changes when it enters one input port of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Summary {
    /// Unchanged (every port but the two below).
    Identity,
    /// `variable`'s feedback port: +1 on the scope's iteration coordinate `coord`; a time
    /// whose next iteration reaches `max` (the scope's `max_iterations`) does not pass.
    Increment { coord: usize, max: u64 },
    /// `leave`: the inner scope's iteration coordinate `coord` reset to zero.
    Reset { coord: usize },
    /// Nothing passes (a feedback or `leave` port outside any iterate scope).
    Never,
}

impl Summary {
    /// The summary of input `port` of `node`.
    pub fn of(plan: &Plan, node: usize, port: usize) -> Summary {
        let n = &plan.nodes[node];
        match &n.op {
            Op::Variable { .. } if port == 1 => match plan.iter_coord(n.scope) {
                Some(coord) => Summary::Increment {
                    coord,
                    max: plan.scopes[n.scope].max_iterations.unwrap_or(u64::MAX),
                },
                None => Summary::Never,
            },
            Op::Leave => match plan.iter_coord(plan.nodes[n.inputs[0]].scope) {
                Some(coord) => Summary::Reset { coord },
                None => Summary::Never,
            },
            _ => Summary::Identity,
        }
    }

    /// The time `t` after passing the port; `None` if it cannot pass.
    #[inline]
    pub fn apply(self, t: &Time) -> Option<Time> {
        match self {
            Summary::Identity => Some(*t),
            Summary::Increment { coord, max } => {
                let next = t.0[coord].checked_add(1)?;
                (next < max).then(|| t.with_coord(coord, next))
            }
            Summary::Reset { coord } => Some(t.with_coord(coord, 0)),
            Summary::Never => None,
        }
    }
}

/// Every edge of a plan with the summary of the port it enters.
#[derive(Clone, Debug, Default)]
pub struct ProgressGraph {
    /// `ports[node][port]`: the summary of each input port.
    ports: Vec<Vec<Summary>>,
    /// `into[node]`: `(upstream node, summary)` of every edge into the node.
    into: Vec<Vec<(usize, Summary)>>,
    /// `out_of[node]`: `(consumer node, summary)` of every edge out of the node, without
    /// edges from a node to itself (what a node holds already bounds what comes back
    /// round such an edge, which only moves times forward).
    out_of: Vec<Vec<(usize, Summary)>>,
}

impl ProgressGraph {
    /// The graph of `plan`, whose input ports are `ports[node][port]` (upstream nodes).
    pub fn new(plan: &Plan, ports: &[Vec<Vec<usize>>]) -> Self {
        Self::from_ports(ports, |node, port| Summary::of(plan, node, port))
    }

    /// The graph of input ports `ports[node][port]` (upstream nodes) whose summaries are
    /// `summary(node, port)`.
    pub fn from_ports(
        ports: &[Vec<Vec<usize>>],
        summary: impl Fn(usize, usize) -> Summary,
    ) -> Self {
        let n = ports.len();
        let mut g = ProgressGraph {
            ports: Vec::with_capacity(n),
            into: vec![Vec::new(); n],
            out_of: vec![Vec::new(); n],
        };
        for (node, node_ports) in ports.iter().enumerate() {
            let summaries: Vec<Summary> = (0..node_ports.len())
                .map(|port| summary(node, port))
                .collect();
            for (port, ups) in node_ports.iter().enumerate() {
                for &u in ups {
                    g.into[node].push((u, summaries[port]));
                    if u != node {
                        g.out_of[u].push((node, summaries[port]));
                    }
                }
            }
            g.ports.push(summaries);
        }
        g
    }

    /// The summary of input `port` of `node`.
    #[inline]
    pub fn port(&self, node: usize, port: usize) -> Summary {
        self.ports[node][port]
    }

    /// The frontier at the inputs of `node` given the upstream `reach_out`.
    pub fn frontier_in(&self, reach_out: &[Antichain<Time>], node: usize) -> Antichain<Time> {
        let mut f = Antichain::new();
        self.frontier_in_into(reach_out, node, &mut f);
        f
    }

    /// [`ProgressGraph::frontier_in`] into `f`, reusing its allocation (a frontier of more
    /// than one time is on the heap).
    pub fn frontier_in_into(
        &self,
        reach_out: &[Antichain<Time>],
        node: usize,
        f: &mut Antichain<Time>,
    ) {
        f.clear();
        for &(u, s) in &self.into[node] {
            for t in reach_out[u].elements() {
                if let Some(x) = s.apply(t) {
                    f.insert(x);
                }
            }
        }
    }

    /// `reach[node]`: the least fixed point of `own[node]` joined with what every upstream
    /// `reach` becomes through its edge into the node (a lower bound on the times each node
    /// may still emit). Nodes are visited in plan order (topological but for loop feedback);
    /// a node is visited again only when an edge into it added a time, and then pushes all
    /// its times to its consumers again (antichains are small). A time that comes round a
    /// loop is dominated by where it started, so the visits stop. `dirty` is scratch.
    pub fn reach_into(
        &self,
        own: &[Antichain<Time>],
        reach: &mut Vec<Antichain<Time>>,
        dirty: &mut Vec<bool>,
    ) {
        let n = self.out_of.len();
        reach.resize(n, Antichain::new());
        for (r, o) in reach.iter_mut().zip(own) {
            r.clear();
            for t in o.elements() {
                r.insert_ref(t);
            }
        }
        dirty.clear();
        dirty.resize(n, true);
        let mut u = 0;
        while u < n {
            if !dirty[u] {
                u += 1;
                continue;
            }
            dirty[u] = false;
            let mut next = u + 1;
            for &(c, s) in &self.out_of[u] {
                for k in 0..reach[u].elements().len() {
                    let t = reach[u].elements()[k];
                    if let Some(x) = s.apply(&t) {
                        if reach[c].insert(x) {
                            dirty[c] = true;
                            next = next.min(c);
                        }
                    }
                }
            }
            u = next;
        }
    }
}
