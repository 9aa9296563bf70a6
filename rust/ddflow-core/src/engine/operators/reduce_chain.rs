//! `reduce` for a key whose times form a chain (are totally ordered), in one pass.
//!
//! When every time of a key's input history, output history and new times is comparable with
//! every other (always so for one-dimensional outer times, and for updates that differ only
//! in one coordinate), the interesting times are simply the distinct times at or after the
//! least new time, and they can be visited in order while two accumulations are carried
//! forward:
//!
//! * the input accumulation: each input update is folded in once, when the sweep reaches its
//!   time. `count` and integer `sum` keep a running total (128-bit, so no intermediate
//!   overflow that the final value would not have), as does a `group` of counts and integer
//!   sums and means (`aggregate_group::RunningTotals`); other aggregates a count per
//!   distinct value;
//! * the output accumulation: the rows the operator has emitted up to the current time,
//!   consolidated (a handful of rows for `count`, `sum`, `min`, `max`).
//!
//! At each complete time the aggregate's desired output is compared with the output
//! accumulation and the difference emitted. A key with history `H` and `T` new times costs
//! `O((H + T) log)` for the sorts plus `O(T * output rows)`, instead of the general path's
//! per-time rescans; this is what keeps `count` over hot keys with thousands of distinct
//! times per batch linear in `T`.

use super::aggregate;
use super::aggregate_group::{self, RunningTotals};
use super::reduce::Pending;
use crate::encoding::{decode_i64, encode_i64, DType, NULL_I64};
use crate::engine::plan::{Agg, GroupAgg};
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// Reusable buffers of [`reduce_key`].
#[derive(Default)]
pub struct ChainScratch {
    /// Sorted distinct times of the key (history and new).
    pub times: Vec<Time>,
    /// The first coordinates of one-dimensional times while they are sorted.
    coords: Vec<u64>,
    in_order: Vec<u32>,
    out_order: Vec<u32>,
    /// Distinct input val rows, sorted, `vw` words each, and per-input-entry val ids.
    vals: Vec<u64>,
    val_ids: Vec<u32>,
    counts: Vec<i64>,
    nz_vals: Vec<u64>,
    nz_counts: Vec<i64>,
    /// Output accumulation: rows (`ovw` words each) and counts, consolidated and sorted.
    acc_rows: Vec<u64>,
    acc_counts: Vec<i64>,
    desired_rows: Vec<u64>,
    desired_counts: Vec<i64>,
    merge: Vec<(usize, bool)>,
    /// Running totals of a `group` aggregate of counts and int64 sums / means.
    totals: RunningTotals,
    /// The input accumulation the next [`reduce_key`] starts from instead of zero (a key's
    /// carried totals, `reduce_cache.rs`); taken by it.
    pub seed: Option<Carry>,
}

/// A key's running input accumulation at the end of a pass of `count` or of a `group` of
/// running totals ([`carries`]), carried to its next pass by `reduce_cache.rs`.
#[derive(Default)]
pub struct Carry {
    /// The signed count of the key's input (the pass's one shared val slot).
    pub count: i64,
    /// A `group`'s running totals.
    pub totals: RunningTotals,
}

/// Whether a pass of `agg` keeps its input accumulation in a [`Carry`]: `count`, and a
/// `group` whose parts all have running totals.
pub fn carries(agg: &Agg, val_dtypes: &[DType]) -> bool {
    match agg {
        Agg::Count => true,
        Agg::Group { aggs } => aggregate_group::has_running_totals(aggs, val_dtypes),
        _ => false,
    }
}

/// Below this many ascending runs, [`ChainScratch::set_1d_times`] merges the runs rather
/// than quicksorting the times.
pub const FEW_RUNS: usize = 8;

impl ChainScratch {
    /// Sets [`ChainScratch::times`] to the distinct times of `a` and `b`, sorted, where every
    /// time is one-dimensional (coordinates past the first are zero). They are sorted as
    /// plain `u64`s: sorting whole times (four-word compares) was 42% of the instructions
    /// of `run_until` in the `count` micro-case at 4,000 times (a key's 5,000 history
    /// times and 4,000 new ones).
    ///
    /// The list is mostly a few ascending runs: each batch's history of a key whose value
    /// is empty (`count`) is sorted by time, and so are the new times, which the newest
    /// batch repeats. With at most [`FEW_RUNS`] runs they are merged by the run-adaptive
    /// stable sort (linear in the length per run) instead of quicksorted.
    pub fn set_1d_times(&mut self, a: &[Time], b: &[Time]) {
        let c = &mut self.coords;
        c.clear();
        c.extend(a.iter().chain(b).map(|t| {
            debug_assert_eq!(*t, Time::scalar(t.0[0]), "a one-dimensional time");
            t.0[0]
        }));
        let descents = c.windows(2).filter(|w| w[1] < w[0]).count();
        if descents < FEW_RUNS {
            c.sort();
        } else {
            c.sort_unstable();
        }
        c.dedup();
        self.times.clear();
        self.times.extend(c.iter().map(|&x| Time::scalar(x)));
    }

    /// The accumulation the last successful [`reduce_key`] of a [`carries`] aggregate ended
    /// with (its input up to its last time).
    pub fn take_carry(&mut self, agg: &Agg) -> Carry {
        Carry {
            count: self.counts.first().copied().unwrap_or(0),
            totals: match agg {
                Agg::Group { .. } => std::mem::take(&mut self.totals),
                _ => RunningTotals::default(),
            },
        }
    }
}

/// What a key's reduce reads.
pub struct ChainKey<'a> {
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
    /// The least new or pending time of the key.
    pub least_new: Time,
    pub frontier: &'a Antichain<Time>,
    pub label: &'a str,
}

/// The running input accumulation.
enum Acc {
    /// Signed sum of diffs.
    Count(i128),
    /// Signed weighted sum of an int64 column's non-null vals (present while some val has a
    /// non-zero count), and how many null vals have a non-zero count (a null contributes
    /// nothing; only nulls: the sum is null).
    SumInt(i128, usize),
    /// Counts per distinct val (in `ChainScratch::counts`).
    PerVal,
    /// A `group` aggregate's running totals (in `ChainScratch::totals`).
    Group,
}

/// Runs the reduce for one key whose times (in `s.times`, sorted and deduplicated) form a
/// chain: emits output differences into `output` and pushes incomplete times to `pending`.
/// Built-in aggregates only (Python reducers are called once per activation elsewhere).
pub fn reduce_key(
    k: &ChainKey<'_>,
    s: &mut ChainScratch,
    output: &mut Updates,
    pending: &mut Pending,
) -> Result<()> {
    let kw = k.key_width;
    let w = k.input.width;
    let vw = w - kw;
    let ow = k.out_hist.width;
    let ovw = ow - kw;
    let overflow = |what: &str| Error::Overflow(format!("{}: {what} overflows int64", k.label));

    // Input entries in time order, with val ids when the aggregate needs them.
    let n_in = k.input.len();
    s.in_order.clear();
    s.in_order.extend(0..n_in as u32);
    let in_times = &k.input.times;
    s.in_order.sort_by_key(|&i| in_times[i as usize]);
    let seed = s.seed.take();
    let seed_count = seed.as_ref().map_or(0, |c| c.count);
    let mut acc = match k.agg {
        Agg::Count => Acc::Count(seed_count as i128),
        Agg::Sum { column: c } if k.val_dtypes[*c].physical() == DType::Int64 => Acc::SumInt(0, 0),
        Agg::Group { aggs } if aggregate_group::has_running_totals(aggs, k.val_dtypes) => {
            match seed {
                Some(c) => s.totals = c.totals,
                None => s.totals.reset(aggs),
            }
            Acc::Group
        }
        _ => Acc::PerVal,
    };
    let mut nonzero_vals: usize = (seed_count != 0) as usize;
    if matches!(acc, Acc::Count(_) | Acc::Group) {
        // `count`, and a group of running totals (present while its count is non-zero), do
        // not look at vals: one shared slot, and no sort of the key's vals.
        s.val_ids.clear();
        s.val_ids.resize(n_in, 0);
        s.counts.clear();
        s.counts.push(seed_count);
    } else {
        index_vals(k.input, kw, vw, s);
    }

    // Output history entries in time order.
    s.out_order.clear();
    s.out_order.extend(k.out_lo as u32..k.out_hi as u32);
    let out_times = &k.out_hist.times;
    s.out_order.sort_by_key(|&i| out_times[i as usize]);
    s.acc_rows.clear();
    s.acc_counts.clear();

    let (mut ii, mut oi) = (0usize, 0usize);
    let times = std::mem::take(&mut s.times);
    let result = (|| -> Result<()> {
        for (ti, &t) in times.iter().enumerate() {
            // Fold input updates at times <= t (all earlier in the chain).
            while ii < n_in && in_times[s.in_order[ii] as usize] <= t {
                let e = s.in_order[ii] as usize;
                let d = k.input.diffs[e];
                let v = s.val_ids[e] as usize;
                let c = &mut s.counts[v];
                let before = *c;
                *c = c.checked_add(d).ok_or_else(|| overflow("count"))?;
                let now = *c;
                nonzero_vals = nonzero_vals + (now != 0) as usize - (before != 0) as usize;
                match &mut acc {
                    Acc::Count(total) => *total += d as i128,
                    Acc::SumInt(_, nulls)
                        if k.input.rows[e * w + kw + sum_column(k.agg)] == NULL_I64 =>
                    {
                        *nulls = *nulls + (now != 0) as usize - (before != 0) as usize;
                    }
                    Acc::SumInt(total, _) => {
                        let word = k.input.rows[e * w + kw + sum_column(k.agg)];
                        *total += decode_i64(word) as i128 * d as i128;
                    }
                    Acc::Group => {
                        let row = &k.input.rows[e * w + kw..(e + 1) * w];
                        s.totals
                            .fold(group_parts(k.agg), k.val_dtypes, row, d, k.label)?;
                    }
                    Acc::PerVal => {}
                }
                ii += 1;
            }
            // Fold output history at times <= t.
            let fold_from = oi;
            while oi < s.out_order.len() && out_times[s.out_order[oi] as usize] <= t {
                oi += 1;
            }
            if oi > fold_from {
                fold_output(k, s, fold_from, oi, ovw)?;
            }
            if t < k.least_new {
                continue;
            }
            if k.frontier.less_equal(&t) {
                // Later times in the chain are in the future of `t`, so incomplete too.
                for &t in &times[ti..] {
                    pending.push(k.key, t);
                }
                break;
            }
            // Desired output at t.
            s.desired_rows.clear();
            s.desired_counts.clear();
            match acc {
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
                        s.totals.write(
                            group_parts(k.agg),
                            k.val_dtypes,
                            k.label,
                            &mut s.desired_rows,
                        )?;
                        s.desired_counts.push(1);
                    }
                }
                Acc::PerVal => {
                    s.nz_vals.clear();
                    s.nz_counts.clear();
                    for (v, &c) in s.counts.iter().enumerate() {
                        if c != 0 {
                            s.nz_vals.extend_from_slice(&s.vals[v * vw..(v + 1) * vw]);
                            s.nz_counts.push(c);
                        }
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
                    // Built-in aggregates emit distinct rows; only their order may be off.
                    checked_consolidate_rows(
                        &mut s.desired_rows,
                        &mut s.desired_counts,
                        ovw,
                        &mut s.merge,
                        k.label,
                    )?;
                }
            }
            emit_difference(k, s, t, ovw, output)?;
        }
        Ok(())
    })();
    s.times = times;
    result
}

/// The parts of a `group` aggregate.
fn group_parts(agg: &Agg) -> &[GroupAgg] {
    match agg {
        Agg::Group { aggs } => aggs,
        _ => &[],
    }
}

/// The summed column of an integer `sum`.
fn sum_column(agg: &Agg) -> usize {
    match agg {
        Agg::Sum { column: c } => *c,
        _ => 0,
    }
}

/// Numbers the distinct val rows of `input` (sorted) into `s.vals`, with `s.val_ids` per
/// entry and zeroed `s.counts`.
fn index_vals(input: &Updates, kw: usize, vw: usize, s: &mut ChainScratch) {
    let n = input.len();
    let w = input.width;
    s.vals.clear();
    s.val_ids.clear();
    s.val_ids.resize(n, 0);
    s.counts.clear();
    if n == 0 {
        return;
    }
    if vw == 0 {
        s.counts.push(0);
        return;
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    let row = |i: u32| &input.rows[i as usize * w + kw..(i as usize + 1) * w];
    if vw == 1 {
        order.sort_unstable_by_key(|&i| input.rows[i as usize * w + kw]);
    } else {
        order.sort_unstable_by(|&a, &b| row(a).cmp(row(b)));
    }
    let mut nvals = 0usize;
    for (j, &i) in order.iter().enumerate() {
        if j == 0 || &s.vals[(nvals - 1) * vw..nvals * vw] != row(i) {
            s.vals.extend_from_slice(row(i));
            nvals += 1;
        }
        s.val_ids[i as usize] = (nvals - 1) as u32;
    }
    s.counts.resize(nvals, 0);
}

/// Adds output history entries `s.out_order[from..to]` to the output accumulation.
fn fold_output(
    k: &ChainKey<'_>,
    s: &mut ChainScratch,
    from: usize,
    to: usize,
    ovw: usize,
) -> Result<()> {
    let ow = k.out_hist.width;
    let kw = k.key_width;
    for &e in &s.out_order[from..to] {
        let e = e as usize;
        s.acc_rows
            .extend_from_slice(&k.out_hist.rows[e * ow + kw..(e + 1) * ow]);
        s.acc_counts.push(k.out_hist.diffs[e]);
    }
    checked_consolidate_rows(
        &mut s.acc_rows,
        &mut s.acc_counts,
        ovw,
        &mut s.merge,
        k.label,
    )
}

/// Emits `desired - acc` at `t` and makes the accumulation equal to `desired`.
fn emit_difference(
    k: &ChainKey<'_>,
    s: &mut ChainScratch,
    t: Time,
    ovw: usize,
    output: &mut Updates,
) -> Result<()> {
    // Both sides are sorted by row and consolidated: merge them.
    let (na, nd) = (s.acc_counts.len(), s.desired_counts.len());
    let (mut a, mut d) = (0, 0);
    let row_a = |i: usize| &s.acc_rows[i * ovw..(i + 1) * ovw];
    let row_d = |i: usize| &s.desired_rows[i * ovw..(i + 1) * ovw];
    let emit = |row: &[u64], diff: i64, out: &mut Updates| {
        out.push_parts(k.key, row, t, diff);
    };
    while a < na || d < nd {
        let ord = if a == na {
            std::cmp::Ordering::Greater
        } else if d == nd {
            std::cmp::Ordering::Less
        } else {
            row_a(a).cmp(row_d(d))
        };
        match ord {
            std::cmp::Ordering::Less => {
                let c = s.acc_counts[a].checked_neg().ok_or_else(|| {
                    Error::Overflow(format!("{}: output count overflows int64", k.label))
                })?;
                emit(row_a(a), c, output);
                a += 1;
            }
            std::cmp::Ordering::Greater => {
                emit(row_d(d), s.desired_counts[d], output);
                d += 1;
            }
            std::cmp::Ordering::Equal => {
                let c = s.desired_counts[d]
                    .checked_sub(s.acc_counts[a])
                    .ok_or_else(|| {
                        Error::Overflow(format!("{}: output count overflows int64", k.label))
                    })?;
                if c != 0 {
                    emit(row_d(d), c, output);
                }
                a += 1;
                d += 1;
            }
        }
    }
    std::mem::swap(&mut s.acc_rows, &mut s.desired_rows);
    std::mem::swap(&mut s.acc_counts, &mut s.desired_counts);
    Ok(())
}

/// Sorts rows (`width` words each) with their counts and sums equal rows, dropping zeros;
/// a sum outside `i64` is an overflow error naming `label`.
pub(super) fn checked_consolidate_rows(
    rows: &mut Vec<u64>,
    counts: &mut Vec<i64>,
    width: usize,
    order: &mut Vec<(usize, bool)>,
    label: &str,
) -> Result<()> {
    let n = counts.len();
    if n <= 1 {
        if n == 1 && counts[0] == 0 {
            rows.clear();
            counts.clear();
        }
        return Ok(());
    }
    let row = |i: usize| &rows[i * width..(i + 1) * width];
    let sorted = (1..n).all(|i| row(i - 1) < row(i));
    if sorted && counts.iter().all(|&c| c != 0) {
        return Ok(());
    }
    order.clear();
    order.extend((0..n).map(|i| (i, false)));
    order.sort_by(|a, b| row(a.0).cmp(row(b.0)));
    let mut new_rows = Vec::with_capacity(rows.len());
    let mut new_counts = Vec::with_capacity(n);
    let mut i = 0;
    while i < n {
        let r = order[i].0;
        let mut c: i64 = counts[r];
        let mut j = i + 1;
        while j < n && row(order[j].0) == row(r) {
            c = c
                .checked_add(counts[order[j].0])
                .ok_or_else(|| Error::Overflow(format!("{label}: output count overflows int64")))?;
            j += 1;
        }
        if c != 0 {
            new_rows.extend_from_slice(row(r));
            new_counts.push(c);
        }
        i = j;
    }
    *rows = new_rows;
    *counts = new_counts;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::ChainScratch;
    use crate::lattice::Time;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    proptest! {
        /// A few ascending runs (each batch's history of a key, the new times): merged, the
        /// distinct times sorted, as a set of whole times would give them.
        #[test]
        fn set_1d_times_of_few_runs(
            runs in prop::collection::vec(prop::collection::vec(0u64..100, 0..40), 0..12),
            split in 0usize..12,
        ) {
            let runs: Vec<Vec<Time>> = runs
                .into_iter()
                .map(|mut r| {
                    r.sort_unstable();
                    r.into_iter().map(Time::scalar).collect()
                })
                .collect();
            let split = split.min(runs.len());
            let a: Vec<Time> = runs[..split].concat();
            let b: Vec<Time> = runs[split..].concat();
            let mut s = ChainScratch::default();
            s.set_1d_times(&a, &b);
            let want: Vec<Time> = a.iter().chain(&b).copied().collect::<BTreeSet<_>>().into_iter().collect();
            prop_assert_eq!(&s.times, &want);
        }

        /// The distinct times of both lists, sorted: as a set of whole times would give them.
        #[test]
        fn set_1d_times_equals_sorted_distinct_times(
            a in prop::collection::vec(0u64..50, 0..60),
            b in prop::collection::vec(prop_oneof![0u64..50, Just(u64::MAX)], 0..60),
        ) {
            let a: Vec<Time> = a.into_iter().map(Time::scalar).collect();
            let b: Vec<Time> = b.into_iter().map(Time::scalar).collect();
            let mut s = ChainScratch::default();
            s.times.push(Time::scalar(7)); // what a previous key left
            s.set_1d_times(&a, &b);
            let want: Vec<Time> = a.iter().chain(&b).copied().collect::<BTreeSet<_>>().into_iter().collect();
            prop_assert_eq!(&s.times, &want);
        }
    }
}
