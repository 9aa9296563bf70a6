//! Built-in aggregates of `reduce`, evaluated on one key's accumulated values.
//!
//! Input: the key's values at one time as `(val row, count)` pairs with non-zero counts
//! (counts may be negative). Output: the rows the reduce should hold at that time, each with
//! its count. Semantics (shared with the Python reference model): `min`/`max`/`top_k`
//! consider values with positive count; `sum` is the signed weighted sum (present when any
//! value has a non-zero count); `count` is the signed sum of counts (absent when zero);
//! `distinct` keeps values with positive count, once. `group` (several one-row aggregates per
//! key) is evaluated in `aggregate_group`.

use crate::encoding::{
    decode_f64, decode_i64, encode_f64, encode_i64, is_null_word, null_word, DType,
};
use crate::engine::plan::Agg;
use crate::error::{Error, Result};
use std::cmp::Ordering;

/// Compares two encoded words by the value order of `dtype`.
pub fn cmp_words(dtype: DType, a: u64, b: u64) -> Ordering {
    match dtype.physical() {
        DType::Int64 => decode_i64(a).cmp(&decode_i64(b)),
        DType::Float64 => decode_f64(a).total_cmp(&decode_f64(b)),
        DType::Bool => a.cmp(&b),
        _ => {
            let s = crate::encoding::Interner::resolve_all(&[a, b]).unwrap_or_default();
            if s.len() == 2 {
                s[0].cmp(&s[1])
            } else {
                a.cmp(&b)
            }
        }
    }
}

/// Output dtypes of an aggregate given the val dtypes (None for Python aggregates, whose
/// dtypes come from the callback).
pub fn output_dtypes(agg: &Agg, vals: &[DType], label: &str) -> Result<Option<Vec<DType>>> {
    let col = |c: usize| -> Result<DType> {
        vals.get(c).copied().ok_or_else(|| {
            Error::Plan(format!(
                "{label}: aggregate column {c} out of range ({} value columns)",
                vals.len()
            ))
        })
    };
    Ok(Some(match agg {
        Agg::Min { column: c } | Agg::Max { column: c } => vec![col(*c)?],
        Agg::Sum { column: c } => {
            let d = col(*c)?;
            let Some(out) = super::aggregate_group::sum_dtype(d) else {
                return Err(Error::Type(format!(
                    "{label}: sum needs a numeric, decimal or duration column, got {}",
                    d.name()
                )));
            };
            vec![out]
        }
        Agg::Count => vec![DType::Int64],
        Agg::Distinct => vals.to_vec(),
        Agg::TopK { column, .. } => {
            col(*column)?;
            vals.to_vec()
        }
        Agg::Rank {
            order,
            min_rank,
            emit,
            ..
        } => super::aggregate_rank::output_dtypes(order, *min_rank, *emit, vals, label)?,
        Agg::ThresholdPy { .. } => vals.to_vec(),
        Agg::Python { .. } => return Ok(None),
        Agg::Group { aggs } => super::aggregate_group::output_dtypes(aggs, vals, label)?,
    }))
}

/// Applies a built-in aggregate to one key's values (`vals` row-major, `vw` words each).
#[allow(clippy::too_many_arguments)]
pub fn apply(
    agg: &Agg,
    dtypes: &[DType],
    vw: usize,
    vals: &[u64],
    counts: &[i64],
    label: &str,
    out_rows: &mut Vec<u64>,
    out_counts: &mut Vec<i64>,
) -> Result<()> {
    let mut push = |row: &[u64], c: i64| {
        out_rows.extend_from_slice(row);
        out_counts.push(c);
    };
    let n = counts.len();
    let row = |i: usize| &vals[i * vw..(i + 1) * vw];
    match agg {
        Agg::Min { column: c } | Agg::Max { column: c } => {
            let want = if matches!(agg, Agg::Min { .. }) {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            // Nulls are skipped; only nulls (with positive counts) give null.
            let d = dtypes[*c];
            let mut best: Option<u64> = None;
            let mut null_seen = false;
            for i in 0..n {
                if counts[i] > 0 {
                    let v = row(i)[*c];
                    if is_null_word(d, v) {
                        null_seen = true;
                    } else if best.is_none_or(|b| cmp_words(d, v, b) == want) {
                        best = Some(v);
                    }
                }
            }
            if let Some(b) = best.or(null_seen.then(|| null_word(d))) {
                push(&[b], 1);
            }
        }
        Agg::Sum { column: c } => {
            if n == 0 {
                return Ok(());
            }
            // Nulls are skipped; a key whose values are all null sums to null.
            let d = dtypes[*c];
            if (0..n).all(|i| is_null_word(d, row(i)[*c])) {
                push(&[null_word(d)], 1);
                return Ok(());
            }
            match d.physical() {
                DType::Int64 => {
                    // Exact in 128 bits; only the key's sum must fit int64 (as on the
                    // running-total path), whatever the order of its values.
                    let mut s: i128 = 0;
                    for i in (0..n).filter(|&i| !is_null_word(d, row(i)[*c])) {
                        let v = decode_i64(row(i)[*c]);
                        s += v as i128 * counts[i] as i128;
                    }
                    match i64::try_from(s) {
                        Ok(s) if s != i64::MIN => push(&[encode_i64(s)], 1),
                        Ok(s) => {
                            return Err(Error::Overflow(format!(
                                "{label}: sum is {s}, int64's reserved null word"
                            )))
                        }
                        Err(_) => {
                            return Err(Error::Overflow(format!(
                                "{label}: sum {s} overflows int64"
                            )))
                        }
                    }
                }
                _ => {
                    // Exact, rounded once: the order of the values does not matter.
                    let mut s = crate::exact_sum::ExactSum::new();
                    for i in (0..n).filter(|&i| !is_null_word(d, row(i)[*c])) {
                        s.add(decode_f64(row(i)[*c]), counts[i]);
                    }
                    push(&[encode_f64(s.value())], 1);
                }
            }
        }
        Agg::Count => {
            // Exact in 128 bits; only the key's count must fit int64.
            let s: i128 = counts.iter().map(|&c| c as i128).sum();
            let s = i64::try_from(s)
                .map_err(|_| Error::Overflow(format!("{label}: count {s} overflows int64")))?;
            if s == i64::MIN {
                return Err(Error::Overflow(format!(
                    "{label}: count is {s}, int64's reserved null word"
                )));
            }
            if s != 0 {
                push(&[encode_i64(s)], 1);
            }
        }
        Agg::Distinct => {
            for i in 0..n {
                if counts[i] > 0 {
                    push(row(i), 1);
                }
            }
        }
        Agg::TopK {
            k,
            column,
            descending,
        } => {
            let mut idx: Vec<usize> = (0..n).filter(|&i| counts[i] > 0).collect();
            idx.sort_by(|&a, &b| {
                let o = cmp_words(dtypes[*column], row(a)[*column], row(b)[*column])
                    .then_with(|| row(a).cmp(row(b)));
                if *descending {
                    o.reverse()
                } else {
                    o
                }
            });
            for &i in idx.iter().take(*k) {
                push(row(i), 1);
            }
        }
        Agg::Rank {
            order,
            function,
            min_rank,
            max_rank,
            emit,
        } => {
            return super::aggregate_rank::apply(
                order, *function, *min_rank, *max_rank, *emit, dtypes, vw, vals, counts, out_rows,
                out_counts,
            );
        }
        Agg::ThresholdPy { .. } | Agg::Python { .. } => {
            return Err(Error::Plan(format!(
                "{label}: Python aggregates are not built-in"
            )));
        }
        Agg::Group { aggs } => {
            return super::aggregate_group::apply(
                aggs, dtypes, vw, vals, counts, label, out_rows, out_counts,
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::encode_i64;

    /// `sum` and `count` of one key: only the key's result must fit int64, whatever the
    /// partial sums in storage order (the running-total path has always checked only that).
    #[test]
    fn sums_and_counts_check_only_the_final_value() {
        let vals: Vec<u64> = [i64::MAX - 1, 5, -10]
            .iter()
            .map(|&v| encode_i64(v))
            .collect();
        let (mut rows, mut counts) = (Vec::new(), Vec::new());
        let sum = Agg::Sum { column: 0 };
        apply(
            &sum,
            &[DType::Int64],
            1,
            &vals,
            &[1, 1, 1],
            "r",
            &mut rows,
            &mut counts,
        )
        .unwrap();
        assert_eq!(rows, vec![encode_i64(i64::MAX - 6)]);
        let over = [i64::MAX, 1].map(encode_i64);
        let err = apply(
            &sum,
            &[DType::Int64],
            1,
            &over,
            &[1, 1],
            "r",
            &mut rows,
            &mut counts,
        );
        assert!(err.unwrap_err().to_string().contains("overflows int64"));
        let (mut rows, mut counts) = (Vec::new(), Vec::new());
        let three = [encode_i64(1); 3];
        let c = [i64::MAX, 5, -10];
        apply(
            &Agg::Count,
            &[DType::Int64],
            1,
            &three,
            &c,
            "r",
            &mut rows,
            &mut counts,
        )
        .unwrap();
        assert_eq!(rows, vec![encode_i64(i64::MAX - 5)]);
    }
}
