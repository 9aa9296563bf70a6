//! Where the CPU time of a several-worker pass goes, for judging its overlap on a machine
//! whose other jobs make wall times meaningless: per node, the thread CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`) of each worker's activations, split into those run in
//! parallel (both halves' times kept, the longer and the shorter) and those run one worker
//! after the other; and the CPU time of the driving thread between activations. The critical
//! path of the passes is the serial parts plus the longer half of each parallel activation:
//! the CPU time the passes would take with a free core per worker. Off unless
//! [`super::Engine::set_pass_profile`] turns it on.

use super::idle::{cpu_time, Clock};

/// A thread's CPU time so far, in nanoseconds.
pub(super) fn thread_nanos() -> u64 {
    cpu_time(Clock::Thread).as_nanos() as u64
}

/// One node's activations.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeProfile {
    /// Activations run on the workers one after the other (below the parallel threshold).
    pub serial: u64,
    /// Their CPU time, summed over workers (ns).
    pub serial_nanos: u64,
    /// Their input updates, summed over workers.
    pub serial_updates: u64,
    /// Activations run on the workers in parallel threads.
    pub parallel: u64,
    /// Their longest worker's CPU time, summed over activations (ns).
    pub long_nanos: u64,
    /// The other workers' CPU time, summed (ns).
    pub short_nanos: u64,
    /// Their input updates, summed over workers.
    pub parallel_updates: u64,
}

/// The passes' CPU time since profiling was turned on (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassProfile {
    /// Per plan node.
    pub nodes: Vec<NodeProfile>,
    /// The driving thread's CPU time outside activations: frontiers, exchange, memory
    /// checks, the parallel threshold's count (ns).
    pub between_nanos: u64,
    /// Passes profiled.
    pub passes: u64,
    /// Per worker, its CPU time in parallel activations (ns): a systematic difference
    /// between the halves (one thread's half slower) shows here, a varying one does not.
    pub parallel_nanos: Vec<u64>,
}

impl PassProfile {
    /// Records one node's activation on every worker: each worker's CPU time and input
    /// updates, and whether they ran in parallel threads.
    pub(super) fn record(&mut self, node: usize, parallel: bool, runs: &[(u64, usize)]) {
        if self.nodes.len() <= node {
            self.nodes.resize(node + 1, NodeProfile::default());
        }
        let p = &mut self.nodes[node];
        let total: u64 = runs.iter().map(|r| r.0).sum();
        let updates: u64 = runs.iter().map(|r| r.1 as u64).sum();
        if parallel {
            if self.parallel_nanos.len() < runs.len() {
                self.parallel_nanos.resize(runs.len(), 0);
            }
            for (sum, r) in self.parallel_nanos.iter_mut().zip(runs) {
                *sum += r.0;
            }
            let long = runs.iter().map(|r| r.0).max().unwrap_or(0);
            p.parallel += 1;
            p.long_nanos += long;
            p.short_nanos += total - long;
            p.parallel_updates += updates;
        } else {
            p.serial += 1;
            p.serial_nanos += total;
            p.serial_updates += updates;
        }
    }

    /// CPU time of all the passes' work, on every thread (ns).
    pub fn total_nanos(&self) -> u64 {
        self.between_nanos
            + self
                .nodes
                .iter()
                .map(|p| p.serial_nanos + p.long_nanos + p.short_nanos)
                .sum::<u64>()
    }

    /// The critical path: the serial parts plus the longer half of each parallel
    /// activation (ns).
    pub fn critical_nanos(&self) -> u64 {
        self.between_nanos
            + self
                .nodes
                .iter()
                .map(|p| p.serial_nanos + p.long_nanos)
                .sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_path_is_serial_parts_and_longer_halves() {
        let mut p = PassProfile {
            between_nanos: 5,
            ..Default::default()
        };
        p.record(2, true, &[(10, 100), (30, 90)]);
        p.record(2, false, &[(4, 3), (6, 2)]);
        p.record(0, true, &[(8, 1), (7, 1)]);
        assert_eq!(p.nodes.len(), 3);
        assert_eq!(p.nodes[2].parallel, 1);
        assert_eq!(p.nodes[2].long_nanos, 30);
        assert_eq!(p.nodes[2].short_nanos, 10);
        assert_eq!(p.nodes[2].parallel_updates, 190);
        assert_eq!(p.nodes[2].serial_nanos, 10);
        assert_eq!(p.nodes[2].serial_updates, 5);
        assert_eq!(p.total_nanos(), 5 + 40 + 10 + 15);
        assert_eq!(p.critical_nanos(), 5 + 30 + 10 + 8);
        assert_eq!(p.parallel_nanos, vec![18, 37]);
    }
}
