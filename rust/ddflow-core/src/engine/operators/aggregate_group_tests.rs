//! Tests of `aggregate_group`: every part against a naive reference on random multisets of
//! vals with negative counts, the order of the vals not mattering, dtypes and JSON.

use super::*;
use crate::encoding::encode_bool;
use crate::engine::plan::Agg;
use proptest::prelude::*;

/// Val columns of the random groups: int64 `a`, float64 `b`, bool `c`.
const DTYPES: [DType; 3] = [DType::Int64, DType::Float64, DType::Bool];

fn all_parts() -> Vec<GroupAgg> {
    let n = String::new;
    vec![
        GroupAgg::Count {
            column: None,
            name: n(),
        },
        GroupAgg::Sum {
            column: 0,
            name: "total".into(),
        },
        GroupAgg::Sum {
            column: 1,
            name: n(),
        },
        GroupAgg::Mean {
            column: 0,
            name: n(),
        },
        GroupAgg::Mean {
            column: 1,
            name: "avg".into(),
        },
        GroupAgg::Min {
            column: 0,
            name: n(),
        },
        GroupAgg::Max {
            column: 1,
            name: n(),
        },
        GroupAgg::Min {
            column: 2,
            name: n(),
        },
        GroupAgg::Max {
            column: 2,
            name: n(),
        },
        GroupAgg::CountDistinct {
            column: 0,
            name: n(),
        },
        GroupAgg::CountDistinct {
            column: 2,
            name: n(),
        },
        GroupAgg::Count {
            column: Some(0),
            name: "n_a".into(),
        },
    ]
}

/// A group's vals: `(a, b, c, count)`; `a == i64::MIN` is a null (int64's null word).
type Vals = [(i64, f64, bool, i64)];

/// What a group yields: no row, a row of decoded values, or an error of a kind.
#[derive(Debug, PartialEq)]
enum Outcome {
    Absent,
    Row(Vec<Value>),
    Err(&'static str),
}

#[derive(Debug, PartialEq)]
enum Value {
    I(i64),
    F(f64),
    B(bool),
    Null,
}

/// The reference: each part straight from its definition, over `(value, count)` pairs, with
/// SQL nulls in `a` as `None`.
fn reference(parts: &[GroupAgg], vals: &Vals) -> Outcome {
    let total: i128 = vals.iter().map(|v| v.3 as i128).sum();
    if total == 0 {
        return Outcome::Absent;
    }
    let a = |v: &(i64, f64, bool, i64)| (v.0 != i64::MIN).then_some(v.0);
    let non_null_a: i128 = vals
        .iter()
        .filter(|v| a(v).is_some())
        .map(|v| v.3 as i128)
        .sum();
    let int_sum: i128 = vals
        .iter()
        .filter_map(|v| a(v).map(|x| x as i128 * v.3 as i128))
        .sum();
    let float_sum: f64 = vals.iter().map(|v| v.1 * v.3 as f64).sum();
    let mut row = Vec::new();
    for p in parts {
        let v = match p {
            GroupAgg::Count { column, .. } => {
                let n = if column.is_some() { non_null_a } else { total };
                match i64::try_from(n) {
                    Ok(n) => Value::I(n),
                    Err(_) => return Outcome::Err("overflow"),
                }
            }
            GroupAgg::Sum { column: 0, .. } if non_null_a == 0 => Value::Null,
            GroupAgg::Sum { column: 0, .. } => match i64::try_from(int_sum) {
                Ok(s) if s != i64::MIN => Value::I(s),
                _ => return Outcome::Err("overflow"),
            },
            GroupAgg::Sum { .. } => Value::F(float_sum),
            GroupAgg::Mean { column: 0, .. } if non_null_a == 0 => Value::Null,
            GroupAgg::Mean { column, .. } => {
                let (s, n) = if *column == 0 {
                    (int_sum as f64, non_null_a)
                } else {
                    (float_sum, total)
                };
                Value::F(s / n as f64)
            }
            GroupAgg::CountDistinct { column, .. } => {
                // Values (nulls excepted) whose accumulated count is positive.
                let mut acc: Vec<(u64, i128)> = Vec::new();
                for v in vals.iter() {
                    let key = match column {
                        0 => match a(v) {
                            Some(x) => x as u64,
                            None => continue,
                        },
                        1 => v.1.to_bits(),
                        _ => v.2 as u64,
                    };
                    match acc.iter_mut().find(|e| e.0 == key) {
                        Some(e) => e.1 += v.3 as i128,
                        None => acc.push((key, v.3 as i128)),
                    }
                }
                Value::I(acc.iter().filter(|e| e.1 > 0).count() as i64)
            }
            GroupAgg::Min { column, .. } | GroupAgg::Max { column, .. } => {
                // Over the column's values with their accumulated counts (a value may repeat
                // beside other columns' values): the extreme of those with a positive count;
                // null when none is positive but the nulls' count is; else undefined.
                let is_min = matches!(p, GroupAgg::Min { .. });
                let mut acc: Vec<(Option<Value>, i128)> = Vec::new();
                for v in vals.iter() {
                    let value = match column {
                        0 => a(v).map(Value::I),
                        1 => Some(Value::F(v.1)),
                        _ => Some(Value::B(v.2)),
                    };
                    match acc.iter_mut().find(|e| e.0 == value) {
                        Some(e) => e.1 += v.3 as i128,
                        None => acc.push((value, v.3 as i128)),
                    }
                }
                let nulls: i128 = acc.iter().filter(|e| e.0.is_none()).map(|e| e.1).sum();
                let key = |x: &Value| match x {
                    Value::I(i) => *i as f64,
                    Value::F(f) => *f,
                    Value::B(b) => *b as u8 as f64,
                    Value::Null => unreachable!(),
                };
                let mut best: Option<Value> = None;
                for (value, n) in acc {
                    let Some(x) = value else { continue };
                    if n > 0 {
                        let better = match &best {
                            None => true,
                            Some(b) if is_min => key(&x).total_cmp(&key(b)).is_lt(),
                            Some(b) => key(&x).total_cmp(&key(b)).is_gt(),
                        };
                        if better {
                            best = Some(x);
                        }
                    }
                }
                match best {
                    Some(x) => x,
                    None if nulls > 0 => Value::Null,
                    None => return Outcome::Err("value error"),
                }
            }
        };
        row.push(v);
    }
    Outcome::Row(row)
}

/// Runs `apply` on the vals and decodes its result.
fn run(parts: &[GroupAgg], vals: &Vals) -> Outcome {
    let words: Vec<u64> = vals
        .iter()
        .flat_map(|v| [encode_i64(v.0), encode_f64(v.1), encode_bool(v.2)])
        .collect();
    let counts: Vec<i64> = vals.iter().map(|v| v.3).collect();
    let (mut rows, mut out_counts) = (vec![7u64], vec![3i64]);
    let res = apply(
        parts,
        &DTYPES,
        3,
        &words,
        &counts,
        "g",
        &mut rows,
        &mut out_counts,
    );
    let out_types = output_dtypes(parts, &DTYPES, "g").unwrap();
    match res {
        Err(e) => {
            assert_eq!(
                (rows.len(), out_counts.len()),
                (1, 1),
                "nothing appended on error"
            );
            let text = e.to_string();
            assert!(text.contains("g: "), "{text}");
            Outcome::Err(
                ["overflow", "division by zero", "value error"]
                    .into_iter()
                    .find(|k| text.starts_with(k))
                    .unwrap_or("other"),
            )
        }
        Ok(()) if out_counts.len() == 1 => Outcome::Absent,
        Ok(()) => {
            assert_eq!(out_counts, vec![3, 1]);
            assert_eq!(rows.len(), 1 + parts.len());
            let row = rows[1..]
                .iter()
                .zip(&out_types)
                .map(|(&w, d)| match d {
                    _ if crate::encoding::is_null_word(*d, w) => Value::Null,
                    DType::Int64 => Value::I(decode_i64(w)),
                    DType::Float64 => Value::F(decode_f64(w)),
                    _ => Value::B(w != 0),
                })
                .collect();
            Outcome::Row(row)
        }
    }
}

fn int_value() -> impl Strategy<Value = i64> {
    // i64::MIN is int64's null word: a null.
    prop_oneof![
        8 => -6i64..7,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN + 1),
        2 => Just(i64::MIN)
    ]
}

fn group() -> impl Strategy<Value = Vec<(i64, f64, bool, i64)>> {
    // Halves keep float sums exact, so the order of the vals cannot change them.
    let val = (int_value(), -8i32..9, any::<bool>(), -3i64..4)
        .prop_filter("non-zero count", |v| v.3 != 0)
        .prop_map(|(a, b, c, n)| (a, f64::from(b) * 0.5, c, n));
    proptest::collection::vec(val, 0..8)
}

fn parts() -> impl Strategy<Value = Vec<GroupAgg>> {
    proptest::sample::subsequence(all_parts(), 1..=9).prop_shuffle()
}

proptest! {
    #[test]
    fn matches_the_reference(parts in parts(), vals in group()) {
        prop_assert_eq!(run(&parts, &vals), reference(&parts, &vals));
    }

    #[test]
    fn the_order_of_the_vals_does_not_matter(vals in group(), seed in any::<u64>()) {
        let parts = all_parts();
        let mut shuffled = vals.clone();
        let n = shuffled.len();
        if n > 1 {
            for i in 0..n {
                shuffled.swap(i, (seed.rotate_left(i as u32) as usize) % n);
            }
        }
        prop_assert_eq!(run(&parts, &shuffled), run(&parts, &vals));
    }
}

#[test]
fn fixed_groups() {
    let parts = all_parts();
    // Counts summing to 0: absent, whatever the sums (the count is SQL's `count(*)`).
    let cancel = vec![(1, 0.5, true, 1), (2, 1.0, false, -1)];
    let count_sum = [
        GroupAgg::Count {
            column: None,
            name: String::new(),
        },
        parts[1].clone(),
    ];
    assert_eq!(run(&count_sum, &cancel), Outcome::Absent);
    assert_eq!(run(&parts, &cancel), Outcome::Absent);
    // Only negative counts: min/max undefined.
    let negative = vec![(4, 2.0, true, -2)];
    assert_eq!(run(&parts[5..6], &negative), Outcome::Err("value error"));
    // An intermediate int64 overflow that the final sum does not have is not an error.
    let big = vec![
        (i64::MAX, 0.0, true, 1),
        (i64::MAX, 0.0, true, 1),
        (i64::MIN + 1, 0.0, true, 1),
    ];
    assert_eq!(
        run(&parts[1..2], &big),
        Outcome::Row(vec![Value::I(i64::MAX)])
    );
    // Only nulls: sum, mean, min are null; count(a) is 0; count() counts rows.
    let nulls = vec![(i64::MIN, 1.0, true, 2)];
    assert_eq!(
        run(
            &[
                parts[0].clone(),
                parts[1].clone(),
                parts[3].clone(),
                parts[5].clone(),
                parts[9].clone()
            ],
            &nulls
        ),
        Outcome::Row(vec![
            Value::I(2),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::I(0)
        ])
    );
    // A sum of exactly i64::MIN would read as null: an overflow.
    let min_sum = vec![(i64::MIN + 1, 0.0, true, 1), (-1, 0.0, true, 1)];
    assert_eq!(run(&parts[1..2], &min_sum), Outcome::Err("overflow"));
    assert_eq!(run(&parts, &[]), Outcome::Absent);
}

#[test]
fn dtypes_and_refusals() {
    let parts = all_parts();
    let d = output_dtypes(&parts, &DTYPES, "g").unwrap();
    use DType::*;
    assert_eq!(
        d,
        vec![
            Int64, Int64, Float64, Float64, Float64, Int64, Float64, Bool, Bool, Int64, Int64,
            Int64
        ]
    );
    let e = output_dtypes(
        &[GroupAgg::Mean {
            column: 2,
            name: "m".into(),
        }],
        &DTYPES,
        "g",
    );
    assert!(e
        .unwrap_err()
        .to_string()
        .contains("mean 'm' needs a numeric or decimal column, got bool"));
    let e = output_dtypes(
        &[GroupAgg::Sum {
            column: 5,
            name: String::new(),
        }],
        &DTYPES,
        "g",
    );
    assert!(e.unwrap_err().to_string().contains("out of range"));
    assert!(output_dtypes(&[], &DTYPES, "g").is_err());
}

#[test]
fn json_round_trip() {
    let text = r#"{"kind":"group","aggs":[{"kind":"sum","column":0,"name":"total"},
        {"kind":"count"},{"kind":"mean","column":1},{"kind":"min","column":2},
        {"kind":"max","column":2,"name":"hi"}]}"#;
    let agg = Agg::from_json(text).unwrap();
    let Agg::Group { aggs } = &agg else {
        panic!("{agg:?}")
    };
    assert_eq!(aggs.len(), 5);
    let back = serde_json::to_string(&agg).unwrap();
    assert_eq!(back, text.split_whitespace().collect::<String>());
    assert!(Agg::from_json(r#"{"kind":"group","aggs":[{"kind":"distinct"}]}"#).is_err());
}

/// Parts that have running totals over `DTYPES` (count, int64 and float64 sum and mean,
/// min, max and count_distinct).
fn linear_parts() -> Vec<GroupAgg> {
    all_parts()
        .into_iter()
        .filter(|p| has_running_totals(std::slice::from_ref(p), &DTYPES))
        .collect()
}

proptest! {
    /// Folding updates one by one into running totals gives what `apply` gives on their
    /// consolidation, whatever the order of the updates.
    #[test]
    fn running_totals_match_apply(updates in group(), parts in proptest::sample::subsequence(linear_parts(), 1..=3)) {
        prop_assert!(has_running_totals(&parts, &DTYPES));
        let mut totals = RunningTotals::default();
        totals.reset(&parts);
        let mut folded = Ok(());
        for &(a, b, c, n) in &updates {
            let row = [encode_i64(a), encode_f64(b), encode_bool(c)];
            folded = folded.and_then(|()| totals.fold(&parts, &DTYPES, &row, n, "g"));
        }
        // Consolidate by val row (the updates may repeat a row).
        let mut acc: Vec<(i64, f64, bool, i64)> = Vec::new();
        for &(a, b, c, n) in &updates {
            match acc.iter_mut().find(|v| (v.0, v.1.to_bits(), v.2) == (a, b.to_bits(), c)) {
                Some(v) => v.3 += n,
                None => acc.push((a, b, c, n)),
            }
        }
        acc.retain(|v| v.3 != 0);
        let want = run(&parts, &acc);
        prop_assume!(folded.is_ok()); // 128-bit overflow needs far more updates
        let got = if !totals.is_present() {
            Outcome::Absent
        } else {
            let mut out = Vec::new();
            match totals.write(&parts, &DTYPES, "g", &mut out) {
                Err(e) => Outcome::Err(["overflow", "division by zero", "value error"]
                    .into_iter()
                    .find(|k| e.to_string().starts_with(k))
                    .unwrap_or("other")),
                Ok(()) => Outcome::Row(
                    out.iter()
                        .zip(output_dtypes(&parts, &DTYPES, "g").unwrap())
                        .map(|(&w, d)| match d {
                            _ if crate::encoding::is_null_word(d, w) => Value::Null,
                            DType::Int64 => Value::I(decode_i64(w)),
                            DType::Bool => Value::B(w != 0),
                            _ => Value::F(decode_f64(w)),
                        })
                        .collect(),
                ),
            }
        };
        prop_assert_eq!(got, want);
    }
}

#[test]
fn which_groups_have_running_totals() {
    let parts = all_parts();
    // count() and count(a), sum and mean of a and of the float b (exact sums), min / max of
    // every column, count_distinct: every part.
    assert_eq!(linear_parts().len(), parts.len());
    assert!(has_running_totals(&parts, &DTYPES));
    assert!(
        has_running_totals(&parts[2..3], &DTYPES),
        "float sums carry exact running totals"
    );
}

proptest! {
    /// `min` / `max` / `count_distinct` of a `str` column carried as running totals follow
    /// text order (ids are not), whatever the order of the updates and with retractions.
    #[test]
    fn running_string_extremes_follow_text_order(
        updates in proptest::collection::vec((0usize..6, -2i64..=3), 1..40),
    ) {
        let words = ["pear", "apple", "", "zebra", "Apple", "émile"];
        let mut ids = Vec::new();
        crate::encoding::Interner::intern_all(words.iter().copied(), &mut ids);
        let parts = vec![
            GroupAgg::Min { column: 0, name: String::new() },
            GroupAgg::Max { column: 0, name: String::new() },
            GroupAgg::CountDistinct { column: 0, name: String::new() },
        ];
        let dtypes = [DType::Str];
        prop_assert!(has_running_totals(&parts, &dtypes));
        let mut totals = RunningTotals::default();
        totals.reset(&parts);
        let mut counts = [0i64; 6];
        for &(i, n) in &updates {
            totals.fold(&parts, &dtypes, &[ids[i]], n, "g").unwrap();
            counts[i] += n;
        }
        let positive: Vec<&str> = (0..6).filter(|&i| counts[i] > 0).map(|i| words[i]).collect();
        if !totals.is_present() {
            prop_assert_eq!(counts.iter().sum::<i64>(), 0);
            return Ok(());
        }
        let mut out = Vec::new();
        let wrote = totals.write(&parts, &dtypes, "g", &mut out);
        match (positive.iter().min(), positive.iter().max()) {
            (Some(lo), Some(hi)) => {
                prop_assert!(wrote.is_ok());
                let text = |w: u64| crate::encoding::Interner::resolve_all(&[w]).unwrap()[0].to_string();
                prop_assert_eq!(text(out[0]), lo.to_string());
                prop_assert_eq!(text(out[1]), hi.to_string());
                prop_assert_eq!(decode_i64(out[2]), positive.len() as i64);
            }
            _ => prop_assert!(wrote.is_err()),
        }
    }
}
