//! One worker (key shard) of a running dataflow: one operator instance per node, input
//! queues, the traces of arrangements, and the activation of an operator during a pass.
//!
//! The worker is a generic driver: it knows operators only through the
//! [`Operator`] trait (see `operators/mod.rs`).

use super::arrangement::Arrangement;
use super::column::{Callbacks, Msg};
use super::dtype_links::DtypeLinks;
use super::errors::ErrorUpdate;
use super::exchange;
use super::operators::{Operator, Output, RunCtx};
use super::plan::Plan;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use smallvec::SmallVec;
use std::sync::Arc;

/// One entry of the operator log.
#[derive(Clone, Debug)]
pub struct LogEntry {
    pub node: usize,
    pub worker: usize,
    pub lower: Antichain<Time>,
    pub upper: Antichain<Time>,
    pub updates_in: usize,
    pub updates_out: usize,
    pub nanos: u64,
    pub python: bool,
}

/// A worker's state.
pub struct Worker {
    pub index: usize,
    pub peers: usize,
    /// The operator of each node.
    pub ops: Vec<Box<dyn Operator>>,
    /// Input queues: `inbox[node][port]`.
    pub inbox: Vec<Vec<Vec<Msg>>>,
    /// Traces of `arrange` nodes (indexed by node id).
    pub traces: Vec<Option<Arrangement>>,
    /// New batches produced by each `arrange` node this pass, for its consumers.
    pub fresh: Vec<Option<Arc<Msg>>>,
    /// Per-node frontier of the last activation (the `lower` of the next one).
    pub last_frontier: Vec<Antichain<Time>>,
    /// Messages for other workers: `(worker, node, port, msg)`.
    pub outbox: Vec<(usize, usize, usize, Msg)>,
    pub log: Vec<LogEntry>,
    pub logging: bool,
    /// Error updates produced since the engine last took them (see `errors.rs`).
    pub errors: Vec<ErrorUpdate>,
    /// For each node, the `import_trace` node it reads through (itself or via
    /// `enter_arrangement`), whose first-pass snapshot its consumers see in `fresh`.
    pub import_of: Vec<Option<usize>>,
    /// `import_trace` nodes whose consumers have not yet been shown the trace's contents.
    pub pending_snapshots: Vec<usize>,
}

/// Read-only context of a pass.
pub struct PassCtx<'a> {
    pub plan: &'a Plan,
    pub callbacks: &'a dyn Callbacks,
    /// `consumers[node]`: `(consumer node, port)` pairs.
    pub consumers: &'a [Vec<(usize, usize)>],
    /// For each node, the arrange node whose trace it reads (arrange / enter_arrangement).
    pub trace_of: &'a [Option<usize>],
    /// Frontier of each node's inputs at the start of the pass (global).
    pub frontier_in: &'a [Antichain<Time>],
    /// Frontier of each node's output at the start of the pass (global).
    pub reach_out: &'a [Antichain<Time>],
    /// Which columns share a dtype, and the dtypes known so far.
    pub dtype_links: &'a DtypeLinks,
    /// The memory limit operators check against while they run (`None`: none).
    pub memory_limit: Option<usize>,
    /// Where and when merges write large outputs through to files (see `spill.rs`).
    pub write_through: super::spill::WriteThrough,
}

impl crate::string_gc::MarkStrings for Worker {
    /// Queued and outgoing messages, this pass's fresh batches, the traces, and each
    /// operator's own state.
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        for m in self.inbox.iter().flatten().flatten() {
            marks.words(&m.upd.rows);
        }
        for (_, _, _, m) in &self.outbox {
            marks.words(&m.upd.rows);
        }
        for m in self.fresh.iter().flatten() {
            marks.words(&m.upd.rows);
        }
        for t in self.traces.iter().flatten() {
            t.mark_strings(marks);
        }
        for op in &self.ops {
            op.mark_strings(marks);
        }
    }
}

impl Worker {
    /// A worker for `plan`.
    pub fn new(plan: &Plan, index: usize, peers: usize) -> Self {
        let mut w = Worker {
            index,
            peers,
            ops: Vec::new(),
            inbox: Vec::new(),
            traces: Vec::new(),
            fresh: Vec::new(),
            last_frontier: Vec::new(),
            outbox: Vec::new(),
            log: Vec::new(),
            logging: true,
            errors: Vec::new(),
            import_of: Vec::new(),
            pending_snapshots: Vec::new(),
        };
        w.extend(plan);
        w
    }

    /// Adds operators for the nodes of `plan` beyond those this worker has (a dataflow
    /// attached to a running engine); `import_trace` nodes get their snapshot at the next
    /// pass.
    pub fn extend(&mut self, plan: &Plan) {
        for node in &plan.nodes[self.ops.len()..] {
            let op = node.operator(plan);
            self.traces.push(op.new_trace());
            self.ops.push(op);
            self.inbox
                .push((0..node.ports().len()).map(|_| Vec::new()).collect());
            self.fresh.push(None);
            self.last_frontier
                .push(Antichain::from_elem(Time::minimum()));
            let import = match &node.op {
                super::plan::Op::ImportTrace { .. } => {
                    self.pending_snapshots.push(node.id);
                    Some(node.id)
                }
                super::plan::Op::EnterArrangement => self.import_of[node.inputs[0]],
                _ => None,
            };
            self.import_of.push(import);
        }
    }

    /// Shows each pending `import_trace`'s consumers the imported trace's current contents
    /// (as this pass's fresh batch of the import node). Call after `fresh` is cleared.
    pub fn take_snapshots(&mut self, trace_of: &[Option<usize>]) {
        for import in std::mem::take(&mut self.pending_snapshots) {
            let Some(trace) = trace_of[import].and_then(|src| self.traces[src].as_ref()) else {
                continue;
            };
            let Some(schema) = trace.schema.clone() else {
                continue;
            };
            if trace.is_empty() {
                continue;
            }
            self.fresh[import] = Some(Arc::new(Msg {
                schema,
                upd: trace.to_updates(),
            }));
        }
    }

    /// Pointstamps held by `node` on this worker (capabilities, buffered and queued data),
    /// split into those queued at input `port`s (before the node's summary) and those held
    /// at its output.
    /// Both are folded into antichains (minimal elements) as they are read.
    pub fn pointstamps(
        &self,
        node: usize,
        queued: &mut Vec<Antichain<Time>>,
        held: &mut Antichain<Time>,
    ) {
        if queued.len() < self.inbox[node].len() {
            queued.resize(self.inbox[node].len(), Antichain::new());
        }
        for (port, q) in self.inbox[node].iter().enumerate() {
            for m in q {
                for t in &m.upd.times {
                    queued[port].insert_ref(t);
                }
            }
        }
        self.ops[node].held(held);
    }

    /// Whether the arrangements `node` reads have fresh batches this pass.
    fn has_fresh_input(&self, plan: &Plan, trace_of: &[Option<usize>], node: usize) -> bool {
        self.ops[node].reads_arrangements()
            && plan.nodes[node].inputs.iter().any(|&i| {
                trace_of[i].is_some_and(|t| self.fresh[t].is_some())
                    || self.import_of[i].is_some_and(|t| self.fresh[t].is_some())
            })
    }

    /// Whether activating `node` with input frontier `f_in` can do anything.
    pub fn should_run(
        &self,
        plan: &Plan,
        trace_of: &[Option<usize>],
        node: usize,
        f_in: &Antichain<Time>,
    ) -> bool {
        self.has_input(node)
            || self.ops[node].has_work()
            || &self.last_frontier[node] != f_in
            || self.has_fresh_input(plan, trace_of, node)
    }

    /// Number of updates waiting for `node`: queued input plus fresh arrangement batches.
    pub fn input_len(&self, plan: &Plan, trace_of: &[Option<usize>], node: usize) -> usize {
        let queued: usize = self.inbox[node].iter().flatten().map(|m| m.upd.len()).sum();
        let fresh: usize = if self.ops[node].reads_arrangements() {
            plan.nodes[node]
                .inputs
                .iter()
                .filter_map(|&i| trace_of[i].and_then(|t| self.fresh[t].as_ref()))
                .map(|m| m.upd.len())
                .sum()
        } else {
            0
        };
        queued + fresh
    }

    /// Whether the node has queued input.
    pub fn has_input(&self, node: usize) -> bool {
        self.inbox[node].iter().any(|q| !q.is_empty())
    }

    /// Delivers a message to `node`'s `port`, routing by key to the owning workers when the
    /// node's operator keys its state and several workers run.
    pub fn deliver(&mut self, node: usize, port: usize, msg: Msg) {
        if msg.upd.is_empty() {
            return;
        }
        if self.peers > 1 {
            if let Some(key) = self.ops[node].exchange_key() {
                for (target, m) in exchange::partition(msg, key, self.peers) {
                    if target == self.index {
                        self.inbox[node][port].push(m);
                    } else {
                        self.outbox.push((target, node, port, m));
                    }
                }
                return;
            }
        }
        self.inbox[node][port].push(msg);
    }

    /// Sends a node's output to its consumers.
    fn emit(&mut self, ctx: &PassCtx<'_>, node: usize, msg: Msg) {
        if msg.upd.is_empty() {
            return;
        }
        let targets = &ctx.consumers[node];
        let mut msg = Some(msg);
        for (i, &(c, port)) in targets.iter().enumerate() {
            let m = if i + 1 == targets.len() {
                msg.take().expect("message")
            } else {
                msg.clone().expect("message")
            };
            self.deliver(c, port, m);
        }
    }

    /// Activates `node` once with input frontier `frontier`. Returns whether it did work.
    pub fn activate(
        &mut self,
        ctx: &PassCtx<'_>,
        node: usize,
        frontier: &Antichain<Time>,
    ) -> Result<bool> {
        let spec = &ctx.plan.nodes[node];
        let _limit = crate::memory::LimitScope::new(ctx.memory_limit);
        // Set already on the thread that runs the pass (`Engine::step`); a pool thread's.
        let _write_through = (!crate::trace::spill::write_through_set()).then(|| {
            let (dir, above, min_bytes) = &ctx.write_through;
            crate::trace::spill::WriteThroughScope::new(dir.clone(), *above, *min_bytes)
        });
        // The clock is read only for the activation log (a pass activates every node).
        let started = self.logging.then(std::time::Instant::now);
        let mut inputs: SmallVec<[Vec<Msg>; 2]> =
            self.inbox[node].iter_mut().map(std::mem::take).collect();
        let n_in: usize = inputs.iter().flatten().map(|m| m.upd.len()).sum();
        let python = self.ops[node].calls_python();
        let Worker {
            ops,
            traces,
            fresh,
            errors,
            import_of,
            ..
        } = self;
        let mut cx = RunCtx {
            node,
            plan: ctx.plan,
            callbacks: ctx.callbacks,
            trace_of: ctx.trace_of,
            import_of,
            traces,
            fresh,
            errors,
            dtype_links: ctx.dtype_links,
        };
        let op = &mut ops[node];
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            op.run(&mut cx, &mut inputs, frontier)
        }))
        .unwrap_or_else(|payload| {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Err(Error::Internal(format!(
                "a bug in ddflow: the operator panicked ({msg})"
            )))
        });
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                // Nothing accepted is lost: put the input back for a later retry.
                for (port, q) in inputs.into_iter().enumerate() {
                    let mut q = q;
                    q.append(&mut self.inbox[node][port]);
                    self.inbox[node][port] = q;
                }
                return Err(e.with_operator(&spec.label));
            }
        };
        // The emptied queues go back, keeping their capacity for the next pass's messages.
        for (queue, mut taken) in self.inbox[node].iter_mut().zip(inputs) {
            if queue.is_empty() {
                taken.clear();
                *queue = taken;
            }
        }
        let Output { msgs, did } = out;
        let mut n_out: usize = msgs.iter().map(|m| m.upd.len()).sum();
        if let Some(f) = &self.fresh[node] {
            n_out += f.upd.len();
        }
        for m in msgs {
            self.emit(ctx, node, m);
        }
        if let Some(started) = started.filter(|_| n_in > 0 || n_out > 0) {
            self.log.push(LogEntry {
                node,
                worker: self.index,
                lower: self.last_frontier[node].clone(),
                upper: frontier.clone(),
                updates_in: n_in,
                updates_out: n_out,
                nanos: started.elapsed().as_nanos() as u64,
                python,
            });
        }
        self.last_frontier[node].clone_from(frontier);
        Ok(did || n_in > 0)
    }

    /// Takes captured updates of a capture node.
    pub fn take_capture(&mut self, node: usize) -> Vec<Msg> {
        self.ops[node].take_captured()
    }
}
