//! `reduce` for one key with two-dimensional times and a large (history x candidate times)
//! product, visiting its interesting times row by row (see "Reduce" in `ENGINE.md`).
//!
//! The candidate times are sorted lexicographically, so they come in *rows*: the times with
//! one first coordinate `x`, in increasing second coordinate `y`. The accumulation at
//! `(x, y)` is the sum of the updates at `(x', y')` with `x' <= x` and `y' <= y`. Updates
//! with `x' <= x` are kept per *level* (distinct `y'`), consolidated by val: as the sweep
//! reaches a row, the updates of the new first coordinates join their levels; the row's
//! first time sums the levels up to its `y`, and each next time of the row adds only the
//! levels between the previous `y` and its own (one level: every level of an update with
//! `x' <= x` is a second coordinate of some candidate time in the row, as the interesting
//! times are joins). The input and the output accumulation are both carried this way, the
//! input's through running totals (`count`, integer `sum`, a `group` of running totals) or
//! counts per distinct val, and the output emitted at a time joins its level at once.
//!
//! A level of the output consolidates to the difference between the accumulated output at
//! two neighbouring `y`s (the sum over `x' <= x` telescopes), a handful of rows for
//! `count`, `sum`, `min` and `max`; so a row costs about its own times plus the levels below
//! its first, and a key with history `H` and `T` candidate times costs about
//! `O((H + T) log)` plus the aggregate at each time, instead of a rescan of the histories
//! per time (`O(H x T)`, with the output history itself growing with `T`).

use super::aggregate;
use super::aggregate_group::{self, RunningTotals};
use crate::encoding::{decode_i64, encode_i64, DType, NULL_I64};
use crate::engine::plan::{Agg, GroupAgg};
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time, MAX_DIMS};
use crate::updates::Updates;
use std::collections::HashMap;

/// What one key's row sweep reads.
pub struct RowsKey<'a> {
    pub agg: &'a Agg,
    pub val_dtypes: &'a [DType],
    pub key: &'a [u64],
    pub key_width: usize,
    /// The key's input history (rows: key, vals).
    pub input: &'a Updates,
    /// The key's output history: `out_hist` rows `out_lo..out_hi` (rows: key, output vals).
    pub out_hist: &'a Updates,
    pub out_lo: usize,
    pub out_hi: usize,
    /// The key's candidate times, sorted and deduplicated, with at most two coordinates.
    pub cands: &'a [Time],
    pub frontier: &'a Antichain<Time>,
    pub label: &'a str,
}

/// Updates with first coordinate at most the sweep's, per level (distinct second
/// coordinate), as (id, diff) pairs; a level is consolidated whenever it has doubled since
/// it last was, so it stays within twice its consolidated size.
#[derive(Default)]
struct Levels {
    lists: Vec<Vec<(u32, i64)>>,
    clean: Vec<usize>,
}

impl Levels {
    fn reset(&mut self, n: usize) {
        self.lists.truncate(n);
        for l in self.lists.iter_mut() {
            l.clear();
        }
        self.lists.resize_with(n, Vec::new);
        self.clean.clear();
        self.clean.resize(n, 0);
    }

    fn push(&mut self, level: usize, id: u32, d: i64) {
        let list = &mut self.lists[level];
        list.push((id, d));
        if list.len() >= 2 * self.clean[level] + 8 {
            consolidate_pairs(list);
            self.clean[level] = list.len();
        }
    }
}

/// Sorts (id, diff) pairs by id and sums each id's diffs, dropping zeros; leaves the list
/// as it is when a sum would leave `i64` (it still sums to the same).
fn consolidate_pairs(list: &mut Vec<(u32, i64)>) {
    list.sort_unstable_by_key(|p| p.0);
    let mut i = 0;
    let mut merged: Vec<(u32, i64)> = Vec::with_capacity(list.len());
    while i < list.len() {
        let id = list[i].0;
        let mut s: i128 = 0;
        while i < list.len() && list[i].0 == id {
            s += list[i].1 as i128;
            i += 1;
        }
        match i64::try_from(s) {
            Ok(0) => {}
            Ok(s) => merged.push((id, s)),
            Err(_) => return,
        }
    }
    *list = merged;
}

/// A signed multiset over ids: counts and the ids with a non-zero count (unordered).
#[derive(Default)]
struct Running {
    counts: Vec<i64>,
    nz: Vec<u32>,
    pos: Vec<u32>,
}

const ABSENT: u32 = u32::MAX;

impl Running {
    /// Empties the multiset (touching only its non-zero ids) for ids below `n`.
    fn reset(&mut self, n: usize) {
        for &id in &self.nz {
            self.counts[id as usize] = 0;
            self.pos[id as usize] = ABSENT;
        }
        self.nz.clear();
        self.grow(n);
    }

    fn grow(&mut self, n: usize) {
        if self.counts.len() < n {
            self.counts.resize(n, 0);
            self.pos.resize(n, ABSENT);
        }
    }

    /// Adds `d` to `id`'s count; returns the count before and after.
    #[inline]
    fn add(&mut self, id: u32, d: i64) -> Option<(i64, i64)> {
        let i = id as usize;
        let before = self.counts[i];
        let after = before.checked_add(d)?;
        self.counts[i] = after;
        if before == 0 && after != 0 {
            self.pos[i] = self.nz.len() as u32;
            self.nz.push(id);
        } else if before != 0 && after == 0 {
            let p = self.pos[i] as usize;
            let last = *self.nz.last().expect("non-empty");
            self.nz.swap_remove(p);
            if last != id {
                self.pos[last as usize] = p as u32;
            }
            self.pos[i] = ABSENT;
        }
        Some((before, after))
    }
}

/// The running input accumulation beyond the counts per val.
enum Acc {
    /// Signed sum of diffs.
    Count(i128),
    /// Weighted sum of an int64 column's non-null vals and how many null vals have a
    /// non-zero count (as `reduce_chain`'s).
    SumInt(i128, usize),
    /// A `group` aggregate's running totals (in `RowsScratch::totals`).
    Group,
    /// Only the counts per val (the aggregate runs on the non-zero ones).
    PerVal,
}

/// Reusable buffers of [`reduce_key`].
#[derive(Default)]
pub struct RowsScratch {
    levels: Vec<u64>,
    in_order: Vec<u32>,
    out_order: Vec<u32>,
    /// Distinct input val rows (sorted, `vw` words each) and the val id per input entry.
    vals: Vec<u64>,
    val_ids: Vec<u32>,
    in_levels: Levels,
    in_run: Running,
    totals: RunningTotals,
    /// Output rows by id (`ovw` words each), the id of each row, and per history entry.
    out_rows: Vec<u64>,
    out_ids: HashMap<Vec<u64>, u32>,
    out_levels: Levels,
    out_run: Running,
    want: Vec<i64>,
    want_ids: Vec<u32>,
    acc_ids: Vec<u32>,
    nz_sorted: Vec<u32>,
    nz_vals: Vec<u64>,
    nz_counts: Vec<i64>,
    desired_rows: Vec<u64>,
    desired_counts: Vec<i64>,
    merge: Vec<(usize, bool)>,
    row: Vec<u64>,
    /// The key's candidate times still in the future of the frontier.
    pub pending: Vec<Time>,
}

/// Whether the row sweep computes `agg` (the built-in aggregates; Python ones call back
/// once per activation elsewhere).
pub fn handles(agg: &Agg) -> bool {
    !matches!(agg, Agg::Python { .. } | Agg::ThresholdPy { .. })
}

/// One update of a key's history: (val or output row id, time, diff).
type Entry = (u32, Time, i64);

/// Which running input accumulation an aggregate keeps.
#[derive(Clone, Copy)]
enum Kind {
    Count,
    SumInt,
    Group,
    PerVal,
}

/// Runs the reduce for one key: emits output differences into `output` and leaves the
/// incomplete candidate times in `s.pending`. Two-dimensional keys are swept by rows
/// directly; deeper times are sliced by their leading coordinates first
/// ([`slices`]). On an error (an overflow, the memory limit) `output` may hold part of
/// the key's output: the caller undoes it.
pub fn reduce_key(k: &RowsKey<'_>, s: &mut RowsScratch, output: &mut Updates) -> Result<()> {
    let kw = k.key_width;
    let w = k.input.width;
    let vw = w - kw;
    let ow = k.out_hist.width;
    s.pending.clear();
    index_vals(k.input, kw, vw, s);
    let in_e: Vec<Entry> = (0..k.input.len())
        .map(|i| (s.val_ids[i], k.input.times[i], k.input.diffs[i]))
        .collect();
    s.out_rows.clear();
    s.out_ids.clear();
    let mut out_e: Vec<Entry> = Vec::with_capacity(k.out_hi - k.out_lo);
    for e in k.out_lo..k.out_hi {
        let row = &k.out_hist.rows[e * ow + kw..(e + 1) * ow];
        let id = intern(&mut s.out_ids, &mut s.out_rows, row);
        out_e.push((id, k.out_hist.times[e], k.out_hist.diffs[e]));
    }
    let used = |t: &Time| MAX_DIMS - t.0.iter().rev().take_while(|&&c| c == 0).count();
    let dims = k
        .cands
        .iter()
        .chain(in_e.iter().map(|e| &e.1))
        .chain(out_e.iter().map(|e| &e.1))
        .map(used)
        .max()
        .unwrap_or(0)
        .max(2);
    let kind = match k.agg {
        Agg::Count => Kind::Count,
        Agg::Sum { column: c } if k.val_dtypes[*c].physical() == DType::Int64 => Kind::SumInt,
        Agg::Group { aggs } if aggregate_group::has_running_totals(aggs, k.val_dtypes) => {
            Kind::Group
        }
        _ => Kind::PerVal,
    };
    if dims == 2 {
        rows(k, s, kind, 0, (&in_e, &out_e), k.cands, output, None)
    } else {
        slices(
            k,
            s,
            kind,
            (0, dims),
            (&in_e, &out_e),
            k.cands,
            output,
            None,
        )
    }
}

/// Sweeps coordinate `c` of times with `dims` coordinates (`c + 2 < dims`): for each value
/// `v` of it among `cands` (in order; they share the coordinates before `c`), the updates
/// with coordinate `c` at most `v` are projected (coordinates up to `c` zeroed) and
/// consolidated, and the times with `v` are solved one coordinate lower on them. The output
/// emitted for `v` joins the projected output history for the values after it (and
/// `emitted`, for the caller's own projection). A projected output history consolidates to
/// the differences of the accumulated output at `v` over the remaining coordinates (the
/// sum over values up to `v` telescopes), about the size of one slice's output.
#[allow(clippy::too_many_arguments)]
fn slices(
    k: &RowsKey<'_>,
    s: &mut RowsScratch,
    kind: Kind,
    (c, dims): (usize, usize),
    (in_e, out_e): (&[Entry], &[Entry]),
    cands: &[Time],
    output: &mut Updates,
    mut emitted: Option<&mut Vec<Entry>>,
) -> Result<()> {
    let mut ins = in_e.to_vec();
    ins.sort_unstable_by_key(|e| e.1 .0[c]);
    let mut outs = out_e.to_vec();
    outs.sort_unstable_by_key(|e| e.1 .0[c]);
    let project = |e: &Entry| {
        let mut t = e.1;
        for x in &mut t.0[..=c] {
            *x = 0;
        }
        (e.0, t, e.2)
    };
    let (mut proj_in, mut proj_out): (Vec<Entry>, Vec<Entry>) = (Vec::new(), Vec::new());
    let mut slice_emitted: Vec<Entry> = Vec::new();
    let (mut ii, mut oi, mut ci) = (0usize, 0usize, 0usize);
    while ci < cands.len() {
        let v = cands[ci].0[c];
        let end = ci + cands[ci..].partition_point(|t| t.0[c] == v);
        crate::memory::check()?;
        while ii < ins.len() && ins[ii].1 .0[c] <= v {
            proj_in.push(project(&ins[ii]));
            ii += 1;
        }
        while oi < outs.len() && outs[oi].1 .0[c] <= v {
            proj_out.push(project(&outs[oi]));
            oi += 1;
        }
        consolidate_entries(&mut proj_in, k.label)?;
        consolidate_entries(&mut proj_out, k.label)?;
        slice_emitted.clear();
        let slice = &cands[ci..end];
        let hists = (proj_in.as_slice(), proj_out.as_slice());
        if c + 3 == dims {
            rows(
                k,
                s,
                kind,
                c + 1,
                hists,
                slice,
                output,
                Some(&mut slice_emitted),
            )?;
        } else {
            let sub = (c + 1, dims);
            slices(
                k,
                s,
                kind,
                sub,
                hists,
                slice,
                output,
                Some(&mut slice_emitted),
            )?;
        }
        proj_out.extend(slice_emitted.iter().map(project));
        if let Some(up) = emitted.as_deref_mut() {
            up.extend_from_slice(&slice_emitted);
        }
        ci = end;
    }
    Ok(())
}

/// Sorts entries by (id, time) and sums equal ones, dropping zeros; a sum outside `i64` is
/// an overflow (the key then takes the general path).
fn consolidate_entries(list: &mut Vec<Entry>, label: &str) -> Result<()> {
    list.sort_unstable_by_key(|a| (a.0, a.1));
    let mut w = 0;
    let mut i = 0;
    while i < list.len() {
        let (id, t) = (list[i].0, list[i].1);
        let mut sum: i128 = 0;
        while i < list.len() && list[i].0 == id && list[i].1 == t {
            sum += list[i].2 as i128;
            i += 1;
        }
        let sum = i64::try_from(sum)
            .map_err(|_| Error::Overflow(format!("{label}: count overflows int64")))?;
        if sum != 0 {
            list[w] = (id, t, sum);
            w += 1;
        }
    }
    list.truncate(w);
    Ok(())
}

/// The row sweep over coordinates `c` (rows) and `c + 1` (levels) of `cands`, which share
/// their coordinates before `c`; `in_e` / `out_e` are the input and output updates that lie
/// below them on those coordinates. Emitted output also goes to `emitted`.
#[allow(clippy::too_many_arguments)]
fn rows(
    k: &RowsKey<'_>,
    s: &mut RowsScratch,
    kind: Kind,
    c: usize,
    (in_e, out_e): (&[Entry], &[Entry]),
    cands: &[Time],
    output: &mut Updates,
    mut emitted: Option<&mut Vec<Entry>>,
) -> Result<()> {
    let vw = k.input.width - k.key_width;
    let ovw = k.out_hist.width - k.key_width;
    let overflow = |what: &str| Error::Overflow(format!("{}: {what} overflows int64", k.label));
    let (x_of, y_of) = (|t: &Time| t.0[c], |t: &Time| t.0[c + 1]);

    // Levels: every coordinate `c + 1` of the histories and candidate times.
    s.levels.clear();
    s.levels.extend(in_e.iter().map(|e| y_of(&e.1)));
    s.levels.extend(out_e.iter().map(|e| y_of(&e.1)));
    s.levels.extend(cands.iter().map(y_of));
    s.levels.sort_unstable();
    s.levels.dedup();
    let levels = std::mem::take(&mut s.levels);
    let level_of = |y: u64| levels.partition_point(|&l| l < y);

    s.in_order.clear();
    s.in_order.extend(0..in_e.len() as u32);
    s.in_order
        .sort_unstable_by_key(|&i| (x_of(&in_e[i as usize].1), y_of(&in_e[i as usize].1)));
    s.out_order.clear();
    s.out_order.extend(0..out_e.len() as u32);
    s.out_order
        .sort_unstable_by_key(|&i| (x_of(&out_e[i as usize].1), y_of(&out_e[i as usize].1)));
    let nvals = s.vals.len().checked_div(vw).unwrap_or(1).max(1);
    s.in_levels.reset(levels.len());
    s.out_levels.reset(levels.len());
    s.in_run.reset(nvals);
    s.out_run.reset(0);

    let parts: &[GroupAgg] = match k.agg {
        Agg::Group { aggs } => aggs,
        _ => &[],
    };
    let sum_col = match k.agg {
        Agg::Sum { column: c } => *c,
        _ => 0,
    };
    let mut acc = match kind {
        Kind::Count => Acc::Count(0),
        Kind::SumInt => Acc::SumInt(0, 0),
        Kind::Group => Acc::Group,
        Kind::PerVal => Acc::PerVal,
    };

    let (mut ii, mut oi) = (0usize, 0usize);
    let mut ci = 0;
    let result = (|| -> Result<()> {
        while ci < cands.len() {
            let x = x_of(&cands[ci]);
            let row_end = ci + cands[ci..].partition_point(|t| x_of(t) == x);
            crate::memory::check()?;
            // The updates of first coordinates up to `x` join their levels.
            while ii < in_e.len() && x_of(&in_e[s.in_order[ii] as usize].1) <= x {
                let (v, t, d) = in_e[s.in_order[ii] as usize];
                s.in_levels.push(level_of(y_of(&t)), v, d);
                ii += 1;
            }
            while oi < out_e.len() && x_of(&out_e[s.out_order[oi] as usize].1) <= x {
                let (id, t, d) = out_e[s.out_order[oi] as usize];
                s.out_levels.push(level_of(y_of(&t)), id, d);
                oi += 1;
            }
            // The row starts from nothing: both accumulations are rebuilt at its first time.
            s.in_run.reset(nvals);
            match &mut acc {
                Acc::Count(t) => *t = 0,
                Acc::SumInt(t, nulls) => (*t, *nulls) = (0, 0),
                Acc::Group => s.totals.reset(parts),
                Acc::PerVal => {}
            }
            let mut nonzero_vals = 0usize;
            s.out_run.reset(s.out_rows.len() / ovw.max(1) + 1);
            let mut next_level = 0usize; // levels below this are in both accumulations
            for ti in ci..row_end {
                let t = cands[ti];
                if k.frontier.less_equal(&t) {
                    // The rest of the row is in the future of `t`: incomplete too.
                    s.pending.extend_from_slice(&cands[ti..row_end]);
                    break;
                }
                let upto = level_of(y_of(&t)) + 1;
                for l in next_level..upto {
                    for &(v, d) in &s.in_levels.lists[l] {
                        let (before, after) =
                            s.in_run.add(v, d).ok_or_else(|| overflow("count"))?;
                        nonzero_vals =
                            nonzero_vals + (after != 0) as usize - (before != 0) as usize;
                        let row = &s.vals[v as usize * vw..(v as usize + 1) * vw];
                        match &mut acc {
                            Acc::Count(total) => *total += d as i128,
                            Acc::SumInt(_, nulls) if row[sum_col] == NULL_I64 => {
                                *nulls = *nulls + (after != 0) as usize - (before != 0) as usize;
                            }
                            Acc::SumInt(total, _) => {
                                *total += decode_i64(row[sum_col]) as i128 * d as i128;
                            }
                            Acc::Group => s.totals.fold(parts, k.val_dtypes, row, d, k.label)?,
                            Acc::PerVal => {}
                        }
                    }
                    for &(id, d) in &s.out_levels.lists[l] {
                        s.out_run
                            .add(id, d)
                            .ok_or_else(|| overflow("output count"))?;
                    }
                }
                next_level = upto;
                desired(k, s, &acc, nonzero_vals, vw, ovw)?;
                let up = emitted.as_deref_mut();
                emit_difference(k, s, (t, upto - 1), ovw, output, up)?;
            }
            ci = row_end;
        }
        Ok(())
    })();
    s.levels = levels;
    result
}

/// The aggregate's rows at the current time into `s.desired_rows` / `s.desired_counts`
/// (sorted, consolidated).
fn desired(
    k: &RowsKey<'_>,
    s: &mut RowsScratch,
    acc: &Acc,
    nonzero_vals: usize,
    vw: usize,
    ovw: usize,
) -> Result<()> {
    let overflow = |what: &str| Error::Overflow(format!("{}: {what} overflows int64", k.label));
    s.desired_rows.clear();
    s.desired_counts.clear();
    match *acc {
        Acc::Count(total) => {
            if total != 0 {
                let v = i64::try_from(total).map_err(|_| overflow("count"))?;
                s.desired_rows.push(encode_i64(v));
                s.desired_counts.push(1);
            }
        }
        Acc::SumInt(total, nulls) => {
            if nonzero_vals > 0 && nulls == nonzero_vals {
                s.desired_rows.push(NULL_I64);
                s.desired_counts.push(1);
            } else if nonzero_vals > 0 {
                let v = i64::try_from(total)
                    .ok()
                    .filter(|&v| v != i64::MIN)
                    .ok_or_else(|| overflow("sum"))?;
                s.desired_rows.push(encode_i64(v));
                s.desired_counts.push(1);
            }
        }
        Acc::Group => {
            if s.totals.is_present() {
                let parts: &[GroupAgg] = match k.agg {
                    Agg::Group { aggs } => aggs,
                    _ => &[],
                };
                s.totals
                    .write(parts, k.val_dtypes, k.label, &mut s.desired_rows)?;
                s.desired_counts.push(1);
            }
        }
        Acc::PerVal => {
            // Val ids are numbered in val order: the non-zero ones sorted are in val order.
            s.nz_sorted.clear();
            s.nz_sorted.extend_from_slice(&s.in_run.nz);
            s.nz_sorted.sort_unstable();
            s.nz_vals.clear();
            s.nz_counts.clear();
            for &v in &s.nz_sorted {
                let v = v as usize;
                s.nz_vals.extend_from_slice(&s.vals[v * vw..(v + 1) * vw]);
                s.nz_counts.push(s.in_run.counts[v]);
            }
            aggregate::apply(
                k.agg,
                k.val_dtypes,
                vw,
                &s.nz_vals,
                &s.nz_counts,
                k.label,
                &mut s.desired_rows,
                &mut s.desired_counts,
            )?;
            super::reduce_chain::checked_consolidate_rows(
                &mut s.desired_rows,
                &mut s.desired_counts,
                ovw,
                &mut s.merge,
                k.label,
            )?;
        }
    }
    Ok(())
}

/// Emits the desired rows minus the accumulated output at `t` (whose level is `level`) and
/// adds the difference to the output accumulation and its level (and to `emitted`).
fn emit_difference(
    k: &RowsKey<'_>,
    s: &mut RowsScratch,
    (t, level): (Time, usize),
    ovw: usize,
    output: &mut Updates,
    mut emitted: Option<&mut Vec<Entry>>,
) -> Result<()> {
    let out_overflow = || Error::Overflow(format!("{}: output count overflows int64", k.label));
    s.want_ids.clear();
    for r in 0..s.desired_counts.len() {
        let id = intern(
            &mut s.out_ids,
            &mut s.out_rows,
            &s.desired_rows[r * ovw..(r + 1) * ovw],
        );
        let i = id as usize;
        if s.want.len() <= i {
            s.want.resize(i + 1, 0);
        }
        if s.want[i] == 0 {
            s.want_ids.push(id);
        }
        s.want[i] = s.want[i]
            .checked_add(s.desired_counts[r])
            .ok_or_else(out_overflow)?;
    }
    let n_ids = s.out_rows.len() / ovw.max(1) + 1;
    s.out_run.grow(n_ids);
    if s.want.len() < n_ids {
        s.want.resize(n_ids, 0);
    }
    // Ids present on either side: the accumulation's non-zero ones, then desired ones not
    // among them.
    let mut ids = std::mem::take(&mut s.want_ids);
    ids.retain(|&id| s.out_run.counts[id as usize] == 0);
    let mut acc_ids = std::mem::take(&mut s.acc_ids);
    acc_ids.clear();
    acc_ids.extend_from_slice(&s.out_run.nz);
    s.row.clear();
    s.row.extend_from_slice(k.key);
    for &id in acc_ids.iter().chain(ids.iter()) {
        let i = id as usize;
        let diff = s.want[i]
            .checked_sub(s.out_run.counts[i])
            .ok_or_else(out_overflow)?;
        s.want[i] = 0;
        if diff != 0 {
            s.row.truncate(k.key_width);
            s.row.extend_from_slice(&s.out_rows[i * ovw..(i + 1) * ovw]);
            output.push(&s.row, t, diff);
            s.out_run.add(id, diff).ok_or_else(out_overflow)?;
            s.out_levels.push(level, id, diff);
            if let Some(up) = emitted.as_deref_mut() {
                up.push((id, t, diff));
            }
        }
    }
    s.want_ids = ids;
    s.acc_ids = acc_ids;
    Ok(())
}

/// The id of an output row, numbering it if new.
fn intern(ids: &mut HashMap<Vec<u64>, u32>, rows: &mut Vec<u64>, row: &[u64]) -> u32 {
    if let Some(&id) = ids.get(row) {
        return id;
    }
    let id = ids.len() as u32;
    ids.insert(row.to_vec(), id);
    rows.extend_from_slice(row);
    id
}

/// Numbers the distinct val rows of `input` (sorted) into `s.vals`, with `s.val_ids` per
/// entry (zero-width vals: one val).
fn index_vals(input: &Updates, kw: usize, vw: usize, s: &mut RowsScratch) {
    let n = input.len();
    let w = input.width;
    s.vals.clear();
    s.val_ids.clear();
    s.val_ids.resize(n, 0);
    if n == 0 || vw == 0 {
        return;
    }
    let row = |i: u32| &input.rows[i as usize * w + kw..(i as usize + 1) * w];
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_unstable_by(|&a, &b| row(a).cmp(row(b)));
    let mut nvals = 0usize;
    for (j, &i) in order.iter().enumerate() {
        if j == 0 || &s.vals[(nvals - 1) * vw..nvals * vw] != row(i) {
            s.vals.extend_from_slice(row(i));
            nvals += 1;
        }
        s.val_ids[i as usize] = (nvals - 1) as u32;
    }
}

#[cfg(test)]
#[path = "reduce_rows_tests.rs"]
mod tests;
