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

pub mod arrangement;
pub mod column;
pub mod errors;
pub mod exchange;
pub mod operators;
pub mod plan;
pub mod plans;
pub mod progress;
pub mod util;
pub mod worker;

use crate::encoding::DType;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, PartialOrder, Time};
use crate::updates::Updates;
use column::{Callbacks, Column, Msg, Schema};
use plan::{Op, Plan};
use rayon::prelude::*;
use std::sync::Arc;
use worker::{LogEntry, Worker};

/// Below this many input updates (summed over workers) a node runs on the workers one after
/// the other: a fork-join across threads costs more than it saves. Measured with
/// `bfs_bench ... 1000 ... 2` (2 workers, batches of 1,000): 512 gave 1.2-1.5x over one
/// worker on the 1k/2k, 100k/1M and 1M/10M graphs; 4,096 gave none.
const PARALLEL_MIN_UPDATES: usize = 512;

/// Idle merge work an arrangement spends per activation after a trace handle is released
/// (so that the history it held back is compacted without waiting for new batches).
const IDLE_MERGE_FUEL: usize = 1 << 20;

/// The most workers an engine runs (`Dataflow(workers=...)` documents the same bound).
pub const MAX_WORKERS: usize = 256;

/// State of one input of the dataflow.
#[derive(Clone, Debug)]
struct InputState {
    frontier: Antichain<Time>,
    closed: bool,
    schema: Option<Schema>,
}

/// Captured output handed back to the caller: columns, times, diffs.
pub struct Captured {
    pub columns: Vec<Column>,
    pub times: Vec<Time>,
    pub diffs: Vec<i64>,
}

/// A running dataflow.
pub struct Engine {
    plan: Plan,
    ports: Vec<Vec<Vec<usize>>>,
    consumers: Vec<Vec<(usize, usize)>>,
    trace_of: Vec<Option<usize>>,
    workers: Vec<Worker>,
    inputs: Vec<Option<InputState>>,
    callbacks: Arc<dyn Callbacks>,
    reach_out: Vec<Antichain<Time>>,
    frontier_in: Vec<Antichain<Time>>,
    push_count: usize,
    max_log: usize,
    passes: u64,
    /// Buffers reused by `compute_frontiers`.
    scratch_held: Vec<Antichain<Time>>,
    scratch_queued: Vec<Vec<(usize, Time)>>,
    scratch_ports: Vec<Antichain<Time>>,
    /// The previous pass's `reach_out`, to tell whether frontiers moved.
    scratch_before: Vec<Antichain<Time>>,
    /// Trace handles: the arrange node each holds and the frontier it holds compaction at
    /// (`None` once released).
    handles: Vec<Option<(usize, Antichain<Time>)>>,
    /// `(worker, arrange node)` whose trace does idle merge work at its next activations
    /// (after a handle on it was released), until none remains.
    idle_merges: std::collections::BTreeSet<(usize, usize)>,
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
        let mut consumers = vec![Vec::new(); n];
        for (node, ps) in ports.iter().enumerate() {
            for (port, ups) in ps.iter().enumerate() {
                for &u in ups {
                    consumers[u].push((node, port));
                }
            }
        }
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
        let mut trace_of = vec![None; n];
        for node in &plan.nodes {
            trace_of[node.id] = match node.op {
                Op::Arrange { .. } => Some(node.id),
                Op::EnterArrangement => trace_of[node.inputs[0]],
                _ => None,
            };
        }

        let inputs = plan
            .nodes
            .iter()
            .map(|node| match node.op {
                Op::Input { .. } => Some(InputState {
                    frontier: Antichain::from_elem(Time::minimum()),
                    closed: false,
                    schema: None,
                }),
                _ => None,
            })
            .collect();
        let ws = (0..workers)
            .map(|i| Worker::new(&plan, i, workers))
            .collect();
        let mut e = Engine {
            plan,
            ports,
            consumers,
            trace_of,
            workers: ws,
            inputs,
            callbacks,
            reach_out: Vec::new(),
            frontier_in: Vec::new(),
            push_count: 0,
            max_log: 1 << 20,
            passes: 0,
            scratch_held: Vec::new(),
            scratch_queued: Vec::new(),
            scratch_ports: Vec::new(),
            scratch_before: Vec::new(),
            handles: Vec::new(),
            idle_merges: Default::default(),
        };
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

    fn input_state(&mut self, node: usize) -> Result<&mut InputState> {
        let label = self
            .plan
            .nodes
            .get(node)
            .map(|n| n.label.clone())
            .unwrap_or_default();
        self.inputs
            .get_mut(node)
            .and_then(|s| s.as_mut())
            .ok_or_else(|| Error::Value(format!("node {node} ({label}) is not an input")))
    }

    fn input_name(&self, node: usize) -> String {
        match &self.plan.nodes[node].op {
            Op::Input { name } if !name.is_empty() => format!("input {name:?}"),
            _ => format!("input {}", self.plan.nodes[node].label),
        }
    }

    /// Adds updates to an input. Every time must be in the future of the input's frontier;
    /// on any error nothing of the call is accepted.
    pub fn push(
        &mut self,
        node: usize,
        columns: Vec<Column>,
        times: Vec<Time>,
        diffs: Vec<i64>,
    ) -> Result<()> {
        let name = self.input_name(node);
        let ncols = self.plan.nodes[node].columns.len();
        let state = self.input_state(node)?.clone();
        if state.closed {
            return Err(Error::Time(format!("{name} is closed")));
        }
        if columns.len() != ncols {
            return Err(Error::Shape(format!(
                "{name}: {} columns given, the input has {ncols}",
                columns.len()
            )));
        }
        let n = times.len();
        if diffs.len() != n {
            return Err(Error::Shape(format!(
                "{name}: {n} times but {} diffs",
                diffs.len()
            )));
        }
        let schema: Vec<DType> = columns.iter().map(|c| c.dtype).collect();
        if let Some(s) = &state.schema {
            if **s != schema {
                let cols = &self.plan.nodes[node].columns;
                let (i, _) = s
                    .iter()
                    .zip(&schema)
                    .enumerate()
                    .find(|(_, (a, b))| a != b)
                    .unwrap_or((0, (&s[0], &s[0])));
                return Err(Error::Type(format!(
                    "{name}: column {:?} has dtype {}, but earlier updates fixed it to {}",
                    cols.get(i).cloned().unwrap_or_default(),
                    schema[i].name(),
                    s[i].name()
                )));
            }
        }
        for t in &times {
            if !state.frontier.less_equal(t) {
                return Err(Error::Time(format!(
                    "{name}: update at time {t:?} is not in the future of the input frontier {:?} (already advanced past it)",
                    state.frontier
                )));
            }
        }
        let rows = column::columns_to_rows(&columns, n, &name)?;
        let schema: Schema = match &state.schema {
            Some(s) => s.clone(),
            None => Arc::new(schema),
        };
        self.input_state(node)?.schema = Some(schema.clone());
        if n == 0 {
            return Ok(());
        }
        let msg = Msg {
            schema,
            upd: Updates {
                width: ncols,
                rows,
                times,
                diffs,
            },
        };
        let w = self.push_count % self.workers.len();
        self.push_count += 1;
        let ctx_consumers = self.consumers[node].clone();
        for (c, port) in ctx_consumers {
            self.workers[w].deliver(c, port, msg.clone());
        }
        self.flush_outboxes();
        Ok(())
    }

    /// Advances an input's frontier to `time` (it may not go backwards).
    pub fn advance_input(&mut self, node: usize, time: Time) -> Result<()> {
        let name = self.input_name(node);
        let st = self.input_state(node)?;
        if st.closed {
            return Err(Error::Time(format!("{name} is closed")));
        }
        if !st.frontier.less_equal(&time) {
            return Err(Error::Time(format!(
                "{name}: cannot advance to {time:?}, which is not in the future of the current frontier {:?}",
                st.frontier
            )));
        }
        st.frontier = Antichain::from_elem(time);
        Ok(())
    }

    /// Closes an input: no more updates will arrive.
    pub fn close_input(&mut self, node: usize) -> Result<()> {
        let st = self.input_state(node)?;
        st.closed = true;
        st.frontier = Antichain::new();
        Ok(())
    }

    fn flush_outboxes(&mut self) {
        exchange::flush(&mut self.workers);
    }

    /// Recomputes every node's frontier from the pointstamps of all workers.
    fn compute_frontiers(&mut self) {
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
        progress::reach_into(&self.plan, &self.ports, &held, &queued, &mut self.reach_out);
        self.scratch_held = held;
        self.scratch_queued = queued;
        self.scratch_ports = per_port;
    }

    /// Recomputes every node's input frontier from `reach_out` (a pass does this node by
    /// node as it goes).
    fn compute_frontiers_in(&mut self) {
        let n = self.plan.nodes.len();
        self.frontier_in = (0..n)
            .map(|node| progress::frontier_in(&self.plan, &self.ports, &self.reach_out, node))
            .collect();
    }

    /// Refreshes `reach_out[node]` from the workers' current state, after the node ran.
    fn refresh(&mut self, node: usize, frontier_in: &Antichain<Time>) {
        let mut queued = Vec::new();
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
                if let Some(s) = progress::summarize(&self.plan, node, p, t) {
                    r.insert(s);
                }
            }
        }
        for t in frontier_in.elements() {
            r.insert(*t);
        }
        self.reach_out[node] = r;
    }

    /// Runs one scheduling pass. Returns whether anything happened (work done or frontiers
    /// moved), i.e. whether another pass may make progress.
    pub fn step(&mut self) -> Result<bool> {
        self.passes += 1;
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
            let f_in = progress::frontier_in(&self.plan, &self.ports, &self.reach_out, node);
            let Engine {
                plan,
                callbacks,
                consumers,
                trace_of,
                frontier_in,
                reach_out,
                workers,
                ..
            } = self;
            let ctx = worker::PassCtx {
                plan,
                callbacks: &**callbacks,
                consumers,
                trace_of,
                frontier_in,
                reach_out,
            };
            let load: usize = workers
                .iter()
                .map(|w| w.input_len(plan, trace_of, node))
                .sum();
            let run_one = |w: &mut Worker| -> Result<(bool, bool)> {
                if w.should_run(plan, trace_of, node, &f_in) {
                    Ok((true, w.activate(&ctx, node, &f_in)?))
                } else {
                    Ok((false, false))
                }
            };
            let results: Vec<Result<(bool, bool)>> =
                if workers.len() > 1 && load >= PARALLEL_MIN_UPDATES {
                    workers.par_iter_mut().map(run_one).collect()
                } else {
                    workers.iter_mut().map(run_one).collect()
                };
            for (w, r) in results.into_iter().enumerate() {
                let (ran, did) = r?;
                progressed |= did;
                if ran {
                    self.compact(w, node, &f_in);
                }
            }
            if self.workers.len() > 1 {
                self.flush_outboxes();
            }
            self.refresh(node, &f_in);
            self.frontier_in[node] = f_in;
        }
        self.trim_logs();
        Ok(progressed)
    }

    /// Lets the traces a node reads compact up to the frontier of its last activation.
    fn compact(&mut self, w: usize, node: usize, _f_in: &Antichain<Time>) {
        let spec = &self.plan.nodes[node];
        if matches!(spec.op, Op::ImportTrace { .. }) {
            self.compact_reduce_outputs(w, node);
            return;
        }
        if !matches!(spec.op, Op::Arrange { .. }) {
            return;
        }
        // The trace of an arrange node is read by its consumers (directly or entered into
        // scopes); compact it to the meet of their last activation frontiers, projected to
        // the arrange node's scope (iteration coordinates zeroed).
        let depth_coord = self.plan.time_dims + self.plan.scopes[spec.scope].depth;
        let mut f = Antichain::new();
        let mut stack: Vec<usize> = self.consumers[node].iter().map(|c| c.0).collect();
        let wk = &self.workers[w];
        while let Some(c) = stack.pop() {
            if matches!(
                self.plan.nodes[c].op,
                Op::EnterArrangement | Op::ImportTrace { .. }
            ) {
                stack.extend(self.consumers[c].iter().map(|x| x.0));
                continue;
            }
            for t in wk.last_frontier[c].elements() {
                let mut t = *t;
                for k in depth_coord..crate::lattice::MAX_DIMS {
                    t.0[k] = 0;
                }
                f.insert(t);
            }
        }
        // Never compact past what this node itself may still add, nor past a trace handle.
        for t in wk.last_frontier[node].elements() {
            f.insert(*t);
        }
        for (_, hf) in self.handles.iter().flatten().filter(|(n, _)| *n == node) {
            for t in hf.elements() {
                f.insert(*t);
            }
        }
        if let Some(tr) = self.workers[w].traces[node].as_mut() {
            tr.set_compaction(&f);
            if self.idle_merges.contains(&(w, node)) && !tr.exert(IDLE_MERGE_FUEL) {
                self.idle_merges.remove(&(w, node));
            }
        }
        self.compact_reduce_outputs(w, node);
    }

    /// Reduce output traces of `node`'s reduce consumers compact to the reduce's own last
    /// frontier.
    fn compact_reduce_outputs(&mut self, w: usize, node: usize) {
        let reduce_consumers: Vec<usize> = self.consumers[node]
            .iter()
            .map(|c| c.0)
            .filter(|&c| matches!(self.plan.nodes[c].op, Op::Reduce { .. }))
            .collect();
        for r in reduce_consumers {
            let lf = self.workers[w].last_frontier[r].clone();
            self.workers[w].ops[r].compact_output(&lf);
        }
    }

    /// Attaches another dataflow's plan to this running engine: its nodes get ids from the
    /// returned offset on, its iterate scopes follow this plan's, and its `import_trace`
    /// nodes read the named top-level arrangements of this engine (their consumers first see
    /// the trace's current contents, then each new batch). Both run in every pass.
    pub fn attach(&mut self, other: Plan) -> Result<usize> {
        if other.time_dims != self.plan.time_dims {
            return Err(Error::Plan(format!(
                "the attached dataflow has {} time coordinates, the running one {}",
                other.time_dims, self.plan.time_dims
            )));
        }
        let offset = self.plan.nodes.len();
        let scope_base = self.plan.scopes.len() - 1;
        let map_scope = |s: usize| if s == 0 { 0 } else { s + scope_base };
        let mut nodes = Vec::with_capacity(other.nodes.len());
        for mut n in other.nodes {
            n.id += offset;
            n.scope = map_scope(n.scope);
            for i in n.inputs.iter_mut() {
                *i += offset;
            }
            match &mut n.op {
                Op::Variable { result } => *result += offset,
                Op::ImportTrace { source } => {
                    let ok = self.plan.nodes.get(*source).is_some_and(|s| {
                        s.scope == 0 && matches!(s.op, Op::Arrange { .. } | Op::ImportTrace { .. })
                    });
                    if !ok {
                        return Err(Error::Plan(format!(
                            "{}: source node {source} is not a top-level arrangement of the \
                             running dataflow",
                            n.label
                        )));
                    }
                    let width = self.trace_of[*source]
                        .map(|t| self.plan.nodes[t].columns.len())
                        .unwrap_or(0);
                    if width != n.columns.len() {
                        return Err(Error::Plan(format!(
                            "{}: {} columns, the imported arrangement has {width}",
                            n.label,
                            n.columns.len()
                        )));
                    }
                    n.inputs = vec![*source];
                }
                _ => {}
            }
            nodes.push(n);
        }
        for sc in other.scopes.into_iter().skip(1) {
            self.plan.scopes.push(plan::Scope {
                parent: sc.parent.map(map_scope),
                depth: sc.depth,
                max_iterations: sc.max_iterations,
            });
        }
        self.plan.nodes.extend(nodes);
        let n = self.plan.nodes.len();
        self.ports = progress::input_ports(&self.plan);
        self.consumers = vec![Vec::new(); n];
        for (node, ps) in self.ports.iter().enumerate() {
            for (port, ups) in ps.iter().enumerate() {
                for &u in ups {
                    self.consumers[u].push((node, port));
                }
            }
        }
        for node in offset..n {
            let spec = &self.plan.nodes[node];
            let t = match spec.op {
                Op::Arrange { .. } => Some(node),
                Op::EnterArrangement | Op::ImportTrace { .. } => self.trace_of[spec.inputs[0]],
                _ => None,
            };
            self.trace_of.push(t);
            self.inputs.push(match spec.op {
                Op::Input { .. } => Some(InputState {
                    frontier: Antichain::from_elem(Time::minimum()),
                    closed: false,
                    schema: None,
                }),
                _ => None,
            });
        }
        for w in self.workers.iter_mut() {
            w.extend(&self.plan);
        }
        self.compute_frontiers();
        self.compute_frontiers_in();
        Ok(offset)
    }

    /// A handle on the trace of top-level arrangement `node`: compaction stops at its
    /// frontier (initially the least time) until it moves or is released.
    pub fn trace_handle(&mut self, node: usize) -> Result<usize> {
        let ok = self
            .plan
            .nodes
            .get(node)
            .is_some_and(|s| s.scope == 0 && matches!(s.op, Op::Arrange { .. }));
        if !ok {
            return Err(Error::Value(format!(
                "node {node} is not a top-level arrange node; only those have trace handles"
            )));
        }
        self.handles
            .push(Some((node, Antichain::from_elem(Time::minimum()))));
        Ok(self.handles.len() - 1)
    }

    fn handle_mut(&mut self, handle: usize) -> Result<&mut (usize, Antichain<Time>)> {
        self.handles
            .get_mut(handle)
            .and_then(|h| h.as_mut())
            .ok_or_else(|| Error::Value(format!("trace handle {handle} is closed or unknown")))
    }

    /// Moves a trace handle's frontier forward to `time` (it may not go back).
    pub fn set_handle_frontier(&mut self, handle: usize, time: Time) -> Result<()> {
        let h = self.handle_mut(handle)?;
        if !h.1.less_equal(&time) {
            return Err(Error::Time(format!(
                "trace handle {handle}: cannot move its frontier back from {:?} to {time:?}",
                h.1
            )));
        }
        h.1 = Antichain::from_elem(time);
        let node = h.0;
        for w in 0..self.workers.len() {
            self.idle_merges.insert((w, node));
        }
        Ok(())
    }

    /// Releases a trace handle (compaction of its trace no longer waits for it).
    pub fn close_handle(&mut self, handle: usize) -> Result<()> {
        let node = self.handle_mut(handle)?.0;
        self.handles[handle] = None;
        for w in 0..self.workers.len() {
            self.idle_merges.insert((w, node));
        }
        Ok(())
    }

    /// Updates stored in the trace of arrange node `node`, summed over workers.
    pub fn trace_len(&self, node: usize) -> Result<usize> {
        let t = self
            .trace_of
            .get(node)
            .copied()
            .flatten()
            .ok_or_else(|| Error::Value(format!("node {node} is not an arrangement")))?;
        Ok(self
            .workers
            .iter()
            .map(|w| w.traces[t].as_ref().map_or(0, |t| t.len()))
            .sum())
    }

    fn trim_logs(&mut self) {
        let max = self.max_log;
        for w in self.workers.iter_mut() {
            if w.log.len() > max {
                let drop = w.log.len() - max / 2;
                w.log.drain(..drop);
            }
        }
    }

    /// Enables or disables the operator log.
    pub fn set_logging(&mut self, on: bool) {
        for w in self.workers.iter_mut() {
            w.logging = on;
        }
    }

    /// The frontier at a node's inputs (for `capture` and `probe`: what is complete).
    pub fn frontier(&self, node: usize) -> Result<Antichain<Time>> {
        self.frontier_in
            .get(node)
            .cloned()
            .ok_or_else(|| Error::Value(format!("no node {node}")))
    }

    fn sinks(&self) -> Vec<usize> {
        self.plan
            .nodes
            .iter()
            .filter(|n| matches!(n.op, Op::Capture | Op::Probe))
            .map(|n| n.id)
            .collect()
    }

    fn reached(&self, t: &Time) -> bool {
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
        for _ in 0..max_passes {
            let progressed = self.step()?;
            if self.reached(&t) {
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
        for _ in 0..max_passes {
            if !self.step()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Takes the updates captured by a capture node since the last call.
    pub fn capture_take(&mut self, node: usize) -> Result<Captured> {
        if !matches!(self.plan.nodes.get(node).map(|n| &n.op), Some(Op::Capture)) {
            return Err(Error::Value(format!("node {node} is not a capture")));
        }
        let mut msgs = Vec::new();
        for w in self.workers.iter_mut() {
            msgs.extend(w.take_capture(node));
        }
        let ncols = self.plan.nodes[node].columns.len();
        let schema: Option<Schema> = msgs
            .iter()
            .find(|m| !m.upd.is_empty())
            .map(|m| m.schema.clone());
        let mut all = Updates::new(schema.as_ref().map(|s| s.len()).unwrap_or(ncols));
        for m in &msgs {
            if Some(&m.schema) != schema.as_ref() && !m.upd.is_empty() {
                return Err(Error::Type(format!(
                    "capture {}: batches with different dtypes reached the capture",
                    self.plan.nodes[node].label
                )));
            }
            all.extend(&m.upd);
        }
        let columns = match &schema {
            Some(s) => column::rows_to_columns(s, &all),
            None => Vec::new(),
        };
        Ok(Captured {
            columns,
            times: all.times,
            diffs: all.diffs,
        })
    }

    /// Takes the error updates produced since the last call (all workers).
    pub fn errors_take(&mut self) -> Vec<errors::ErrorUpdate> {
        let mut all = Vec::new();
        for w in self.workers.iter_mut() {
            all.append(&mut w.errors);
        }
        all
    }

    /// The operator log of all workers, in order of activation per worker.
    pub fn log(&self) -> Vec<LogEntry> {
        let mut all: Vec<LogEntry> = self
            .workers
            .iter()
            .flat_map(|w| w.log.iter().cloned())
            .collect();
        all.sort_by_key(|e| e.worker);
        all
    }

    /// Per-node sizes (trace updates, reduce output updates, reduce pending) for diagnostics.
    pub fn sizes(&self) -> Vec<(usize, usize, usize, usize)> {
        let w = &self.workers[0];
        (0..self.plan.nodes.len())
            .map(|n| {
                let t = w.traces[n].as_ref().map(|t| t.len()).unwrap_or(0);
                let (o, p) = w.ops[n].sizes();
                (n, t, o, p)
            })
            .filter(|x| x.1 + x.2 + x.3 > 0)
            .collect()
    }

    /// Heap bytes held by all traces (arrangements and reduce outputs).
    pub fn heap_bytes(&self) -> usize {
        self.workers
            .iter()
            .map(|w| {
                w.traces
                    .iter()
                    .flatten()
                    .map(|t| t.heap_bytes())
                    .sum::<usize>()
                    + w.ops.iter().map(|op| op.heap_bytes()).sum::<usize>()
            })
            .sum()
    }
}
