//! Unit tests of binding and evaluation, and property tests against a naive per-row
//! reference evaluator (checked arithmetic, one row and one node at a time).

use super::ops;
use super::*;
use crate::encoding::{encode_bool, encode_f64, encode_i64, Interner};
use crate::error::Error;
use crate::updates::Updates;
use proptest::prelude::*;

fn schema() -> Vec<(String, DType)> {
    [
        ("i0", DType::Int64),
        ("i1", DType::Int64),
        ("f0", DType::Float64),
        ("f1", DType::Float64),
        ("b0", DType::Bool),
        ("b1", DType::Bool),
        ("s0", DType::Str),
    ]
    .into_iter()
    .map(|(n, d)| (n.to_string(), d))
    .collect()
}

/// One row of the test schema.
#[derive(Clone, Debug)]
struct Row {
    i: [i64; 2],
    f: [f64; 2],
    b: [bool; 2],
    s: String,
}

fn batch(rows: &[Row]) -> Updates {
    let mut u = Updates::new(7);
    for r in rows {
        let s = Interner::intern(&r.s);
        let words = [
            encode_i64(r.i[0]),
            encode_i64(r.i[1]),
            encode_f64(r.f[0]),
            encode_f64(r.f[1]),
            encode_bool(r.b[0]),
            encode_bool(r.b[1]),
            s,
        ];
        u.push(&words, crate::Time::from_coords(&[0]), 1);
    }
    u
}

/// Evaluates on typed columns ([`BoundExpr::eval_columns`]: no nulls there, so `i64::MIN`
/// is a value, as in the kernels and the Spark tasks).
fn eval_typed(e: &Expr, rows: &[Row]) -> Result<Vec<u64>, Error> {
    let ints = |k: usize| rows.iter().map(|r| r.i[k]).collect::<Vec<_>>();
    let floats = |k: usize| rows.iter().map(|r| r.f[k]).collect::<Vec<_>>();
    let bools = |k: usize| rows.iter().map(|r| r.b[k]).collect::<Vec<_>>();
    let (i0, i1, f0, f1, b0, b1) = (ints(0), ints(1), floats(0), floats(1), bools(0), bools(1));
    let s: Vec<u64> = rows.iter().map(|r| Interner::intern(&r.s)).collect();
    let cols = [
        Some(ColumnRef::Int64(&i0)),
        Some(ColumnRef::Int64(&i1)),
        Some(ColumnRef::Float64(&f0)),
        Some(ColumnRef::Float64(&f1)),
        Some(ColumnRef::Bool(&b0)),
        Some(ColumnRef::Bool(&b1)),
        Some(ColumnRef::Str(&s)),
    ];
    Ok(e.bind(&schema())?
        .eval_columns(&cols, rows.len())?
        .into_words())
}

fn row(i0: i64, i1: i64, f0: f64, f1: f64) -> Row {
    Row {
        i: [i0, i1],
        f: [f0, f1],
        b: [i0 > 0, f0 > 0.0],
        s: if i0 % 2 == 0 { "even" } else { "odd" }.to_string(),
    }
}

fn eval(e: &Expr, rows: &[Row]) -> Result<Vec<u64>, Error> {
    e.bind(&schema())?.eval(&batch(rows))
}

fn ints(words: &[u64]) -> Vec<i64> {
    words.iter().map(|&w| w as i64).collect()
}

fn floats(words: &[u64]) -> Vec<f64> {
    words.iter().map(|&w| f64::from_bits(w)).collect()
}

fn rows3() -> Vec<Row> {
    vec![
        row(7, 2, 7.5, 2.0),
        row(-7, 2, -7.5, 0.0),
        row(0, -3, 0.0, -2.0),
    ]
}

#[test]
fn arithmetic_and_promotion() {
    let r = rows3();
    let w = eval(&(col("i0") + col("i1") * lit(2)), &r).unwrap();
    assert_eq!(ints(&w), vec![11, -3, -6]);
    let w = eval(&col("i0").floor_div(col("i1")), &r).unwrap();
    assert_eq!(ints(&w), vec![3, -4, 0]);
    let w = eval(&(col("i0") % col("i1")), &r).unwrap();
    assert_eq!(ints(&w), vec![1, 1, 0]);
    let b = (col("i0") + lit(0.5)).bind(&schema()).unwrap();
    assert_eq!(b.dtype(), DType::Float64);
    assert_eq!(floats(&b.eval(&batch(&r)).unwrap()), vec![7.5, -6.5, 0.5]);
    let w = eval(&col("f0").floor_div(col("f1")), &r).unwrap();
    let f = floats(&w);
    assert_eq!(f[0], 3.0);
    assert_eq!(f[1], f64::NEG_INFINITY);
    assert_eq!(f[2], 0.0);
    let w = eval(&(col("f0") % col("f1")), &r).unwrap();
    assert!(f64::from_bits(w[1]).is_nan());
    assert_eq!(w[1], f64::NAN.to_bits(), "NaN is canonical in words");
    let w = eval(&-col("i0"), &r).unwrap();
    assert_eq!(ints(&w), vec![-7, 7, 0]);
    let b = (col("i0") / col("i1")).bind(&schema()).unwrap();
    assert_eq!(b.dtype(), DType::Float64);
    assert_eq!(floats(&b.eval(&batch(&r)).unwrap()), vec![3.5, -3.5, -0.0]);
    let w = eval(&(col("i0") / lit(0)), &r).unwrap();
    let f = floats(&w);
    assert_eq!((f[0], f[1]), (f64::INFINITY, f64::NEG_INFINITY));
    assert!(f[2].is_nan());
}

#[test]
fn comparisons_logic_when_minmax() {
    let r = rows3();
    let p = (col("i0").gt(lit(0)) | col("f1").lt(lit(0)))
        .bind(&schema())
        .unwrap();
    assert_eq!(
        p.eval_predicate(&batch(&r)).unwrap(),
        vec![true, false, true]
    );
    let p = col("s0").equal(lit("odd")).bind(&schema()).unwrap();
    assert_eq!(
        p.eval_predicate(&batch(&r)).unwrap(),
        vec![true, true, false]
    );
    let e = when(col("b0"), lit("pos"), col("s0"));
    let ids = eval(&e, &r).unwrap();
    let strs: Vec<String> = Interner::resolve_all(&ids)
        .unwrap()
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(strs, vec!["pos", "odd", "even"]);
    let e = when(col("b0"), col("i0"), col("f0"));
    assert_eq!(floats(&eval(&e, &r).unwrap()), vec![7.0, -7.5, 0.0]);
    let w = eval(&min_of(col("i0"), col("i1")), &r).unwrap();
    assert_eq!(ints(&w), vec![2, -7, -3]);
    let w = eval(&max_of(col("i0"), col("f1")), &r).unwrap();
    assert_eq!(floats(&w), vec![7.0, 0.0, 0.0]);
    let w = eval(&!col("b0"), &r).unwrap();
    assert_eq!(w, vec![0, 1, 1]);
    let w = eval(&col("b0").lt(col("b1")), &r).unwrap();
    assert_eq!(w, vec![0, 0, 0]);
}

#[test]
fn casts() {
    let r = vec![row(3, 0, -2.7, 1e300), row(0, 0, 2.7, f64::NAN)];
    let w = eval(&col("f0").cast(DType::Int64), &r).unwrap();
    assert_eq!(ints(&w), vec![-2, 2]);
    let w = eval(&col("i0").cast(DType::Bool), &r).unwrap();
    assert_eq!(w, vec![1, 0]);
    let w = eval(&col("b0").cast(DType::Float64), &r).unwrap();
    assert_eq!(floats(&w), vec![1.0, 0.0]);
    let w = eval(&col("f1").cast(DType::Bool), &r).unwrap();
    assert_eq!(w, vec![1, 1]);
    let err = eval(&col("f1").cast(DType::Int64), &r).unwrap_err();
    assert!(matches!(err, Error::Overflow(_)), "{err}");
    assert!(err.to_string().contains("1e+300"), "{err}");
    let err = eval(&col("f1").cast(DType::Int64), &r[1..]).unwrap_err();
    assert!(matches!(err, Error::Value(_)), "{err}");
    assert!(eval(&col("s0").cast(DType::Int64), &r).is_err());
    assert!(eval(&col("s0").cast(DType::Str), &r).is_ok());
}

#[test]
fn overflow_and_division_errors() {
    let r = vec![row(1, 1, 0.0, 0.0), row(i64::MAX, 0, 0.0, 0.0)];
    let err = eval(&(col("i0") + lit(1)), &r).unwrap_err();
    assert_eq!(
        err,
        Error::Overflow(format!(
            "int64 overflow in (col(\"i0\") + 1) at row 1: {} + 1",
            i64::MAX
        ))
    );
    let err = eval(&col("i0").floor_div(col("i1")), &r).unwrap_err();
    assert!(
        matches!(&err, Error::DivisionByZero(m) if m.contains("at row 1") && m.contains("// 0")),
        "{err}"
    );
    let err = eval(&(col("i0") % col("i1")), &r).unwrap_err();
    assert!(matches!(err, Error::DivisionByZero(_)), "{err}");
    let r = vec![row(i64::MIN, -1, 0.0, 0.0)];
    assert!(matches!(
        eval_typed(&col("i0").floor_div(col("i1")), &r),
        Err(Error::Overflow(_))
    ));
    assert_eq!(
        ints(&eval_typed(&(col("i0") % col("i1")), &r).unwrap()),
        vec![0]
    );
    assert!(matches!(
        eval_typed(&-col("i0"), &r),
        Err(Error::Overflow(_))
    ));
    assert!(matches!(
        eval_typed(&(col("i0") * lit(2)), &r),
        Err(Error::Overflow(_))
    ));
    assert!(matches!(
        eval_typed(&(col("i0") - lit(1)), &r),
        Err(Error::Overflow(_))
    ));
    // Constant failures raise when there are rows, and not on an empty batch.
    assert!(matches!(
        eval_typed(&lit(1).floor_div(lit(0)), &r),
        Err(Error::DivisionByZero(_))
    ));
    assert_eq!(
        eval_typed(&lit(1).floor_div(lit(0)), &[]).unwrap(),
        Vec::<u64>::new()
    );
}

#[test]
fn when_masks_errors() {
    let r = vec![
        row(6, 3, 0.0, 0.0),
        row(5, 0, 0.0, 0.0),
        row(i64::MIN, -1, 0.0, 0.0),
    ];
    let safe = when(
        col("i1").not_equal(lit(0)) & col("i1").not_equal(lit(-1)),
        col("i0").floor_div(col("i1")),
        lit(-99),
    );
    assert_eq!(ints(&eval_typed(&safe, &r).unwrap()), vec![2, -99, -99]);
    // Nested: the inner when sees only the rows of the outer branch.
    let nested = when(
        col("i1").equal(lit(0)),
        lit(0),
        when(col("i1").equal(lit(-1)), lit(1), col("i0") % col("i1")),
    );
    assert_eq!(ints(&eval_typed(&nested, &r).unwrap()), vec![0, 0, 1]);
    // Unguarded: raises at the first failing row.
    let err = eval_typed(&col("i0").floor_div(col("i1")), &r).unwrap_err();
    assert!(err.to_string().contains("row 1"), "{err}");
    // A constant condition evaluates only its branch.
    let e = when(lit(false), lit(1).floor_div(lit(0)), lit(2));
    assert_eq!(ints(&eval_typed(&e, &r).unwrap()), vec![2, 2, 2]);
}

#[test]
fn chunked_evaluation_matches_reference() {
    let mut x: u64 = 12345;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let n = 3 * 4096 + 5;
    let rows: Vec<Row> = (0..n)
        .map(|_| {
            let (a, b) = ((next() % 201) as i64 - 100, (next() % 7) as i64 - 3);
            row(a, b, a as f64 / 4.0, b as f64)
        })
        .collect();
    let exprs = [
        when(
            col("i1").not_equal(lit(0)),
            col("i0").floor_div(col("i1")),
            col("i0") * lit(1000),
        ),
        (col("f0") % col("f1")) + col("i0"),
        when(col("b0"), col("s0"), lit("neg")).equal(lit("odd")),
        max_of(col("i0"), lit(7)) - col("i1"),
    ];
    for e in exprs {
        let got = eval(&e, &rows).unwrap();
        let want: Vec<u64> = rows
            .iter()
            .map(|r| rencode(&reval(&e, r).unwrap()))
            .collect();
        assert_eq!(got, want, "{e}");
    }
    let mut rows = rows;
    rows[9000].i[1] = 0;
    rows[9001].i[1] = 0;
    let err = eval(&col("i0").floor_div(col("i1")), &rows).unwrap_err();
    let first = rows.iter().position(|r| r.i[1] == 0).unwrap();
    assert!(
        err.to_string().contains(&format!("at row {first}:")),
        "{err}"
    );
    let guarded = when(
        col("i1").equal(lit(0)),
        lit(0),
        col("i0").floor_div(col("i1")),
    );
    assert_eq!(eval(&guarded, &rows).unwrap().len(), n);
    rows.iter_mut().for_each(|r| r.i[1] = 1);
    // i64::MIN in a word is int64's null: `-null` is null, not an overflow.
    rows[9001].i[0] = i64::MIN;
    let out = eval(&-col("i0"), &rows).unwrap();
    assert_eq!(out[9001], crate::encoding::NULL_I64);
    assert_eq!(out[9000], encode_i64(-rows[9000].i[0]));
}

#[test]
fn deep_chains_evaluate() {
    // Binding and evaluation recurse on the tree: the deepest accepted tree must fit in a
    // 2 MiB thread stack (debug build).
    let mut e = col("i0");
    for _ in 0..json::MAX_DEPTH - 2 {
        e = e + lit(1);
    }
    let rows = vec![row(1, 0, 0.0, 0.0); 5];
    let got = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || eval(&e, &rows))
        .unwrap()
        .join()
        .unwrap()
        .unwrap();
    assert_eq!(ints(&got), vec![json::MAX_DEPTH as i64 - 1; 5]);
    let mut e = col("i0");
    for _ in 0..json::MAX_DEPTH {
        e = e + lit(1);
    }
    assert!(matches!(e.bind(&schema()), Err(Error::Plan(_))));
}

#[test]
fn bind_errors() {
    let s = schema();
    let err = (col("i0") + col("nope")).bind(&s).unwrap_err();
    let Error::ColumnNotFound(m) = &err else {
        panic!("{err}")
    };
    assert!(
        m.contains("\"nope\"")
            && m.contains("(col(\"i0\") + col(\"nope\"))")
            && m.contains("\"f1\""),
        "{m}"
    );
    for e in [
        col("i0") + col("s0"),
        col("b0") + lit(1),
        col("i0") & col("b0"),
        !col("i0"),
        -col("b0"),
        when(col("i0"), lit(1), lit(2)),
        when(col("b0"), lit(1), lit("x")),
        min_of(col("s0"), col("s0")),
        col("i0").equal(col("b0")),
        col("b0").cast(DType::Date32),
    ] {
        let err = e.bind(&s).unwrap_err();
        assert!(matches!(err, Error::Type(_)), "{e}: {err}");
        assert!(err.to_string().contains(&e.to_string()), "{err}");
    }
    let err = ((col("i0") + col("s0")) * lit(2)).bind(&s).unwrap_err();
    assert!(err.to_string().contains("int64 and str"), "{err}");
    let err = col("i0")
        .bind(&s)
        .unwrap()
        .eval_predicate(&batch(&[]))
        .unwrap_err();
    assert!(matches!(err, Error::Type(_)));
}

#[test]
fn shape_checks_and_columns_api() {
    let b = (col("i1") + col("f0")).bind(&schema()).unwrap();
    assert_eq!(b.inputs(), &[1, 2]);
    assert_eq!(b.output_name(), "i1");
    let i = [1i64, 2];
    let f = [0.5f64, 0.25];
    let mut cols = vec![None; 7];
    cols[1] = Some(ColumnRef::Int64(&i));
    cols[2] = Some(ColumnRef::Float64(&f));
    assert_eq!(
        b.eval_columns(&cols, 2).unwrap(),
        Column::Float64(vec![1.5, 2.25])
    );
    assert!(matches!(b.eval_columns(&cols, 3), Err(Error::Shape(_))));
    cols[2] = Some(ColumnRef::Int64(&i));
    assert!(matches!(b.eval_columns(&cols, 2), Err(Error::Type(_))));
    assert!(matches!(b.eval(&Updates::new(3)), Err(Error::Shape(_))));
}

// ---------------------------------------------------------------------------------------
// Property tests: random well-typed trees over random columns vs. a per-row reference.

/// A per-row value of the reference evaluator.
#[derive(Clone, Debug, PartialEq)]
enum RV {
    I(i64),
    F(f64),
    B(bool),
    S(String),
}

/// Error kinds the reference can raise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RErr {
    Overflow,
    DivZero,
    Nan,
}

fn rtype(e: &Expr) -> DType {
    let num = |a: DType, b: DType| {
        if a == DType::Float64 || b == DType::Float64 {
            DType::Float64
        } else {
            DType::Int64
        }
    };
    match e {
        Expr::Col(n) => schema().into_iter().find(|(c, _)| c == n).unwrap().1,
        Expr::Lit(s) => s.dtype(),
        Expr::TrueDiv(..) => DType::Float64,
        Expr::Add(a, b)
        | Expr::Sub(a, b)
        | Expr::Mul(a, b)
        | Expr::FloorDiv(a, b)
        | Expr::Mod(a, b) => num(rtype(a), rtype(b)),
        Expr::MinOf(a, b) | Expr::MaxOf(a, b) => match (rtype(a), rtype(b)) {
            (DType::Bool, DType::Bool) => DType::Bool,
            (x, y) => num(x, y),
        },
        Expr::When {
            then, otherwise, ..
        } => match (rtype(then), rtype(otherwise)) {
            (x, y) if x == y => x,
            (x, y) => num(x, y),
        },
        Expr::Neg(a) | Expr::Alias(a, _) => rtype(a),
        Expr::Cast(_, d, _) => *d,
        _ => DType::Bool,
    }
}

fn as_f(v: &RV) -> f64 {
    match v {
        RV::I(x) => *x as f64,
        RV::F(x) => *x,
        _ => panic!("not a number: {v:?}"),
    }
}

fn reval(e: &Expr, r: &Row) -> Result<RV, RErr> {
    let coerce = |v: RV, d: DType| -> RV {
        match (v, d) {
            (RV::I(x), DType::Float64) => RV::F(x as f64),
            (v, _) => v,
        }
    };
    if let Some((op, a, b)) = e.as_binary() {
        let (x, y) = (reval(a, r)?, reval(b, r)?);
        use BinaryOp::*;
        return Ok(match op {
            Add | Sub | Mul | TrueDiv | FloorDiv | Mod => match (&x, &y) {
                (RV::I(x), RV::I(y)) if op != TrueDiv => {
                    let (x, y) = (*x, *y);
                    RV::I(match op {
                        Add => x.checked_add(y).ok_or(RErr::Overflow)?,
                        Sub => x.checked_sub(y).ok_or(RErr::Overflow)?,
                        Mul => x.checked_mul(y).ok_or(RErr::Overflow)?,
                        FloorDiv => {
                            if y == 0 {
                                return Err(RErr::DivZero);
                            }
                            let exact = {
                                let (x, y) = (x as i128, y as i128);
                                let t = x / y;
                                if (x % y != 0) && ((x < 0) != (y < 0)) {
                                    t - 1
                                } else {
                                    t
                                }
                            };
                            i64::try_from(exact).map_err(|_| RErr::Overflow)?
                        }
                        _ => {
                            if y == 0 {
                                return Err(RErr::DivZero);
                            }
                            let (x, y) = (x as i128, y as i128);
                            let m = x % y;
                            (if m != 0 && ((m < 0) != (y < 0)) {
                                m + y
                            } else {
                                m
                            }) as i64
                        }
                    })
                }
                _ => {
                    let (x, y) = (as_f(&x), as_f(&y));
                    RV::F(match op {
                        Add => x + y,
                        Sub => x - y,
                        Mul => x * y,
                        TrueDiv => x / y,
                        FloorDiv => ops::floordiv_f64(x, y),
                        _ => ops::mod_f64(x, y),
                    })
                }
            },
            Eq | Ne | Lt | Le | Gt | Ge => {
                let ord = match (&x, &y) {
                    (RV::I(x), RV::I(y)) => x.partial_cmp(y),
                    (RV::B(x), RV::B(y)) => x.partial_cmp(y),
                    (RV::S(x), RV::S(y)) => Some(x.cmp(y)),
                    _ => as_f(&x).partial_cmp(&as_f(&y)),
                };
                use std::cmp::Ordering::*;
                RV::B(match (op, ord) {
                    (Ne, None) => true,
                    (_, None) => false,
                    (Eq, Some(o)) => o == Equal,
                    (Ne, Some(o)) => o != Equal,
                    (Lt, Some(o)) => o == Less,
                    (Le, Some(o)) => o != Greater,
                    (Gt, Some(o)) => o == Greater,
                    (_, Some(o)) => o != Less,
                })
            }
            And | Or => match (x, y) {
                (RV::B(x), RV::B(y)) => RV::B(if op == And { x && y } else { x || y }),
                _ => panic!("bool"),
            },
            MinOf | MaxOf => match (&x, &y) {
                (RV::I(a), RV::I(b)) => RV::I(if op == MinOf { *a.min(b) } else { *a.max(b) }),
                (RV::B(a), RV::B(b)) => RV::B(if op == MinOf { *a.min(b) } else { *a.max(b) }),
                _ => {
                    let (a, b) = (as_f(&x), as_f(&y));
                    RV::F(if a.is_nan() || b.is_nan() {
                        f64::NAN
                    } else if op == MinOf {
                        a.min(b)
                    } else {
                        a.max(b)
                    })
                }
            },
        });
    }
    Ok(match e {
        Expr::Col(n) => match n.as_str() {
            "i0" => RV::I(r.i[0]),
            "i1" => RV::I(r.i[1]),
            "f0" => RV::F(r.f[0]),
            "f1" => RV::F(r.f[1]),
            "b0" => RV::B(r.b[0]),
            "b1" => RV::B(r.b[1]),
            _ => RV::S(r.s.clone()),
        },
        Expr::Lit(Scalar::Int64(v)) => RV::I(*v),
        Expr::Lit(Scalar::Float64(v)) => RV::F(*v),
        Expr::Lit(Scalar::Bool(v)) => RV::B(*v),
        Expr::Lit(Scalar::Str(v)) => RV::S(v.clone()),
        Expr::Not(a) => match reval(a, r)? {
            RV::B(x) => RV::B(!x),
            _ => panic!("bool"),
        },
        Expr::Neg(a) => match reval(a, r)? {
            RV::I(x) => RV::I(x.checked_neg().ok_or(RErr::Overflow)?),
            RV::F(x) => RV::F(-x),
            _ => panic!("num"),
        },
        Expr::Alias(a, _) => reval(a, r)?,
        Expr::Cast(a, d, _) => match (reval(a, r)?, d) {
            (v, d) if rtype(a) == *d => v,
            (RV::I(x), DType::Float64) => RV::F(x as f64),
            (RV::I(x), DType::Bool) => RV::B(x != 0),
            (RV::F(x), DType::Bool) => RV::B(x != 0.0),
            (RV::B(x), DType::Int64) => RV::I(x as i64),
            (RV::B(x), DType::Float64) => RV::F(if x { 1.0 } else { 0.0 }),
            (RV::F(x), DType::Int64) => {
                if x.is_nan() {
                    return Err(RErr::Nan);
                }
                let t = x.trunc();
                let p = 2f64.powi(63);
                if !(-p..p).contains(&t) {
                    return Err(RErr::Overflow);
                }
                RV::I(t as i64)
            }
            (v, d) => panic!("cast {v:?} to {d:?}"),
        },
        Expr::When {
            cond,
            then,
            otherwise,
        } => {
            let d = rtype(e);
            match reval(cond, r)? {
                RV::B(true) => coerce(reval(then, r)?, d),
                RV::B(false) => coerce(reval(otherwise, r)?, d),
                _ => panic!("bool"),
            }
        }
        _ => unreachable!(),
    })
}

fn rencode(v: &RV) -> u64 {
    match v {
        RV::I(x) => encode_i64(*x),
        RV::F(x) => encode_f64(*x),
        RV::B(x) => encode_bool(*x),
        RV::S(x) => Interner::intern(x),
    }
}

fn err_kind(e: &Error) -> RErr {
    match e {
        Error::Overflow(_) => RErr::Overflow,
        Error::DivisionByZero(_) => RErr::DivZero,
        Error::Value(_) => RErr::Nan,
        other => panic!("unexpected error {other}"),
    }
}

fn arb_i64() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -6i64..6,
        1 => any::<i64>(),
        1 => prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(i64::MIN + 1), Just(i64::MAX - 1), Just(-1i64)],
        1 => -3_037_000_499i64..3_037_000_499,
    ]
}

fn arb_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        6 => (-60i32..60).prop_map(|x| x as f64 / 4.0),
        2 => -1e6f64..1e6,
        1 => prop_oneof![Just(0.0), Just(-0.0), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(f64::NAN), Just(1e300), Just(-9.3e18)],
    ]
}

fn arb_row() -> impl Strategy<Value = Row> {
    (
        [arb_i64(), arb_i64()],
        [arb_f64(), arb_f64()],
        [any::<bool>(), any::<bool>()],
        prop_oneof![Just("a"), Just("b"), Just("c")],
    )
        .prop_map(|(i, f, b, s)| Row {
            // Rows hold encoded words, which canonicalise -0.0 and NaN; an int64 word is
            // never i64::MIN, int64's null.
            i: i.map(|x| x.max(i64::MIN + 1)),
            f: f.map(|x| f64::from_bits(encode_f64(x))),
            b,
            s: s.to_string(),
        })
}

fn leaf(d: DType) -> BoxedStrategy<Expr> {
    match d.physical() {
        DType::Int64 => prop_oneof![
            3 => prop_oneof![Just(col("i0")), Just(col("i1"))],
            1 => arb_i64().prop_map(lit),
        ]
        .boxed(),
        DType::Float64 => prop_oneof![
            3 => prop_oneof![Just(col("f0")), Just(col("f1"))],
            1 => arb_f64().prop_map(lit),
        ]
        .boxed(),
        DType::Bool => prop_oneof![
            3 => prop_oneof![Just(col("b0")), Just(col("b1"))],
            1 => any::<bool>().prop_map(lit),
        ]
        .boxed(),
        _ => prop_oneof![
            3 => Just(col("s0")),
            1 => prop_oneof![Just("a"), Just("b"), Just("zz")].prop_map(lit),
        ]
        .boxed(),
    }
}

/// Well-typed random trees of result dtype `d`.
/// Expressions of type `d` nested at most `depth` deep. Each `(d, depth)` strategy is built
/// once per thread and shared: built afresh, every level would build its ten or so
/// sub-strategies again, and a strategy of depth 4 would take about 20^4 of them.
fn arb_expr(d: DType, depth: u32) -> BoxedStrategy<Expr> {
    thread_local! {
        static BUILT: std::cell::RefCell<std::collections::HashMap<(DType, u32), BoxedStrategy<Expr>>> =
            Default::default();
    }
    if let Some(s) = BUILT.with(|b| b.borrow().get(&(d, depth)).cloned()) {
        return s;
    }
    let s = build_arb_expr(d, depth);
    BUILT.with(|b| b.borrow_mut().insert((d, depth), s.clone()));
    s
}

fn build_arb_expr(d: DType, depth: u32) -> BoxedStrategy<Expr> {
    if depth == 0 {
        return leaf(d);
    }
    let sub = move |d: DType| arb_expr(d, depth - 1);
    let num = || prop_oneof![sub(DType::Int64), sub(DType::Float64)].boxed();
    let arith_ops = prop_oneof![
        Just(BinaryOp::Add),
        Just(BinaryOp::Sub),
        Just(BinaryOp::Mul),
        Just(BinaryOp::FloorDiv),
        Just(BinaryOp::Mod),
    ];
    let cmp_ops = prop_oneof![
        Just(BinaryOp::Eq),
        Just(BinaryOp::Ne),
        Just(BinaryOp::Lt),
        Just(BinaryOp::Le),
        Just(BinaryOp::Gt),
        Just(BinaryOp::Ge),
    ];
    let minmax = prop_oneof![Just(BinaryOp::MinOf), Just(BinaryOp::MaxOf)];
    let when_s = move |t: BoxedStrategy<Expr>, o: BoxedStrategy<Expr>| {
        (sub(DType::Bool), t, o).prop_map(|(c, t, o)| when(c, t, o))
    };
    match d.physical() {
        DType::Int64 => prop_oneof![
            2 => leaf(d),
            4 => (arith_ops, sub(d), sub(d)).prop_map(|(op, a, b)| Expr::binary(op, a, b)),
            1 => sub(d).prop_map(|a| -a),
            1 => prop_oneof![sub(DType::Float64), sub(DType::Bool)].prop_map(|a| a.cast(DType::Int64)),
            2 => when_s(sub(d), sub(d)),
            1 => (minmax, sub(d), sub(d)).prop_map(|(op, a, b)| Expr::binary(op, a, b)),
            1 => sub(d).prop_map(|a| a.alias("x")),
        ]
        .boxed(),
        DType::Float64 => prop_oneof![
            2 => leaf(d),
            1 => (num(), num()).prop_map(|(a, b)| a / b),
            4 => (arith_ops, num(), num())
                .prop_filter("float result", |(_, a, b)| rtype(a) == DType::Float64 || rtype(b) == DType::Float64)
                .prop_map(|(op, a, b)| Expr::binary(op, a, b)),
            1 => sub(d).prop_map(|a| -a),
            1 => prop_oneof![sub(DType::Int64), sub(DType::Bool)].prop_map(|a| a.cast(DType::Float64)),
            2 => when_s(num(), sub(d)),
            1 => (minmax, num(), sub(d)).prop_map(|(op, a, b)| Expr::binary(op, a, b)),
        ]
        .boxed(),
        DType::Bool => prop_oneof![
            2 => leaf(d),
            4 => (cmp_ops.clone(), num(), num()).prop_map(|(op, a, b)| Expr::binary(op, a, b)),
            1 => (cmp_ops.clone(), sub(d), sub(d)).prop_map(|(op, a, b)| Expr::binary(op, a, b)),
            // Strings: equality by id, order by text (the reference compares the text).
            1 => (cmp_ops, sub(DType::Str), sub(DType::Str))
                .prop_map(|(op, a, b)| Expr::binary(op, a, b)),
            2 => (prop_oneof![Just(BinaryOp::And), Just(BinaryOp::Or)], sub(d), sub(d))
                .prop_map(|(op, a, b)| Expr::binary(op, a, b)),
            1 => sub(d).prop_map(|a| !a),
            1 => num().prop_map(|a| a.cast(DType::Bool)),
            1 => when_s(sub(d), sub(d)),
            1 => (minmax, sub(d), sub(d)).prop_map(|(op, a, b)| Expr::binary(op, a, b)),
        ]
        .boxed(),
        _ => prop_oneof![2 => leaf(d), 1 => when_s(sub(d), sub(d))].boxed(),
    }
}

fn arb_typed_expr() -> impl Strategy<Value = Expr> {
    (
        prop_oneof![
            Just(DType::Int64),
            Just(DType::Float64),
            Just(DType::Bool),
            Just(DType::Str)
        ],
        0u32..5,
    )
        .prop_flat_map(|(d, depth)| arb_expr(d, depth))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn prop_matches_reference(e in arb_typed_expr(), rows in prop::collection::vec(arb_row(), 0..12)) {
        let bound = e.bind(&schema()).unwrap();
        prop_assert_eq!(bound.dtype(), rtype(&e));
        let got = bound.eval(&batch(&rows));
        // An int64 result of i64::MIN cannot be stored (it is int64's null word).
        let want: Vec<Result<RV, RErr>> = rows
            .iter()
            .map(|r| match reval(&e, r) {
                Ok(RV::I(i64::MIN)) => Err(RErr::Overflow),
                other => other,
            })
            .collect();
        let failures: Vec<RErr> = want.iter().filter_map(|w| w.clone().err()).collect();
        match got {
            Ok(words) => {
                prop_assert!(failures.is_empty(), "expected an error {:?} for {}", failures, e);
                let want: Vec<u64> = want.iter().map(|w| rencode(w.as_ref().unwrap())).collect();
                prop_assert_eq!(words, want, "{}", e);
            }
            Err(err) => {
                prop_assert!(
                    failures.contains(&err_kind(&err)),
                    "{} raised {} but the reference raised {:?}", e, err, failures
                );
            }
        }
    }

    #[test]
    fn prop_json_roundtrip(e in arb_typed_expr()) {
        // Value-level: exact. (Text-level float parsing is exact only with serde_json's
        // `float_roundtrip` feature.)
        let back = Expr::from_json(&e.to_json()).unwrap();
        // NaN literals break PartialEq; compare the text and JSON forms.
        prop_assert_eq!(back.to_string(), e.to_string());
        prop_assert_eq!(back.to_json(), e.to_json());
    }
}
