//! The engine's operators, one per file, behind one [`Operator`] trait.
//!
//! A plan node becomes an operator with [`crate::engine::plan::Node::operator`]; each worker
//! keeps one boxed operator per node and drives it through the trait (one dynamic call per
//! activation, never per record). The worker owns what operators share: input queues, the
//! traces of arrangements, the fresh batch each arrangement added this pass, and the list
//! of error updates; an activation sees them through [`RunCtx`].
//!
//! Operators:
//! * [`inert`]: `input`, `probe`, `enter_arrangement`, `import_trace` (their work happens
//!   elsewhere: inputs are pushed, arrangement readers read the source's trace);
//! * [`passthrough`]: `concat`, `enter`; [`negate`]; [`scale`]; [`leave`]; [`variable`];
//! * [`select`], [`filter`], [`advance`] (`advance_iteration`): bound expressions;
//! * [`python`]: `map_py`, `flat_map_py`, `filter_py`; [`inspect`] (`inspect_py`);
//! * [`delay`], [`consolidate`], [`arrange`]: hold updates until their time completes;
//! * [`join`]: `join`, `semijoin`, `antijoin` of two arrangements (delta rule), with
//!   [`join_replay`] (long key histories walked in time order) and [`join_trace`] (a
//!   batch's products with the other trace, resumable when the fuel runs out);
//! * [`reduce`]: `reduce` over an arrangement, with [`reduce_chain`] (keys whose times are
//!   totally ordered), [`reduce_cache`] (running totals of large keys kept across
//!   activations), [`reduce_index`] (a key's history indexed for accumulation),
//!   [`reduce_errors`] (errors as data), [`reduce_python`] (Python aggregates) and
//!   [`aggregate`] (the built-in aggregates on one key's accumulated values) and
//!   [`aggregate_group`] (several one-row aggregates per key),
//!   [`aggregate_rank`] (`ROW_NUMBER` / `RANK` / `DENSE_RANK` and top-k by several keys);
//! * [`capture`]: keeps its input for the engine's caller;
//! * [`watermark`]: event time (late updates split off, rows released behind a watermark);
//! * [`temporal_filter`]: rows kept while `now()` lies in their validity interval
//!   (insertions and retractions at future times, held until the frontier passes them).
//!
//! Shared by several: [`records`] (expression binding per schema and per-record error
//! isolation) and [`buffer`] (updates held until complete).

pub mod advance;
pub mod aggregate;
pub mod aggregate_group;
pub mod aggregate_rank;
pub mod arrange;
pub mod buffer;
pub mod capture;
pub mod consolidate;
pub mod delay;
pub mod filter;
pub mod inert;
pub mod inspect;
pub mod join;
pub mod join_replay;
pub mod join_trace;
pub mod leave;
pub mod negate;
pub mod passthrough;
pub mod python;
pub mod records;
pub mod reduce;
pub mod reduce_cache;
pub mod reduce_chain;
pub mod reduce_errors;
pub mod reduce_history;
pub mod reduce_index;
pub mod reduce_python;
pub mod reduce_quiet;
pub mod reduce_rows;
#[cfg(test)]
pub(crate) mod reduce_test_activation;
pub mod reduce_work;
pub mod scale;
pub mod select;
pub mod temporal_filter;
pub mod variable;
pub mod watermark;

use super::arrangement::Arrangement;
use super::column::{Callbacks, Msg, Schema};
use super::dtype_links::DtypeLinks;
use super::errors::ErrorUpdate;
use super::plan::{Node, Plan};
use super::util::consolidate;
use crate::error::Result;
use crate::lattice::{Antichain, Time};
use std::sync::Arc;

/// What one activation produced.
pub struct Output {
    /// Messages for the node's consumers.
    pub msgs: Vec<Msg>,
    /// Whether the operator did work beyond taking its queued input (released held
    /// updates, added a batch to its trace): another pass may then make progress.
    pub did: bool,
}

impl Output {
    /// Messages that only pass queued input on.
    pub fn pass(msgs: Vec<Msg>) -> Output {
        Output { msgs, did: false }
    }

    /// Nothing to emit.
    pub fn none() -> Output {
        Output::pass(Vec::new())
    }
}

/// One operator instance: the state of one plan node on one worker.
pub trait Operator: Send + Sync {
    /// Runs one activation on the updates queued at each input port (`inputs[port]`) with
    /// input frontier `frontier`. Operators that may fail read their input and leave it in
    /// place (the worker queues it again for a retry on error); infallible ones may take it.
    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output>;

    /// Adds the times of updates the operator holds (buffered, pending) to `held`: they
    /// hold back its output frontier.
    fn held(&self, _held: &mut Antichain<Time>) {}

    /// Whether work is left from earlier activations (a fueled `join`): the operator is then
    /// activated in the next pass even without new input.
    fn has_work(&self) -> bool {
        false
    }

    /// Whether the operator reads its inputs' arrangements (their fresh batches activate it).
    fn reads_arrangements(&self) -> bool {
        false
    }

    /// The key columns to route input updates by when several workers run (`arrange`).
    fn exchange_key(&self) -> Option<&[usize]> {
        None
    }

    /// The trace the operator maintains, created with it (`arrange`).
    fn new_trace(&self) -> Option<Arrangement> {
        None
    }

    /// Whether activations call into Python (for the operator log).
    fn calls_python(&self) -> bool {
        false
    }

    /// Lets the operator's own output trace compact to `frontier` (`reduce`).
    fn compact_output(&mut self, _frontier: &Antichain<Time>) {}

    /// Updates in the operator's own output trace and pending (for diagnostics).
    fn sizes(&self) -> (usize, usize) {
        (0, 0)
    }

    /// Heap bytes of the operator's own state beyond the shared traces.
    fn heap_bytes(&self) -> usize {
        0
    }

    /// Frees per-activation buffers kept for reuse once they hold more than `keep` bytes
    /// (an idle engine's, see `idle.rs`).
    fn release_scratch(&mut self, _keep: usize) {}

    /// Heap bytes of the operator's own output trace (`reduce`), which
    /// [`Operator::spill_output`] can spill.
    fn output_trace_bytes(&self) -> usize {
        0
    }

    /// Bytes of the operator's own output trace held in spill files.
    fn spilled_bytes(&self) -> usize {
        0
    }

    /// Spills cold batches of the operator's own output trace (see
    /// [`crate::trace::Spine::spill`]); returns the heap bytes freed.
    fn spill_output(
        &mut self,
        _dir: &std::path::Path,
        _want: usize,
        _min_bytes: usize,
        _swaps: &mut crate::trace::spine::Swaps,
    ) -> crate::error::Result<usize> {
        Ok(0)
    }

    /// Reads on from the spilled copies of the batches in `swaps` wherever the operator
    /// holds the originals beyond one activation (a join's snapshot of a trace), so that the
    /// heap copies are freed.
    fn swap_spilled(&mut self, _swaps: &crate::trace::spine::Swaps) {}

    /// Marks every word the operator's state holds beyond one activation (buffered,
    /// pending and held updates, its own trace, caches; see [`crate::string_gc`]). No
    /// default: each operator states what it keeps.
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks);

    /// Takes the updates kept for the engine's caller (`capture`).
    fn take_captured(&mut self) -> Vec<Msg> {
        Vec::new()
    }
}

/// What an activation sees of its worker and of the pass.
pub struct RunCtx<'a> {
    /// The node being run.
    pub node: usize,
    /// The plan.
    pub plan: &'a Plan,
    /// The Python callbacks.
    pub callbacks: &'a dyn Callbacks,
    /// For each node, the arrange node whose trace it reads (itself for `arrange`).
    pub trace_of: &'a [Option<usize>],
    /// For each node, the `import_trace` node it reads through, if any.
    pub import_of: &'a [Option<usize>],
    /// The worker's traces, indexed by arrange node.
    pub traces: &'a mut [Option<Arrangement>],
    /// The batch each arrange (or import) node added this pass.
    pub fresh: &'a mut [Option<Arc<Msg>>],
    /// The worker's error updates.
    pub errors: &'a mut Vec<ErrorUpdate>,
    /// Which columns share a dtype, and the dtypes known so far (all workers).
    pub dtype_links: &'a DtypeLinks,
}

impl<'a> RunCtx<'a> {
    /// The plan node being run (borrowed from the plan, not from the context, so it can be
    /// held while the context is used mutably).
    pub fn spec(&self) -> &'a Node {
        &self.plan.nodes[self.node]
    }

    /// The column names of the node's first input.
    pub fn input_columns(&self) -> &'a Vec<String> {
        let plan = self.plan;
        &plan.nodes[plan.nodes[self.node].inputs[0]].columns
    }

    /// The node's label.
    pub fn label(&self) -> &str {
        &self.plan.nodes[self.node].label
    }

    /// The trace that arrangement node `input` reads.
    pub fn trace(&self, input: usize) -> &Arrangement {
        let t = self.trace_of[input].expect("an arrangement input");
        self.traces[t].as_ref().expect("trace")
    }

    /// The output schema of arrangement node `input` once it has seen data.
    pub fn schema_of(&self, input: usize) -> Option<Schema> {
        let t = self.trace_of[input]?;
        self.traces[t].as_ref()?.schema.clone()
    }

    /// The new batch a consumer of arrangement `input` sees this pass: the arrange node's
    /// fresh batch, plus an import's snapshot in the pass after it was attached.
    pub fn fresh_for(&self, input: usize) -> Option<Arc<Msg>> {
        fresh_for(self.trace_of, self.import_of, self.fresh, input)
    }
}

/// See [`RunCtx::fresh_for`].
pub fn fresh_for(
    trace_of: &[Option<usize>],
    import_of: &[Option<usize>],
    fresh: &[Option<Arc<Msg>>],
    input: usize,
) -> Option<Arc<Msg>> {
    let base = trace_of[input].and_then(|t| fresh[t].clone());
    let snap = import_of[input].and_then(|i| fresh[i].clone());
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

/// Takes every queued message of every port (for operators that cannot fail).
pub fn take_all(inputs: &mut [Vec<Msg>]) -> Vec<Msg> {
    inputs.iter_mut().flat_map(std::mem::take).collect()
}
