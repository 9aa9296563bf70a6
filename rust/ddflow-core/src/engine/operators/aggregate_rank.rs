//! The `rank` aggregate of `reduce`: SQL's `ROW_NUMBER`, `RANK` and `DENSE_RANK` over one
//! key's rows, keeping the rows whose rank is in `min_rank..=max_rank` (top-k, `LIMIT` / `OFFSET`,
//! `WHERE rn <= k`), with the rank as a last int64 column when `emit`.
//!
//! The rows are the key's val rows with positive count, each counted `count` times (a bag,
//! as SQL's). They are ordered by the `order` keys (each ascending or descending, nulls first
//! or last, nulls peers of each other), then by every val column ascending with nulls last
//! (value order; so two rows tied in `order` are numbered the same way every time, and
//! `ROW_NUMBER` and `LIMIT` keep the rows least by the whole row among tied ones). Copies of
//! one row take consecutive row numbers and share a rank. Output: with `emit`, one row per
//! (row, rank) with the number of its copies holding that rank; without, each kept row
//! with the number of its copies kept.

use crate::encoding::{is_null_word, DType, Interner};
use crate::engine::operators::aggregate::cmp_words;
use crate::engine::plan::{RankFunction, SortKey};
use crate::error::{Error, Result};
use std::cmp::Ordering;
use std::collections::HashMap;

/// Checks the order columns and returns the output dtypes (the val dtypes, then int64 when
/// `emit`).
pub fn output_dtypes(
    order: &[SortKey],
    min_rank: u64,
    emit: bool,
    vals: &[DType],
    label: &str,
) -> Result<Vec<DType>> {
    for key in order {
        if key.column >= vals.len() {
            return Err(Error::Plan(format!(
                "{label}: rank order column {} out of range ({} value columns)",
                key.column,
                vals.len()
            )));
        }
    }
    if min_rank == 0 {
        return Err(Error::Plan(format!(
            "{label}: rank's `min_rank` counts from 1, got 0"
        )));
    }
    let mut out = vals.to_vec();
    if emit {
        out.push(DType::Int64);
    }
    Ok(out)
}

/// The value order of one column's words over the given rows: for string-like columns the
/// strings are resolved once, and each word maps to its rank among them.
struct ColumnOrder {
    dtype: DType,
    ordinals: Option<HashMap<u64, usize>>,
}

impl ColumnOrder {
    fn new(dtype: DType, words: impl Iterator<Item = u64>) -> Result<ColumnOrder> {
        if dtype.physical() != DType::Str {
            return Ok(ColumnOrder {
                dtype,
                ordinals: None,
            });
        }
        let mut ids: Vec<u64> = words.filter(|&w| !is_null_word(dtype, w)).collect();
        ids.sort_unstable();
        ids.dedup();
        let strings = Interner::resolve_all(&ids)?;
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by(|&a, &b| strings[a].cmp(&strings[b]));
        let ordinals = order
            .iter()
            .enumerate()
            .map(|(rank, &i)| (ids[i], rank))
            .collect();
        Ok(ColumnOrder {
            dtype,
            ordinals: Some(ordinals),
        })
    }

    /// Compares two words of this column (descending when `descending`), nulls first when
    /// `nulls_first` (else last) either way.
    fn cmp(&self, a: u64, b: u64, descending: bool, nulls_first: bool) -> Ordering {
        match (is_null_word(self.dtype, a), is_null_word(self.dtype, b)) {
            (true, true) => Ordering::Equal,
            (true, false) if nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            (false, false) => {
                let o = match &self.ordinals {
                    Some(ord) => ord[&a].cmp(&ord[&b]),
                    None => cmp_words(self.dtype, a, b),
                };
                if descending {
                    o.reverse()
                } else {
                    o
                }
            }
        }
    }
}

/// Applies the `rank` aggregate to one key's values (`vals` row-major, `vw` words each).
#[allow(clippy::too_many_arguments)]
pub fn apply(
    order: &[SortKey],
    function: RankFunction,
    min_rank: u64,
    max_rank: Option<u64>,
    emit: bool,
    dtypes: &[DType],
    vw: usize,
    vals: &[u64],
    counts: &[i64],
    out_rows: &mut Vec<u64>,
    out_counts: &mut Vec<i64>,
) -> Result<()> {
    let row = |i: usize| &vals[i * vw..(i + 1) * vw];
    let mut idx: Vec<usize> = (0..counts.len()).filter(|&i| counts[i] > 0).collect();
    if idx.is_empty() {
        return Ok(());
    }
    let columns = dtypes
        .iter()
        .enumerate()
        .map(|(c, &d)| ColumnOrder::new(d, idx.iter().map(|&i| row(i)[c])))
        .collect::<Result<Vec<_>>>()?;
    let by_order = |a: usize, b: usize| -> Ordering {
        for key in order {
            let c = key.column;
            let o = columns[c].cmp(row(a)[c], row(b)[c], key.descending, key.nulls_first);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    };
    let in_order = |a: &usize, b: &usize| -> Ordering {
        let (a, b) = (*a, *b);
        by_order(a, b)
            .then_with(|| {
                (0..vw)
                    .map(|c| columns[c].cmp(row(a)[c], row(b)[c], false, false))
                    .find(|o| *o != Ordering::Equal)
                    .unwrap_or(Ordering::Equal)
            })
            .then_with(|| row(a).cmp(row(b)))
    };
    // With an upper bound `t` on `ROW_NUMBER` or `RANK`, only the first `t` rows in order
    // (each has a count of at least 1) and, for `RANK`, the rows tied with the `t`-th can
    // rank up to `t`: select them in linear time and sort just those.
    let bound = match function {
        RankFunction::RowNumber | RankFunction::Rank => max_rank,
        RankFunction::DenseRank => None,
    };
    if let Some(t) = bound.map(|t| usize::try_from(t).unwrap_or(usize::MAX)) {
        if t == 0 {
            return Ok(());
        }
        if t < idx.len() {
            idx.select_nth_unstable_by(t - 1, in_order);
            let last = idx[t - 1];
            let ties: Vec<usize> = if function == RankFunction::Rank {
                idx[t..]
                    .iter()
                    .copied()
                    .filter(|&i| by_order(i, last) == Ordering::Equal)
                    .collect()
            } else {
                Vec::new()
            };
            idx.truncate(t);
            idx.extend(ties);
        }
    }
    idx.sort_by(in_order);
    let (from, to) = (min_rank, max_rank.unwrap_or(u64::MAX));
    let mut push = |i: usize, rank: u64, copies: u64| {
        out_rows.extend_from_slice(row(i));
        if emit {
            out_rows.push(crate::encoding::encode_i64(rank as i64));
        }
        out_counts.push(copies as i64);
    };
    // `before`: rows (with copies) ahead of this one; `peers_start`: rows ahead of its peer
    // group; `groups`: peer groups up to and including its own.
    let (mut before, mut peers_start, mut groups) = (0u64, 0u64, 0u64);
    for (n, &i) in idx.iter().enumerate() {
        let copies = counts[i] as u64;
        if n == 0 || by_order(idx[n - 1], i) != Ordering::Equal {
            peers_start = before;
            groups += 1;
        }
        match function {
            RankFunction::RowNumber => {
                if before >= to {
                    break;
                }
                let lo = from.max(before + 1);
                let hi = to.min(before + copies);
                if lo <= hi {
                    if emit {
                        for r in lo..=hi {
                            push(i, r, 1);
                        }
                    } else {
                        push(i, lo, hi - lo + 1);
                    }
                }
            }
            RankFunction::Rank | RankFunction::DenseRank => {
                let r = if function == RankFunction::Rank {
                    peers_start + 1
                } else {
                    groups
                };
                if r > to {
                    break;
                }
                if r >= from {
                    push(i, r, copies);
                }
            }
        }
        before += copies;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::{encode_i64, NULL_I64};

    fn run(
        order: &[SortKey],
        function: RankFunction,
        from: u64,
        to: Option<u64>,
        emit: bool,
        rows: &[(i64, i64, i64)],
    ) -> Vec<(Vec<i64>, i64)> {
        let mut vals = Vec::new();
        let mut counts = Vec::new();
        for &(a, b, c) in rows {
            vals.extend([encode_i64(a), encode_i64(b)]);
            counts.push(c);
        }
        let (mut out, mut outc) = (Vec::new(), Vec::new());
        let w = if emit { 3 } else { 2 };
        apply(
            order,
            function,
            from,
            to,
            emit,
            &[DType::Int64, DType::Int64],
            2,
            &vals,
            &counts,
            &mut out,
            &mut outc,
        )
        .unwrap();
        out.chunks(w)
            .map(|r| r.iter().map(|&x| x as i64).collect())
            .zip(outc)
            .collect()
    }

    fn key(column: usize, descending: bool, nulls_first: bool) -> SortKey {
        SortKey {
            column,
            descending,
            nulls_first,
        }
    }

    #[test]
    fn row_number_counts_copies_and_breaks_ties_by_the_row() {
        let null = NULL_I64 as i64;
        let rows = [(1, 9, 2), (1, 3, 1), (null, 0, 1), (2, 0, 1), (5, 5, -1)];
        let order = [key(0, false, false)];
        let got = run(&order, RankFunction::RowNumber, 1, Some(3), false, &rows);
        assert_eq!(got, vec![(vec![1, 3], 1), (vec![1, 9], 2)]);
        let got = run(&order, RankFunction::RowNumber, 2, Some(4), true, &rows);
        assert_eq!(
            got,
            vec![(vec![1, 9, 2], 1), (vec![1, 9, 3], 1), (vec![2, 0, 4], 1)]
        );
        let desc = [key(0, true, true)];
        let got = run(&desc, RankFunction::RowNumber, 1, Some(2), false, &rows);
        assert_eq!(got, vec![(vec![null, 0], 1), (vec![2, 0], 1)]);
    }

    #[test]
    fn rank_and_dense_rank_share_ranks_among_peers() {
        let rows = [(1, 9, 2), (1, 3, 1), (2, 0, 1), (3, 0, 1)];
        let order = [key(0, false, false)];
        let got = run(&order, RankFunction::Rank, 1, None, true, &rows);
        assert_eq!(
            got,
            vec![
                (vec![1, 3, 1], 1),
                (vec![1, 9, 1], 2),
                (vec![2, 0, 4], 1),
                (vec![3, 0, 5], 1)
            ]
        );
        let got = run(&order, RankFunction::DenseRank, 2, Some(2), true, &rows);
        assert_eq!(got, vec![(vec![2, 0, 2], 1)]);
    }

    /// A reference for random inputs: rows expanded by count, sorted by plain `Option<i64>`
    /// comparisons, numbered one by one.
    #[allow(clippy::type_complexity)]
    fn reference(
        order: &[SortKey],
        function: RankFunction,
        from: u64,
        to: Option<u64>,
        rows: &[(i64, i64, i64)],
    ) -> Vec<(Vec<i64>, i64)> {
        let null = NULL_I64 as i64;
        let opt = |v: i64| (v != null).then_some(v);
        let key_cmp = |a: &[i64; 2], b: &[i64; 2], k: &SortKey| -> Ordering {
            match (opt(a[k.column]), opt(b[k.column])) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) if k.nulls_first => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) if k.nulls_first => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) if k.descending => y.cmp(&x),
                (Some(x), Some(y)) => x.cmp(&y),
            }
        };
        let by_order = |a: &[i64; 2], b: &[i64; 2]| -> Ordering {
            order
                .iter()
                .map(|k| key_cmp(a, b, k))
                .find(|o| *o != Ordering::Equal)
                .unwrap_or(Ordering::Equal)
        };
        let mut all: Vec<[i64; 2]> = Vec::new();
        for &(a, b, c) in rows {
            for _ in 0..c.max(0) {
                all.push([a, b]);
            }
        }
        let whole = |a: &[i64; 2], b: &[i64; 2]| -> Ordering {
            let asc = |c| SortKey {
                column: c,
                descending: false,
                nulls_first: false,
            };
            key_cmp(a, b, &asc(0)).then(key_cmp(a, b, &asc(1)))
        };
        all.sort_by(|a, b| by_order(a, b).then_with(|| whole(a, b)));
        let mut out: Vec<(Vec<i64>, i64)> = Vec::new();
        let (mut rank, mut dense) = (0u64, 0u64);
        for (i, r) in all.iter().enumerate() {
            if i == 0 || by_order(&all[i - 1], r) != Ordering::Equal {
                rank = i as u64 + 1;
                dense += 1;
            }
            let v = match function {
                RankFunction::RowNumber => i as u64 + 1,
                RankFunction::Rank => rank,
                RankFunction::DenseRank => dense,
            };
            if v >= from && to.is_none_or(|t| v <= t) {
                out.push((vec![r[0], r[1], v as i64], 1));
            }
        }
        out
    }

    /// The same multiset of (row, rank) when each output row is repeated by its count.
    fn expanded(rows: Vec<(Vec<i64>, i64)>) -> Vec<Vec<i64>> {
        let mut out: Vec<Vec<i64>> = rows
            .into_iter()
            .flat_map(|(r, c)| std::iter::repeat_n(r, c as usize))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn random_rankings_match_the_reference() {
        let null = NULL_I64 as i64;
        let mut seed: u64 = 7;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..400 {
            let n = next(24) as usize;
            let mut rows = Vec::new();
            for _ in 0..n {
                let mut v = || {
                    if next(5) == 0 {
                        null
                    } else {
                        next(4) as i64 - 1
                    }
                };
                let (a, b) = (v(), v());
                rows.push((a, b, next(4) as i64 - 1));
            }
            rows.sort();
            rows.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
            let order: Vec<SortKey> = (0..next(3))
                .map(|_| key(next(2) as usize, next(2) == 0, next(2) == 0))
                .collect();
            let function = [
                RankFunction::RowNumber,
                RankFunction::Rank,
                RankFunction::DenseRank,
            ][next(3) as usize];
            let from = 1 + next(4);
            let to = (next(3) != 0).then(|| next(8));
            let got = run(&order, function, from, to, true, &rows);
            let want = reference(&order, function, from, to, &rows);
            assert_eq!(
                expanded(got),
                expanded(want),
                "{order:?} {function:?} {from}..{to:?} {rows:?}"
            );
            // Without the rank column: the same rows, counted.
            let plain = run(&order, function, from, to, false, &rows);
            let mut rows_only: Vec<Vec<i64>> = expanded(plain);
            let mut want_rows: Vec<Vec<i64>> =
                expanded(reference(&order, function, from, to, &rows))
                    .into_iter()
                    .map(|r| r[..2].to_vec())
                    .collect();
            rows_only.sort();
            want_rows.sort();
            assert_eq!(rows_only, want_rows);
        }
    }
}
