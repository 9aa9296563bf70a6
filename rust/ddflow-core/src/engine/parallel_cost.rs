//! When a node's activation is worth running its workers in parallel threads: a fork-join
//! costs a wake-up and a barrier, so an activation goes parallel only when the work it
//! hands the other thread is larger. The work is estimated per node from its own recent
//! activations: the thread CPU time they took per input update (a moving average), times the
//! updates waiting now. An operator's cost per update differs by two orders of magnitude between
//! operators (a `select` copies a row, a `join` seeks every input key in the other side's
//! trace and emits its matches, a `reduce` reads each key's history), so one threshold on
//! the input count ran cheap activations in parallel and expensive ones serially. Until a
//! node has been timed, its input count decides, weighted for a `reduce`.
//!
//! The choice changes which thread runs a worker, never what the worker computes, so it may
//! follow measured times.

/// Below this many input updates (summed over workers) a node not yet timed runs on the
/// workers one after the other: a fork-join across threads costs more than it saves.
/// Measured with `bfs_bench ... 1000 ... 2` (2 workers, batches of 1,000): 512 gave
/// 1.2-1.5x over one worker on the 1k/2k, 100k/1M and 1M/10M graphs; 4,096 gave none.
pub const PARALLEL_MIN_UPDATES: usize = 512;

/// A reduce's input update costs several times an update of the other operators, so a
/// reduce not yet timed goes parallel at fewer updates.
pub const REDUCE_LOAD_WEIGHT: usize = 4;

/// Estimated work (summed over workers) from which an activation runs in parallel: each
/// half then saves at least half of it, against a wake-up and a join of a few
/// microseconds on a free core.
pub const PARALLEL_MIN_NANOS: u64 = 60_000;

/// Weight of a new activation's time per update in the moving average (1 / 8).
const AVERAGE_SHIFT: u32 = 3;

/// One node's recent cost per input update.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeCost {
    /// Moving average of an activation's thread CPU time per input update (picoseconds, so
    /// that cheap operators do not round to zero); `None` until the node was timed.
    picos_per_update: Option<u64>,
}

impl NodeCost {
    /// Whether an activation with `input` updates waiting (summed over workers) should run
    /// its workers in parallel threads; `weight`: the operator's weight for the input count
    /// until it was timed.
    pub fn parallel(&self, input: usize, weight: usize) -> bool {
        match self.picos_per_update {
            Some(p) => (input as u128) * (p as u128) >= (PARALLEL_MIN_NANOS as u128) * 1000,
            None => input.saturating_mul(weight) >= PARALLEL_MIN_UPDATES,
        }
    }

    /// Records one worker's activation: `input` updates it found waiting, taking `nanos`.
    /// Activations without input teach nothing about the cost per update and are skipped.
    pub fn observe(&mut self, input: usize, nanos: u64) {
        if input == 0 {
            return;
        }
        let sample = (nanos as u128 * 1000 / input as u128).min(u64::MAX as u128) as u64;
        self.picos_per_update = Some(match self.picos_per_update {
            None => sample,
            Some(avg) => {
                // avg + (sample - avg) / 8, in signed arithmetic.
                let delta = (sample as i128 - avg as i128) >> AVERAGE_SHIFT;
                (avg as i128 + delta).max(0) as u64
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_count_decides_until_timed() {
        let c = NodeCost::default();
        assert!(!c.parallel(PARALLEL_MIN_UPDATES - 1, 1));
        assert!(c.parallel(PARALLEL_MIN_UPDATES, 1));
        assert!(c.parallel(
            PARALLEL_MIN_UPDATES / REDUCE_LOAD_WEIGHT,
            REDUCE_LOAD_WEIGHT
        ));
        assert!(!c.parallel(0, REDUCE_LOAD_WEIGHT));
    }

    #[test]
    fn timed_cost_decides_after() {
        // A join-like node: 2 us per update; 30 updates = 60 us.
        let mut c = NodeCost::default();
        c.observe(100, 200_000);
        assert!(c.parallel(30, 1));
        assert!(!c.parallel(29, 1));
        // A select-like node: 20 ns per update; 3,000 updates = 60 us.
        let mut s = NodeCost::default();
        s.observe(10_000, 200_000);
        assert!(!s.parallel(2_999, 1));
        assert!(s.parallel(3_000, 1));
        // No input, nothing learnt.
        s.observe(0, 1_000_000);
        assert!(!s.parallel(2_999, 1));
    }

    #[test]
    fn average_moves_an_eighth_of_the_way() {
        let mut c = NodeCost::default();
        c.observe(1, 8_000);
        c.observe(1, 16_000);
        assert_eq!(c.picos_per_update, Some(9_000_000));
        c.observe(1, 0);
        assert_eq!(c.picos_per_update, Some(9_000_000 - 1_125_000));
    }
}
