//! Several one-row aggregates of a group (`Agg::Group`): `sum`, `count`, `mean`, `min` and
//! `max` of one key's accumulated values, written as one output row.
//!
//! Input, as for every built-in aggregate: the key's values at one time as `(val row, count)`
//! pairs with non-zero counts (counts may be negative). Output: at most one row, the
//! concatenation of the parts' columns, with count 1. Semantics (shared with the Python
//! reference model `tests/engine/model.py` and documented in `PLAN.md`):
//!
//! * the group is present while its count (the signed sum of its counts, SQL's `count(*)`)
//!   is non-zero; otherwise there is no row, and no error. This needs no look at the vals,
//!   so a group of running totals never sorts or indexes its vals;
//! * `count` is the signed sum of counts (it may be 0 or negative while the group is
//!   present); `sum` is the signed weighted sum, accumulated in 128 bits so that only a
//!   final value outside int64 is an error (the result does not depend on the order of the
//!   vals, unlike a checked running int64 sum);
//! * `mean` is `sum / count` as float64 (the count of a present group is never 0);
//! * `min` / `max` consider the vals with positive count; when none is positive (the group
//!   is present only through negative counts) the value is undefined: an error update;
//! * nulls (SQL): `sum`, `mean`, `min`, `max` skip null vals (`mean` divides by the count of
//!   non-null vals) and are null when the group has no non-null val; `count` with a column
//!   counts the non-null vals of that column. A `sum` equal to `i64::MIN` (int64's null
//!   word) is an overflow.
//!
//! Any error makes the whole row absent at that time and emits an error update naming the
//! part (errors as data, see `reduce_errors`), so one bad part never yields a partial row.
//!
//! The parts are evaluated one after the other, each with its own tight loop over the vals
//! (no per-value dispatch on the part's kind, nothing allocated per group), instead of one
//! loop carrying a state per part: the work is the same `O(parts * vals)`, and the vals of
//! one group are few and in cache. On the chain path (`reduce_chain`), a group whose parts
//! are all counts and int64 sums / means is not re-read at each time: [`RunningTotals`] folds
//! each input update in once.

use super::aggregate::cmp_words;
use crate::dtype::{Family, MAX_DECIMAL_PRECISION};
use crate::encoding::Interner;
use crate::encoding::{
    decode_f64, decode_i64, encode_f64, encode_i64, from_ordered_word, is_null_word, null_word,
    ordered_word, DType, NULL_I64,
};
use crate::engine::plan::GroupAgg;
use crate::error::{Error, Result};
use crate::exact_sum::ExactSum;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The val column a part reads (None for `count()`).
fn column_of(part: &GroupAgg) -> Option<usize> {
    match part {
        GroupAgg::Count { column, .. } => *column,
        GroupAgg::Sum { column, .. }
        | GroupAgg::Mean { column, .. }
        | GroupAgg::Min { column, .. }
        | GroupAgg::Max { column, .. }
        | GroupAgg::CountDistinct { column, .. } => Some(*column),
    }
}

/// A part as messages name it: `mean 'avg'`, or `mean of val column 1` without a name.
fn describe(part: &GroupAgg) -> String {
    let (kind, name) = match part {
        GroupAgg::Sum { name, .. } => ("sum", name),
        GroupAgg::Count { name, .. } => ("count", name),
        GroupAgg::Mean { name, .. } => ("mean", name),
        GroupAgg::Min { name, .. } => ("min", name),
        GroupAgg::Max { name, .. } => ("max", name),
        GroupAgg::CountDistinct { name, .. } => ("count_distinct", name),
    };
    match (name.is_empty(), column_of(part)) {
        (false, _) => format!("{kind} '{name}'"),
        (true, Some(c)) => format!("{kind} of val column {c}"),
        (true, None) => kind.to_string(),
    }
}

/// The dtype of a `sum` of a column of dtype `d`: int64 for integers (overflow is an error
/// update), float64 for floats, `decimal128(38, s)` for a decimal of scale `s`, the same
/// duration for durations; `None` for a dtype that does not sum.
pub fn sum_dtype(d: DType) -> Option<DType> {
    Some(match d.family() {
        Family::Integer => DType::Int64,
        Family::Float => DType::Float64,
        Family::Decimal => match d {
            DType::Decimal(_, s) => DType::Decimal(MAX_DECIMAL_PRECISION, s),
            _ => unreachable!(),
        },
        Family::Duration => d,
        _ => return None,
    })
}

/// The dtype of a `mean` of a column of dtype `d`: float64 for integers and floats,
/// `decimal128(38, s + 4)` (scale at most 38) for a decimal of scale `s`, as Spark.
pub fn mean_dtype(d: DType) -> Option<DType> {
    Some(match d {
        DType::Decimal(_, s) => DType::Decimal(MAX_DECIMAL_PRECISION, mean_scale(s)),
        _ if matches!(d.family(), Family::Integer | Family::Float) => DType::Float64,
        _ => return None,
    })
}

fn mean_scale(s: u8) -> u8 {
    (s + 4).min(MAX_DECIMAL_PRECISION)
}

/// Output dtypes: `sum` as [`sum_dtype`], `count` is int64, `mean` as [`mean_dtype`],
/// `min` / `max` keep their column's.
pub fn output_dtypes(aggs: &[GroupAgg], vals: &[DType], label: &str) -> Result<Vec<DType>> {
    if aggs.is_empty() {
        return Err(Error::Plan(format!(
            "{label}: a group aggregate needs at least one part"
        )));
    }
    aggs.iter()
        .map(|part| {
            let Some(c) = column_of(part) else {
                return Ok(DType::Int64);
            };
            let d = vals.get(c).copied().ok_or_else(|| {
                Error::Plan(format!(
                    "{label}: {}: val column {c} out of range ({} val columns)",
                    describe(part),
                    vals.len()
                ))
            })?;
            match part {
                GroupAgg::Sum { .. } | GroupAgg::Mean { .. } => {
                    let out = if matches!(part, GroupAgg::Mean { .. }) {
                        mean_dtype(d)
                    } else {
                        sum_dtype(d)
                    };
                    out.ok_or_else(|| {
                        Error::Type(format!(
                            "{label}: {} needs a {} column, got {}",
                            describe(part),
                            if matches!(part, GroupAgg::Sum { .. }) {
                                "numeric, decimal or duration"
                            } else {
                                "numeric or decimal"
                            },
                            d.name()
                        ))
                    })
                }
                GroupAgg::Count { .. } | GroupAgg::CountDistinct { .. } => Ok(DType::Int64),
                _ => Ok(d),
            }
        })
        .collect()
}

/// Appends the group's row (and count 1) to `out_rows` / `out_counts`, or nothing when the
/// counts sum to 0. `vals` are row-major, `vw` words each; `dtypes` are the val
/// dtypes. On error nothing is appended.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    aggs: &[GroupAgg],
    dtypes: &[DType],
    vw: usize,
    vals: &[u64],
    counts: &[i64],
    label: &str,
    out_rows: &mut Vec<u64>,
    out_counts: &mut Vec<i64>,
) -> Result<()> {
    if counts.iter().map(|&c| c as i128).sum::<i128>() == 0 {
        return Ok(());
    }
    let start = out_rows.len();
    let res = write_row(aggs, dtypes, vw, vals, counts, label, out_rows);
    if res.is_err() {
        out_rows.truncate(start);
    } else {
        out_counts.push(1);
    }
    res
}

fn write_row(
    aggs: &[GroupAgg],
    dtypes: &[DType],
    vw: usize,
    vals: &[u64],
    counts: &[i64],
    label: &str,
    out: &mut Vec<u64>,
) -> Result<()> {
    let word = |i: usize, c: usize| vals[i * vw + c];
    let total: i128 = counts.iter().map(|&c| c as i128).sum();
    let null = |i: usize, c: usize| is_null_word(dtypes[c], word(i, c));
    // The signed count of the non-null vals of column `c`.
    let non_null = |c: usize| -> i128 {
        counts
            .iter()
            .enumerate()
            .filter(|&(i, _)| !null(i, c))
            .map(|(_, &n)| n as i128)
            .sum()
    };
    // The weighted sum of column `c` (nulls skipped): exact in 128 bits for int64; for
    // float64 exact too, rounded once (`ExactSum`), so it is the running totals' sum.
    let sum = |c: usize| -> Sum {
        let terms = counts.iter().enumerate().filter(|&(i, _)| !null(i, c));
        if dtypes[c].physical() == DType::Int64 {
            Sum::Int(
                terms
                    .map(|(i, &n)| decode_i64(word(i, c)) as i128 * n as i128)
                    .try_fold(0i128, |acc, p| acc.checked_add(p)),
            )
        } else {
            let mut acc = ExactSum::new();
            terms.for_each(|(i, &n)| acc.add(decode_f64(word(i, c)), n));
            Sum::Float(acc.value())
        }
    };
    for part in aggs {
        let w = match part {
            GroupAgg::Count { column: None, .. } => finish(part, total, total, None, None, label)?,
            GroupAgg::Count {
                column: Some(c), ..
            } => finish(part, total, non_null(*c), None, None, label)?,
            GroupAgg::Sum { column, .. } | GroupAgg::Mean { column, .. } => finish(
                part,
                total,
                non_null(*column),
                Some(sum(*column)),
                Some(dtypes[*column]),
                label,
            )?,
            GroupAgg::CountDistinct { column, .. } => {
                let d = dtypes[*column];
                let distinct = value_counts(counts, |i| word(i, *column))
                    .filter(|&(v, n)| n > 0 && !is_null_word(d, v))
                    .count();
                encode_i64(distinct as i64)
            }
            GroupAgg::Min { column, .. } | GroupAgg::Max { column, .. } => {
                let want = if matches!(part, GroupAgg::Min { .. }) {
                    Ordering::Less
                } else {
                    Ordering::Greater
                };
                // Over the column's values with their accumulated counts, as the running
                // multisets.
                let d = dtypes[*column];
                let mut best: Option<u64> = None;
                let mut nulls = 0i128;
                for (v, n) in value_counts(counts, |i| word(i, *column)) {
                    if is_null_word(d, v) {
                        nulls += n;
                    } else if n > 0 && best.is_none_or(|b| cmp_words(d, v, b) == want) {
                        best = Some(v);
                    }
                }
                // Only nulls (with a positive count): the SQL null.
                best.or((nulls > 0).then(|| null_word(d))).ok_or_else(|| {
                    Error::Value(format!(
                        "{label}: {} is undefined: no value of the group has a positive count",
                        describe(part)
                    ))
                })?
            }
        };
        out.push(w);
    }
    Ok(())
}

/// Each distinct word of a column with its accumulated count (vals rows may repeat a value
/// beside other columns' values), in word order: `word(i)` is row `i`'s word.
fn value_counts(counts: &[i64], word: impl Fn(usize) -> u64) -> impl Iterator<Item = (u64, i128)> {
    let mut values: Vec<(u64, i128)> = (0..counts.len())
        .map(|i| (word(i), counts[i] as i128))
        .collect();
    values.sort_unstable_by_key(|&(w, _)| w);
    let mut k = 0;
    std::iter::from_fn(move || {
        let &(w, mut n) = values.get(k)?;
        k += 1;
        while k < values.len() && values[k].0 == w {
            n += values[k].1;
            k += 1;
        }
        Some((w, n))
    })
}

/// The word of a `count`, `sum` or `mean` part from the group's signed total count, the
/// signed count of its column's non-null vals (`non_null`; the total for `count()`) and
/// (for `sum` / `mean`) its column's weighted sum of non-null vals. No non-null val: `sum`
/// and `mean` are null.
fn finish(
    part: &GroupAgg,
    total: i128,
    non_null: i128,
    sum: Option<Sum>,
    column: Option<DType>,
    label: &str,
) -> Result<u64> {
    let overflow = || Error::Overflow(format!("{label}: {} overflows int64", describe(part)));
    let int = |v: i128| match i64::try_from(v) {
        Ok(v) if v != i64::MIN => Ok(encode_i64(v)),
        _ => Err(overflow()),
    };
    let all_null = non_null == 0 && total != 0;
    Ok(match (part, sum) {
        (GroupAgg::Count { .. }, _) => int(non_null)?,
        (GroupAgg::Sum { .. }, Some(Sum::Int(_))) if all_null => NULL_I64,
        (GroupAgg::Sum { .. }, Some(Sum::Float(_))) if all_null => null_word(DType::Float64),
        (GroupAgg::Sum { .. }, Some(Sum::Int(s))) => int(s.ok_or_else(overflow)?)?,
        (GroupAgg::Sum { .. }, Some(Sum::Float(s))) => encode_f64(s),
        (GroupAgg::Mean { .. }, Some(_)) if all_null => match column {
            Some(d @ DType::Decimal(..)) => null_word(d),
            _ => null_word(DType::Float64),
        },
        (GroupAgg::Mean { .. }, Some(s)) => {
            if non_null == 0 {
                return Err(Error::DivisionByZero(format!(
                    "{label}: {} is undefined: the group's counts sum to 0",
                    describe(part)
                )));
            }
            if let Some(DType::Decimal(_, scale)) = column {
                // Exact: sum * 10**4 / count, half away from zero (scale s + 4).
                let shift = (mean_scale(scale) - scale) as u32;
                let Sum::Int(s) = s else {
                    unreachable!("decimal sums are int")
                };
                let num = s
                    .ok_or_else(overflow)?
                    .checked_mul(10i128.pow(shift))
                    .ok_or_else(overflow)?;
                let (q, r) = (num / non_null, num % non_null);
                let q = if 2 * r.abs() >= non_null.abs() {
                    q + if (num < 0) == (non_null < 0) { 1 } else { -1 }
                } else {
                    q
                };
                return int(q);
            }
            let s = match s {
                Sum::Int(s) => s.ok_or_else(overflow)? as f64,
                Sum::Float(s) => s,
            };
            encode_f64(s / non_null as f64)
        }
        _ => {
            return Err(Error::Internal(format!(
                "{label}: {} has no running total",
                describe(part)
            )))
        }
    })
}

/// Whether the group's row follows from running totals alone (see [`RunningTotals`]): every
/// part is a `count()` or a `count` of any column's non-null values, a `sum` / `mean` of an
/// int64- or float64-stored column, a `min` / `max` or a `count_distinct` of any column.
pub fn has_running_totals(aggs: &[GroupAgg], dtypes: &[DType]) -> bool {
    aggs.iter().all(|p| match p {
        GroupAgg::Count { column, .. } => column.is_none_or(|c| c < dtypes.len()),
        GroupAgg::Sum { column, .. } | GroupAgg::Mean { column, .. } => matches!(
            dtypes.get(*column).map(|d| d.physical()),
            Some(DType::Int64 | DType::Float64)
        ),
        GroupAgg::Min { column, .. }
        | GroupAgg::Max { column, .. }
        | GroupAgg::CountDistinct { column, .. } => *column < dtypes.len(),
    })
}

/// The values of a `min`, `max` or `count_distinct` part with their accumulated counts,
/// keyed by their order-preserving words ([`ordered_word`]), so that a change costs about
/// log of the group. String ids are not in text order: a `min` / `max` of a `str` (or
/// `binary`) column also keeps its values with a positive count in text order
/// (`by_text`), resolved once when a value's count turns positive.
#[derive(Clone, Debug, Default)]
struct Multiset {
    counts: BTreeMap<u64, i128>,
    /// Values whose count is positive.
    positive: usize,
    /// The accumulated count of the column's nulls.
    nulls: i128,
    /// For `min` / `max` of strings: the values with a positive count, by text, with ids.
    by_text: Option<BTreeSet<(Arc<str>, u64)>>,
}

impl Multiset {
    fn add(&mut self, key: u64, diff: i128) -> Result<()> {
        let entry = self.counts.entry(key).or_insert(0);
        let before = *entry > 0;
        *entry += diff;
        let after = *entry > 0;
        self.positive = self.positive + after as usize - before as usize;
        if *entry == 0 {
            self.counts.remove(&key);
        }
        if before != after {
            if let Some(texts) = &mut self.by_text {
                let text = Interner::resolve_all(&[key])?.remove(0);
                if after {
                    texts.insert((text, key));
                } else {
                    texts.remove(&(text, key));
                }
            }
        }
        Ok(())
    }

    /// The least (or greatest) ordered word with a positive count.
    fn extreme(&self, greatest: bool) -> Option<u64> {
        if let Some(texts) = &self.by_text {
            let pick = if greatest {
                texts.last()
            } else {
                texts.first()
            };
            return pick.map(|(_, id)| *id);
        }
        let positive = |(&k, &n): (&u64, &i128)| (n > 0).then_some(k);
        if greatest {
            self.counts.iter().rev().find_map(positive)
        } else {
            self.counts.iter().find_map(positive)
        }
    }
}

/// The running accumulation of a group whose parts all have running totals, for keys whose
/// times form a chain (`reduce_chain`): each input update is folded in once, in 128 bits
/// (exact, so the row is still a function of the accumulated input); float sums exactly
/// too ([`ExactSum`]: `+0.1` then `-0.1` cancel, and the order of the updates does not
/// matter); `min`, `max` and `count_distinct` keep their values' counts ([`Multiset`], in
/// text order for strings).
#[derive(Default)]
pub struct RunningTotals {
    count: i128,
    /// Per part, the weighted sum of its column's non-null vals (0 for `count` parts).
    sums: Vec<i128>,
    /// Per part, the signed count of its column's non-null vals (a null contributes
    /// nothing; the total count for `count` parts).
    non_null: Vec<i128>,
    /// Per part, the values of a `min` / `max` / `count_distinct` part (empty otherwise).
    sets: Vec<Multiset>,
    /// Per part, the exact sum of a float64 `sum` / `mean` part (None otherwise).
    floats: Vec<Option<Box<ExactSum>>>,
}

impl RunningTotals {
    /// Marks the values the multisets hold (string ids among them).
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        for s in &self.sets {
            s.counts.keys().for_each(|&w| marks.word(w));
            if let Some(t) = &s.by_text {
                t.iter().for_each(|(_, w)| marks.word(*w));
            }
        }
    }

    /// Zero totals for `aggs`.
    pub fn reset(&mut self, aggs: &[GroupAgg]) {
        self.count = 0;
        self.sums.clear();
        self.sums.resize(aggs.len(), 0);
        self.non_null.clear();
        self.non_null.resize(aggs.len(), 0);
        self.sets.clear();
        self.sets.resize(aggs.len(), Multiset::default());
        self.floats.clear();
        self.floats.resize(aggs.len(), None);
    }

    /// Heap bytes of the multisets (about 48 bytes per value) and float sums.
    pub fn heap_bytes(&self) -> usize {
        let floats = self.floats.iter().flatten().count() * std::mem::size_of::<ExactSum>();
        self.sets.iter().map(|s| s.counts.len() * 48).sum::<usize>() + floats
    }

    /// Folds in one update: `vals` is its val row, `diff` its count.
    pub fn fold(
        &mut self,
        aggs: &[GroupAgg],
        dtypes: &[DType],
        vals: &[u64],
        diff: i64,
        label: &str,
    ) -> Result<()> {
        let overflow = || Error::Overflow(format!("{label}: a group's running sum overflows"));
        self.count = self.count.checked_add(diff as i128).ok_or_else(overflow)?;
        let parts = aggs.iter().zip(&mut self.sums).zip(&mut self.non_null);
        for ((((part, s), nn), set), float) in parts.zip(&mut self.sets).zip(&mut self.floats) {
            if let GroupAgg::Min { column, .. }
            | GroupAgg::Max { column, .. }
            | GroupAgg::CountDistinct { column, .. } = part
            {
                let (d, w) = (dtypes[*column], vals[*column]);
                let extreme = !matches!(part, GroupAgg::CountDistinct { .. });
                if extreme && d.physical() == DType::Str && set.by_text.is_none() {
                    set.by_text = Some(BTreeSet::new()); // ids are not in text order
                }
                if is_null_word(d, w) {
                    set.nulls += diff as i128;
                } else {
                    set.add(ordered_word(d, w), diff as i128)?;
                }
                continue;
            }
            if let GroupAgg::Count {
                column: Some(c), ..
            } = part
            {
                // SQL's count(x): the signed count of the column's non-null values.
                if !is_null_word(dtypes[*c], vals[*c]) {
                    *nn = nn.checked_add(diff as i128).ok_or_else(overflow)?;
                }
                continue;
            }
            match column_of(part) {
                // Running totals read int64 and float64 columns (`has_running_totals`).
                Some(c) if dtypes[c].physical() == DType::Float64 => {
                    if !is_null_word(dtypes[c], vals[c]) {
                        float
                            .get_or_insert_with(Default::default)
                            .add(decode_f64(vals[c]), diff);
                        *nn = nn.checked_add(diff as i128).ok_or_else(overflow)?;
                    }
                }
                Some(c) if vals[c] == NULL_I64 => {}
                Some(c) => {
                    let p = decode_i64(vals[c]) as i128 * diff as i128;
                    *s = s.checked_add(p).ok_or_else(overflow)?;
                    *nn = nn.checked_add(diff as i128).ok_or_else(overflow)?;
                }
                None => *nn = nn.checked_add(diff as i128).ok_or_else(overflow)?,
            }
        }
        Ok(())
    }

    /// Whether the group is present (its count is non-zero).
    pub fn is_present(&self) -> bool {
        self.count != 0
    }

    /// Appends the group's row (the caller knows the group is present).
    pub fn write(
        &self,
        aggs: &[GroupAgg],
        dtypes: &[DType],
        label: &str,
        out: &mut Vec<u64>,
    ) -> Result<()> {
        let parts = aggs.iter().zip(&self.sums).zip(&self.non_null);
        for ((((part, &s), &nn), set), float) in parts.zip(&self.sets).zip(&self.floats) {
            let column = column_of(part).map(|c| dtypes[c]);
            match part {
                GroupAgg::CountDistinct { .. } => {
                    out.push(encode_i64(set.positive as i64));
                    continue;
                }
                GroupAgg::Min { column, .. } | GroupAgg::Max { column, .. } => {
                    let d = dtypes[*column];
                    let greatest = matches!(part, GroupAgg::Max { .. });
                    let w = match set.extreme(greatest) {
                        Some(o) => from_ordered_word(d, o),
                        // Only nulls (with a positive count): the SQL null.
                        None if set.nulls > 0 => null_word(d),
                        None => {
                            return Err(Error::Value(format!(
                                "{label}: {} is undefined: no value of the group has a \
                                 positive count",
                                describe(part)
                            )))
                        }
                    };
                    out.push(w);
                    continue;
                }
                _ => {}
            }
            let sum = if column.is_some_and(|d| d.physical() == DType::Float64) {
                Sum::Float(float.as_ref().map_or(0.0, |f| f.value()))
            } else {
                Sum::Int(Some(s))
            };
            out.push(finish(part, self.count, nn, Some(sum), column, label)?);
        }
        Ok(())
    }
}

/// A weighted sum: exact int64 sums in 128 bits (None if even those overflow), or float64.
enum Sum {
    Int(Option<i128>),
    Float(f64),
}

#[cfg(test)]
#[path = "aggregate_group_tests.rs"]
mod tests;
