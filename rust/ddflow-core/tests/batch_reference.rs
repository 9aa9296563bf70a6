//! Oracle tests of `ddflow_core::batch`: each whole-batch operator against a naive
//! recomputation on random updates with two-dimensional (partially ordered) times.
//!
//! `select` and `filter` against the expression computed per row; `consolidate` and
//! `arrange` against a map from (row, time) to summed diff; `join`,
//! `semijoin` and `antijoin` against nested loops over the two sides; `reduce` (`count`,
//! `sum`, `min`) by accumulating its output at every time of a grid and comparing it with
//! the aggregate of the input accumulated there.

use ddflow_core::batch;
use ddflow_core::encoding::{decode_i64, encode_i64, DType};
use ddflow_core::engine::column::NoCallbacks;
use ddflow_core::engine::plan::{Agg, JoinKind};
use ddflow_core::expr::{col, lit};
use ddflow_core::lattice::{Lattice, PartialOrder};
use ddflow_core::{Time, Updates};
use proptest::prelude::*;
use std::collections::BTreeMap;

type Sums = BTreeMap<(Vec<u64>, Time), i64>;

fn updates(width: usize, rows: &[(Vec<u64>, [u64; 2], i64)]) -> Updates {
    let mut u = Updates::new(width);
    for (r, t, d) in rows {
        u.push(r, Time::from_coords(t), *d);
    }
    u
}

fn sums(u: &Updates) -> Sums {
    let mut m = Sums::new();
    for i in 0..u.len() {
        *m.entry((u.row(i).to_vec(), u.times[i])).or_default() += u.diffs[i];
    }
    m.retain(|_, d| *d != 0);
    m
}

/// Random updates of two columns (a key in 0..4, a value in 0..4), times in a 4x4 grid.
fn rows() -> impl Strategy<Value = Vec<(Vec<u64>, [u64; 2], i64)>> {
    proptest::collection::vec((0u64..4, 0u64..4, 0u64..4, 0u64..4, -2i64..3), 0..40).prop_map(|v| {
        v.into_iter()
            .map(|(k, x, a, b, d)| (vec![k, encode_i64(x as i64)], [a, b], d))
            .collect()
    })
}

fn is_arranged(u: &Updates) -> bool {
    (1..u.len()).all(|i| (u.row(i - 1), u.times[i - 1]) < (u.row(i), u.times[i]))
        && u.diffs.iter().all(|&d| d != 0)
}

/// A value of the accumulated collection at `t`: `row -> count`, zeros dropped.
fn at(u: &Updates, t: &Time) -> BTreeMap<Vec<u64>, i64> {
    let mut m = BTreeMap::new();
    for i in 0..u.len() {
        if u.times[i].less_equal(t) {
            *m.entry(u.row(i).to_vec()).or_default() += u.diffs[i];
        }
    }
    m.retain(|_, d| *d != 0);
    m
}

fn grid() -> Vec<Time> {
    (0..5)
        .flat_map(|a| (0..5).map(move |b| Time::from_coords(&[a, b])))
        .collect()
}

proptest! {
    #[test]
    fn select_and_filter_evaluate_every_row(r in rows()) {
        let u = updates(2, &r);
        let columns = [("k".to_string(), DType::Int64), ("x".to_string(), DType::Int64)];
        let sel = batch::select(&[col("x") * lit(2i64) + col("k")], &columns, &u).unwrap();
        prop_assert_eq!(&sel.dtypes, &vec![DType::Int64]);
        prop_assert_eq!(&sel.updates.times, &u.times);
        prop_assert_eq!(&sel.updates.diffs, &u.diffs);
        for i in 0..u.len() {
            let (k, x) = (decode_i64(u.row(i)[0]), decode_i64(u.row(i)[1]));
            prop_assert_eq!(decode_i64(sel.updates.row(i)[0]), 2 * x + k);
        }
        let kept = batch::filter(&col("x").gt(col("k")), &columns, &u).unwrap();
        let mut expected = Updates::new(2);
        for i in 0..u.len() {
            if decode_i64(u.row(i)[1]) > decode_i64(u.row(i)[0]) {
                expected.push(u.row(i), u.times[i], u.diffs[i]);
            }
        }
        prop_assert_eq!(kept, expected);
    }

    #[test]
    fn consolidate_sums_per_row_and_time(r in rows()) {
        let mut u = updates(2, &r);
        let expected = sums(&u);
        batch::consolidate(&mut u).unwrap();
        prop_assert!(is_arranged(&u));
        prop_assert_eq!(sums(&u), expected);
    }

    #[test]
    fn arrange_moves_the_key_first(r in rows()) {
        let u = updates(2, &r);
        let swapped: Sums = sums(&u)
            .into_iter()
            .map(|((row, t), d)| ((vec![row[1], row[0]], t), d))
            .collect();
        let a = batch::arrange(u, &[1]).unwrap();
        prop_assert!(is_arranged(&a));
        prop_assert_eq!(sums(&a), swapped);
    }

    #[test]
    fn join_matches_nested_loops(l in rows(), r in rows()) {
        let left = batch::arrange(updates(2, &l), &[0]).unwrap();
        let right = batch::arrange(updates(2, &r), &[0]).unwrap();
        let (mut join, mut semi) = (Sums::new(), Sums::new());
        for i in 0..left.len() {
            for j in 0..right.len() {
                if left.row(i)[0] != right.row(j)[0] {
                    continue;
                }
                let t = left.times[i].join(&right.times[j]);
                let d = left.diffs[i] * right.diffs[j];
                let lr = left.row(i);
                *join.entry((vec![lr[0], lr[1], right.row(j)[1]], t)).or_default() += d;
                *semi.entry((lr.to_vec(), t)).or_default() += d;
            }
        }
        let mut anti = sums(&left);
        for (k, d) in &semi {
            *anti.entry(k.clone()).or_default() -= d;
        }
        for m in [&mut join, &mut semi, &mut anti] {
            m.retain(|_, d| *d != 0);
        }
        for (kind, expected) in [
            (JoinKind::Join, join),
            (JoinKind::Semijoin, semi),
            (JoinKind::Antijoin, anti),
        ] {
            let out = batch::join(kind, 1, &left, &right).unwrap();
            prop_assert!(out.overflow.is_empty());
            prop_assert_eq!(sums(&out.updates), expected, "{:?}", kind);
        }
    }

    #[test]
    fn reduce_matches_the_aggregate_at_every_time(r in rows()) {
        let input = batch::arrange(updates(2, &r), &[0]).unwrap();
        let names = ["k".to_string(), "x".to_string()];
        let dtypes = [DType::Int64, DType::Int64];
        for agg in [Agg::Count, Agg::Sum { column: 0 }, Agg::Min { column: 0 }] {
            let out = batch::reduce(&agg, 1, &dtypes, &names, &input, &NoCallbacks).unwrap();
            prop_assert!(out.errors.is_empty());
            for t in grid() {
                let mut per_key: BTreeMap<u64, BTreeMap<i64, i64>> = BTreeMap::new();
                for (row, c) in at(&input, &t) {
                    *per_key.entry(row[0]).or_default().entry(decode_i64(row[1])).or_default() += c;
                }
                let mut expected = BTreeMap::new();
                for (k, vals) in per_key {
                    let total: i64 = vals.values().sum();
                    let value = match agg {
                        Agg::Count => (total != 0).then_some(total),
                        Agg::Sum { .. } => Some(vals.iter().map(|(v, c)| v * c).sum()),
                        _ => vals.iter().find(|(_, &c)| c > 0).map(|(&v, _)| v),
                    };
                    if let Some(v) = value {
                        expected.insert(vec![k, encode_i64(v)], 1);
                    }
                }
                prop_assert_eq!(at(&out.updates, &t), expected, "{:?} at {:?}", agg, t);
            }
        }
    }
}

#[test]
fn unarranged_input_is_an_error() {
    let u = updates(2, &[(vec![2, 0], [0, 0], 1), (vec![1, 0], [0, 0], 1)]);
    let e = batch::join(JoinKind::Join, 1, &u, &u).unwrap_err();
    assert!(e.to_string().contains("arrange"), "{e}");
}
