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
//! Python aggregates are evaluated in one callback for all (key, time) groups of an
//! activation: the groups are collected first, the callback runs once, and the differences
//! are formed afterwards.

use super::aggregate;
use super::reduce_chain::{self, ChainKey, ChainScratch};
use super::reduce_index::Indexed;
use super::{Operator, Output, RunCtx};
use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::{Callbacks, Column, Msg, Payload, Reply};
use crate::engine::errors::{render_row, ErrorUpdate};
use crate::engine::plan::Agg;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
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
        for t in self.state.pending.times() {
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
        self.state.out.heap_bytes()
    }
}

/// State of one reduce operator (per worker).
#[derive(Debug)]
pub struct ReduceState {
    /// The operator's output trace (rows: key, output columns).
    pub out: Arrangement,
    /// Pending times per key, not yet complete.
    pub pending: Pending,
    /// Output dtypes once known.
    pub out_dtypes: Option<Vec<DType>>,
    /// Buffers reused across activations.
    scratch: Scratch,
    /// Keys whose accumulation failed (errors as data, see `reduce_errors.rs`).
    pub errors: super::reduce_errors::ReduceErrors,
}

/// Per-activation buffers of a reduce, kept between activations so that they do not regrow.
#[derive(Default)]
struct Scratch {
    groups: Vec<Group>,
    desired_rows: Vec<u64>,
    desired_counts: Vec<i64>,
    in_hist: Updates,
    out_hists: Updates,
    out_offs: Vec<usize>,
    edits: Vec<Time>,
    cands: Vec<Time>,
    vals: Vec<u64>,
    counts: Vec<i64>,
    index: Indexed,
    oindex: Indexed,
    times_scratch: TimesScratch,
    key_two_d: Vec<bool>,
    chain: ChainScratch,
    want: Vec<i64>,
    group_times: Vec<Time>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Scratch")
    }
}

/// The value rows and counts of the groups of a Python aggregate, gathered in phase 1 for
/// one callback in phase 2 (group `g`'s rows are `offsets[g]..offsets[g + 1]`).
struct PyGroups {
    vals: Vec<u64>,
    counts: Vec<i64>,
    offsets: Vec<i64>,
}

impl Default for PyGroups {
    fn default() -> Self {
        PyGroups {
            vals: Vec::new(),
            counts: Vec::new(),
            offsets: vec![0],
        }
    }
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
const SWEEP_MIN_WORK: usize = 512;

struct Group {
    key: usize,
    time: Time,
    /// Range of this group's desired output rows in the flat desired buffers.
    start: usize,
    end: usize,
    /// Why the key failed at this time (its output is then empty).
    err: Option<String>,
}

impl ReduceState {
    /// A new reduce with an output trace keyed like its input.
    pub fn new(key_width: usize) -> Self {
        ReduceState {
            out: Arrangement::new(key_width, key_width),
            pending: Pending::default(),
            out_dtypes: None,
            scratch: Scratch::default(),
            errors: Default::default(),
        }
    }

    /// Whether some pending time is complete with respect to `frontier`.
    pub fn has_complete_pending(&self, frontier: &Antichain<Time>) -> bool {
        self.pending.times().any(|t| !frontier.less_equal(t))
    }

    /// Runs one activation; returns the output updates (rows: key, output columns).
    ///
    /// On error (a failing Python reducer, an overflow) nothing is lost: the new batch's
    /// (key, time) pairs join the pending set, so a later activation redoes the work.
    pub fn activate(&mut self, inp: &ReduceInput<'_>) -> Result<Updates> {
        let mut work = Vec::new();
        let mut still_pending = Pending::default();
        let result = self.activate_inner(inp, &mut work, &mut still_pending);
        if result.is_err() {
            // Everything that was pending or new is in `work` or `still_pending`: keep it all
            // pending (re-examining a time whose output is already right emits nothing).
            for (key, times) in work {
                for t in times {
                    still_pending.push(&key, t);
                }
            }
            still_pending.normalize();
            self.pending = still_pending;
        }
        result
    }

    fn activate_inner(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &mut Vec<(Vec<u64>, Vec<Time>)>,
        still_pending: &mut Pending,
    ) -> Result<Updates> {
        if self.out_dtypes.is_none() {
            self.out_dtypes = aggregate::output_dtypes(inp.agg, inp.val_dtypes, inp.label)?;
            if let Some(d) = &self.out_dtypes {
                self.out = Arrangement::new(inp.key_width, inp.key_width + d.len());
            }
        }
        self.collect_work(inp, work, still_pending);
        // Buffers reused across activations (no regrowth per activation).
        let mut sc = std::mem::take(&mut self.scratch);
        let mut py = PyGroups::default();
        let output = self.candidate_groups(inp, work, still_pending, &mut sc, &mut py);
        let result = self
            .python_aggregates(inp, work, &mut sc, &py)
            .and_then(|()| self.output_differences(inp, work, &mut sc, output));
        self.scratch = sc;
        let output = result?;
        still_pending.normalize();
        self.pending = std::mem::take(still_pending);
        Ok(output)
    }

    /// The keys with work this activation, in key order: the new batch's keys (with their
    /// times) merged with the pending keys that have a complete pending time; the other
    /// pending keys go to `still_pending` untouched.
    #[inline]
    fn collect_work(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &mut Vec<(Vec<u64>, Vec<Time>)>,
        still_pending: &mut Pending,
    ) {
        let kw = inp.key_width;
        let bw = inp.batch.width;
        // Keys with work: new batch keys (in key order), merged with pending keys that have a
        // complete pending time; the other pending keys stay pending untouched.
        let mut batch_keys = super::join::key_runs(inp.batch, kw).into_iter().peekable();
        let batch_key = |s: usize| &inp.batch.rows[s * bw..s * bw + kw];
        let batch_work = |s: usize, e: usize| {
            let mut ts: Vec<Time> = inp.batch.times[s..e].to_vec();
            ts.sort_unstable();
            ts.dedup();
            (batch_key(s).to_vec(), ts)
        };
        for (key, mut times) in std::mem::take(&mut self.pending).0 {
            while let Some(&(s, e)) = batch_keys.peek() {
                if batch_key(s) >= key.as_slice() {
                    break;
                }
                work.push(batch_work(s, e));
                batch_keys.next();
            }
            match batch_keys.peek() {
                Some(&(s, e)) if batch_key(s) == key.as_slice() => {
                    let (k, mut ts) = batch_work(s, e);
                    ts.extend_from_slice(&times);
                    ts.sort_unstable();
                    ts.dedup();
                    work.push((k, ts));
                    batch_keys.next();
                }
                _ if times.iter().any(|t| !inp.frontier.less_equal(t)) => {
                    times.sort_unstable();
                    work.push((key, times));
                }
                _ => still_pending.insert(key, times),
            }
        }
        for (s, e) in batch_keys {
            work.push(batch_work(s, e));
        }
    }

    /// Phase 1: per key with work, its candidate (interesting) times; complete ones become
    /// groups with their desired output rows, computed here for built-in aggregates (keys
    /// whose times form a chain go through `reduce_chain` and write `output` directly) and
    /// gathered into `py` for Python ones. Returns the output so far.
    #[inline]
    fn candidate_groups(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &[(Vec<u64>, Vec<Time>)],
        still_pending: &mut Pending,
        sc: &mut Scratch,
        py: &mut PyGroups,
    ) -> Updates {
        let kw = inp.key_width;
        let bw = inp.batch.width;
        let vw = bw - kw;
        // Phase 1: per key, candidate times; complete ones become groups with their desired
        // output rows (computed now for built-in aggregates, by one callback afterwards for
        // Python ones).
        // Buffers reused across activations (no regrowth per activation).
        let Scratch {
            groups,
            desired_rows,
            desired_counts,
            in_hist,
            out_hists,
            out_offs,
            edits,
            cands,
            vals,
            counts,
            index,
            times_scratch,
            key_two_d,
            chain,
            ..
        } = sc;
        groups.clear();
        desired_rows.clear();
        desired_counts.clear();
        if in_hist.width != bw {
            *in_hist = Updates::new(bw);
        }
        // Output histories of all keys, flat, with per-key offsets.
        if out_hists.width != self.out.width {
            *out_hists = Updates::new(self.out.width);
        }
        out_hists.clear();
        out_offs.clear();
        out_offs.push(0);
        key_two_d.clear();
        let mut reader_in = inp.trace.reader();
        let mut reader_out = self.out.reader();
        let builtin = !matches!(inp.agg, Agg::Python { .. } | Agg::ThresholdPy { .. });
        let out_width = self.out.width;
        let mut output = Updates::new(out_width);
        for (ki, (key, new_times)) in work.iter().enumerate() {
            in_hist.clear();
            reader_in.key_history(key, in_hist);
            let out_lo = out_hists.len();
            reader_out.key_history(key, out_hists);
            out_offs.push(out_hists.len());
            edits.clear();
            edits.extend_from_slice(&in_hist.times);
            edits.extend_from_slice(&out_hists.times[out_lo..]);
            self.errors.times_of(key, edits);
            if builtin
                && self.reduce_chain_key(
                    inp,
                    key,
                    (edits, new_times),
                    (in_hist, out_hists, out_lo),
                    chain,
                    &mut output,
                    still_pending,
                )
            {
                key_two_d.push(false);
                continue;
            }
            cands.clear();
            // Both interesting-times functions return sorted, deduplicated times.
            let two_d = at_most_2d(edits) && at_most_2d(new_times);
            if two_d {
                interesting_times_2d(edits, new_times, times_scratch, cands);
            } else {
                edits.sort_unstable();
                edits.dedup();
                crate::times::interesting_times(edits, new_times, cands);
            }
            index.build(in_hist, kw);
            // The sweep pays off once scanning the history per time would cost more than
            // sorting it once (measured: below ~512 entry-times the plain scan is cheaper).
            key_two_d.push(two_d);
            let two_d = two_d && in_hist.len() * cands.len() > SWEEP_MIN_WORK;
            if two_d {
                index.sweep_start(&[]);
            }
            for &t in cands.iter() {
                if inp.frontier.less_equal(&t) {
                    still_pending.push(key, t);
                    continue;
                }
                let acc = if two_d {
                    // The sweep's partial sums may overflow where the total does not.
                    index
                        .sweep_to(&t, inp.label)
                        .or_else(|_| index.accumulate(&t, inp.label))
                } else {
                    index.accumulate(&t, inp.label)
                };
                index.nonzero(vw, vals, counts);
                let start = desired_counts.len();
                let mut err = acc.err().map(|e| e.to_string());
                if builtin && err.is_none() {
                    let res = aggregate::apply(
                        inp.agg,
                        inp.val_dtypes,
                        vw,
                        vals,
                        counts,
                        inp.label,
                        desired_rows,
                        desired_counts,
                    );
                    err = res.err().map(|e| e.to_string());
                }
                if err.is_some() {
                    // Errors as data: no output for the key here, and an error update.
                    desired_counts.truncate(start);
                    desired_rows.truncate(start * (self.out.width - kw));
                    groups.push(Group {
                        key: ki,
                        time: t,
                        start,
                        end: start,
                        err,
                    });
                    continue;
                } else if builtin {
                } else {
                    py.vals.extend_from_slice(vals);
                    py.counts.extend_from_slice(counts);
                    py.offsets.push(py.counts.len() as i64);
                }
                groups.push(Group {
                    key: ki,
                    time: t,
                    start,
                    end: desired_counts.len(),
                    err: None,
                });
            }
        }

        output
    }

    /// A key of a built-in aggregate whose times (`edits`: its input, output and error
    /// history; and `new_times`), all one-dimensional, form a chain: one pass with running accumulations (`reduce_chain`), output written to
    /// `output`. Returns whether the key was done; on an overflow its output is undone and
    /// the key is left to the general path, which makes it an error. (Multi-dimensional
    /// times that happen to form a chain take the general path: sorting them only to find
    /// out costs more than it saves on the BFS workloads.)
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn reduce_chain_key(
        &mut self,
        inp: &ReduceInput<'_>,
        key: &[u64],
        (edits, new_times): (&[Time], &[Time]),
        (in_hist, out_hists, out_lo): (&Updates, &Updates, usize),
        chain: &mut ChainScratch,
        output: &mut Updates,
        still_pending: &mut Pending,
    ) -> bool {
        if !at_most_1d(edits) || !at_most_1d(new_times) {
            return false;
        }
        chain.times.clear();
        chain.times.extend_from_slice(edits);
        chain.times.extend_from_slice(new_times);
        chain.times.sort_unstable();
        chain.times.dedup();
        if !reduce_chain::is_chain(&chain.times) {
            return false;
        }
        let k = ChainKey {
            agg: inp.agg,
            val_dtypes: inp.val_dtypes,
            key,
            key_width: inp.key_width,
            input: in_hist,
            out_hist: out_hists,
            out_lo,
            out_hi: out_hists.len(),
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

    /// Phase 2: Python aggregates, one callback for all groups (groups that make the
    /// function fail are isolated by bisection and become errors, see reduce_errors.rs).
    #[inline]
    fn python_aggregates(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &[(Vec<u64>, Vec<Time>)],
        sc: &mut Scratch,
        py: &PyGroups,
    ) -> Result<()> {
        let Scratch {
            groups,
            desired_rows,
            desired_counts,
            ..
        } = sc;
        // Phase 2: Python aggregates, one callback for all groups (groups that make the
        // function fail are isolated by bisection and become errors, see reduce_errors.rs).
        match inp.agg {
            Agg::Python { func, columns } => {
                let vw = inp.val_dtypes.len();
                let failed = super::reduce_errors::bisect_groups(groups.len(), &mut |lo, hi| {
                    let (a, b) = (py.offsets[lo] as usize, py.offsets[hi] as usize);
                    let offs = py.offsets[lo..=hi]
                        .iter()
                        .map(|o| o - py.offsets[lo])
                        .collect();
                    self.python_groups(
                        inp,
                        *func,
                        *columns,
                        work,
                        &mut groups[lo..hi],
                        (
                            py.vals[a * vw..b * vw].to_vec(),
                            py.counts[a..b].to_vec(),
                            offs,
                        ),
                        (&mut *desired_rows, &mut *desired_counts),
                    )
                })?;
                for (g, message) in failed {
                    groups[g].err = Some(message);
                }
            }
            Agg::ThresholdPy { func } => {
                // Rows are whole records (no val columns): one count per group.
                let group_counts: Vec<i64> = (0..groups.len())
                    .map(|g| {
                        py.counts[py.offsets[g] as usize..py.offsets[g + 1] as usize]
                            .iter()
                            .sum()
                    })
                    .collect();
                let mut results: Vec<Option<i64>> = vec![None; groups.len()];
                let failed = super::reduce_errors::bisect_groups(groups.len(), &mut |lo, hi| {
                    let reply = inp.callbacks.call(
                        *func,
                        "threshold_py",
                        inp.label,
                        Payload::Counts(group_counts[lo..hi].to_vec()),
                    )?;
                    let Reply::Counts(new_counts) = reply else {
                        return Err(Error::User(format!(
                            "{}: threshold function must return int64 counts",
                            inp.label
                        )));
                    };
                    if new_counts.len() != hi - lo {
                        return Err(Error::User(format!(
                            "{}: threshold function returned {} counts for {} inputs",
                            inp.label,
                            new_counts.len(),
                            hi - lo
                        )));
                    }
                    for (r, c) in results[lo..hi].iter_mut().zip(new_counts) {
                        *r = Some(c);
                    }
                    Ok(())
                })?;
                for (g, c) in groups.iter_mut().zip(results) {
                    g.start = desired_counts.len();
                    if let Some(c) = c.filter(|&c| c != 0) {
                        desired_counts.push(c);
                    }
                    g.end = desired_counts.len();
                }
                for (g, message) in failed {
                    groups[g].err = Some(message);
                }
            }
            _ => {}
        }

        Ok(())
    }

    /// Phase 3: per key in time order, the differences between the groups' desired output
    /// and the accumulated output; consolidated and added to the output arrangement.
    #[inline]
    fn output_differences(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &[(Vec<u64>, Vec<Time>)],
        sc: &mut Scratch,
        mut output: Updates,
    ) -> Result<Updates> {
        let kw = inp.key_width;
        let Scratch {
            groups,
            desired_rows,
            desired_counts,
            out_hists,
            out_offs,
            oindex,
            key_two_d,
            want,
            group_times,
            ..
        } = sc;
        // Phase 3: differences against the accumulated output, per key in time order.
        // (A Python reducer may have fixed the output width only now; the chain path, which
        // wrote to `output` already, runs only for built-in aggregates.)
        let out_width = self.out.width;
        if output.width != out_width {
            debug_assert!(output.is_empty());
            output = Updates::new(out_width);
        }
        let ovw = out_width - kw;
        let mut gi = 0;
        let mut row = Vec::with_capacity(out_width);
        for (ki, (key, _)) in work.iter().enumerate() {
            if gi >= groups.len() || groups[gi].key != ki {
                continue;
            }
            oindex.build_range(out_hists, out_offs[ki], out_offs[ki + 1], kw);
            let n_groups = groups[gi..].iter().take_while(|g| g.key == ki).count();
            let two_d = key_two_d[ki]
                && (out_offs[ki + 1] - out_offs[ki] + n_groups) * n_groups > SWEEP_MIN_WORK;
            if two_d {
                group_times.clear();
                group_times.extend(
                    groups[gi..]
                        .iter()
                        .take_while(|g| g.key == ki)
                        .map(|g| g.time),
                );
                oindex.sweep_start(group_times);
            }
            while gi < groups.len() && groups[gi].key == ki {
                let g = &groups[gi];
                self.errors.set(key, g.time, g.err.as_deref());
                // Map desired rows to ids first (this may add new distinct rows).
                want.clear();
                for r in g.start..g.end {
                    let id = oindex.id_of(&desired_rows[r * ovw..(r + 1) * ovw], ovw) as usize;
                    if want.len() <= id {
                        want.resize(id + 1, 0);
                    }
                    want[id] += desired_counts[r];
                }
                if two_d {
                    oindex.sweep_to(&g.time, inp.label)?;
                } else {
                    oindex.accumulate(&g.time, inp.label)?;
                }
                want.resize(oindex.num_vals(), 0);
                for id in 0..oindex.num_vals() {
                    let diff = want[id] - oindex.counts[id];
                    want[id] = 0;
                    if diff != 0 {
                        row.clear();
                        row.extend_from_slice(key);
                        row.extend_from_slice(&oindex.vals[id * ovw..(id + 1) * ovw]);
                        output.push(&row, g.time, diff);
                        if two_d {
                            oindex.sweep_push(id as u32, g.time, diff, inp.label)?;
                        } else {
                            oindex.entries.push((id as u32, g.time, diff));
                        }
                    }
                }
                gi += 1;
            }
        }
        crate::engine::util::consolidate(&mut output)?;
        self.out.insert(&output, inp.frontier);
        Ok(output)
    }

    #[allow(clippy::too_many_arguments)]
    fn python_groups(
        &mut self,
        inp: &ReduceInput<'_>,
        func: u64,
        ncols: usize,
        work: &[(Vec<u64>, Vec<Time>)],
        groups: &mut [Group],
        (vals, counts, offsets): (Vec<u64>, Vec<i64>, Vec<i64>),
        (desired_rows, desired_counts): (&mut Vec<u64>, &mut Vec<i64>),
    ) -> Result<()> {
        if groups.is_empty() {
            return Ok(());
        }
        let kw = inp.key_width;
        let vw = inp.val_dtypes.len();
        let keys: Vec<Column> = (0..kw)
            .map(|c| Column {
                dtype: inp.key_dtypes[c],
                words: groups.iter().map(|g| work[g.key].0[c]).collect(),
            })
            .collect();
        let n = counts.len();
        let values: Vec<Column> = (0..vw)
            .map(|c| Column {
                dtype: inp.val_dtypes[c],
                words: (0..n).map(|r| vals[r * vw + c]).collect(),
            })
            .collect();
        let payload = Payload::Reduce {
            key_names: inp.key_names.to_vec(),
            keys,
            offsets,
            val_names: inp.val_names.to_vec(),
            values,
            counts,
        };
        let reply = inp.callbacks.call(func, "reduce_py", inp.label, payload)?;
        let Reply::Columns {
            columns,
            offsets: Some(out_offsets),
            counts: out_counts,
            ..
        } = reply
        else {
            return Err(Error::User(format!(
                "{}: reducer must return output columns and offsets",
                inp.label
            )));
        };
        if columns.len() != ncols {
            return Err(Error::User(format!(
                "{}: reducer returned {} columns, expected {ncols}",
                inp.label,
                columns.len()
            )));
        }
        if out_offsets.len() != groups.len() + 1 {
            return Err(Error::User(format!(
                "{}: reducer returned {} offsets for {} keys (expected keys + 1)",
                inp.label,
                out_offsets.len(),
                groups.len()
            )));
        }
        let rows = columns.first().map(|c| c.words.len()).unwrap_or(0);
        if columns.iter().any(|c| c.words.len() != rows)
            || out_offsets.windows(2).any(|w| w[0] > w[1])
            || out_offsets[0] != 0
            || *out_offsets.last().unwrap_or(&0) as usize != rows
        {
            return Err(Error::User(format!(
                "{}: reducer output columns and offsets do not agree ({rows} rows, offsets ending at {})",
                inp.label,
                out_offsets.last().unwrap_or(&0)
            )));
        }
        let dtypes: Vec<DType> = columns.iter().map(|c| c.dtype).collect();
        match &self.out_dtypes {
            _ if rows == 0 => {}
            None => {
                self.out_dtypes = Some(dtypes.clone());
                if self.out.is_empty() {
                    self.out = Arrangement::new(kw, kw + ncols);
                }
            }
            Some(d) if *d != dtypes => {
                return Err(Error::Type(format!(
                    "{}: reducer returned dtypes {:?}, earlier batches had {:?}",
                    inp.label,
                    dtypes.iter().map(|d| d.name()).collect::<Vec<_>>(),
                    d.iter().map(|d| d.name()).collect::<Vec<_>>()
                )))
            }
            _ => {}
        }
        for (gi, g) in groups.iter_mut().enumerate() {
            g.start = desired_counts.len();
            for r in out_offsets[gi] as usize..out_offsets[gi + 1] as usize {
                let c = out_counts.as_ref().map(|c| c[r]).unwrap_or(1);
                if c != 0 {
                    desired_rows.extend(columns.iter().map(|c| c.words[r]));
                    desired_counts.push(c);
                }
            }
            g.end = desired_counts.len();
        }
        Ok(())
    }
}
