//! `reduce` over an arrangement.
//!
//! For each key with new input updates or with pending times, the operator computes the
//! *interesting times* (joins of a subset of the key's history times with a non-empty subset
//! of its new and pending times, see [`crate::times`]). Times not in the future of the input
//! frontier are complete and processed in lexicographic order (a linear extension of the
//! partial order): the input is accumulated at the time, the aggregate applied, and the
//! difference against the operator's accumulated output at that time emitted. Times still in
//! the future of the frontier are kept as pending (they hold back the output frontier).
//!
//! An activation ([`ReduceState::activate`]) takes the keys with new input or complete
//! pending times in key-ordered chunks (`reduce_work.rs`, so that its per-key structures hold
//! one chunk's keys) and runs each chunk through three phases:
//! * phase 1, `ReduceState::candidate_groups`: per key, its histories
//!   (`Histories::read_key`) and candidate times (`KeyAccum::candidate_times`), then per
//!   complete time the input accumulated there and the aggregate's desired output
//!   (`KeyAccum::key_groups`, `Desired`); keys whose times form a chain take
//!   `ReduceState::reduce_chain_key` (`reduce_chain.rs`) instead, and large keys of linear
//!   aggregates start from their carried totals without reading their input history
//!   (`ReduceState::carried_chain_key`, `reduce_cache.rs`);
//! * phase 2 (`reduce_python.rs`): Python aggregates, evaluated in one callback for all
//!   (key, time) groups of the activation;
//! * phase 3, `ReduceState::output_differences`: per key and group, the desired output
//!   minus the accumulated output (`OutputDiff`), appended to the activation's output,
//!   which is consolidated and added to the output trace once every chunk is done.

use super::aggregate;
use super::reduce_cache::{carry_min_history, BatchKeys, TotalsCache};
use super::reduce_chain::{self, ChainKey, ChainScratch};
use super::reduce_errors::ReduceErrors;
use super::reduce_history::Histories;
use super::reduce_index::Indexed;
use super::reduce_python::PyGroups;
use super::reduce_quiet::{take_back, Quiet};
use super::reduce_rows::{self, RowsKey, RowsScratch};
use super::reduce_work::{chunk_keys, PendingOf, Work, WorkSource, CHUNK_TIMES};
use super::{Operator, Output, RunCtx};
use crate::encoding::DType;
use crate::engine::arrangement::{Arrangement, Reader};
use crate::engine::column::{Callbacks, Msg};
use crate::engine::errors::{render_row, ErrorUpdate};
use crate::engine::plan::Agg;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Lattice, PartialOrder, Time};
use crate::times::{interesting_times_2d, TimesScratch};
use crate::updates::Updates;
use std::sync::Arc;

/// A `reduce` node: its aggregate and its state on one worker. It reads the trace and fresh
/// batches of its input arrangement.
pub struct Reduce {
    agg: Agg,
    state: ReduceState,
}

impl Reduce {
    /// A reduce by `agg` of an arrangement keyed by `key_width` columns.
    pub fn new(agg: &Agg, key_width: usize) -> Self {
        Reduce {
            agg: agg.clone(),
            state: ReduceState::new(key_width),
        }
    }
}

impl Operator for Reduce {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.state.mark_strings(marks);
    }

    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        _inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let plan = cx.plan;
        let spec = &plan.nodes[cx.node];
        let label = spec.label.as_str();
        let a = spec.inputs[0];
        let fresh = cx.fresh_for(a);
        if fresh.is_none() && !self.state.has_complete_pending(frontier) {
            return Ok(Output::none());
        }
        let Some(schema) = fresh
            .as_ref()
            .map(|m| m.schema.clone())
            .or_else(|| cx.schema_of(a))
        else {
            return Ok(Output::none());
        };
        let trace = cx.trace(a);
        let kw = trace.key_width;
        let arr_cols = &plan.nodes[cx.trace_of[a].expect("trace")].columns;
        let key_names = &arr_cols[..kw.min(arr_cols.len())];
        let empty = Updates::new(schema.len());
        let res = self.state.activate(&ReduceInput {
            agg: &self.agg,
            key_width: kw,
            key_dtypes: &schema[..kw],
            val_dtypes: &schema[kw..],
            key_names,
            val_names: &arr_cols[kw.min(arr_cols.len())..],
            trace,
            batch: fresh.as_ref().map(|m| &m.upd).unwrap_or(&empty),
            frontier,
            callbacks: cx.callbacks,
            label,
        });
        for (key, time, message, diff) in self.state.errors.new.drain(..) {
            cx.errors.push(ErrorUpdate {
                node: cx.node,
                message: message.replace(&format!("{label}: "), ""),
                values: render_row(key_names, &schema, &key),
                time,
                diff,
            });
        }
        let upd = res?;
        let mut out_schema: Vec<DType> = schema[..kw].to_vec();
        out_schema.extend(self.state.out_dtypes.clone().unwrap_or_default());
        Ok(Output {
            msgs: vec![Msg {
                schema: Arc::new(out_schema),
                upd,
            }],
            did: true,
        })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        for t in self.state.pending_lower().elements() {
            held.insert_ref(t);
        }
    }

    fn reads_arrangements(&self) -> bool {
        true
    }

    fn calls_python(&self) -> bool {
        matches!(self.agg, Agg::Python { .. } | Agg::ThresholdPy { .. })
    }

    fn compact_output(&mut self, frontier: &Antichain<Time>) {
        self.state.out.set_compaction(frontier);
    }

    fn sizes(&self) -> (usize, usize) {
        (self.state.out.len(), self.state.pending.len())
    }

    fn heap_bytes(&self) -> usize {
        self.state.out.heap_bytes() + self.state.cache.heap_bytes() + self.state.scratch_bytes()
    }

    fn release_scratch(&mut self, keep: usize) {
        self.state.release_scratch(keep);
    }

    fn output_trace_bytes(&self) -> usize {
        self.state.out.heap_bytes()
    }

    fn spilled_bytes(&self) -> usize {
        self.state.out.spilled_bytes()
    }

    fn spill_output(
        &mut self,
        dir: &std::path::Path,
        want: usize,
        min_bytes: usize,
        swaps: &mut crate::trace::spine::Swaps,
    ) -> crate::error::Result<usize> {
        self.state.out.spill(dir, want, min_bytes, swaps)
    }
}

/// State of one reduce operator (per worker).
#[derive(Debug)]
pub struct ReduceState {
    /// The operator's output trace (rows: key, output columns).
    pub out: Arrangement,
    /// Pending times per key, not yet complete.
    pub(super) pending: Pending,
    /// The minimal elements of `pending`'s times, set at the end of every activation (the
    /// only place `pending` changes): what the operator holds, read at every pass's start
    /// and after every activation, without a walk over every pending (key, time).
    pending_lower: Antichain<Time>,
    /// Output dtypes once known.
    pub out_dtypes: Option<Vec<DType>>,
    /// Buffers reused across activations.
    scratch: Scratch,
    /// Keys whose accumulation failed (errors as data, see `reduce_errors.rs`).
    pub errors: ReduceErrors,
    /// Running input totals of large keys of linear aggregates (`reduce_cache.rs`).
    pub cache: TotalsCache,
    /// Keys and times per chunk of an activation (`reduce_work.rs`).
    chunk: (usize, usize),
    /// Output updates per new time of the last chunk with distinct times: sizes the next
    /// chunk's output room ([`reserve_output`]).
    rate: OutputRate,
}

/// Everything a reduce activation reads.
pub struct ReduceInput<'a> {
    pub agg: &'a Agg,
    pub key_width: usize,
    pub key_dtypes: &'a [DType],
    pub val_dtypes: &'a [DType],
    pub key_names: &'a [String],
    pub val_names: &'a [String],
    pub trace: &'a Arrangement,
    pub batch: &'a Updates,
    pub frontier: &'a Antichain<Time>,
    pub callbacks: &'a dyn Callbacks,
    pub label: &'a str,
}

/// Pending times of a reduce: per key, times not yet complete, kept sorted by key so that an
/// activation merges them with the new batch's keys without copying keys. Times are added key
/// by key ([`Pending::push`] appends to the last key's list when the key repeats).
#[derive(Debug, Default)]
pub struct Pending(pub Vec<(Vec<u64>, Vec<Time>)>);

impl Pending {
    /// Adds a pending time of `key`.
    pub fn push(&mut self, key: &[u64], t: Time) {
        match self.0.last_mut() {
            Some((k, ts)) if k.as_slice() == key => ts.push(t),
            _ => self.0.push((key.to_vec(), vec![t])),
        }
    }

    /// Adds a key with its pending times.
    pub fn insert(&mut self, key: Vec<u64>, times: Vec<Time>) {
        self.0.push((key, times));
    }

    /// Sorts by key, merges repeated keys, and sorts and deduplicates each key's times.
    pub fn normalize(&mut self) {
        if !self.0.windows(2).all(|w| w[0].0 < w[1].0) {
            self.0.sort_by(|a, b| a.0.cmp(&b.0));
            let mut merged: Vec<(Vec<u64>, Vec<Time>)> = Vec::with_capacity(self.0.len());
            for (k, ts) in self.0.drain(..) {
                match merged.last_mut() {
                    Some((mk, mts)) if *mk == k => mts.extend(ts),
                    _ => merged.push((k, ts)),
                }
            }
            self.0 = merged;
        }
        for (_, ts) in self.0.iter_mut() {
            ts.sort_unstable();
            ts.dedup();
        }
    }

    /// Every pending time (of every key).
    pub fn times(&self) -> impl Iterator<Item = &Time> {
        self.0.iter().flat_map(|(_, ts)| ts.iter())
    }

    /// Number of pending (key, time) pairs.
    pub fn len(&self) -> usize {
        self.0.iter().map(|(_, ts)| ts.len()).sum()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The minimal elements of `times`. Pending times come key by key, each key's around the
/// same rounds and iterations as the others', so the element that dominated the last
/// dominated time is tried first: most times cost one comparison.
pub(super) fn minimal_times<'a>(times: impl Iterator<Item = &'a Time>) -> Antichain<Time> {
    let mut lower: Antichain<Time> = Antichain::new();
    let mut hint = 0;
    for t in times {
        let elems = lower.elements();
        if elems.get(hint).is_some_and(|e| e.less_equal(t)) {
            continue;
        }
        match elems.iter().position(|e| e.less_equal(t)) {
            Some(i) => hint = i,
            None => {
                lower.insert_ref(t);
            }
        }
    }
    lower
}

/// Whether every time has zero coordinates beyond the first.
fn at_most_1d(times: &[Time]) -> bool {
    times
        .iter()
        .all(|t| t.0[1] == 0 && t.0[2] == 0 && t.0[3] == 0)
}

/// Whether every time has zero coordinates beyond the first two.
fn at_most_2d(times: &[Time]) -> bool {
    times.iter().all(|t| t.0[2] == 0 && t.0[3] == 0)
}

/// Below this many (history entry x time) pairs a key accumulates by scanning its history.
/// `bfs_bench 1000 2000 B 30000`, two runs each: 512 -> 2048 took batches of 1,000 from
/// 1.43 s to 1.37 s and batches of 100 and 10,000 from 1.35 / 1.40 s to 1.34 / 1.39 s; 4096
/// was no better.
pub const SWEEP_MIN_WORK: usize = 2048;

/// The sweep threshold of reduces built now: `DDFLOW_REDUCE_SWEEP_MIN` if set to an integer
/// (tests set 0 so that every 2-D key takes the sweep), else [`SWEEP_MIN_WORK`].
pub fn sweep_min_work() -> usize {
    std::env::var("DDFLOW_REDUCE_SWEEP_MIN")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(SWEEP_MIN_WORK)
}

/// Above this many (history entry x time) pairs a key of a built-in aggregate takes the row
/// sweep (`reduce_rows.rs`). `valgrind --tool=callgrind bfs_bench 1000 2000 1000 4000`:
/// 1,032.66 M instructions without the row sweep, 1,041.59 M from 2,048 pairs, 1,032.66 M
/// from 8,192 and from 65,536 (no BFS key gets there).
pub const ROWS_MIN_WORK: usize = 8192;

/// The row-sweep threshold of reduces built now: `DDFLOW_REDUCE_ROWS_MIN` if set to an
/// integer (a huge value turns the row sweep off, to compare); else [`ROWS_MIN_WORK`], or
/// `DDFLOW_REDUCE_SWEEP_MIN` when that is set lower (the tests set 0).
pub fn rows_min_work() -> usize {
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
    };
    env("DDFLOW_REDUCE_ROWS_MIN").unwrap_or_else(|| {
        env("DDFLOW_REDUCE_SWEEP_MIN").map_or(ROWS_MIN_WORK, |s| s.min(ROWS_MIN_WORK))
    })
}

/// A two-dimensional key takes the row sweep only when its candidate times average at
/// least this many per row (per first coordinate). The sweep rebuilds both accumulations
/// at the first time of every row and carries them along the row, so on rows of one or
/// two times it does what the general path's sweep (`Indexed::sweep_to`) does, at a higher
/// cost per row (the BFS's keys at batches of 10,000: see
/// `benches/results/speed_bigbatch_2026-11-27.md`); a key with `N` updates at random
/// times has rows of about `N / 4` times. Deeper times take the row sweep on the product
/// alone: the general path has no sweep for them.
pub const ROWS_MIN_LEN: usize = 4;

/// The row-length threshold of reduces built now: `DDFLOW_REDUCE_ROWS_MIN_LEN` if set to an
/// integer; else 0 when the row-sweep threshold is 0 (every key takes the row sweep, as the
/// tests ask), else [`ROWS_MIN_LEN`].
pub fn rows_min_len() -> usize {
    std::env::var("DDFLOW_REDUCE_ROWS_MIN_LEN")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(if rows_min_work() == 0 {
            0
        } else {
            ROWS_MIN_LEN
        })
}

/// Whether sorted candidate times average at least `min_len` times per first coordinate.
#[inline]
pub(super) fn long_rows(cands: &[Time], min_len: usize) -> bool {
    if min_len <= 1 || cands.is_empty() {
        return true;
    }
    let rows = 1 + cands.windows(2).filter(|w| w[0].0[0] != w[1].0[0]).count();
    cands.len() >= rows.saturating_mul(min_len)
}

impl ReduceState {
    /// Marks what outlives an activation: the output trace, pending keys, error keys and
    /// cached totals (the scratch buffers are refilled by every activation).
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.out.mark_strings(marks);
        self.pending.0.iter().for_each(|(k, _)| marks.words(k));
        self.errors.mark_strings(marks);
        self.cache.mark_strings(marks);
    }

    /// A new reduce with an output trace keyed like its input.
    pub fn new(key_width: usize) -> Self {
        ReduceState {
            out: Arrangement::new(key_width, key_width),
            pending: Pending::default(),
            pending_lower: Antichain::new(),
            out_dtypes: None,
            scratch: Scratch::with_sweep_min(sweep_min_work()),
            errors: Default::default(),
            cache: TotalsCache::new(carry_min_history()),
            chunk: (chunk_keys(), CHUNK_TIMES),
            rate: OutputRate::START,
        }
    }

    /// Sets the keys and times per chunk (tests compare chunked activations with whole
    /// ones).
    #[cfg(test)]
    pub(super) fn set_chunk(&mut self, keys: usize, times: usize) {
        self.chunk = (keys.max(1), times.max(1));
    }

    /// Sets the 2-D sweep threshold of phases 1 and 3 (tests send every key to the sweep).
    #[cfg(test)]
    pub(super) fn set_sweep_min(&mut self, n: usize) {
        self.scratch.acc.sweep_min = n;
        self.scratch.diff.sweep_min = n;
    }

    /// Turns skipping quiet times off (tests compare with evaluating every time).
    #[cfg(test)]
    pub(super) fn set_quiet_off(&mut self, off: bool) {
        self.scratch.acc.quiet_off = off;
    }

    /// Sets the row-sweep threshold (tests compare the row sweep with the general path).
    #[cfg(test)]
    pub(super) fn set_rows_min(&mut self, n: usize) {
        self.scratch.acc.rows_min = n;
        self.scratch.acc.rows_min_len = if n == 0 { 0 } else { ROWS_MIN_LEN };
    }

    /// Heap bytes of the buffers an activation grows with its chunk of keys and keeps for
    /// the next one.
    pub fn scratch_bytes(&self) -> usize {
        self.scratch.chunk_bytes()
    }

    /// Frees those buffers if they hold more than `keep` bytes (an idle engine's).
    pub fn release_scratch(&mut self, keep: usize) {
        self.scratch.release_above(keep);
    }

    /// Whether some pending time is complete with respect to `frontier` (some is, exactly
    /// when a minimal one is: a time the frontier is not at or below has none of its
    /// lower bounds at or above the frontier either).
    pub fn has_complete_pending(&self, frontier: &Antichain<Time>) -> bool {
        self.pending_lower
            .elements()
            .iter()
            .any(|t| !frontier.less_equal(t))
    }

    /// The minimal pending times (a lower bound of everything pending).
    pub fn pending_lower(&self) -> &Antichain<Time> {
        &self.pending_lower
    }

    /// Runs one activation; returns the output updates (rows: key, output columns).
    ///
    /// On error (a failing Python reducer, an overflow) nothing is lost: the new batch's
    /// (key, time) pairs join the pending set, so a later activation redoes the work.
    pub fn activate(&mut self, inp: &ReduceInput<'_>) -> Result<Updates> {
        let mut src = WorkSource::new(inp.batch, inp.key_width, std::mem::take(&mut self.pending));
        let mut still_pending = Pending::default();
        let result = self.activate_inner(inp, &mut src, &mut still_pending);
        if result.is_err() {
            // Everything that was pending or new is in `src` or `still_pending`: keep it all
            // pending (re-examining a time whose output is already right emits nothing).
            self.pending = src.restore(still_pending);
            // Totals carried past this batch do not match the output trace, which did not
            // take it (the batch's times are redone from pending work).
            self.cache.clear();
        }
        self.pending_lower = minimal_times(self.pending.times());
        result
    }

    /// Phases 1-3 over the keys with work, a chunk of keys at a time (at most `chunk`'s keys
    /// and, past its first key, times; `reduce_work.rs`); the output of every chunk is
    /// consolidated and added to the output trace at the end, so a failure in a later chunk
    /// leaves the trace as it was.
    fn activate_inner(
        &mut self,
        inp: &ReduceInput<'_>,
        src: &mut WorkSource<'_>,
        still_pending: &mut Pending,
    ) -> Result<Updates> {
        if self.out_dtypes.is_none() {
            self.out_dtypes = aggregate::output_dtypes(inp.agg, inp.val_dtypes, inp.label)?;
            if let Some(d) = &self.out_dtypes {
                self.out = Arrangement::new(inp.key_width, inp.key_width + d.len());
            }
        }
        // Buffers reused across activations (no regrowth per activation).
        let mut sc = std::mem::take(&mut self.scratch);
        let mut work = std::mem::take(&mut sc.work);
        let mut cursors = Cursors {
            input: inp.trace.reader(),
            output: self.out.reader(),
            batch: BatchKeys::new(inp.batch, inp.key_width),
        };
        let mut output = Updates::new(self.out.width);
        let mut result = Ok(());
        let mut left = src.times_bound();
        while !src.is_done() {
            src.next_chunk(
                self.chunk,
                inp.frontier,
                &mut work,
                &mut sc.pending_of,
                still_pending,
            );
            left = left.saturating_sub(work.all_times().len());
            let reserved = reserve_output(&mut output, &work, self.rate, left);
            let before = output.len();
            let mut py = PyGroups::default();
            result = self
                .candidate_groups(
                    inp,
                    &work,
                    still_pending,
                    &mut sc,
                    &mut py,
                    (&mut cursors, &mut output),
                )
                .and_then(|()| {
                    self.python_aggregates(inp, &work, &mut sc.desired, &py)?;
                    self.output_differences(inp, &work, &mut sc, &mut output)
                });
            if result.is_err() {
                break;
            }
            if let Some(times) = reserved {
                self.rate = OutputRate {
                    updates: output.len() - before,
                    times,
                };
            }
        }
        sc.work = work;
        self.scratch = sc;
        result?;
        crate::engine::util::consolidate(&mut output)?;
        self.out.insert(&output, inp.frontier);
        still_pending.normalize();
        self.pending = std::mem::take(still_pending);
        Ok(output)
    }

    /// Phase 1: per key with work, its histories and candidate (interesting) times; the
    /// complete ones become groups with their desired output (see [`KeyAccum::key_groups`]),
    /// the others stay pending. Keys of a built-in aggregate whose times form a chain go
    /// through `reduce_chain` instead and write the returned output directly.
    #[inline]
    fn candidate_groups(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &Work,
        still_pending: &mut Pending,
        sc: &mut Scratch,
        py: &mut PyGroups,
        (cursors, output): (&mut Cursors<'_>, &mut Updates),
    ) -> Result<()> {
        let Scratch {
            desired,
            hist,
            acc,
            pending_of,
            ..
        } = sc;
        let out_width = self.out.width;
        desired.clear();
        hist.reset(inp.batch.width, out_width);
        let Cursors {
            input: reader_in,
            output: reader_out,
            batch: batch_keys,
        } = cursors;
        let builtin = is_builtin(inp.agg);
        let carries = reduce_chain::carries(inp.agg, inp.val_dtypes);
        for (ki, (key, new_times)) in work.iter().enumerate() {
            // Per key: a hot key's histories and candidate times can grow without bound.
            crate::memory::check()?;
            if carries
                && !self.cache.is_empty()
                && self.carried_chain_key(
                    inp,
                    (key, new_times),
                    batch_keys.range(key),
                    (hist, reader_out),
                    &mut acc.chain,
                    output,
                    still_pending,
                )
            {
                hist.two_d.push(false);
                continue;
            }
            // New times beyond one dimension rule the chain path out: the histories are
            // advanced by the new times' meet as they are read (`reduce_history.rs`).
            let meet = new_times.iter().copied().reduce(|a, b| a.meet(&b));
            let out_lo = match meet {
                Some(m) if !at_most_1d(new_times) && hist.reads_advanced(inp.key_width, &m) => {
                    let readers = (&mut *reader_in, &mut *reader_out);
                    hist.read_key_advanced(key, &m, readers, &mut acc.index, &self.errors)
                }
                _ => {
                    let out_lo = hist.read_key(key, (reader_in, reader_out), &self.errors);
                    let pending_keys = still_pending.0.len();
                    if builtin
                        && self.reduce_chain_key(
                            inp,
                            (key, new_times),
                            (hist, out_lo),
                            &mut acc.chain,
                            output,
                            still_pending,
                        )
                    {
                        if carries && hist.input.len() > self.cache.min_history {
                            let pended = still_pending.0.len() != pending_keys;
                            self.keep_carry(inp, key, &mut acc.chain, pended);
                        }
                        hist.two_d.push(false);
                        continue;
                    }
                    hist.advance_key(key, out_lo, new_times, &self.errors);
                    out_lo
                }
            };
            let two_d = acc.candidate_times(&mut hist.edits, new_times)?;
            hist.two_d.push(two_d);
            if builtin
                && hist.input_len(&acc.index) * acc.cands.len() > acc.rows_min
                && (!two_d || long_rows(&acc.cands, acc.rows_min_len))
                && !self.errors.has_history(key)
            {
                hist.input_rows(key, &acc.index);
                if self.reduce_rows_key(inp, key, (hist, out_lo), acc, output, still_pending)? {
                    continue;
                }
            }
            // Quiet times (`reduce_quiet.rs`) are skipped only for a built-in aggregate of a
            // key that never failed (its output matched its input everywhere else).
            acc.skip_quiet = builtin
                && !acc.quiet_off
                && !self.errors.has_history(key)
                && acc.quiet.load(
                    inp.batch,
                    pending_of.rows(ki),
                    inp.key_width,
                    pending_of.of(ki),
                );
            acc.key_groups(
                inp,
                (ki, key),
                (&hist.input, hist.input_indexed),
                two_d,
                out_width - inp.key_width,
                (desired, py),
                still_pending,
            )?;
        }
        Ok(())
    }

    /// A key of a built-in aggregate whose times (its edit times in `hist` and `new_times`),
    /// all one-dimensional, form a chain: one pass with running accumulations
    /// (`reduce_chain`), output written to `output`. Returns whether the key was done; on an
    /// overflow its output is undone and the key is left to the general path, which makes it
    /// an error. (Multi-dimensional times that happen to form a chain take the general path:
    /// sorting them only to find out costs more than it saves on the BFS workloads.)
    #[inline]
    pub(super) fn reduce_chain_key(
        &mut self,
        inp: &ReduceInput<'_>,
        (key, new_times): (&[u64], &[Time]),
        (hist, out_lo): (&Histories, usize),
        chain: &mut ChainScratch,
        output: &mut Updates,
        still_pending: &mut Pending,
    ) -> bool {
        let edits = &hist.edits;
        if !at_most_1d(edits) || !at_most_1d(new_times) {
            return false;
        }
        // One-dimensional times always form a chain.
        chain.set_1d_times(edits, new_times);
        let k = ChainKey {
            agg: inp.agg,
            val_dtypes: inp.val_dtypes,
            key,
            key_width: inp.key_width,
            input: &hist.input,
            out_hist: &hist.outputs,
            out_lo,
            out_hi: hist.outputs.len(),
            least_new: new_times[0],
            frontier: inp.frontier,
            label: inp.label,
        };
        let n_out = output.len();
        let mark = (
            still_pending.0.len(),
            still_pending.0.last().map(|e| e.1.len()),
        );
        if reduce_chain::reduce_key(&k, chain, output, still_pending).is_ok() {
            self.errors.set(key, new_times[0], None);
            return true;
        }
        output.truncate(n_out);
        still_pending.0.truncate(mark.0);
        if let (Some(n), Some(last)) = (mark.1, still_pending.0.last_mut()) {
            last.1.truncate(n);
        }
        false
    }

    /// A key of a built-in aggregate with two-dimensional times and a large (history x
    /// candidate times) product: visited row by row (`reduce_rows`), output written to
    /// `output`. Returns whether the key was done; on an overflow its output is undone and
    /// the key is left to the general path, which makes it an error update (past the memory
    /// limit the activation fails).
    #[inline]
    fn reduce_rows_key(
        &mut self,
        inp: &ReduceInput<'_>,
        key: &[u64],
        (hist, out_lo): (&Histories, usize),
        acc: &mut KeyAccum,
        output: &mut Updates,
        still_pending: &mut Pending,
    ) -> Result<bool> {
        let k = RowsKey {
            agg: inp.agg,
            val_dtypes: inp.val_dtypes,
            key,
            key_width: inp.key_width,
            input: &hist.input,
            out_hist: &hist.outputs,
            out_lo,
            out_hi: hist.outputs.len(),
            cands: &acc.cands,
            frontier: inp.frontier,
            label: inp.label,
        };
        let n_out = output.len();
        match reduce_rows::reduce_key(&k, &mut acc.rows, output) {
            Err(e @ Error::MemoryLimit(_)) => return Err(e),
            Err(_) => {
                output.truncate(n_out);
                return Ok(false);
            }
            Ok(()) => {}
        }
        if !acc.rows.pending.is_empty() {
            still_pending.insert(key.to_vec(), acc.rows.pending.clone());
        }
        Ok(true)
    }

    /// Phase 3: per key of the chunk in time order, the differences between the groups'
    /// desired output and the accumulated output (see [`OutputDiff::key_differences`]),
    /// appended to `output`.
    #[inline]
    fn output_differences(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &Work,
        sc: &mut Scratch,
        output: &mut Updates,
    ) -> Result<()> {
        // A Python reducer may have fixed the output width only now (in the first chunk,
        // before any output); the chain path, which wrote to `output` already, runs only for
        // built-in aggregates.
        let out_width = self.out.width;
        if output.width != out_width {
            debug_assert!(output.is_empty());
            *output = Updates::new(out_width);
        }
        let Scratch {
            desired,
            hist,
            diff,
            ..
        } = sc;
        let groups = &desired.groups;
        let mut gi = 0;
        for (ki, (key, _)) in work.iter().enumerate() {
            if gi >= groups.len() || groups[gi].key != ki {
                continue;
            }
            crate::memory::check()?;
            let n = groups[gi..].iter().take_while(|g| g.key == ki).count();
            let (lo, hi) = (hist.out_offs[ki], hist.out_offs[ki + 1]);
            diff.key_differences(
                inp,
                key,
                (desired, &groups[gi..gi + n]),
                (&hist.outputs, lo, hi),
                hist.two_d[ki],
                &mut self.errors,
                output,
            )?;
            gi += n;
        }
        Ok(())
    }
}

/// Per-activation buffers of a reduce, kept between activations so that they do not regrow.
#[derive(Default)]
struct Scratch {
    /// The chunk's keys with work and their times (`reduce_work.rs`).
    work: Work,
    /// The pending times of each of them.
    pending_of: PendingOf,
    /// Phase 1's complete (key, time) groups and their desired output (phases 2 and 3 read it).
    desired: Desired,
    /// The histories phase 1 reads (the output histories again in phase 3).
    hist: Histories,
    /// Phase 1: one key's candidate times and its input accumulated at one of them.
    acc: KeyAccum,
    /// Phase 3: one key's output accumulated at a group's time, against the desired output.
    diff: OutputDiff,
}

impl Scratch {
    fn with_sweep_min(sweep_min: usize) -> Self {
        let mut s = Scratch::default();
        s.acc.sweep_min = sweep_min;
        s.acc.rows_min = rows_min_work();
        s.acc.rows_min_len = rows_min_len();
        s.diff.sweep_min = sweep_min;
        s
    }

    /// Heap bytes of the buffers that grow with an activation's chunk of keys: the work
    /// list, the desired groups and the histories (the others hold one key's worth).
    fn chunk_bytes(&self) -> usize {
        let work = self.work.heap_bytes();
        let d = &self.desired;
        let desired = d.groups.capacity() * size_of::<Group>()
            + (d.rows.capacity() + d.counts.capacity()) * 8;
        work + desired + self.hist.heap_bytes()
    }

    /// Frees the chunk buffers when they hold more than `keep` bytes: an activation of many
    /// keys grows them, and the next ones (of an idle engine's next `run_until`) are
    /// usually smaller.
    fn release_above(&mut self, keep: usize) {
        if self.chunk_bytes() > keep {
            self.work = Work::default();
            self.desired = Desired::default();
            self.hist = Histories::default();
        }
    }
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

/// What an activation walks forward through its chunks in key order: readers of the input
/// and output traces and the batch's rows per key.
pub(super) struct Cursors<'a> {
    input: Reader,
    output: Reader,
    batch: BatchKeys<'a>,
}

/// A complete (key, time) of an activation: the key's output should be its desired rows
/// there (or nothing, when it failed).
pub(super) struct Group {
    /// The key's index in the activation's work.
    pub(super) key: usize,
    pub(super) time: Time,
    /// Range of this group's desired output rows in [`Desired`].
    pub(super) start: usize,
    pub(super) end: usize,
    /// Why the key failed at this time (its output is then empty).
    pub(super) err: Option<String>,
    /// A quiet time (`reduce_quiet.rs`): not evaluated; phase 3 takes back the output this
    /// activation emitted at or below it.
    pub(super) quiet: bool,
}

/// The groups of an activation, in key then time order, and their desired output rows,
/// flat: row `r` is `rows[r * w..(r + 1) * w]` (`w` the output's value width) with count
/// `counts[r]`.
#[derive(Default)]
pub(super) struct Desired {
    pub(super) groups: Vec<Group>,
    pub(super) rows: Vec<u64>,
    pub(super) counts: Vec<i64>,
}

impl Desired {
    fn clear(&mut self) {
        self.groups.clear();
        self.rows.clear();
        self.counts.clear();
    }

    /// A group of a built-in aggregate: the aggregate of the key's accumulated values
    /// (`vals`, `counts`: the values with non-zero count, `vw` words each), or no rows and
    /// the error when the accumulation (`acc`) or the aggregate fails.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn push_builtin(
        &mut self,
        inp: &ReduceInput<'_>,
        (key, time): (usize, Time),
        acc: Result<()>,
        (vals, counts, vw): (&[u64], &[i64], usize),
        out_vw: usize,
    ) {
        let start = self.counts.len();
        let res = acc.and_then(|()| {
            aggregate::apply(
                inp.agg,
                inp.val_dtypes,
                vw,
                vals,
                counts,
                inp.label,
                &mut self.rows,
                &mut self.counts,
            )
        });
        let err = res.err().map(|e| e.to_string());
        if err.is_some() {
            // Errors as data: no output for the key here, and an error update.
            self.counts.truncate(start);
            self.rows.truncate(start * out_vw);
        }
        self.groups.push(Group {
            key,
            time,
            start,
            end: self.counts.len(),
            err,
            quiet: false,
        });
    }

    /// A quiet group (see [`Group::quiet`]): no rows.
    #[inline]
    fn push_quiet(&mut self, key: usize, time: Time) {
        let start = self.counts.len();
        self.groups.push(Group {
            key,
            time,
            start,
            end: start,
            err: None,
            quiet: true,
        });
    }

    /// A group of a Python aggregate: its accumulated values gathered into `py` for the
    /// callback of phase 2, which writes its rows; or the error when the accumulation
    /// failed. A key whose input accumulates to nothing has no output and is not handed to
    /// the callback (a reducer never sees an empty group, as in differential dataflow).
    #[inline]
    fn push_python(
        &mut self,
        (key, time): (usize, Time),
        acc: Result<()>,
        (vals, counts): (&[u64], &[i64]),
        py: &mut PyGroups,
    ) {
        let start = self.counts.len();
        let err = acc.err().map(|e| e.to_string());
        if err.is_none() && !counts.is_empty() {
            py.push(self.groups.len(), vals, counts);
        }
        self.groups.push(Group {
            key,
            time,
            start,
            end: start,
            err,
            quiet: false,
        });
    }
}

/// Phase 1's buffers for one key: its candidate times, its input indexed by distinct value
/// and accumulated at one time (`vals`, `counts`: the values with non-zero count), its
/// candidate times that stay pending, and the chain path's buffers.
#[derive(Default)]
struct KeyAccum {
    /// Keys with more (history entry x time) pairs than this accumulate by the sweep.
    sweep_min: usize,
    /// Keys of built-in aggregates with more pairs than this take the row sweep.
    rows_min: usize,
    /// Of those, 2-D keys take it only if their candidate times average at least this many
    /// per row (see [`ROWS_MIN_LEN`]).
    rows_min_len: usize,
    cands: Vec<Time>,
    pending: Vec<Time>,
    index: Indexed,
    vals: Vec<u64>,
    counts: Vec<i64>,
    times: TimesScratch,
    chain: ChainScratch,
    rows: RowsScratch,
    /// The key's new updates and pending times, to find its quiet times.
    quiet: Quiet,
    /// Whether the key's quiet times are skipped.
    skip_quiet: bool,
    /// Tests turn quiet times off to compare with evaluating every time.
    quiet_off: bool,
}

impl KeyAccum {
    /// The key's interesting times (sorted, deduplicated) into `cands`, from its edit times
    /// and its new and pending times; returns whether all of them have at most two non-zero
    /// coordinates (then the 2-D sweep finds them; `edits` is left unsorted).
    #[inline]
    fn candidate_times(&mut self, edits: &mut Vec<Time>, new_times: &[Time]) -> Result<bool> {
        self.cands.clear();
        let two_d = at_most_2d(edits) && at_most_2d(new_times);
        if two_d {
            interesting_times_2d(edits, new_times, &mut self.times, &mut self.cands);
        } else {
            edits.sort_unstable();
            edits.dedup();
            crate::times::interesting_times(edits, new_times, &mut self.cands)?;
        }
        Ok(two_d)
    }

    /// One key's groups: the candidate times in the future of the frontier stay pending;
    /// each complete one becomes a group, its input accumulated there and handed to
    /// [`Desired::push_builtin`] or [`Desired::push_python`].
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn key_groups(
        &mut self,
        inp: &ReduceInput<'_>,
        (ki, key): (usize, &[u64]),
        (in_hist, indexed): (&Updates, bool),
        two_d: bool,
        out_vw: usize,
        (desired, py): (&mut Desired, &mut PyGroups),
        still_pending: &mut Pending,
    ) -> Result<()> {
        let KeyAccum {
            cands,
            index,
            vals,
            counts,
            pending,
            sweep_min,
            quiet,
            skip_quiet,
            ..
        } = self;
        let vw = inp.batch.width - inp.key_width;
        let builtin = is_builtin(inp.agg);
        if !indexed {
            index.build(in_hist, inp.key_width);
        }
        // The sweep pays off once scanning the history per time would cost more than
        // sorting it once (measured: below ~2048 entry-times the plain scan is cheaper).
        let sweep = two_d && index.len() * cands.len() > *sweep_min;
        if sweep {
            index.sweep_start(&[]);
        }
        pending.clear();
        let skip_quiet = *skip_quiet && quiet.affordable(cands.len());
        for (i, &t) in cands.iter().enumerate() {
            // A key with millions of candidate times grows `desired` without bound.
            if i % 1024 == 1023 {
                crate::memory::check()?;
            }
            if inp.frontier.less_equal(&t) {
                pending.push(t);
                continue;
            }
            if skip_quiet && quiet.is_quiet(&t) {
                desired.push_quiet(ki, t);
                continue;
            }
            let acc = accumulate_at(index, &t, sweep, inp.label);
            index.nonzero(vw, vals, counts);
            if builtin {
                desired.push_builtin(inp, (ki, t), acc, (vals, counts, vw), out_vw);
            } else {
                desired.push_python((ki, t), acc, (vals, counts), py);
            }
        }
        if !pending.is_empty() {
            // One entry per key, allocated at its size.
            still_pending.insert(key.to_vec(), pending.to_vec());
        }
        Ok(())
    }
}

/// Accumulates an indexed history at `t`: by the sweep (in time order) or by a scan.
#[inline]
fn accumulate_at(index: &mut Indexed, t: &Time, sweep: bool, label: &str) -> Result<()> {
    if sweep {
        // The sweep's partial sums may overflow where the total does not.
        index
            .sweep_to(t, label)
            .or_else(|_| index.accumulate(t, label))
    } else {
        index.accumulate(t, label)
    }
}

/// Phase 3's buffers for one key: its output history indexed by distinct row, the desired
/// count per row id at a group's time, the key's group times (for the sweep) and an output
/// row.
#[derive(Default)]
struct OutputDiff {
    /// As [`KeyAccum`]'s.
    sweep_min: usize,
    index: Indexed,
    want: Vec<i64>,
    group_times: Vec<Time>,
    row: Vec<u64>,
    /// The key's output emitted so far in this activation, `(row id, time, diff)`.
    emitted: Vec<(u32, Time, i64)>,
}

impl OutputDiff {
    /// One key's output differences: its output history (`outputs[lo..hi]`) indexed, then,
    /// per group in time order, the desired output minus the accumulated output, written
    /// to `output` and added to the index.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn key_differences(
        &mut self,
        inp: &ReduceInput<'_>,
        key: &[u64],
        (desired, groups): (&Desired, &[Group]),
        (outputs, lo, hi): (&Updates, usize, usize),
        two_d: bool,
        errors: &mut ReduceErrors,
        output: &mut Updates,
    ) -> Result<()> {
        self.index.build_range(outputs, lo, hi, inp.key_width);
        let n = groups.len();
        let sweep = two_d && (hi - lo + n) * n > self.sweep_min;
        if sweep {
            self.group_times.clear();
            self.group_times.extend(groups.iter().map(|g| g.time));
            self.index.sweep_start(&self.group_times);
        }
        self.emitted.clear();
        for g in groups {
            errors.set(key, g.time, g.err.as_deref());
            self.group_difference(inp, key, g, desired, sweep, output)?;
        }
        Ok(())
    }

    /// At group `g`'s time: the desired rows' counts minus the accumulated output's, each
    /// non-zero difference written to `output` and added to the index.
    #[inline]
    fn group_difference(
        &mut self,
        inp: &ReduceInput<'_>,
        key: &[u64],
        g: &Group,
        desired: &Desired,
        sweep: bool,
        output: &mut Updates,
    ) -> Result<()> {
        let OutputDiff {
            index,
            want,
            row,
            emitted,
            ..
        } = self;
        let ovw = output.width - inp.key_width;
        want.clear();
        if g.quiet {
            // The output stays what it was before the activation: take back what was
            // emitted at or below the time (nothing to accumulate).
            if !take_back(emitted, &g.time, want) {
                return Ok(());
            }
            for (id, &diff) in want.iter().enumerate() {
                if diff != 0 {
                    let out = (&mut *index, &mut *row, &mut *emitted, &mut *output);
                    emit(out, (key, ovw, sweep, inp.label), (id, g.time, diff))?;
                }
            }
            return Ok(());
        }
        // Map desired rows to ids first (this may add new distinct rows).
        for r in g.start..g.end {
            let id = index.id_of(&desired.rows[r * ovw..(r + 1) * ovw], ovw) as usize;
            if want.len() <= id {
                want.resize(id + 1, 0);
            }
            want[id] += desired.counts[r];
        }
        if sweep {
            index.sweep_to(&g.time, inp.label)?;
        } else {
            index.accumulate(&g.time, inp.label)?;
        }
        want.resize(index.num_vals(), 0);
        for id in 0..index.num_vals() {
            let diff = want[id] - index.counts[id];
            want[id] = 0;
            if diff != 0 {
                let out = (&mut *index, &mut *row, &mut *emitted, &mut *output);
                emit(out, (key, ovw, sweep, inp.label), (id, g.time, diff))?;
            }
        }
        Ok(())
    }
}

/// Where [`emit`] writes: the key's output index, a row buffer, the key's emitted
/// differences and the activation's output.
type EmitTo<'a> = (
    &'a mut Indexed,
    &'a mut Vec<u64>,
    &'a mut Vec<(u32, Time, i64)>,
    &'a mut Updates,
);

/// Emits the difference `diff` of row id `id` at `time` for `key` (value width `ovw`): to
/// `output`, to the key's output index (by the sweep when it runs) and to `emitted`.
#[inline]
fn emit(
    (index, row, emitted, output): EmitTo<'_>,
    (key, ovw, sweep, label): (&[u64], usize, bool, &str),
    (id, time, diff): (usize, Time, i64),
) -> Result<()> {
    row.clear();
    row.extend_from_slice(key);
    row.extend_from_slice(&index.vals[id * ovw..(id + 1) * ovw]);
    output.push(row, time, diff);
    if sweep {
        index.sweep_push(id as u32, time, diff, label)?;
    } else {
        index.push_entry(id as u32, time, diff);
    }
    emitted.push((id as u32, time, diff));
    Ok(())
}

/// Whether `agg` runs in Rust (otherwise it calls back into Python in phase 2).
#[inline]
fn is_builtin(agg: &Agg) -> bool {
    !matches!(agg, Agg::Python { .. } | Agg::ThresholdPy { .. })
}

/// At most this many updates of room are reserved in a chunk's output ([`reserve_output`]):
/// a reserve is counted as live against the memory limit before anything fills it.
const OUTPUT_ROOM_MAX: usize = 1 << 19;

/// Output updates per new (key, time) a reduce emitted in its last chunk whose new times
/// differ: a count or any one-row aggregate emits two per time (a retraction and an
/// insertion), the `min` of an iterative BFS far fewer (most times change nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OutputRate {
    updates: usize,
    times: usize,
}

impl OutputRate {
    /// Before anything was seen: two per time.
    const START: OutputRate = OutputRate {
        updates: 2,
        times: 1,
    };

    /// Updates expected for `times` new times, at most [`OUTPUT_ROOM_MAX`].
    fn room(self, times: usize) -> usize {
        if self.times == 0 {
            return 0;
        }
        (times.saturating_mul(self.updates) / self.times).min(OUTPUT_ROOM_MAX)
    }
}

/// Room in `output` for what the chunk's new times are expected to emit at `rate` (up to
/// [`OUTPUT_ROOM_MAX`]), so that a chunk with many times does not grow its output by
/// doubling (each regrowth copies it and touches fresh pages), while a reduce that emits
/// little per time (a BFS's `min` over many batches' times) does not hold room it never
/// fills. Only when the chunk's new times differ (a load at one time keeps one time and a
/// count): then returns the number of new times, which with the updates the chunk emitted
/// is the rate for the next chunk.
///
/// The output grows over all of an activation's chunks. Once the rate is known (not
/// [`OutputRate::START`]), a chunk whose room does not fit the vectors' capacity makes room
/// for the times `left` to the later chunks as well: a key with many times is a chunk of its
/// own, and the `count` micro-case's 20 keys of 8,000 times each regrew the output (a copy
/// onto fresh pages) at every other chunk.
fn reserve_output(
    output: &mut Updates,
    work: &Work,
    rate: OutputRate,
    left: usize,
) -> Option<usize> {
    let times = work.all_times();
    let n = times.len();
    let distinct = times.first().is_some_and(|f| times.iter().any(|x| x != f));
    if !distinct {
        return None;
    }
    let mut extra = rate.room(n);
    if rate != OutputRate::START && output.len() + extra > output.diffs.capacity() {
        extra = rate.room(n.saturating_add(left));
    }
    output.rows.reserve(extra * output.width);
    output.diffs.reserve(extra);
    output.times.make_mut().reserve(extra);
    Some(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(times: &[&[u64]]) -> Work {
        let mut w = Work::default();
        w.clear(1);
        for (k, ts) in times.iter().enumerate() {
            w.push(&[k as u64], ts.iter().map(|&t| Time::scalar(t)), &[]);
        }
        w
    }

    #[test]
    fn output_room_for_two_updates_per_time_only_when_times_differ() {
        // One time across the chunk (a load): the output keeps one time and a count.
        let mut out = Updates::new(2);
        let start = OutputRate::START;
        assert_eq!(
            reserve_output(&mut out, &work(&[&[3, 3], &[3]]), start, 0),
            None
        );
        assert!(out.times.capacity() <= 1 && out.rows.capacity() == 0);
        assert_eq!(reserve_output(&mut out, &work(&[]), start, 0), None);
        assert!(out.times.capacity() <= 1 && out.rows.capacity() == 0);
        // Distinct times, in one key or across keys: room for 2 per time, pushes unchanged.
        for w in [work(&[&[1, 2], &[2]]), work(&[&[1], &[2], &[1]])] {
            let mut out = Updates::new(2);
            assert_eq!(reserve_output(&mut out, &w, OutputRate::START, 0), Some(3));
            assert!(out.times.capacity() >= 6, "{}", out.times.capacity());
            assert!(out.rows.capacity() >= 12 && out.diffs.capacity() >= 6);
            assert!(out.is_empty());
            for t in 0..6u64 {
                out.push(&[t, t + 1], Time::scalar(t), 1);
            }
            assert_eq!(out.len(), 6);
            assert_eq!(out.times[5], Time::scalar(5));
            assert_eq!(out.rows[10..], [5, 6]);
        }
    }

    #[test]
    fn output_room_follows_the_last_chunks_rate() {
        let rate = |updates, times| OutputRate { updates, times };
        assert_eq!(rate(1, 4).room(8), 2);
        assert_eq!(rate(0, 5).room(8), 0);
        assert_eq!(rate(3, 0).room(8), 0);
        assert_eq!(OutputRate::START.room(usize::MAX), OUTPUT_ROOM_MAX);
        // A reduce that emitted nothing for its last chunk's times reserves nothing.
        let mut out = Updates::new(2);
        let w = work(&[&[1, 2, 3, 4], &[5, 6, 7, 8]]);
        assert_eq!(reserve_output(&mut out, &w, rate(0, 5), 0), Some(8));
        assert_eq!(out.diffs.capacity(), 0);
        assert_eq!(reserve_output(&mut out, &w, rate(1, 2), 0), Some(8));
        assert!(out.diffs.capacity() >= 4 && out.rows.capacity() >= 8);
    }

    #[test]
    fn output_room_for_the_later_chunks_once_the_rate_is_known() {
        let w = work(&[&[1, 2, 3, 4]]);
        let fill = |out: &mut Updates, n: u64| {
            for t in 0..n {
                out.push(&[t, t], Time::scalar(t), 1);
            }
        };
        // The rate known and the room not fitting: room for the 100 later times too.
        let mut out = Updates::new(2);
        out.diffs.reserve_exact(10);
        fill(&mut out, 10);
        let cap = out.diffs.capacity();
        let two = OutputRate {
            updates: 4,
            times: 2,
        };
        assert_eq!(reserve_output(&mut out, &w, two, 100), Some(4));
        assert!(
            out.diffs.capacity() >= 10 + 208,
            "{} (was {cap})",
            out.diffs.capacity()
        );
        assert!(out.rows.capacity() >= 2 * (10 + 208) && out.times.capacity() >= 10 + 208);
        // The room fitting: nothing more.
        let before = out.diffs.capacity();
        assert_eq!(
            reserve_output(
                &mut out,
                &w,
                OutputRate {
                    updates: 1,
                    times: 1
                },
                1 << 20
            ),
            Some(4)
        );
        assert_eq!(out.diffs.capacity(), before);
        // Nothing seen yet (the start rate): room for this chunk only.
        let mut out = Updates::new(2);
        fill(&mut out, 10);
        out.diffs.shrink_to_fit();
        assert_eq!(
            reserve_output(&mut out, &w, OutputRate::START, 100),
            Some(4)
        );
        assert!(out.diffs.capacity() >= 18 && out.diffs.capacity() < 10 + 208);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// The minimal pending times (`held`, `has_complete_pending`) equal the antichain
        /// of every pending time inserted one by one, and a frontier has a complete pending
        /// time exactly when some pending time is not at or after it.
        #[test]
        fn minimal_times_match_inserting_every_time(
            times in proptest::collection::vec((0u64..6, 0u64..6, 0u64..2), 0..60),
            frontier in proptest::collection::vec((0u64..7, 0u64..7), 0..3),
        ) {
            let times: Vec<Time> =
                times.iter().map(|&(a, b, c)| Time::from_coords(&[a, b, c])).collect();
            let want = Antichain::from_iter_minimal(times.iter().copied());
            proptest::prop_assert_eq!(minimal_times(times.iter()), want);
            let mut st = ReduceState::new(1);
            for (i, t) in times.iter().enumerate() {
                st.pending.push(&[i as u64 % 5], *t);
            }
            st.pending_lower = minimal_times(st.pending.times());
            let f = Antichain::from_iter_minimal(
                frontier.iter().map(|&(a, b)| Time::from_coords(&[a, b])),
            );
            proptest::prop_assert_eq!(
                st.has_complete_pending(&f),
                times.iter().any(|t| !f.less_equal(t))
            );
        }
    }
}
