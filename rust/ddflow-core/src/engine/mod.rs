//! Dataflow plans and the embedded engine that runs them.
//!
//! Python builds a [`plan::Plan`] (JSON, see `PLAN.md` beside this file); [`Engine`]
//! instantiates it on `W` workers (key shards) and runs it:
//!
//! * inputs receive columnar batches of updates at times in the future of their frontier;
//! * a *pass* computes every node's frontier ([`progress`]), then activates each node once
//!   in plan order on every worker. An operator acts on all the updates it has, and
//!   stateful operators (`arrange`, `reduce`, `consolidate`) act on every time that became
//!   complete, all keys at once: preloaded input therefore runs iteration-major;
//! * with one worker, frontiers are refreshed as nodes run, so one pass carries a round of
//!   an iteration all the way around its loop; with several workers the workers run a pass
//!   in parallel threads and exchange data by key hash at `arrange` nodes between passes.
//!
//! Python is entered only through [`column::Callbacks`] for user functions.
//!
//! The engine's jobs, one module each: [`input`] (pushed updates and input frontiers),
//! [`schedule`] (passes and the `run*` loops), [`progress`] (frontiers from pointstamps,
//! over the edges and path summaries of [`progress_graph`]),
//! [`compaction`] (trace compaction and trace handles), [`exchange`] (routing between
//! workers), [`attach`] (plans attached to a running engine) and [`outputs`] (captures,
//! error updates, the log) and [`memory_limit`] (the limit checks and the error that stops a
//! run). [`worker`] drives the [`operators`] of one key shard.

pub mod arrangement;
mod attach;
pub mod column;
mod compaction;
mod constant;
pub mod dtype_links;
pub mod errors;
pub mod exchange;
mod idle;
mod input;
pub mod live_columns;
pub mod memory_limit;
pub mod operators;
mod outputs;
pub mod plan;
pub mod plans;
pub mod progress;
pub mod progress_graph;
mod schedule;
pub mod spill;
pub mod util;
pub mod worker;

pub use idle::trim_slack;
pub use outputs::Captured;

use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use column::Callbacks;
use input::InputState;
use plan::{Op, Plan};
use std::sync::Arc;
use worker::Worker;

/// The most workers an engine runs (`Dataflow(workers=...)` documents the same bound).
pub const MAX_WORKERS: usize = 256;

/// A running dataflow.
pub struct Engine {
    plan: Plan,
    ports: Vec<Vec<Vec<usize>>>,
    /// The edges with their path summaries, for progress tracking.
    graph: progress_graph::ProgressGraph,
    consumers: Vec<Vec<(usize, usize)>>,
    trace_of: Vec<Option<usize>>,
    workers: Vec<Worker>,
    inputs: Vec<Option<InputState>>,
    /// Which columns must share a dtype, and the dtypes inputs' first batches fixed.
    dtype_links: dtype_links::DtypeLinks,
    callbacks: Arc<dyn Callbacks>,
    reach_out: Vec<Antichain<Time>>,
    frontier_in: Vec<Antichain<Time>>,
    push_count: usize,
    max_log: usize,
    passes: u64,
    /// Each node's own pointstamps (held, queued through its ports, an input's frontier)
    /// as of the pass's start or its last refresh (`progress.rs`).
    own: Vec<Antichain<Time>>,
    /// Buffers reused by `compute_frontiers` and `refresh`.
    scratch_ports: Vec<Antichain<Time>>,
    scratch_dirty: Vec<bool>,
    scratch_frontier: Antichain<Time>,
    /// The previous pass's `reach_out`, to tell whether frontiers moved.
    scratch_before: Vec<Antichain<Time>>,
    /// Trace handles: the arrange node each holds and the frontier it holds compaction at
    /// (`None` once released).
    handles: Vec<Option<(usize, Antichain<Time>)>>,
    /// `(worker, arrange node)` whose trace does idle merge work at its next activations
    /// (after a handle on it was released), until none remains.
    idle_merges: std::collections::BTreeSet<(usize, usize)>,
    /// The memory limit in bytes the passes check (`None`: none; see `memory_limit.rs`).
    memory_limit: Option<usize>,
    /// The error that stopped the engine when it passed its memory limit.
    stopped: Option<Error>,
    /// Where cold trace batches are spilled (`None`: the default; see `spill.rs`).
    spill_dir: Option<std::path::PathBuf>,
    /// The spill directory merges write through to, resolved once (see `spill.rs`).
    write_through_dir: std::sync::OnceLock<std::sync::Arc<std::path::PathBuf>>,
}

impl Engine {
    /// Instantiates `plan` on `workers` workers.
    pub fn new(plan: Plan, workers: usize, callbacks: Arc<dyn Callbacks>) -> Result<Engine> {
        if workers == 0 || workers > MAX_WORKERS {
            return Err(Error::Value(format!(
                "workers must be from 1 to {MAX_WORKERS}, got {workers}"
            )));
        }
        let n = plan.nodes.len();
        let ports = progress::input_ports(&plan);
        let consumers = consumers_of(&ports);
        let graph = progress_graph::ProgressGraph::new(&plan, &ports);
        if let Some(imp) = plan
            .nodes
            .iter()
            .find(|n| matches!(n.op, Op::ImportTrace { .. }))
        {
            return Err(Error::Plan(format!(
                "{}: import_trace only runs in a dataflow attached to the engine that holds \
                 the trace",
                imp.label
            )));
        }
        let mut trace_of = Vec::with_capacity(n);
        for node in &plan.nodes {
            trace_of.push(node.trace_source(&trace_of));
        }

        let inputs = plan.nodes.iter().map(|n| InputState::of(&n.op)).collect();
        let dtype_links = dtype_links::DtypeLinks::of(&plan);
        let ws = (0..workers)
            .map(|i| Worker::new(&plan, i, workers))
            .collect();
        let mut e = Engine {
            plan,
            ports,
            graph,
            consumers,
            trace_of,
            workers: ws,
            inputs,
            dtype_links,
            callbacks,
            reach_out: Vec::new(),
            frontier_in: Vec::new(),
            push_count: 0,
            max_log: 1 << 20,
            passes: 0,
            own: Vec::new(),
            scratch_ports: Vec::new(),
            scratch_dirty: Vec::new(),
            scratch_frontier: Antichain::new(),
            scratch_before: Vec::new(),
            handles: Vec::new(),
            idle_merges: Default::default(),
            memory_limit: crate::memory::default_limit(),
            stopped: None,
            spill_dir: None,
            write_through_dir: std::sync::OnceLock::new(),
        };
        e.feed_constants(0)?;
        e.compute_frontiers();
        e.compute_frontiers_in();
        Ok(e)
    }

    /// The plan being run.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Number of scheduling passes run so far.
    pub fn passes(&self) -> u64 {
        self.passes
    }

    /// The dtypes of `node`'s columns as far as the plan and the data so far tell (see
    /// `dtype_links::DtypeLinks::dtype_of`): `None` for a column whose dtype no data has
    /// shown yet.
    pub fn column_dtypes(&self, node: usize) -> Vec<Option<crate::encoding::DType>> {
        let width = self.plan.nodes.get(node).map_or(0, |n| n.columns.len());
        (0..width)
            .map(|c| self.dtype_links.dtype_of(node, c))
            .collect()
    }
}

impl crate::string_gc::MarkStrings for Engine {
    /// Every word the workers hold (inputs are delivered to the workers' queues as they are
    /// pushed, so the engine itself holds no rows).
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        for w in &self.workers {
            w.mark_strings(marks);
        }
    }
}

/// The consumers of each node, `(consumer node, port)`, from the input ports of each node.
fn consumers_of(ports: &[Vec<Vec<usize>>]) -> Vec<Vec<(usize, usize)>> {
    let mut consumers = vec![Vec::new(); ports.len()];
    for (node, ps) in ports.iter().enumerate() {
        for (port, ups) in ps.iter().enumerate() {
            for &u in ups {
                consumers[u].push((node, port));
            }
        }
    }
    consumers
}
