//! Progress tracking: the frontier of every node, computed from pointstamps.
//!
//! A pointstamp is a time at which a node may still produce output: data queued at its
//! inputs, updates it buffers (arrange, consolidate), times it has scheduled (reduce), and
//! the frontiers of open inputs. Each is moved along the dataflow's edges by the path
//! summary of the node it passes: the identity, except `variable`'s feedback port (+1 on the
//! scope's iteration coordinate, dropped past `max_iterations`) and `leave` (the iteration
//! coordinate reset to zero). `advance_iteration` and `delay` only move times forward, so
//! the identity is a valid lower bound for them too; the future times they create are held
//! as pointstamps by `delay` (or the `arrange` buffer downstream). The result is, per node, `reach_out` (a lower bound on the
//! times it may still emit) and `frontier_in` (a lower bound on what may still arrive at its
//! inputs). The computation is a fixed point over antichains; the +1 of every loop makes it
//! terminate, since a time that comes around a loop is dominated by where it started.

use super::plan::{Op, Plan};
use super::Engine;
use crate::lattice::{Antichain, Time};

/// The upstream node feeding each input port of each node: `ports[node][port]`.
pub fn input_ports(plan: &Plan) -> Vec<Vec<Vec<usize>>> {
    plan.nodes.iter().map(|n| n.ports()).collect()
}

/// The time `t` after passing input `port` of `node`; `None` if it cannot pass.
#[inline]
pub fn summarize(plan: &Plan, node: usize, port: usize, t: &Time) -> Option<Time> {
    let n = &plan.nodes[node];
    match &n.op {
        Op::Variable { .. } if port == 1 => {
            let c = plan.iter_coord(n.scope)?;
            let max = plan.scopes[n.scope].max_iterations.unwrap_or(u64::MAX);
            let next = t.0[c].checked_add(1)?;
            if next >= max {
                None
            } else {
                Some(t.with_coord(c, next))
            }
        }
        Op::Leave => {
            let c = plan.iter_coord(plan.nodes[n.inputs[0]].scope)?;
            Some(t.with_coord(c, 0))
        }
        _ => Some(*t),
    }
}

/// The frontier at the inputs of `node` given the upstream `reach_out`.
pub fn frontier_in(
    plan: &Plan,
    ports: &[Vec<Vec<usize>>],
    reach_out: &[Antichain<Time>],
    node: usize,
) -> Antichain<Time> {
    let mut f = Antichain::new();
    for (port, ups) in ports[node].iter().enumerate() {
        for &u in ups {
            for t in reach_out[u].elements() {
                if let Some(s) = summarize(plan, node, port, t) {
                    f.insert(s);
                }
            }
        }
    }
    f
}

/// Computes `reach_out` for every node from its pointstamps: `held[node]` (times held at the
/// node's output) and `queued[node]` (`(port, time)` queued at its inputs).
pub fn reach(
    plan: &Plan,
    ports: &[Vec<Vec<usize>>],
    held: &[Antichain<Time>],
    queued: &[Vec<(usize, Time)>],
) -> Vec<Antichain<Time>> {
    let mut reach = Vec::new();
    reach_into(plan, ports, held, queued, &mut reach);
    reach
}

/// [`reach`] into `reach`, reusing its allocations.
pub fn reach_into(
    plan: &Plan,
    ports: &[Vec<Vec<usize>>],
    held: &[Antichain<Time>],
    queued: &[Vec<(usize, Time)>],
    reach: &mut Vec<Antichain<Time>>,
) {
    let n = plan.nodes.len();
    reach.resize(n, Antichain::new());
    for (r, h) in reach.iter_mut().zip(held) {
        r.clear();
        for t in h.elements() {
            r.insert_ref(t);
        }
    }
    for node in 0..n {
        for (port, t) in &queued[node] {
            if let Some(s) = summarize(plan, node, *port, t) {
                reach[node].insert(s);
            }
        }
    }
    loop {
        let mut changed = false;
        for node in 0..n {
            for (port, ups) in ports[node].iter().enumerate() {
                for &u in ups {
                    if u == node {
                        continue;
                    }
                    for k in 0..reach[u].elements().len() {
                        let t = reach[u].elements()[k];
                        if let Some(s) = summarize(plan, node, port, &t) {
                            changed |= reach[node].insert(s);
                        }
                    }
                }
            }
        }
        if !changed {
            return;
        }
    }
}

impl Engine {
    /// Recomputes every node's frontier from the pointstamps of all workers.
    pub(super) fn compute_frontiers(&mut self) {
        let n = self.plan.nodes.len();
        let mut held = std::mem::take(&mut self.scratch_held);
        let mut queued = std::mem::take(&mut self.scratch_queued);
        let mut per_port = std::mem::take(&mut self.scratch_ports);
        held.resize(n, Antichain::new());
        queued.resize(n, Vec::new());
        for node in 0..n {
            held[node].clear();
            queued[node].clear();
            if let Some(Some(st)) = self.inputs.get(node) {
                for t in st.frontier.elements() {
                    held[node].insert_ref(t);
                }
            }
            for p in per_port.iter_mut() {
                p.clear();
            }
            for w in &self.workers {
                w.pointstamps(node, &mut per_port, &mut held[node]);
            }
            for (p, a) in per_port.iter().enumerate() {
                queued[node].extend(a.elements().iter().map(|t| (p, *t)));
            }
        }
        reach_into(&self.plan, &self.ports, &held, &queued, &mut self.reach_out);
        self.scratch_held = held;
        self.scratch_queued = queued;
        self.scratch_ports = per_port;
    }

    /// Recomputes every node's input frontier from `reach_out` (a pass does this node by
    /// node as it goes).
    pub(super) fn compute_frontiers_in(&mut self) {
        let n = self.plan.nodes.len();
        self.frontier_in = (0..n)
            .map(|node| frontier_in(&self.plan, &self.ports, &self.reach_out, node))
            .collect();
    }

    /// Refreshes `reach_out[node]` from the workers' current state, after the node ran.
    pub(super) fn refresh(&mut self, node: usize, frontier_in: &Antichain<Time>) {
        let mut queued = std::mem::take(&mut self.scratch_ports);
        for q in queued.iter_mut() {
            q.clear();
        }
        let mut r = Antichain::new();
        for w in &self.workers {
            w.pointstamps(node, &mut queued, &mut r);
        }
        if let Some(Some(st)) = self.inputs.get(node) {
            for t in st.frontier.elements() {
                r.insert(*t);
            }
        }
        for (p, a) in queued.iter().enumerate() {
            for t in a.elements() {
                if let Some(s) = summarize(&self.plan, node, p, t) {
                    r.insert(s);
                }
            }
        }
        for t in frontier_in.elements() {
            r.insert(*t);
        }
        self.reach_out[node] = r;
        self.scratch_ports = queued;
    }
}
