//! Tests of the expression library through the whole path (JSON, binding, evaluation on
//! columns): display and JSON forms, dtypes, plan and type errors, error rows, and property
//! tests of every function against a naive per-row reference.

use super::func::Func;
use super::*;
use crate::encoding::Interner;
use crate::error::Error;
use proptest::prelude::*;

fn f(func: Func, args: Vec<Expr>) -> Expr {
    Expr::Func(func, args)
}

fn schema() -> Vec<(String, DType)> {
    vec![
        ("i".into(), DType::Int64),
        ("j".into(), DType::Int64),
        ("x".into(), DType::Float64),
        ("s".into(), DType::Str),
        ("t".into(), DType::Str),
    ]
}

/// Evaluates `e` on the columns `i, j, x, s, t`.
fn run(
    e: &Expr,
    i: &[i64],
    j: &[i64],
    x: &[f64],
    s: &[String],
    t: &[String],
) -> Result<Column, Error> {
    let mut sid = Vec::new();
    Interner::intern_all(s.iter().map(String::as_str), &mut sid);
    let mut tid = Vec::new();
    Interner::intern_all(t.iter().map(String::as_str), &mut tid);
    let cols = [
        Some(ColumnRef::Int64(i)),
        Some(ColumnRef::Int64(j)),
        Some(ColumnRef::Float64(x)),
        Some(ColumnRef::Str(&sid)),
        Some(ColumnRef::Str(&tid)),
    ];
    e.bind(&schema())?.eval_columns(&cols, i.len())
}

fn strs(c: &Column) -> Vec<String> {
    match c {
        Column::Str(ids) => Interner::resolve_all(ids)
            .unwrap()
            .iter()
            .map(|s| s.to_string())
            .collect(),
        other => panic!("not str: {other:?}"),
    }
}

fn lit_str(v: &str) -> Expr {
    lit(v)
}

#[test]
fn display_and_json_roundtrip() {
    let cases: Vec<(Expr, &str)> = vec![
        (
            f(Func::IsIn(vec![1.into(), 2.5.into()]), vec![col("i")]),
            r#"col("i").is_in([1, 2.5])"#,
        ),
        (f(Func::Abs, vec![lit(-3)]), "lit(-3).abs()"),
        (f(Func::Round(2), vec![col("x")]), r#"col("x").round(2)"#),
        (f(Func::Pow, vec![col("x"), lit(2)]), r#"col("x").pow(2)"#),
        (
            f(Func::Rem, vec![col("i"), col("j")]),
            r#"col("i").rem(col("j"))"#,
        ),
        (
            f(Func::LenChars, vec![col("s")]),
            r#"col("s").str.len_chars()"#,
        ),
        (
            f(
                Func::Contains {
                    pattern: "a+".into(),
                    literal: false,
                },
                vec![col("s")],
            ),
            r#"col("s").str.contains("a+", literal=False)"#,
        ),
        (
            f(
                Func::Slice {
                    offset: -2,
                    length: None,
                },
                vec![col("s")],
            ),
            r#"col("s").str.slice(-2, None)"#,
        ),
        (
            f(
                Func::Replace {
                    pattern: "a".into(),
                    value: "b".into(),
                    literal: true,
                },
                vec![col("s")],
            ),
            r#"col("s").str.replace("a", "b", literal=True)"#,
        ),
        (
            f(Func::ConcatStr("-".into()), vec![col("s"), lit_str("x")]),
            r#"concat_str([col("s"), "x"], separator="-")"#,
        ),
        (
            f(Func::Like("a%".into()), vec![col("s")]),
            r#"col("s").str.like("a%")"#,
        ),
    ];
    for (e, text) in cases {
        assert_eq!(e.to_string(), text);
        let back = Expr::from_json_str(&e.to_json().to_string()).unwrap();
        assert_eq!(back, e, "{text}");
    }
}

#[test]
fn every_function_has_its_op_name() {
    let all = [
        Func::IsIn(vec![]),
        Func::Abs,
        Func::Round(0),
        Func::Floor,
        Func::Ceil,
        Func::Sqrt,
        Func::Log,
        Func::Exp,
        Func::Pow,
        Func::Rem,
        Func::LenChars,
        Func::Lower,
        Func::Upper,
        Func::Strip,
        Func::StartsWith(String::new()),
        Func::EndsWith(String::new()),
        Func::Contains {
            pattern: String::new(),
            literal: true,
        },
        Func::Like(String::new()),
        Func::Slice {
            offset: 0,
            length: None,
        },
        Func::Replace {
            pattern: String::new(),
            value: String::new(),
            literal: true,
        },
        Func::ConcatStr(String::new()),
        Func::DtEpoch(String::new()),
        Func::DtTruncate(String::new()),
        Func::DtOffsetBy(String::new()),
    ];
    let all: Vec<Func> = all
        .into_iter()
        .chain(super::calendar::DtPart::ALL.map(Func::Dt))
        .collect();
    let mut names: Vec<&str> = all.iter().map(Func::json_name).collect();
    let mut want = FUNC_OPS.to_vec();
    names.sort_unstable();
    want.sort_unstable();
    assert_eq!(names, want);
}

#[test]
fn plan_and_type_errors() {
    let p = Expr::from_json_str;
    let bad_regex =
        r#"{"op":"str.contains","arg":{"op":"col","name":"s"},"pattern":"(a","literal":false}"#;
    assert!(matches!(p(bad_regex), Err(Error::Plan(m)) if m.contains("invalid regex")));
    let literal =
        r#"{"op":"str.contains","arg":{"op":"col","name":"s"},"pattern":"(a","literal":true}"#;
    assert!(p(literal).is_ok());
    let bad_like = r#"{"op":"str.like","arg":{"op":"col","name":"s"},"pattern":"a\\"}"#;
    assert!(matches!(p(bad_like), Err(Error::Plan(_))));
    let neg = r#"{"op":"str.slice","arg":{"op":"col","name":"s"},"offset":0,"length":-1}"#;
    assert!(matches!(p(neg), Err(Error::Plan(_))));
    let round = r#"{"op":"round","arg":{"op":"col","name":"x"},"decimals":-1}"#;
    assert!(matches!(p(round), Err(Error::Plan(_))));
    let pow1 = r#"{"op":"pow","args":[{"op":"col","name":"x"}]}"#;
    assert!(matches!(p(pow1), Err(Error::Plan(_))));
    for e in [
        f(Func::Abs, vec![col("s")]),
        f(Func::LenChars, vec![col("i")]),
        f(Func::IsIn(vec!["a".into()]), vec![col("i")]),
        f(Func::ConcatStr(String::new()), vec![col("s"), col("i")]),
        f(Func::Pow, vec![col("x"), col("s")]),
    ] {
        let err = e.bind(&schema()).unwrap_err();
        assert!(
            matches!(err, Error::Type(ref m) if m.contains(&e.to_string())),
            "{err}"
        );
    }
    let dtype = |e: Expr| e.bind(&schema()).unwrap().dtype();
    assert_eq!(dtype(f(Func::Round(1), vec![col("i")])), DType::Int64);
    assert_eq!(dtype(f(Func::Floor, vec![col("x")])), DType::Float64);
    assert_eq!(dtype(f(Func::Sqrt, vec![col("i")])), DType::Float64);
    assert_eq!(
        dtype(f(Func::Rem, vec![col("i"), col("x")])),
        DType::Float64
    );
    assert_eq!(
        dtype(f(Func::Pow, vec![col("i"), col("j")])),
        DType::Float64
    );
    assert_eq!(dtype(f(Func::LenChars, vec![col("s")])), DType::Int64);
}

#[test]
fn error_rows_and_masks() {
    let e = f(Func::Abs, vec![col("i")]);
    let err = run(
        &e,
        &[1, i64::MIN],
        &[0, 0],
        &[0.0; 2],
        &["a".into(), "b".into()],
        &["".into(), "".into()],
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::Overflow(ref m) if m.contains("row 1") && m.contains("abs(")),
        "{err}"
    );
    let e = f(Func::Rem, vec![col("i"), col("j")]);
    let err = run(
        &e,
        &[7, 7],
        &[2, 0],
        &[0.0; 2],
        &["a".into(), "b".into()],
        &["".into(), "".into()],
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::DivisionByZero(ref m) if m.contains("7.rem(0)")),
        "{err}"
    );
    // Guarded by when: the failing rows are not selected.
    let guarded = when(col("j").not_equal(lit(0)), e, lit(-1));
    let out = run(
        &guarded,
        &[7, -7],
        &[2, 0],
        &[0.0; 2],
        &["a".into(), "b".into()],
        &["".into(), "".into()],
    )
    .unwrap();
    assert_eq!(out, Column::Int64(vec![1, -1]));
}

fn arb_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just('a'),
            Just('B'),
            Just(' '),
            Just('\t'),
            Just('é'),
            Just('Σ'),
            Just('ß'),
            any::<char>()
        ],
        0..6,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn slice_ref(s: &str, offset: i64, length: Option<i64>) -> String {
    let cs: Vec<char> = s.chars().collect();
    let n = cs.len() as i64;
    let start = if offset >= 0 { offset } else { n + offset };
    let end = length.map_or(n, |l| start + l);
    let (a, b) = (start.clamp(0, n), end.clamp(0, n));
    if b <= a {
        String::new()
    } else {
        cs[a as usize..b as usize].iter().collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn prop_functions_match_reference(
        rows in prop::collection::vec(
            (any::<i64>(), -3i64..3, prop_oneof![any::<f64>(), -100.0f64..100.0], arb_string(), arb_string()),
            0..20,
        ),
        offset in -4i64..4,
        length in prop::option::of(0i64..4),
    ) {
        let i: Vec<i64> = rows.iter().map(|r| r.0).collect();
        let j: Vec<i64> = rows.iter().map(|r| r.1).collect();
        let x: Vec<f64> = rows.iter().map(|r| r.2).collect();
        let s: Vec<String> = rows.iter().map(|r| r.3.clone()).collect();
        let t: Vec<String> = rows.iter().map(|r| r.4.clone()).collect();
        let go = |e: Expr| run(&e, &i, &j, &x, &s, &t);
        let same_f = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()));
        let float = |func: Func, r: fn(f64) -> f64| {
            let got = go(f(func, vec![col("x")])).unwrap();
            let Column::Float64(got) = got else { panic!() };
            let want: Vec<f64> = x.iter().map(|&v| r(v)).collect();
            assert!(same_f(&got, &want));
        };
        float(Func::Abs, f64::abs);
        float(Func::Floor, f64::floor);
        float(Func::Ceil, f64::ceil);
        float(Func::Sqrt, f64::sqrt);
        float(Func::Log, f64::ln);
        float(Func::Exp, f64::exp);
        // int64: abs fails exactly when a row holds i64::MIN; rem when a divisor is 0.
        let abs = go(f(Func::Abs, vec![col("i")]));
        match abs {
            Ok(c) => prop_assert_eq!(c, Column::Int64(i.iter().map(|v| v.abs()).collect())),
            Err(_) => prop_assert!(i.contains(&i64::MIN)),
        }
        let rem = go(f(Func::Rem, vec![col("i"), col("j")]));
        match rem {
            Ok(c) => prop_assert_eq!(c, Column::Int64(i.iter().zip(&j).map(|(a, b)| a.checked_rem(*b).unwrap_or(0)).collect())),
            Err(Error::DivisionByZero(_)) => prop_assert!(j.contains(&0)),
            Err(e) => prop_assert!(false, "{}", e),
        }
        let Column::Float64(p) = go(f(Func::Pow, vec![col("x"), col("j")])).unwrap() else { panic!() };
        let want: Vec<f64> = x.iter().zip(&j).map(|(a, b)| a.powf(*b as f64)).collect();
        prop_assert!(same_f(&p, &want));
        let isin = go(f(Func::IsIn(vec![0.into(), 1.5.into(), (-2).into()]), vec![col("j")])).unwrap();
        prop_assert_eq!(isin, Column::Bool(j.iter().map(|&v| v == 0 || v == -2).collect()));
        let probe = s.first().cloned().unwrap_or_default();
        let isin = go(f(Func::IsIn(vec![probe.clone().into()]), vec![col("t")])).unwrap();
        prop_assert_eq!(isin, Column::Bool(t.iter().map(|v| *v == probe).collect()));
        // Strings.
        let st = |func: Func| strs(&go(f(func, vec![col("s")])).unwrap());
        prop_assert_eq!(st(Func::Lower), s.iter().map(|v| v.to_lowercase()).collect::<Vec<_>>());
        prop_assert_eq!(st(Func::Upper), s.iter().map(|v| v.to_uppercase()).collect::<Vec<_>>());
        prop_assert_eq!(st(Func::Strip), s.iter().map(|v| v.trim().to_string()).collect::<Vec<_>>());
        prop_assert_eq!(st(Func::Slice { offset, length }), s.iter().map(|v| slice_ref(v, offset, length)).collect::<Vec<_>>());
        prop_assert_eq!(
            st(Func::Replace { pattern: "a".into(), value: "<$0>".into(), literal: false }),
            s.iter().map(|v| v.replacen('a', "<$0>", 1)).collect::<Vec<_>>()
        );
        let len = go(f(Func::LenChars, vec![col("s")])).unwrap();
        prop_assert_eq!(len, Column::Int64(s.iter().map(|v| v.chars().count() as i64).collect()));
        let b = |func: Func| go(f(func, vec![col("s")])).unwrap();
        prop_assert_eq!(b(Func::StartsWith("a".into())), Column::Bool(s.iter().map(|v| v.starts_with('a')).collect()));
        prop_assert_eq!(b(Func::EndsWith("é".into())), Column::Bool(s.iter().map(|v| v.ends_with('é')).collect()));
        prop_assert_eq!(
            b(Func::Contains { pattern: "a[ B]".into(), literal: false }),
            Column::Bool(s.iter().map(|v| v.contains("a ") || v.contains("aB")).collect())
        );
        prop_assert_eq!(
            b(Func::Like("_a%".into())),
            Column::Bool(s.iter().map(|v| v.chars().nth(1) == Some('a')).collect())
        );
        let cat = strs(&go(f(Func::ConcatStr("|".into()), vec![col("s"), lit_str("-"), col("t")])).unwrap());
        prop_assert_eq!(cat, s.iter().zip(&t).map(|(a, b)| format!("{a}|-|{b}")).collect::<Vec<_>>());
    }
}
