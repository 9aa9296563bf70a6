//! One worker (key shard) of a running dataflow: per-node operator state, input queues,
//! and the activation of each operator during a scheduling pass.

use super::arrangement::Arrangement;
use super::column::{rows_to_columns, Callbacks, Msg, Payload, Reply, Schema};
use super::errors::{record_message, render_row, ErrorUpdate};
use super::operators::advance::advance;
use super::operators::delay::DelayState;
use super::operators::join::join_delta;
use super::operators::reduce::{ReduceInput, ReduceState};
use super::plan::{Op, Plan};
use super::util::{consolidate, worker_of};
use crate::encoding::DType;
use crate::error::{Error, Result};
use crate::expr::BoundExpr;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// Operator state of one node on one worker.
pub enum NodeState {
    /// Operators without state beyond a bound-expression cache.
    Stateless,
    /// `select`: expressions bound for an input schema.
    Select(Option<(Schema, Vec<BoundExpr>, Schema)>),
    /// `filter`: predicate bound for an input schema.
    Filter(Option<(Schema, BoundExpr)>),
    /// `arrange`: updates not yet complete, and the output schema.
    Arrange {
        buffer: Vec<Msg>,
        schema: Option<Schema>,
    },
    /// `reduce`.
    Reduce(Box<ReduceState>),
    /// `consolidate`: updates not yet complete.
    Consolidate { buffer: Vec<Msg> },
    /// `advance_iteration`: the value expression bound for an input schema.
    Advance(Option<(Schema, BoundExpr)>),
    /// `delay`: updates held by time until complete.
    Delay(DelayState),
    /// `capture`: everything received, not yet taken.
    Capture { data: Vec<Msg> },
}

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
    pub nodes: Vec<NodeState>,
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
}

impl Worker {
    /// A worker for `plan`.
    pub fn new(plan: &Plan, index: usize, peers: usize) -> Self {
        let mut w = Worker {
            index,
            peers,
            nodes: Vec::new(),
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

    /// Adds state for the nodes of `plan` beyond those this worker has (a dataflow attached
    /// to a running engine); `import_trace` nodes get their snapshot at the next pass.
    pub fn extend(&mut self, plan: &Plan) {
        for node in &plan.nodes[self.nodes.len()..] {
            let (state, trace, nports) = match &node.op {
                Op::Select { .. } => (NodeState::Select(None), None, 1),
                Op::Filter { .. } => (NodeState::Filter(None), None, 1),
                Op::Arrange { key } => (
                    NodeState::Arrange {
                        buffer: Vec::new(),
                        schema: None,
                    },
                    Some(Arrangement::new(key.len(), node.columns.len())),
                    1,
                ),
                Op::Reduce { .. } => {
                    let kw = match &plan.nodes[node.inputs[0]].op {
                        Op::Arrange { key } => key.len(),
                        Op::ImportTrace { source } => match &plan.nodes[*source].op {
                            Op::Arrange { key } => key.len(),
                            _ => 0,
                        },
                        _ => 0,
                    };
                    (NodeState::Reduce(Box::new(ReduceState::new(kw))), None, 1)
                }
                Op::Consolidate => (NodeState::Consolidate { buffer: Vec::new() }, None, 1),
                Op::AdvanceIteration { .. } => (NodeState::Advance(None), None, 1),
                Op::Delay => (NodeState::Delay(DelayState::new()), None, 1),
                Op::Capture => (NodeState::Capture { data: Vec::new() }, None, 1),
                Op::Variable { .. } => (NodeState::Stateless, None, 2),
                Op::Join { .. } => (NodeState::Stateless, None, 2),
                _ => (NodeState::Stateless, None, node.inputs.len().max(1)),
            };
            self.nodes.push(state);
            self.traces.push(trace);
            self.inbox.push((0..nports).map(|_| Vec::new()).collect());
            self.fresh.push(None);
            self.last_frontier
                .push(Antichain::from_elem(Time::minimum()));
            let import = match &node.op {
                Op::ImportTrace { .. } => {
                    self.pending_snapshots.push(node.id);
                    Some(node.id)
                }
                Op::EnterArrangement => self.import_of[node.inputs[0]],
                _ => None,
            };
            self.import_of.push(import);
        }
    }

    /// Shows each pending `import_trace`'s consumers the imported trace's current contents
    /// (as this pass's fresh batch of the import node). Call after `fresh` is cleared.
    pub fn take_snapshots(&mut self, trace_of: &[Option<usize>]) {
        for import in std::mem::take(&mut self.pending_snapshots) {
            let Some(src) = trace_of[import] else {
                continue;
            };
            let (Some(schema), Some(trace)) = (self.schema_of(src), self.traces[src].as_ref())
            else {
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

    /// The new batch a consumer of arrangement `input` sees this pass: the arrange node's
    /// fresh batch, plus an import's snapshot in the pass after it was attached.
    fn fresh_for(&self, trace_of: &[Option<usize>], input: usize) -> Option<Arc<Msg>> {
        let base = trace_of[input].and_then(|t| self.fresh[t].clone());
        let snap = self.import_of[input].and_then(|i| self.fresh[i].clone());
        match (snap, base) {
            (None, b) => b,
            (Some(s), None) => Some(s),
            (Some(s), Some(b)) => {
                let mut upd = s.upd.clone();
                upd.extend(&b.upd);
                consolidate(&mut upd).ok()?;
                Some(Arc::new(Msg {
                    schema: s.schema.clone(),
                    upd,
                }))
            }
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
        match &self.nodes[node] {
            NodeState::Arrange { buffer, .. } | NodeState::Consolidate { buffer } => {
                for m in buffer {
                    for t in &m.upd.times {
                        held.insert_ref(t);
                    }
                }
            }
            NodeState::Reduce(r) => {
                for t in r.pending.times() {
                    held.insert_ref(t);
                }
            }
            NodeState::Delay(d) => {
                for t in d.times() {
                    held.insert_ref(t);
                }
            }
            _ => {}
        }
    }

    /// Whether activating `node` with input frontier `f_in` can do anything.
    pub fn should_run(
        &self,
        plan: &Plan,
        trace_of: &[Option<usize>],
        node: usize,
        f_in: &Antichain<Time>,
    ) -> bool {
        if self.has_input(node) || &self.last_frontier[node] != f_in {
            return true;
        }
        let spec = &plan.nodes[node];
        match spec.op {
            Op::Join { .. } | Op::Reduce { .. } => spec.inputs.iter().any(|&i| {
                trace_of[i].is_some_and(|t| self.fresh[t].is_some())
                    || self.import_of[i].is_some_and(|t| self.fresh[t].is_some())
            }),
            _ => false,
        }
    }

    /// Number of updates waiting for `node`: queued input plus fresh arrangement batches.
    pub fn input_len(&self, plan: &Plan, trace_of: &[Option<usize>], node: usize) -> usize {
        let queued: usize = self.inbox[node].iter().flatten().map(|m| m.upd.len()).sum();
        let fresh: usize = match plan.nodes[node].op {
            Op::Join { .. } | Op::Reduce { .. } => plan.nodes[node]
                .inputs
                .iter()
                .filter_map(|&i| trace_of[i].and_then(|t| self.fresh[t].as_ref()))
                .map(|m| m.upd.len())
                .sum(),
            _ => 0,
        };
        queued + fresh
    }

    /// Whether the node has queued input.
    pub fn has_input(&self, node: usize) -> bool {
        self.inbox[node].iter().any(|q| !q.is_empty())
    }

    /// Delivers a message to `node`'s `port`, routing by key to the owning worker when the
    /// node is an `arrange` with several workers.
    fn deliver(&mut self, plan: &Plan, node: usize, port: usize, msg: Msg) {
        if msg.upd.is_empty() {
            return;
        }
        if self.peers > 1 {
            if let Op::Arrange { key } = &plan.nodes[node].op {
                let w = msg.upd.width;
                let mut parts: Vec<Updates> = (0..self.peers).map(|_| Updates::new(w)).collect();
                let mut kbuf = Vec::with_capacity(key.len());
                for i in 0..msg.upd.len() {
                    let row = msg.upd.row(i);
                    kbuf.clear();
                    kbuf.extend(key.iter().map(|&k| row[k]));
                    let target = worker_of(&kbuf, self.peers);
                    parts[target].push(row, msg.upd.times[i], msg.upd.diffs[i]);
                }
                for (target, upd) in parts.into_iter().enumerate() {
                    if upd.is_empty() {
                        continue;
                    }
                    let m = Msg {
                        schema: msg.schema.clone(),
                        upd,
                    };
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

    /// Delivers a message from outside a pass (input pushes).
    pub fn deliver_external(&mut self, plan: &Plan, node: usize, port: usize, msg: Msg) {
        self.deliver(plan, node, port, msg);
    }

    /// Sends a node's output to its consumers.
    fn emit(&mut self, ctx: &PassCtx<'_>, node: usize, msg: Msg) {
        if msg.upd.is_empty() {
            return;
        }
        // Arrangements feed join, reduce and enter_arrangement through `fresh`, not here.
        let targets: Vec<(usize, usize)> = ctx.consumers[node]
            .iter()
            .copied()
            .filter(|&(c, _)| {
                !matches!(
                    ctx.plan.nodes[c].op,
                    Op::Join { .. } | Op::Reduce { .. } | Op::EnterArrangement
                )
            })
            .collect();
        let mut msg = Some(msg);
        for (i, &(c, port)) in targets.iter().enumerate() {
            let m = if i + 1 == targets.len() {
                msg.take().expect("message")
            } else {
                msg.clone().expect("message")
            };
            self.deliver(ctx.plan, c, port, m);
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
        let started = std::time::Instant::now();
        let mut inputs: Vec<Vec<Msg>> = self.inbox[node].iter_mut().map(std::mem::take).collect();
        let n_in: usize = inputs.iter().flatten().map(|m| m.upd.len()).sum();
        let mut python = false;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.run_op(ctx, node, &mut inputs, frontier, &mut python)
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
                return Err(e.context(&format!("operator {}", spec.label)));
            }
        };
        let did = match &out {
            Some((_, did)) => *did,
            None => n_in > 0,
        };
        let mut n_out = out
            .as_ref()
            .map(|(m, _)| m.iter().map(|m| m.upd.len()).sum())
            .unwrap_or(0);
        if let Some(f) = &self.fresh[node] {
            n_out += f.upd.len();
        }
        if let Some((msgs, _)) = out {
            for m in msgs {
                self.emit(ctx, node, m);
            }
        }
        if self.logging && (n_in > 0 || n_out > 0) {
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
        self.last_frontier[node] = frontier.clone();
        Ok(did || n_in > 0)
    }

    fn run_op(
        &mut self,
        ctx: &PassCtx<'_>,
        node: usize,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
        python: &mut bool,
    ) -> Result<Option<(Vec<Msg>, bool)>> {
        let plan = ctx.plan;
        let spec = &plan.nodes[node];
        let label = spec.label.as_str();
        // Infallible operators take their input (`take_all`); fallible ones read it, so an
        // error leaves it in place for a retry.
        let take_all = |inputs: &mut [Vec<Msg>]| -> Vec<Msg> {
            inputs.iter_mut().flat_map(std::mem::take).collect()
        };
        Ok(Some(match &spec.op {
            Op::Input { .. } | Op::Probe => (Vec::new(), false),
            Op::Concat | Op::Enter => (take_all(inputs), false),
            Op::Negate => (
                take_all(inputs)
                    .into_iter()
                    .map(|mut m| {
                        m.upd.negate();
                        m
                    })
                    .collect(),
                false,
            ),
            Op::Leave => {
                let c = plan
                    .iter_coord(plan.nodes[spec.inputs[0]].scope)
                    .expect("leave from a scope");
                (
                    take_all(inputs)
                        .into_iter()
                        .map(|mut m| {
                            for t in m.upd.times.iter_mut() {
                                t.0[c] = 0;
                            }
                            m
                        })
                        .collect(),
                    false,
                )
            }
            Op::Variable { .. } => {
                let c = plan.iter_coord(spec.scope).expect("variable in a scope");
                let max = plan.scopes[spec.scope].max_iterations.unwrap_or(u64::MAX);
                let mut out = Vec::new();
                let bump = |m: &Msg, negate: bool| -> Msg {
                    let mut next = Msg::empty(m.schema.clone());
                    next.upd.width = m.upd.width;
                    for i in 0..m.upd.len() {
                        let t = m.upd.times[i];
                        if t.0[c] + 1 < max {
                            let d = m.upd.diffs[i] as i128;
                            let d = if negate { -d } else { d };
                            let t1 = t.with_coord(c, t.0[c] + 1);
                            crate::sort::consolidate::pieces(d, |p| {
                                next.upd.push(m.upd.row(i), t1, p)
                            });
                        }
                    }
                    next
                };
                for m in std::mem::take(&mut inputs[0]) {
                    out.push(bump(&m, true));
                    out.push(m);
                }
                for m in std::mem::take(&mut inputs[1]) {
                    out.push(bump(&m, false));
                }
                (out, false)
            }
            Op::Select { exprs } => {
                let mut out = Vec::new();
                let names = &plan.nodes[spec.inputs[0]].columns;
                let mut failed = Vec::new();
                for m in inputs.iter().flatten() {
                    let st = match &mut self.nodes[node] {
                        NodeState::Select(s) => s,
                        _ => unreachable!(),
                    };
                    if st.as_ref().is_none_or(|(s, _, _)| s != &m.schema) {
                        let schema = named(names, &m.schema, label)?;
                        let bound = exprs
                            .iter()
                            .map(|e| e.bind(&schema))
                            .collect::<Result<Vec<BoundExpr>>>();
                        match bound {
                            Ok(bound) => {
                                let out_schema: Schema =
                                    Arc::new(bound.iter().map(|b| b.dtype()).collect());
                                *st = Some((m.schema.clone(), bound, out_schema));
                            }
                            Err(e) => {
                                // The batch's dtypes do not fit the expressions: every record
                                // is an error (the rest of the dataflow goes on).
                                failed
                                    .push((m, (0..m.upd.len()).map(|i| (i, e.clone())).collect()));
                                continue;
                            }
                        }
                    }
                    let (_, bound, out_schema) = st.as_ref().expect("bound");
                    let mut eval = |sub: &Msg| -> Result<Msg> {
                        let cols: Vec<Vec<u64>> = bound
                            .iter()
                            .map(|b| b.eval(&sub.upd))
                            .collect::<Result<_>>()?;
                        let n = sub.upd.len();
                        let w = cols.len();
                        let mut rows = vec![0u64; n * w];
                        for (c, col) in cols.iter().enumerate() {
                            for (r, &v) in col.iter().enumerate() {
                                rows[r * w + c] = v;
                            }
                        }
                        Ok(Msg {
                            schema: out_schema.clone(),
                            upd: Updates {
                                width: w,
                                rows,
                                times: sub.upd.times.clone(),
                                diffs: sub.upd.diffs.clone(),
                            },
                        })
                    };
                    let mut bad = Vec::new();
                    isolate(m, &mut eval, &mut bad, &mut out)?;
                    if !bad.is_empty() {
                        failed.push((m, bad));
                    }
                }
                for (m, bad) in failed {
                    record_errors(&mut self.errors, node, label, names, m, bad);
                }
                (out, false)
            }
            Op::Filter { predicate } => {
                let mut out = Vec::new();
                let names = &plan.nodes[spec.inputs[0]].columns;
                let mut failed = Vec::new();
                for m in inputs.iter().flatten() {
                    let st = match &mut self.nodes[node] {
                        NodeState::Filter(s) => s,
                        _ => unreachable!(),
                    };
                    if st.as_ref().is_none_or(|(s, _)| s != &m.schema) {
                        let schema = named(names, &m.schema, label)?;
                        let bound = predicate.bind(&schema).and_then(|b| {
                            if b.dtype() != DType::Bool {
                                return Err(Error::Type(format!(
                                    "filter predicate {predicate} has dtype {}, expected bool",
                                    b.dtype().name()
                                )));
                            }
                            Ok(b)
                        });
                        match bound {
                            Ok(b) => *st = Some((m.schema.clone(), b)),
                            Err(e) => {
                                failed
                                    .push((m, (0..m.upd.len()).map(|i| (i, e.clone())).collect()));
                                continue;
                            }
                        }
                    }
                    let (_, b) = st.as_ref().expect("bound");
                    let mut eval = |sub: &Msg| -> Result<Msg> {
                        let mask = b.eval_predicate(&sub.upd)?;
                        let mut o = Msg::empty(sub.schema.clone());
                        for (i, keep) in mask.iter().enumerate() {
                            if *keep {
                                o.upd
                                    .push(sub.upd.row(i), sub.upd.times[i], sub.upd.diffs[i]);
                            }
                        }
                        Ok(o)
                    };
                    let mut bad = Vec::new();
                    isolate(m, &mut eval, &mut bad, &mut out)?;
                    if !bad.is_empty() {
                        failed.push((m, bad));
                    }
                }
                for (m, bad) in failed {
                    record_errors(&mut self.errors, node, label, names, m, bad);
                }
                (out, false)
            }
            Op::MapPy { func } | Op::FlatMapPy { func } | Op::FilterPy { func } => {
                *python = true;
                let kind = match &spec.op {
                    Op::MapPy { .. } => "map_py",
                    Op::FlatMapPy { .. } => "flat_map_py",
                    _ => "filter_py",
                };
                let names = &plan.nodes[spec.inputs[0]].columns;
                let mut out = Vec::new();
                let mut failed = Vec::new();
                for m in inputs.iter().flatten() {
                    let mut call = |sub: &Msg| -> Result<Msg> {
                        let payload = Payload::Columns {
                            names: names.clone(),
                            columns: rows_to_columns(&sub.schema, &sub.upd),
                        };
                        let reply = ctx.callbacks.call(*func, kind, label, payload)?;
                        py_reply(kind, label, sub, reply, spec.columns.len())
                    };
                    let mut bad = Vec::new();
                    isolate(m, &mut call, &mut bad, &mut out)?;
                    if !bad.is_empty() {
                        failed.push((m, bad));
                    }
                }
                for (m, bad) in failed {
                    record_errors(&mut self.errors, node, label, names, m, bad);
                }
                (out, false)
            }
            Op::InspectPy { func, .. } => {
                *python = true;
                let names = &plan.nodes[spec.inputs[0]].columns;
                let mut failed = Vec::new();
                for m in inputs.iter().flatten() {
                    let mut call = |sub: &Msg| -> Result<()> {
                        let payload = Payload::Inspect {
                            names: names.clone(),
                            columns: rows_to_columns(&sub.schema, &sub.upd),
                            times: sub.upd.times.clone(),
                            time_dims: plan.time_dims + plan.scopes[spec.scope].depth,
                            diffs: sub.upd.diffs.clone(),
                        };
                        ctx.callbacks.call(*func, "inspect_py", label, payload)?;
                        Ok(())
                    };
                    let mut bad = Vec::new();
                    isolate(m, &mut call, &mut bad, &mut Vec::new())?;
                    if !bad.is_empty() {
                        failed.push((m, bad));
                    }
                }
                for (m, bad) in failed {
                    record_errors(&mut self.errors, node, label, names, m, bad);
                }
                // The data passes through unchanged, whatever the function did.
                (take_all(inputs), false)
            }
            Op::Capture => {
                if let NodeState::Capture { data } = &mut self.nodes[node] {
                    data.extend(take_all(inputs));
                }
                (Vec::new(), false)
            }
            Op::AdvanceIteration { expr } => {
                let c = plan
                    .iter_coord(spec.scope)
                    .expect("advance_iteration in a scope");
                let max = plan.scopes[spec.scope].max_iterations;
                let mut out = Vec::new();
                let names = &plan.nodes[spec.inputs[0]].columns;
                let mut failed = Vec::new();
                for m in inputs.iter().flatten() {
                    let NodeState::Advance(st) = &mut self.nodes[node] else {
                        unreachable!()
                    };
                    if st.as_ref().is_none_or(|(s, _)| s != &m.schema) {
                        let schema = named(names, &m.schema, label)?;
                        match expr.bind(&schema) {
                            Ok(b) => *st = Some((m.schema.clone(), b)),
                            Err(e) => {
                                let all = (0..m.upd.len()).map(|i| (i, e.clone())).collect();
                                failed.push((m, all));
                                continue;
                            }
                        }
                    }
                    let (_, bound) = st.as_ref().expect("bound");
                    let mut bad = Vec::new();
                    isolate(
                        m,
                        &mut |sub| advance(sub, bound, c, max),
                        &mut bad,
                        &mut out,
                    )?;
                    if !bad.is_empty() {
                        failed.push((m, bad));
                    }
                }
                for (m, bad) in failed {
                    record_errors(&mut self.errors, node, label, names, m, bad);
                }
                (out, false)
            }
            Op::Delay => {
                let NodeState::Delay(state) = &mut self.nodes[node] else {
                    unreachable!()
                };
                for m in take_all(inputs) {
                    state.insert(m);
                }
                let out = state.release(frontier);
                let did = !out.is_empty();
                (out, did)
            }
            Op::Consolidate => {
                let NodeState::Consolidate { buffer } = &mut self.nodes[node] else {
                    unreachable!()
                };
                buffer.extend(take_all(inputs));
                let ready = extract_complete(buffer, frontier);
                let mut out = Vec::new();
                for mut m in ready {
                    consolidate(&mut m.upd)?;
                    out.push(m);
                }
                let did = !out.is_empty();
                (out, did)
            }
            Op::Arrange { key } => {
                let NodeState::Arrange { buffer, schema } = &mut self.nodes[node] else {
                    unreachable!()
                };
                // Check every batch before accepting any, so an error leaves nothing half-done.
                for m in inputs.iter().flatten() {
                    let reordered = reorder_schema(&m.schema, key);
                    let expected = schema.get_or_insert_with(|| reordered.clone());
                    if &reordered != expected {
                        return Err(Error::Type(format!(
                            "{label}: batch dtypes {:?} differ from earlier batches {:?}",
                            reordered.iter().map(|d| d.name()).collect::<Vec<_>>(),
                            expected.iter().map(|d| d.name()).collect::<Vec<_>>()
                        )));
                    }
                }
                buffer.extend(take_all(inputs));
                let ready = extract_complete(buffer, frontier);
                if ready.is_empty() {
                    return Ok(Some((Vec::new(), false)));
                }
                let schema = schema.clone().expect("schema");
                let width = schema.len();
                let identity = key.iter().enumerate().all(|(i, &k)| i == k);
                let mut ready = ready;
                let mut batch = if identity && ready.len() == 1 {
                    // Key columns already lead: take the batch as it is (no copy).
                    ready.pop().expect("one message").upd
                } else if identity {
                    let total = ready.iter().map(|m| m.upd.len()).sum();
                    let mut b = Updates::with_capacity(width, total);
                    for m in &ready {
                        b.extend(&m.upd);
                    }
                    b
                } else {
                    let total = ready.iter().map(|m| m.upd.len()).sum();
                    let mut b = Updates::with_capacity(width, total);
                    let mut row = Vec::with_capacity(width);
                    let rest: Vec<usize> = (0..width).filter(|c| !key.contains(c)).collect();
                    for m in &ready {
                        for i in 0..m.upd.len() {
                            let r = m.upd.row(i);
                            row.clear();
                            row.extend(key.iter().map(|&k| r[k]));
                            row.extend(rest.iter().map(|&k| r[k]));
                            b.push(&row, m.upd.times[i], m.upd.diffs[i]);
                        }
                    }
                    b
                };
                drop(ready);
                consolidate(&mut batch)?;
                let msg = Msg { schema, upd: batch };
                if let Some(t) = self.traces[node].as_mut() {
                    t.insert(&msg.upd, frontier);
                }
                self.fresh[node] = Some(Arc::new(msg));
                (Vec::new(), true)
            }
            Op::EnterArrangement | Op::ImportTrace { .. } => (Vec::new(), false),
            Op::Join { kind } => {
                let (a, b) = (spec.inputs[0], spec.inputs[1]);
                let (ta, tb) = (
                    ctx.trace_of[a].expect("trace"),
                    ctx.trace_of[b].expect("trace"),
                );
                let da = self.fresh_for(ctx.trace_of, a);
                let db = self.fresh_for(ctx.trace_of, b);
                if da.is_none() && db.is_none() {
                    return Ok(Some((Vec::new(), false)));
                }
                let (sa, sb) = match (&da, &db) {
                    (Some(x), Some(y)) => (x.schema.clone(), y.schema.clone()),
                    _ => (
                        self.schema_of(ta).unwrap_or_else(|| Arc::new(Vec::new())),
                        self.schema_of(tb).unwrap_or_else(|| Arc::new(Vec::new())),
                    ),
                };
                let kw = self.traces[ta].as_ref().expect("trace").key_width;
                if let (Some(ka), Some(kb)) = (sa.get(..kw), sb.get(..kw)) {
                    if ka != kb {
                        let names = &plan.nodes[ta].columns;
                        let i = (0..kw).find(|&i| ka[i] != kb[i]).unwrap_or(0);
                        return Err(Error::Type(format!(
                            "join key column {:?} is {} on the left but {} on the \
                             right; keys of different dtypes never match",
                            names.get(i).cloned().unwrap_or_default(),
                            ka[i].name(),
                            kb[i].name()
                        )));
                    }
                }
                let mut out_schema: Vec<DType> = sa.to_vec();
                if *kind == super::plan::JoinKind::Join {
                    out_schema.extend_from_slice(sb.get(kw..).unwrap_or(&[]));
                }
                let out_w =
                    if sa.is_empty() || (sb.is_empty() && *kind == super::plan::JoinKind::Join) {
                        // One side has never seen data: its schema is unknown, and it is empty.
                        return Ok(Some((Vec::new(), false)));
                    } else {
                        out_schema.len()
                    };
                let empty_a = Updates::new(self.traces[ta].as_ref().expect("trace").width);
                let empty_b = Updates::new(self.traces[tb].as_ref().expect("trace").width);
                let mut overflow = Vec::new();
                let upd = join_delta(
                    *kind,
                    kw,
                    da.as_ref().map(|m| &m.upd).unwrap_or(&empty_a),
                    db.as_ref().map(|m| &m.upd).unwrap_or(&empty_b),
                    self.traces[ta].as_ref().expect("trace"),
                    self.traces[tb].as_ref().expect("trace"),
                    out_w,
                    &mut overflow,
                )?;
                for (row, time, d) in overflow {
                    // A diff product outside int64: an error update with the product's sign.
                    self.errors.push(ErrorUpdate {
                        node,
                        message: "overflow: the product of the joined diffs is outside the \
                                  64-bit signed range"
                            .to_string(),
                        values: render_row(&spec.columns, &out_schema, &row),
                        time,
                        diff: d.signum() as i64,
                    });
                }
                (
                    vec![Msg {
                        schema: Arc::new(out_schema),
                        upd,
                    }],
                    true,
                )
            }
            Op::Reduce { agg } => {
                let a = spec.inputs[0];
                let ta = ctx.trace_of[a].expect("trace");
                let fresh = self.fresh_for(ctx.trace_of, a);
                let has_pending = match &self.nodes[node] {
                    NodeState::Reduce(r) => r.has_complete_pending(frontier),
                    _ => false,
                };
                if fresh.is_none() && !has_pending {
                    return Ok(Some((Vec::new(), false)));
                }
                let Some(schema) = fresh
                    .as_ref()
                    .map(|m| m.schema.clone())
                    .or_else(|| self.schema_of(ta))
                else {
                    return Ok(Some((Vec::new(), false)));
                };
                let kw = self.traces[ta].as_ref().expect("trace").key_width;
                let arr_cols = &plan.nodes[ta].columns;
                let empty = Updates::new(schema.len());
                *python = matches!(
                    agg,
                    super::plan::Agg::Python { .. } | super::plan::Agg::ThresholdPy(_)
                );
                let trace = self.traces[ta].take().expect("trace");
                let NodeState::Reduce(state) = &mut self.nodes[node] else {
                    unreachable!()
                };
                let res = state.activate(&ReduceInput {
                    agg,
                    key_width: kw,
                    key_dtypes: &schema[..kw],
                    val_dtypes: &schema[kw..],
                    key_names: &arr_cols[..kw.min(arr_cols.len())],
                    val_names: &arr_cols[kw.min(arr_cols.len())..],
                    trace: &trace,
                    batch: fresh.as_ref().map(|m| &m.upd).unwrap_or(&empty),
                    frontier,
                    callbacks: ctx.callbacks,
                    label,
                });
                self.traces[ta] = Some(trace);
                for (key, time, message, diff) in state.errors.new.drain(..) {
                    self.errors.push(ErrorUpdate {
                        node,
                        message: message.replace(&format!("{label}: "), ""),
                        values: render_row(&arr_cols[..kw.min(arr_cols.len())], &schema, &key),
                        time,
                        diff,
                    });
                }
                let upd = res?;
                let mut out_schema: Vec<DType> = schema[..kw].to_vec();
                out_schema.extend(state.out_dtypes.clone().unwrap_or_default());
                (
                    vec![Msg {
                        schema: Arc::new(out_schema),
                        upd,
                    }],
                    true,
                )
            }
        }))
    }

    fn schema_of(&self, arrange: usize) -> Option<Schema> {
        match &self.nodes[arrange] {
            NodeState::Arrange { schema, .. } => schema.clone(),
            _ => None,
        }
    }

    /// Takes captured updates of a capture node.
    pub fn take_capture(&mut self, node: usize) -> Vec<Msg> {
        match &mut self.nodes[node] {
            NodeState::Capture { data } => std::mem::take(data),
            _ => Vec::new(),
        }
    }
}

fn reorder_schema(schema: &Schema, key: &[usize]) -> Schema {
    let mut s: Vec<DType> = key.iter().map(|&k| schema[k]).collect();
    s.extend(
        (0..schema.len())
            .filter(|c| !key.contains(c))
            .map(|c| schema[c]),
    );
    Arc::new(s)
}

fn named(names: &[String], schema: &Schema, label: &str) -> Result<Vec<(String, DType)>> {
    if names.len() != schema.len() {
        return Err(Error::Plan(format!(
            "{label}: input has {} columns {:?} in the plan but batches of {} columns",
            names.len(),
            names,
            schema.len()
        )));
    }
    Ok(names.iter().cloned().zip(schema.iter().copied()).collect())
}

/// Removes and returns the updates of `buffer` at times not in the future of `frontier`.
fn extract_complete(buffer: &mut Vec<Msg>, frontier: &Antichain<Time>) -> Vec<Msg> {
    let mut ready = Vec::new();
    let mut keep = Vec::new();
    for m in buffer.drain(..) {
        let complete = m
            .upd
            .times
            .iter()
            .filter(|t| !frontier.less_equal(t))
            .count();
        if complete == m.upd.len() {
            ready.push(m);
            continue;
        }
        if complete == 0 {
            keep.push(m);
            continue;
        }
        let w = m.upd.width;
        let mut r = Msg {
            schema: m.schema.clone(),
            upd: Updates::with_capacity(w, complete),
        };
        let mut k = Msg {
            schema: m.schema.clone(),
            upd: Updates::with_capacity(w, m.upd.len() - complete),
        };
        for i in 0..m.upd.len() {
            if frontier.less_equal(&m.upd.times[i]) {
                k.upd.push(m.upd.row(i), m.upd.times[i], m.upd.diffs[i]);
            } else {
                r.upd.push(m.upd.row(i), m.upd.times[i], m.upd.diffs[i]);
            }
        }
        if !r.upd.is_empty() {
            ready.push(r);
        }
        if !k.upd.is_empty() {
            keep.push(k);
        }
    }
    *buffer = keep;
    ready
}

/// Turns a Python callback's reply into an output message.
fn py_reply(kind: &str, label: &str, m: &Msg, reply: Reply, ncols: usize) -> Result<Msg> {
    let n = m.upd.len();
    match (kind, reply) {
        ("filter_py", Reply::Mask(mask)) => {
            if mask.len() != n {
                return Err(Error::User(format!(
                    "{label}: filter function returned {} booleans for {n} rows",
                    mask.len()
                )));
            }
            let mut o = Msg::empty(m.schema.clone());
            for (i, keep) in mask.iter().enumerate() {
                if *keep {
                    o.upd.push(m.upd.row(i), m.upd.times[i], m.upd.diffs[i]);
                }
            }
            Ok(o)
        }
        (
            "map_py" | "flat_map_py",
            Reply::Columns {
                columns, row_index, ..
            },
        ) => {
            if ncols > 0 && columns.len() != ncols {
                return Err(Error::User(format!(
                    "{label}: function returned {} columns, expected {ncols}",
                    columns.len()
                )));
            }
            let out_n = columns.first().map(|c| c.words.len()).unwrap_or(n);
            let schema: Schema = Arc::new(columns.iter().map(|c| c.dtype).collect());
            let rows = super::column::columns_to_rows(&columns, out_n, label)
                .map_err(|e| Error::User(e.to_string()))?;
            let (times, diffs) = if kind == "map_py" {
                if out_n != n {
                    return Err(Error::User(format!(
                        "{label}: map function returned {out_n} rows for {n} input rows"
                    )));
                }
                (m.upd.times.clone(), m.upd.diffs.clone())
            } else {
                let idx = row_index.ok_or_else(|| {
                    Error::User(format!(
                        "{label}: flat_map reply lacks the source row index"
                    ))
                })?;
                if idx.len() != out_n {
                    return Err(Error::User(format!(
                        "{label}: flat_map row index has {} entries for {out_n} rows",
                        idx.len()
                    )));
                }
                let mut times = Vec::with_capacity(out_n);
                let mut diffs = Vec::with_capacity(out_n);
                for &i in &idx {
                    if i < 0 || i as usize >= n {
                        return Err(Error::User(format!(
                            "{label}: flat_map row index {i} out of range 0..{n}"
                        )));
                    }
                    times.push(m.upd.times[i as usize]);
                    diffs.push(m.upd.diffs[i as usize]);
                }
                (times, diffs)
            };
            Ok(Msg {
                schema,
                upd: Updates {
                    width: columns.len(),
                    rows,
                    times,
                    diffs,
                },
            })
        }
        (_, other) => Err(Error::User(format!(
            "{label}: unexpected reply {other:?} for {kind}"
        ))),
    }
}

/// Whether an error is caused by the data (and so becomes an error update) rather than by
/// the plan or a bug (and so stops the run).
fn is_data_error(e: &Error) -> bool {
    !matches!(e, Error::Internal(_) | Error::Plan(_))
}

/// The rows `lo..hi` of a message, copied.
fn slice(m: &Msg, lo: usize, hi: usize) -> Msg {
    let w = m.upd.width;
    Msg {
        schema: m.schema.clone(),
        upd: Updates {
            width: w,
            rows: m.upd.rows[lo * w..hi * w].to_vec(),
            times: m.upd.times[lo..hi].to_vec(),
            diffs: m.upd.diffs[lo..hi].to_vec(),
        },
    }
}

/// Runs `f` on the whole message; if it fails because of the data, finds the failing
/// records by bisection (halves that succeed keep their output) and lists each one, with the
/// error it causes alone, in `failed`. Errors that are not about the data are returned.
fn isolate<T>(
    m: &Msg,
    f: &mut dyn FnMut(&Msg) -> Result<T>,
    failed: &mut Vec<(usize, Error)>,
    out: &mut Vec<T>,
) -> Result<()> {
    match f(m) {
        Ok(t) => {
            out.push(t);
            Ok(())
        }
        Err(e) if !is_data_error(&e) => Err(e),
        Err(e) => bisect(m, 0, m.upd.len(), e, f, failed, out),
    }
}

fn bisect<T>(
    m: &Msg,
    lo: usize,
    hi: usize,
    err: Error,
    f: &mut dyn FnMut(&Msg) -> Result<T>,
    failed: &mut Vec<(usize, Error)>,
    out: &mut Vec<T>,
) -> Result<()> {
    if hi - lo <= 1 {
        if hi > lo {
            failed.push((lo, err));
        }
        return Ok(());
    }
    let mid = lo + (hi - lo) / 2;
    for (a, b) in [(lo, mid), (mid, hi)] {
        match f(&slice(m, a, b)) {
            Ok(t) => out.push(t),
            Err(e) if !is_data_error(&e) => return Err(e),
            Err(e) => bisect(m, a, b, e, f, failed, out)?,
        }
    }
    Ok(())
}

/// Appends an error update for each failing record `(row, error)` of `m`.
fn record_errors(
    errors: &mut Vec<ErrorUpdate>,
    node: usize,
    label: &str,
    names: &[String],
    m: &Msg,
    failed: Vec<(usize, Error)>,
) {
    for (i, e) in failed {
        errors.push(ErrorUpdate {
            node,
            message: record_message(&e, label),
            values: render_row(names, &m.schema, m.upd.row(i)),
            time: m.upd.times[i],
            diff: m.upd.diffs[i],
        });
    }
}
