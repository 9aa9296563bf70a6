//! Compaction: after an activation, each trace may forget history its readers will never
//! ask about (the meet of their last frontiers and of open trace handles), and trace
//! handles hold that back for readers outside the engine (see "Arrangements" and "Trace
//! handles" in `ENGINE.md`).

use super::plan::{Op, Plan};
use super::worker::Worker;
use super::Engine;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Idle merge work an arrangement spends per activation after a trace handle is released
/// (so that the history it held back is compacted without waiting for new batches).
const IDLE_MERGE_FUEL: usize = 1 << 20;

/// What compaction reads besides the worker: the plan, who consumes each node, and the
/// open trace handles.
pub(super) struct CompactCtx<'a> {
    pub plan: &'a Plan,
    pub consumers: &'a [Vec<(usize, usize)>],
    pub handles: &'a [Option<(usize, Antichain<Time>)>],
}

/// Lets the traces `node` reads on worker `wk` compact up to the frontier of its last
/// activation, merging its trace whole if `merge_whole` says so (`None`: as the trace's
/// own share of passed updates says; see [`merge_whole_if_due`]). `idle`: whether the
/// trace owes idle merge work (a handle on it moved or was released); returns whether it
/// still does. Touches only `wk`, so each worker compacts in
/// the thread that ran its activation.
pub(super) fn compact_worker(
    cx: &CompactCtx<'_>,
    wk: &mut Worker,
    node: usize,
    idle: bool,
    merge_whole: Option<bool>,
) -> bool {
    let spec = &cx.plan.nodes[node];
    if matches!(spec.op, Op::ImportTrace { .. }) {
        compact_reduce_outputs(cx, wk, node);
        return idle;
    }
    if !matches!(spec.op, Op::Arrange { .. }) {
        return idle;
    }
    // The trace of an arrange node is read by its consumers (directly or entered into
    // scopes); compact it to the meet of their last activation frontiers, projected to
    // the arrange node's scope (iteration coordinates zeroed).
    let depth_coord = cx.plan.time_dims + cx.plan.scopes[spec.scope].depth;
    let mut f = Antichain::new();
    let mut stack: SmallVec<[usize; 8]> = cx.consumers[node].iter().map(|c| c.0).collect();
    while let Some(c) = stack.pop() {
        if matches!(
            cx.plan.nodes[c].op,
            Op::EnterArrangement | Op::ImportTrace { .. }
        ) {
            stack.extend(cx.consumers[c].iter().map(|x| x.0));
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
    for (_, hf) in cx.handles.iter().flatten().filter(|(n, _)| *n == node) {
        for t in hf.elements() {
            f.insert(*t);
        }
    }
    let mut still_idle = idle;
    if let Some(tr) = wk.traces[node].as_mut() {
        tr.set_compaction_merging(&f, merge_whole);
        if idle && !tr.exert(IDLE_MERGE_FUEL) {
            still_idle = false;
        }
    }
    compact_reduce_outputs(cx, wk, node);
    still_idle
}

/// Merges the traces of arrangement `node` whole on every worker at once, in the workers'
/// threads, when a full merge is due on any of them (its [`Arrangement::full_merge_due`];
/// called after the node's activations and compactions of a pass, with several workers,
/// whose compactions merge nothing themselves).
///
/// Decided by each worker for its own share, a full merge ran on one worker while the
/// other waited at the pass's end, or both ran one after the other in a pass too small to
/// run in parallel (the BFS's arrange after its `concat` on the 100k/1M graph with two
/// workers: 116 against 62 ms of thread CPU, summed over parallel passes). Due on the sum
/// of the shares instead, a worker holding one batch held back the other's merge
/// (`bfs_bench 100000 1000000 1000 50000 2`: 1.0% more instructions than each deciding
/// alone; 0.3% fewer with any).
///
/// [`Arrangement::full_merge_due`]: super::arrangement::Arrangement::full_merge_due
pub(super) fn merge_whole_if_due(workers: &mut [Worker], node: usize) {
    let (mut due, mut size) = (false, 0);
    for w in workers.iter() {
        if let Some(tr) = w.traces.get(node).and_then(|t| t.as_ref()) {
            due |= tr.full_merge_due();
            size += tr.len();
        }
    }
    if !due {
        return;
    }
    let merge = |w: &mut Worker| {
        if let Some(tr) = w.traces.get_mut(node).and_then(|t| t.as_mut()) {
            tr.merge_whole();
        }
    };
    if size >= PARALLEL_MERGE_MIN_UPDATES {
        workers.par_iter_mut().for_each(merge);
    } else {
        workers.iter_mut().for_each(merge);
    }
}

/// Summed trace size from which the workers' full merges run in parallel threads.
const PARALLEL_MERGE_MIN_UPDATES: usize = 512;

/// The output traces of `node`'s consumers (`reduce`) compact to each consumer's own last
/// frontier ([`super::operators::Operator::compact_output`]).
fn compact_reduce_outputs(cx: &CompactCtx<'_>, wk: &mut Worker, node: usize) {
    for &(c, _) in &cx.consumers[node] {
        wk.ops[c].compact_output(&wk.last_frontier[c]);
    }
}

impl Engine {
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

    pub(super) fn handle_mut(&mut self, handle: usize) -> Result<&mut (usize, Antichain<Time>)> {
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
}
