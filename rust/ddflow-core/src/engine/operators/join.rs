//! `join`, `semijoin` and `antijoin` of two arrangements.
//!
//! Both inputs are arrangements whose traces already contain this activation's new batches
//! `dA` and `dB`. By bilinearity the output change is `dA x (B - dB) + A x dB` (with `A`,
//! `B` the traces after insertion; `dB` is taken out of each key history `dA` reads, so a
//! pair that arrives in one activation is emitted once, not as `+1 +1 -1`; where a diff of
//! `dB` cannot be negated the rule is `dA x B + A x dB - dA x dB`), each product pairing updates of equal key with time
//! `ta v tb` and diff `da * db` (exact: a product outside `i64` becomes several updates).
//! Output rows are `key, left vals, right vals` (`join`) or `key, left vals` (`semijoin`);
//! `antijoin` emits `dA` minus the semijoin output.
//!
//! **Fuel.** An activation emits at most `fuel` products (default [`DEFAULT_JOIN_FUEL`], or
//! the `DDFLOW_JOIN_FUEL` environment variable when the join is built). When it runs out, the
//! rest of the delta rule is kept as [`Work`]: the batch's remaining keys with a snapshot of
//! the other trace's batches as they were in that activation (`join_trace.rs`: histories are
//! read from it key by key as later activations get to them), or pairs of same-key row ranges
//! of the two batches (`- dA x dB`), so later batches and compaction of the traces do not
//! change it. Later activations resume it before new
//! batches; until it is done the batch times it still covers are held (they hold the output
//! frontier back) and the operator reports work left, so the scheduler runs another pass.
//! The output is the same updates, split into more messages.

use super::join_replay::ReplayScratch;
use super::join_trace::TraceProducts;
use super::{Operator, Output, RunCtx};
use crate::encoding::{is_null_word, DType};
use crate::engine::arrangement::Arrangement;
use crate::engine::column::Msg;
use crate::engine::errors::{render_row, ErrorUpdate};
use crate::engine::plan::JoinKind;
use crate::engine::util::consolidate;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Lattice, Time};
use crate::updates::Updates;
use std::collections::VecDeque;
use std::sync::Arc;

/// Products a join activation emits at most, unless `DDFLOW_JOIN_FUEL` says otherwise.
pub const DEFAULT_JOIN_FUEL: usize = 1_000_000;

/// The join fuel: `DDFLOW_JOIN_FUEL` if set to a positive integer, else the default.
pub fn join_fuel() -> usize {
    std::env::var("DDFLOW_JOIN_FUEL")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&f| f > 0)
        .unwrap_or(DEFAULT_JOIN_FUEL)
}

/// A pair of same-key row ranges `[ls, le)` of the left rows and `[rs, re)` of the right.
pub(super) type Pair = [usize; 4];

/// Where a product sweep stopped: pair index, left row, right row.
pub(super) type Pos = (usize, usize, usize);

/// Delta-rule products left over when an activation ran out of fuel.
pub struct Work {
    rest: Rest,
    key_width: usize,
    /// Output schema.
    schema: Arc<Vec<DType>>,
    /// Lower bound of the output times still to come: the times of the batch side's rows.
    lower: Antichain<Time>,
}

impl Work {
    fn new(rest: Rest, key_width: usize, schema: Arc<Vec<DType>>) -> Work {
        // Output times are `tl v tr`, at or after the batch row's time; batch times are at or
        // after the join's frontier, while history times on the other side need not be.
        let mut lower = Antichain::new();
        match &rest {
            Rest::Pairs {
                left,
                right,
                pairs,
                batch_left,
                pos,
                ..
            } => {
                let (b, off) = if *batch_left { (left, 0) } else { (right, 2) };
                for p in &pairs[pos.0..] {
                    for t in b.upd.times.range_iter(p[off]..p[off + 1]) {
                        lower.insert_ref(t);
                    }
                }
            }
            Rest::Trace {
                batch, runs, prog, ..
            } => prog.lower(&batch.upd, runs, &mut lower),
        }
        Work {
            rest,
            key_width,
            schema,
            lower,
        }
    }

    /// Resumes the products until they are done (`true`) or `budget` runs out.
    fn resume(
        &mut self,
        out: &mut Updates,
        scratch: &mut JoinScratch,
        overflow: &mut Vec<(Vec<u64>, Time, i128)>,
        budget: &mut usize,
    ) -> Result<bool> {
        match &mut self.rest {
            Rest::Pairs {
                left,
                right,
                pairs,
                kind,
                sign,
                pos,
                ..
            } => {
                let (kw, row) = (self.key_width, &mut scratch.row);
                let stop = products(
                    &left.upd, &right.upd, pairs, *pos, kw, *kind, *sign, out, row, overflow,
                    budget,
                );
                if let Some(p) = stop {
                    *pos = p;
                }
                Ok(stop.is_none())
            }
            Rest::Trace {
                batch,
                runs,
                other,
                prog,
            } => {
                let other = other.as_ref().map(|m| &m.upd);
                prog.run(&batch.upd, runs, other, out, scratch, overflow, budget)
            }
        }
    }
}

/// A join node: its flavour, fuel and the work left from earlier activations. It reads the
/// traces and fresh batches of its two input arrangements.
pub struct Join {
    kind: JoinKind,
    /// Whether null keys match (else a batch row whose key has a null never joins).
    nulls_equal: bool,
    fuel: usize,
    work: VecDeque<Work>,
    /// Products per new update of the last activation with new batches, which sizes the
    /// next one's output ([`ProductRate`]).
    rate: ProductRate,
}

/// Products a join emitted per update of its new batches in its last activation with new
/// batches. The next activation's output is made with room for that many per new update
/// (up to its fuel), so that it is not grown by doubling (each regrowth a reallocation and
/// a copy of what it held: on the 1k/2k BFS at batches of 1,000, 45 M instructions); an
/// estimate too large is given back once the output is complete ([`trim_room`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ProductRate {
    products: usize,
    updates: usize,
}

impl ProductRate {
    /// Products expected of `updates` new updates, at most `cap` and [`OUTPUT_ROOM_MAX`]
    /// (none before a first activation was seen).
    fn room(self, updates: usize, cap: usize) -> usize {
        if self.updates == 0 {
            return 0;
        }
        (updates.saturating_mul(self.products) / self.updates)
            .min(cap)
            .min(OUTPUT_ROOM_MAX)
    }
}

/// At most this many updates of room are made in an activation's output (as a `reduce`
/// does: room is counted as live against the memory limit before anything fills it).
const OUTPUT_ROOM_MAX: usize = 1 << 19;

/// Gives back the room of `out` past a quarter more than its updates (the estimate of
/// [`ProductRate`] was too large): shrinking in place does not copy.
fn trim_room(out: &mut Updates) {
    let n = out.len();
    if out.diffs.capacity() > n + n / 4 {
        out.rows.shrink_to_fit();
        out.times.shrink_to_fit();
        out.diffs.shrink_to_fit();
    }
}

impl Join {
    /// A join of flavour `kind` with the fuel of [`join_fuel`].
    pub fn new(kind: JoinKind) -> Self {
        Join::with_fuel(kind, join_fuel())
    }

    /// A join of flavour `kind` emitting at most `fuel` products per activation.
    pub fn with_fuel(kind: JoinKind, fuel: usize) -> Self {
        Join {
            kind,
            nulls_equal: false,
            fuel: fuel.max(1),
            work: VecDeque::new(),
            rate: ProductRate::default(),
        }
    }

    /// The same join, matching null keys with each other when `nulls_equal`.
    pub fn with_nulls_equal(mut self, nulls_equal: bool) -> Self {
        self.nulls_equal = nulls_equal;
        self
    }
}

/// Turns diff products outside `i64` into error updates of `node`.
fn overflow_errors(cx: &mut RunCtx<'_>, schema: &[DType], overflow: Vec<(Vec<u64>, Time, i128)>) {
    let columns = &cx.plan.nodes[cx.node].columns;
    for (row, time, d) in overflow {
        // A diff product outside int64: an error update with the product's sign.
        cx.errors.push(ErrorUpdate {
            node: cx.node,
            message: "overflow: the product of the joined diffs is outside the 64-bit \
                      signed range"
                .to_string(),
            values: render_row(columns, schema, &row),
            time,
            diff: d.signum() as i64,
        });
    }
}

impl Operator for Join {
    fn swap_spilled(&mut self, swaps: &crate::trace::spine::Swaps) {
        for w in self.work.iter_mut() {
            if let Rest::Trace { prog, .. } = &mut w.rest {
                prog.swap_batches(swaps);
            }
        }
    }

    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        for w in &self.work {
            match &w.rest {
                Rest::Pairs { left, right, .. } => {
                    marks.words(&left.upd.rows);
                    marks.words(&right.upd.rows);
                }
                Rest::Trace {
                    batch, other, prog, ..
                } => {
                    marks.words(&batch.upd.rows);
                    if let Some(o) = other {
                        marks.words(&o.upd.rows);
                    }
                    prog.mark_strings(marks);
                }
            }
        }
    }

    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        _inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let plan = cx.plan;
        let spec = &plan.nodes[cx.node];
        let kind = self.kind;
        let (a, b) = (spec.inputs[0], spec.inputs[1]);
        let da = cx.fresh_for(a);
        let db = cx.fresh_for(b);
        let had_work = !self.work.is_empty();
        if da.is_none() && db.is_none() && !had_work {
            return Ok(Output::none());
        }
        let mut fresh = da.is_some() || db.is_some();
        let (sa, sb) = match (&da, &db) {
            (Some(x), Some(y)) => (x.schema.clone(), y.schema.clone()),
            _ => (
                cx.schema_of(a).unwrap_or_else(|| Arc::new(Vec::new())),
                cx.schema_of(b).unwrap_or_else(|| Arc::new(Vec::new())),
            ),
        };
        let kw = cx.trace(a).key_width;
        if fresh {
            if let (Some(ka), Some(kb)) = (sa.get(..kw), sb.get(..kw)) {
                if ka != kb {
                    let names = &plan.nodes[cx.trace_of[a].expect("trace")].columns;
                    let i = (0..kw).find(|&i| ka[i] != kb[i]).unwrap_or(0);
                    return Err(Error::Type(format!(
                        "join key column {:?} is {} on the left but {} on the right; keys of \
                         different dtypes never match",
                        names.get(i).cloned().unwrap_or_default(),
                        ka[i].name(),
                        kb[i].name()
                    )));
                }
            }
            // One side has never seen data: its schema is unknown, and it is empty.
            fresh = !(sa.is_empty() || (sb.is_empty() && kind == JoinKind::Join));
        }
        let mut msgs = Vec::new();
        let mut budget = self.fuel;
        // Work left from earlier activations comes first.
        while budget > 0 {
            let Some(w) = self.work.front_mut() else {
                break;
            };
            let mut out = Updates::new(w.schema.len());
            let mut overflow = Vec::new();
            let mut scratch = JoinScratch::default();
            let done = w.resume(&mut out, &mut scratch, &mut overflow, &mut budget)?;
            let schema = w.schema.clone();
            if done {
                self.work.pop_front();
            }
            overflow_errors(cx, &schema, overflow);
            if !out.is_empty() {
                msgs.push(Msg { schema, upd: out });
            }
        }
        if !fresh {
            return Ok(Output { msgs, did: true });
        }
        let mut out_schema: Vec<DType> = sa.to_vec();
        if kind == JoinKind::Join {
            out_schema.extend_from_slice(sb.get(kw..).unwrap_or(&[]));
        }
        let out_schema = Arc::new(out_schema);
        let (ta, tb) = (cx.trace(a), cx.trace(b));
        let empty_a = Updates::new(ta.width);
        let empty_b = Updates::new(tb.width);
        let mut overflow = Vec::new();
        // SQL: a key with a null column never matches (unless `nulls_equal`).
        let null_keys = if self.nulls_equal {
            &[][..]
        } else {
            sa.get(..kw).unwrap_or(&[])
        };
        let new_updates =
            da.as_ref().map_or(0, |m| m.upd.len()) + db.as_ref().map_or(0, |m| m.upd.len());
        let room = self.rate.room(new_updates, budget);
        let (mut upd, rest) = join_delta_fueled(
            kind,
            kw,
            null_keys,
            (da.as_ref().map(|m| &m.upd).unwrap_or(&empty_a), da.as_ref()),
            (db.as_ref().map(|m| &m.upd).unwrap_or(&empty_b), db.as_ref()),
            ta,
            tb,
            Updates::with_capacity(out_schema.len(), room),
            &mut overflow,
            &mut budget,
        )?;
        if new_updates > 0 {
            self.rate = ProductRate {
                products: upd.len(),
                updates: new_updates,
            };
        }
        trim_room(&mut upd);
        overflow_errors(cx, &out_schema, overflow);
        for r in rest {
            self.work.push_back(Work::new(r, kw, out_schema.clone()));
        }
        msgs.push(Msg {
            schema: out_schema,
            upd,
        });
        Ok(Output { msgs, did: true })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        for w in &self.work {
            for t in w.lower.elements() {
                held.insert_ref(t);
            }
        }
    }

    fn has_work(&self) -> bool {
        !self.work.is_empty()
    }

    fn sizes(&self) -> (usize, usize) {
        let pending = self
            .work
            .iter()
            .map(|w| match &w.rest {
                Rest::Pairs { left, right, .. } => left.upd.len() + right.upd.len(),
                Rest::Trace { batch, prog, .. } => batch.upd.len() + prog.held_len(),
            })
            .sum();
        (0, pending)
    }

    fn reads_arrangements(&self) -> bool {
        true
    }
}

/// The `[start, end)` index ranges of equal keys in a batch sorted by row.
pub fn key_runs(b: &Updates, kw: usize) -> Vec<(usize, usize)> {
    let w = b.width;
    let n = b.len();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && b.rows[j * w..j * w + kw] == b.rows[i * w..i * w + kw] {
            j += 1;
        }
        runs.push((i, j));
        i = j;
    }
    runs
}

/// Emits the products of `pairs` of left rows `l` and right rows `r` from position `from`
/// until `budget` products have been emitted. Returns where it stopped, or `None` when done.
#[allow(clippy::too_many_arguments)]
pub(super) fn products(
    l: &Updates,
    r: &Updates,
    pairs: &[Pair],
    from: Pos,
    kw: usize,
    kind: JoinKind,
    sign: i64,
    out: &mut Updates,
    scratch: &mut Vec<u64>,
    overflow: &mut Vec<(Vec<u64>, Time, i128)>,
    budget: &mut usize,
) -> Option<Pos> {
    let (lw, rw) = (l.width, r.width);
    let (p0, i0, j0) = from;
    for (p, &[ls, le, rs, re]) in pairs.iter().enumerate().skip(p0) {
        let first = p == p0;
        let istart = if first { i0.max(ls) } else { ls };
        for i in istart..le {
            let jstart = if first && i == i0 { j0.max(rs) } else { rs };
            let lrow = &l.rows[i * lw..(i + 1) * lw];
            for j in jstart..re {
                if *budget == 0 {
                    return Some((p, i, j));
                }
                *budget -= 1;
                let rrow = &r.rows[j * rw..(j + 1) * rw];
                // Exact: a product outside i64 is emitted as several updates summing to it.
                let d = l.diffs[i] as i128 * r.diffs[j] as i128 * sign as i128;
                scratch.clear();
                scratch.extend_from_slice(lrow);
                if kind == JoinKind::Join {
                    scratch.extend_from_slice(&rrow[kw..]);
                }
                let t = l.times[i].join(&r.times[j]);
                if i64::try_from(d).is_ok() {
                    out.push(scratch, t, d as i64);
                } else {
                    // Not representable: the engine makes it an error update (errors as data).
                    overflow.push((scratch.clone(), t, d));
                }
            }
        }
    }
    None
}

/// Buffers of one activation's products: an output row being built, and history replay's.
#[derive(Default)]
pub(super) struct JoinScratch {
    pub(super) row: Vec<u64>,
    pub(super) replay: ReplayScratch,
}

/// Products not emitted yet when [`join_delta_fueled`] ran out of budget.
pub enum Rest {
    /// Pairs of same-key row ranges of two batches (`- dA x dB`), from `pos` on.
    Pairs {
        left: Arc<Msg>,
        right: Arc<Msg>,
        pairs: Vec<Pair>,
        batch_left: bool,
        kind: JoinKind,
        sign: i64,
        pos: Pos,
    },
    /// A batch's key runs with the other side's trace, as far as `prog` got; `other` is the
    /// other side's new batch when it is taken out of the histories.
    Trace {
        batch: Arc<Msg>,
        runs: Vec<(usize, usize)>,
        other: Option<Arc<Msg>>,
        prog: Box<TraceProducts>,
    },
}

/// A batch as rows plus, when the caller has one, a shared handle to them (kept by [`Rest`]
/// without copying).
type Batch<'a> = (&'a Updates, Option<&'a Arc<Msg>>);

fn shared(b: Batch<'_>) -> Arc<Msg> {
    match b.1 {
        Some(m) => m.clone(),
        None => Arc::new(Msg {
            schema: Arc::new(Vec::new()),
            upd: b.0.clone(),
        }),
    }
}

/// Products of a batch's key runs with the other side's key histories (`dA x B` when
/// `batch_left`, else `A x dB`; `minus`: the other side's new batch, taken out of each
/// history, with its shared handle). When `budget` runs out, the rest is returned: the
/// remaining key runs and a snapshot of the trace (`join_trace.rs`).
#[allow(clippy::too_many_arguments)]
fn batch_x_trace(
    batch: Batch<'_>,
    runs: &[(usize, usize)],
    trace: &Arrangement,
    batch_left: bool,
    kw: usize,
    kind: JoinKind,
    sign: i64,
    out: &mut Updates,
    scratch: &mut JoinScratch,
    overflow: &mut Vec<(Vec<u64>, Time, i128)>,
    budget: &mut usize,
    shared_batch: &mut Option<Arc<Msg>>,
    minus: Option<(Batch<'_>, &mut Option<Arc<Msg>>)>,
) -> Result<Option<Rest>> {
    let reader = trace.reader();
    let subtract = minus.is_some();
    let mut prog = TraceProducts::new(reader, trace.width, subtract, batch_left, kind, sign, kw);
    let other_rows = minus.as_ref().map(|(b, _)| b.0);
    if prog.run(batch.0, runs, other_rows, out, scratch, overflow, budget)? {
        return Ok(None);
    }
    let b = shared_batch.get_or_insert_with(|| shared(batch)).clone();
    let other = minus.map(|(o, sh)| sh.get_or_insert_with(|| shared(o)).clone());
    Ok(Some(Rest::Trace {
        batch: b,
        runs: runs.to_vec(),
        other,
        prog: Box::new(prog),
    }))
}

/// Appends `key`'s history in the trace to `hist`, minus the rows `other` (a batch's rows
/// of that key, which the trace holds too) when given.
pub(super) fn read_key(
    reader: &mut crate::engine::arrangement::Reader,
    key: &[u64],
    other: Option<(&Updates, usize, usize)>,
    hist: &mut Updates,
    tmp: &mut Updates,
) -> Result<()> {
    let Some((rows, s, e)) = other else {
        reader.key_history(key, hist);
        return Ok(());
    };
    tmp.clear();
    reader.key_history(key, tmp);
    for i in s..e {
        // Negating i64::MIN would overflow: the caller never subtracts such a batch.
        tmp.push(rows.row(i), rows.times[i], -rows.diffs[i]);
    }
    consolidate(tmp)?;
    hist.extend(tmp);
    Ok(())
}

/// Computes the join output for new batches `da` (left) and `db` (right), given the traces.
/// Diff products outside `i64` go to `overflow` (the engine makes them error updates).
#[allow(clippy::too_many_arguments)]
pub fn join_delta(
    kind: JoinKind,
    kw: usize,
    da: &Updates,
    db: &Updates,
    ta: &Arrangement,
    tb: &Arrangement,
    out_width: usize,
    overflow: &mut Vec<(Vec<u64>, Time, i128)>,
) -> Result<Updates> {
    let mut budget = usize::MAX;
    let (out, rest) = join_delta_fueled(
        kind,
        kw,
        &[],
        (da, None),
        (db, None),
        ta,
        tb,
        Updates::new(out_width),
        overflow,
        &mut budget,
    )?;
    debug_assert!(rest.is_empty());
    Ok(out)
}

/// [`join_delta`] emitting at most `budget` products (it is decreased by those emitted)
/// into `out` (empty, with the room its caller expects to fill); the products not emitted are returned as [`Rest`], with the key histories they need read
/// out of the traces. Batch rows whose key has a null column of `null_keys` (the key
/// dtypes; empty: nulls match like values) are never looked up in the other side's trace,
/// so a null key never matches (the delta rule looks up only batch keys); an antijoin still
/// passes them through.
#[allow(clippy::too_many_arguments)]
pub fn join_delta_fueled(
    kind: JoinKind,
    kw: usize,
    null_keys: &[DType],
    da: Batch<'_>,
    db: Batch<'_>,
    ta: &Arrangement,
    tb: &Arrangement,
    mut out: Updates,
    overflow: &mut Vec<(Vec<u64>, Time, i128)>,
    budget: &mut usize,
) -> Result<(Updates, Vec<Rest>)> {
    let pkind = if kind == JoinKind::Antijoin {
        JoinKind::Semijoin
    } else {
        kind
    };
    let sign = if kind == JoinKind::Antijoin { -1 } else { 1 };
    let mut scratch = JoinScratch::default();
    let mut rest = Vec::new();
    let (a_rows, b_rows) = (da.0, db.0);
    let matchable = |rows: &Updates, &(s, _): &(usize, usize)| {
        let key = &rows.rows[s * rows.width..s * rows.width + kw];
        !key.iter().zip(null_keys).any(|(&x, &d)| is_null_word(d, x))
    };
    let mut runs_a = key_runs(a_rows, kw);
    let mut runs_b = key_runs(b_rows, kw);
    if !null_keys.is_empty() {
        runs_a.retain(|r| matchable(a_rows, r));
        runs_b.retain(|r| matchable(b_rows, r));
    }
    let (aw, bw) = (a_rows.width, b_rows.width);
    let (mut shared_a, mut shared_b) = (None, None);
    // dB is taken out of B's histories in dA x B (then there is no - dA x dB term), unless
    // a diff of dB cannot be negated.
    let subtract = !b_rows.is_empty() && !b_rows.diffs.contains(&i64::MIN);
    let minus = subtract.then_some((db, &mut shared_b));
    // dA x (B - dB), or dA x B
    if let Some(r) = batch_x_trace(
        da,
        &runs_a,
        tb,
        true,
        kw,
        pkind,
        sign,
        &mut out,
        &mut scratch,
        overflow,
        budget,
        &mut shared_a,
        minus,
    )? {
        rest.push(r);
    }
    // A x dB
    if let Some(r) = batch_x_trace(
        db,
        &runs_b,
        ta,
        false,
        kw,
        pkind,
        sign,
        &mut out,
        &mut scratch,
        overflow,
        budget,
        &mut shared_b,
        None,
    )? {
        rest.push(r);
    }
    if subtract {
        if kind == JoinKind::Antijoin {
            out.extend(a_rows);
        }
        return Ok((out, rest));
    }
    // - dA x dB: a merge join of the two sorted batches.
    let mut pairs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < runs_a.len() && j < runs_b.len() {
        let ka = &a_rows.rows[runs_a[i].0 * aw..runs_a[i].0 * aw + kw];
        let kb = &b_rows.rows[runs_b[j].0 * bw..runs_b[j].0 * bw + kw];
        match ka.cmp(kb) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                pairs.push([runs_a[i].0, runs_a[i].1, runs_b[j].0, runs_b[j].1]);
                i += 1;
                j += 1;
            }
        }
    }
    if let Some(pos) = products(
        a_rows,
        b_rows,
        &pairs,
        (0, 0, 0),
        kw,
        pkind,
        -sign,
        &mut out,
        &mut scratch.row,
        overflow,
        budget,
    ) {
        rest.push(Rest::Pairs {
            left: shared_a.get_or_insert_with(|| shared(da)).clone(),
            right: shared_b.get_or_insert_with(|| shared(db)).clone(),
            pairs,
            batch_left: true,
            kind: pkind,
            sign: -sign,
            pos,
        });
    }
    if kind == JoinKind::Antijoin {
        out.extend(a_rows);
    }
    Ok((out, rest))
}

#[cfg(test)]
mod tests {
    //! The output room of an activation: estimated from the last one, capped, given back.

    use super::*;

    #[test]
    fn room_follows_the_last_rate_up_to_the_cap() {
        assert_eq!(ProductRate::default().room(1000, usize::MAX), 0);
        let rate = ProductRate {
            products: 300,
            updates: 100,
        };
        assert_eq!(rate.room(1000, usize::MAX), 3000);
        assert_eq!(rate.room(1000, 500), 500);
        assert_eq!(rate.room(usize::MAX, 7), 7);
        assert_eq!(rate.room(usize::MAX, usize::MAX), OUTPUT_ROOM_MAX);
    }

    #[test]
    fn room_past_a_quarter_more_is_given_back() {
        let mut out = Updates::with_capacity(2, 1000);
        for i in 0..10u64 {
            out.push(&[i, i], Time::scalar(i), 1);
        }
        trim_room(&mut out);
        assert!(out.diffs.capacity() < 1000 && out.times.capacity() < 1000);
        assert_eq!(out.len(), 10);
        assert_eq!(out.times[9], Time::scalar(9));
        let mut full = Updates::with_capacity(1, 8);
        for i in 0..7u64 {
            full.push(&[i], Time::scalar(0), 1);
        }
        trim_room(&mut full);
        assert_eq!(full.diffs.capacity(), 8, "within a quarter more: kept");
    }
}
