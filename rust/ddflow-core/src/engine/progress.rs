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

use super::plan::Plan;
use super::Engine;
use crate::lattice::{Antichain, Time};

/// The upstream node feeding each input port of each node: `ports[node][port]`.
pub fn input_ports(plan: &Plan) -> Vec<Vec<Vec<usize>>> {
    plan.nodes.iter().map(|n| n.ports()).collect()
}

impl Engine {
    /// Recomputes every node's frontier from the pointstamps of all workers: each node's
    /// own pointstamps into `own` (kept for [`Engine::refresh`]), then the fixed point.
    pub(super) fn compute_frontiers(&mut self) {
        let n = self.plan.nodes.len();
        let mut own = std::mem::take(&mut self.own);
        let mut per_port = std::mem::take(&mut self.scratch_ports);
        own.resize(n, Antichain::new());
        for (node, o) in own.iter_mut().enumerate() {
            self.own_pointstamps(node, &mut per_port, o);
        }
        self.graph
            .reach_into(&own, &mut self.reach_out, &mut self.scratch_dirty);
        self.own = own;
        self.scratch_ports = per_port;
    }

    /// The pointstamps of `node` on every worker, as they stand at its output: what it
    /// holds, an open input's frontier, and its queued times through their ports' summaries.
    fn own_pointstamps(
        &self,
        node: usize,
        per_port: &mut Vec<Antichain<Time>>,
        own: &mut Antichain<Time>,
    ) {
        own.clear();
        if let Some(Some(st)) = self.inputs.get(node) {
            for t in st.frontier.elements() {
                own.insert_ref(t);
            }
        }
        for p in per_port.iter_mut() {
            p.clear();
        }
        for w in &self.workers {
            w.pointstamps(node, per_port, own);
        }
        // `per_port` is shared by all nodes: past this node's ports it holds nothing.
        for (port, a) in per_port.iter().enumerate().filter(|(_, a)| !a.is_empty()) {
            let s = self.graph.port(node, port);
            for t in a.elements() {
                if let Some(x) = s.apply(t) {
                    own.insert(x);
                }
            }
        }
    }

    /// Recomputes every node's input frontier from `reach_out` (a pass does this node by
    /// node as it goes).
    pub(super) fn compute_frontiers_in(&mut self) {
        let n = self.plan.nodes.len();
        self.frontier_in = (0..n)
            .map(|node| self.graph.frontier_in(&self.reach_out, node))
            .collect();
    }

    /// Refreshes `reach_out[node]` after the node's turn in a pass: its own pointstamps
    /// joined with its (refreshed) input frontier. When no worker activated it (`ran`
    /// false), its own pointstamps are those of the pass's start: it held and was queued
    /// the same (only its activation takes its queues and changes what its operator holds,
    /// and messages queued at it since the pass started would have made it run; inputs
    /// move between passes), so they are not read again.
    pub(super) fn refresh(&mut self, node: usize, frontier_in: &Antichain<Time>, ran: bool) {
        let mut own = std::mem::take(&mut self.own[node]);
        if ran {
            let mut per_port = std::mem::take(&mut self.scratch_ports);
            self.own_pointstamps(node, &mut per_port, &mut own);
            self.scratch_ports = per_port;
        } else {
            #[cfg(any(test, debug_assertions))]
            {
                let mut per_port = Vec::new();
                let mut now = Antichain::new();
                self.own_pointstamps(node, &mut per_port, &mut now);
                assert_eq!(
                    now, own,
                    "node {node} did not run but its pointstamps moved"
                );
            }
        }
        let r = &mut self.reach_out[node];
        r.clear();
        for t in own.elements() {
            r.insert_ref(t);
        }
        for t in frontier_in.elements() {
            r.insert_ref(t);
        }
        self.own[node] = own;
    }
}

#[cfg(test)]
#[path = "progress_tests.rs"]
mod tests;
