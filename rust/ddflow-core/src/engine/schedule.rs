//! Scheduling: a pass activates every node once in plan order, on every worker, and the
//! `run*` loops repeat passes until a time is reached, the inputs are exhausted, or nothing
//! moves (see "Scheduling: passes" in `ENGINE.md`).

use super::compaction::{compact_worker, merge_whole_if_due, CompactCtx};
use super::plan::Op;
use super::worker::{PassCtx, Worker};
use super::{exchange, Engine};
use crate::error::{Error, Result};
use crate::lattice::{Antichain, PartialOrder, Time};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Below this many input updates (summed over workers) a node runs on the workers one after
/// the other: a fork-join across threads costs more than it saves. Measured with
/// `bfs_bench ... 1000 ... 2` (2 workers, batches of 1,000): 512 gave 1.2-1.5x over one
/// worker on the 1k/2k, 100k/1M and 1M/10M graphs; 4,096 gave none.
const PARALLEL_MIN_UPDATES: usize = 512;

/// A reduce's input update costs several times an update of the other operators, so a
/// reduce goes parallel at fewer updates. `bfs_bench NODES EDGES BATCH ROUNDS 2`, updates/s
/// (weight 1 / 4 / 8): 1k/2k batches of 10: 14.4k / 13.9k / 13.2k; batches of 1,000:
/// 34.4k / 35.4k / 36.6k; 100k/1M batches of 1,000: 67.3k / 73.0k / 73.3k (two runs each).
const REDUCE_LOAD_WEIGHT: usize = 4;

/// What one worker's activation of a node did.
#[derive(Default)]
struct Ran {
    /// The worker activated the node.
    activated: bool,
    /// Work done (see [`Worker::activate`]).
    did: bool,
    /// The trace's idle merge work (after a trace handle moved) is finished.
    idle_done: bool,
}

impl Engine {
    /// Runs one scheduling pass. Returns whether anything happened (work done or frontiers
    /// moved), i.e. whether another pass may make progress. Each activation runs under the
    /// engine's memory limit and the live bytes are checked after it; past the limit the
    /// engine stops (see `memory_limit.rs`).
    pub fn step(&mut self) -> Result<bool> {
        self.check_not_stopped()?;
        self.passes += 1;
        // Merges run by compaction between activations write through as activations' do.
        let write_through = self.write_through();
        let _write_through = crate::trace::spill::WriteThroughScope::new(
            write_through.0.clone(),
            write_through.1,
            write_through.2,
        );
        let mut before = std::mem::take(&mut self.scratch_before);
        before.resize(self.reach_out.len(), Antichain::new());
        for (b, r) in before.iter_mut().zip(&self.reach_out) {
            b.clear();
            for t in r.elements() {
                b.insert_ref(t);
            }
        }
        self.compute_frontiers();
        let mut progressed = before != self.reach_out;
        self.scratch_before = before;
        for w in self.workers.iter_mut() {
            for f in w.fresh.iter_mut() {
                *f = None;
            }
            if !w.pending_snapshots.is_empty() {
                w.take_snapshots(&self.trace_of);
                progressed = true;
            }
        }
        let n = self.plan.nodes.len();
        // Nodes run in plan order; each runs on every worker (in parallel threads when there
        // is enough input to pay for it) before the next, and data for other workers is
        // delivered right away, so frontiers can be refreshed node by node as with one worker.
        for node in 0..n {
            // Into the previous node's old input frontier: no allocation per node and pass.
            let mut f_in = std::mem::take(&mut self.scratch_frontier);
            self.graph
                .frontier_in_into(&self.reach_out, node, &mut f_in);
            let Engine {
                plan,
                callbacks,
                consumers,
                trace_of,
                frontier_in,
                reach_out,
                workers,
                dtype_links,
                memory_limit,
                handles,
                idle_merges,
                ..
            } = self;
            let ctx = PassCtx {
                plan,
                callbacks: &**callbacks,
                consumers,
                trace_of,
                frontier_in,
                reach_out,
                dtype_links,
                memory_limit: *memory_limit,
                write_through: write_through.clone(),
            };
            let weight = match plan.nodes[node].op {
                super::plan::Op::Reduce { .. } => REDUCE_LOAD_WEIGHT,
                _ => 1,
            };
            let compact_cx = CompactCtx {
                plan,
                consumers,
                handles,
            };
            let idle_merges = &*idle_merges;
            // Several workers: their traces are merged whole together, after the activations.
            let merge_whole = (workers.len() > 1).then_some(false);
            // Each worker's activation is followed by the compaction of the traces it reads,
            // in the same thread (both touch that worker alone).
            let run_one = |w: &mut Worker| -> Result<Ran> {
                if !w.should_run(plan, trace_of, node, &f_in) {
                    return Ok(Ran::default());
                }
                let did = w.activate(&ctx, node, &f_in)?;
                let idle = idle_merges.contains(&(w.index, node));
                let still_idle = compact_worker(&compact_cx, w, node, idle, merge_whole);
                Ok(Ran {
                    activated: true,
                    did,
                    idle_done: idle && !still_idle,
                })
            };
            let results: SmallVec<[Result<Ran>; 2]> = if let [only] = workers.as_mut_slice() {
                // One worker: no load to weigh (a pass visits every node, so this is paid
                // per node per pass).
                std::iter::once(run_one(only)).collect()
            } else {
                let load: usize = workers
                    .iter()
                    .map(|w| w.input_len(plan, trace_of, node))
                    .sum::<usize>()
                    * weight;
                if load >= PARALLEL_MIN_UPDATES {
                    workers
                        .par_iter_mut()
                        .map(run_one)
                        .collect::<Vec<_>>()
                        .into()
                } else {
                    workers.iter_mut().map(run_one).collect()
                }
            };
            let mut activated = false;
            for (w, r) in results.into_iter().enumerate() {
                let ran = r.map_err(|e| self.stop_on_memory_limit(e))?;
                activated |= ran.activated;
                progressed |= ran.did;
                if ran.idle_done {
                    self.idle_merges.remove(&(w, node));
                }
            }
            if activated && self.workers.len() > 1 {
                merge_whole_if_due(&mut self.workers, node);
            }
            if self.workers.len() > 1 {
                exchange::flush(&mut self.workers);
            }
            self.spill_if_needed()
                .map_err(|e| e.with_operator(&self.plan.nodes[node].label))?;
            self.check_memory(node)
                .map_err(|e| self.stop_on_memory_limit(e))?;
            if matches!(self.plan.nodes[node].op, Op::Arrange { .. }) {
                // The dtypes any worker's trace was seen with, for columns linked to it.
                for w in &self.workers {
                    if let Some(schema) = w.traces[node].as_ref().and_then(|t| t.schema.clone()) {
                        self.dtype_links.observe(node, &schema);
                        break;
                    }
                }
            }
            self.refresh(node, &f_in, activated);
            self.scratch_frontier = std::mem::replace(&mut self.frontier_in[node], f_in);
        }
        self.trim_logs();
        Ok(progressed)
    }

    pub(super) fn sinks(&self) -> Vec<usize> {
        self.plan
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Capture | Op::Probe))
            .map(|n| n.id)
            .collect()
    }

    pub(super) fn reached(&self, t: &Time) -> bool {
        self.sinks().iter().all(|&s| {
            !self.frontier_in[s]
                .elements()
                .iter()
                .any(|f| f.less_than(t))
        })
    }

    /// Runs passes until no capture or probe frontier holds a time strictly less than `t`.
    /// Fails with a `TimeError` if that cannot happen because inputs were not advanced.
    pub fn run_until(&mut self, t: Time) -> Result<()> {
        while !self.run_until_bounded(t, usize::MAX)? {}
        Ok(())
    }

    /// Like [`Engine::run_until`], but returns after at most `max_passes` passes; returns
    /// whether `t` was reached (callers check for interrupts between calls).
    pub fn run_until_bounded(&mut self, t: Time, max_passes: usize) -> Result<bool> {
        self.in_pool(|e| e.run_until_passes(t, max_passes))
    }

    fn run_until_passes(&mut self, t: Time, max_passes: usize) -> Result<bool> {
        for _ in 0..max_passes {
            let progressed = self.step()?;
            if self.reached(&t) {
                self.release_idle();
                return Ok(true);
            }
            if !progressed {
                let blocking: Vec<String> = self
                    .inputs
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.as_ref().map(|s| (i, s)))
                    .filter(|(_, s)| s.frontier.elements().iter().any(|f| f.less_than(&t)))
                    .map(|(i, s)| format!("{} at {:?}", self.input_name(i), s.frontier))
                    .collect();
                return Err(Error::Time(format!(
                    "cannot complete times before {t:?}: advance or close the inputs first ({})",
                    blocking.join(", ")
                )));
            }
        }
        Ok(false)
    }

    /// Runs until every input is closed and all work is done.
    pub fn run(&mut self) -> Result<()> {
        while !self.run_bounded(usize::MAX)? {}
        Ok(())
    }

    /// Like [`Engine::run`], but returns after at most `max_passes` passes; returns whether
    /// everything is done.
    pub fn run_bounded(&mut self, max_passes: usize) -> Result<bool> {
        self.in_pool(|e| e.run_passes(max_passes))
    }

    fn run_passes(&mut self, max_passes: usize) -> Result<bool> {
        for _ in 0..max_passes {
            let progressed = self.step()?;
            let done = self.inputs.iter().flatten().all(|s| s.closed)
                && self.frontier_in.iter().all(|f| f.is_empty())
                && self.reach_out.iter().all(|f| f.is_empty());
            if done || !progressed {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Runs passes while work remains, at most `max_passes`; returns whether work remains.
    pub fn run_quiescent(&mut self, max_passes: usize) -> Result<bool> {
        self.in_pool(|e| {
            for _ in 0..max_passes {
                if !e.step()? {
                    return Ok(false);
                }
            }
            Ok(true)
        })
    }

    /// Runs `f` (a loop of passes) on a thread of the pool the workers' parallel
    /// activations use, when there are several workers: a parallel activation then runs
    /// one worker in the thread that drives the pass and hands only the others to the pool,
    /// where from outside the pool the driving thread hands over all of them and sleeps
    /// until they are done (one wake-up per activation instead of three). One worker never
    /// forks, so it runs where it is called.
    fn in_pool<R: Send>(&mut self, f: impl FnOnce(&mut Engine) -> R + Send) -> R {
        if self.workers.len() > 1 && rayon::current_thread_index().is_none() {
            rayon::scope(|_| f(self))
        } else {
            f(self)
        }
    }
}
