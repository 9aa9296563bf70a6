//! Property tests of SQL null semantics in evaluation against a naive reference on
//! `Option`s: arithmetic and comparisons are null with a null operand, `&` / `|` / `~` are
//! Kleene's, `when` takes a null condition as false, `is_null` is never null and `coalesce`
//! is the first non-null operand. Columns: int64 `i0`, `i1` and bool `b0`, `b1`, each null
//! on some rows (their dtype's null word).

use super::*;
use crate::encoding::{encode_bool, encode_i64, null_word, DType};
use crate::updates::Updates;
use proptest::prelude::*;

/// A row: two nullable ints and two nullable bools.
type Row = ([Option<i64>; 2], [Option<bool>; 2]);

fn schema() -> Vec<(String, DType)> {
    [
        ("i0", DType::Int64),
        ("i1", DType::Int64),
        ("b0", DType::Bool),
        ("b1", DType::Bool),
    ]
    .into_iter()
    .map(|(n, d)| (n.to_string(), d))
    .collect()
}

fn batch(rows: &[Row]) -> Updates {
    let mut u = Updates::new(4);
    for (i, b) in rows {
        let int = |v: Option<i64>| v.map_or(null_word(DType::Int64), encode_i64);
        let boo = |v: Option<bool>| v.map_or(null_word(DType::Bool), encode_bool);
        u.push(
            &[int(i[0]), int(i[1]), boo(b[0]), boo(b[1])],
            crate::Time::from_coords(&[0]),
            1,
        );
    }
    u
}

/// A reference value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum R {
    I(Option<i64>),
    B(Option<bool>),
}

fn int_expr(depth: u32) -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![Just(col("i0")), Just(col("i1")), (-3i64..4).prop_map(lit),];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = || int_expr(depth - 1);
    prop_oneof![
        2 => leaf,
        1 => (sub(), sub()).prop_map(|(a, b)| a + b),
        1 => (sub(), sub()).prop_map(|(a, b)| a * b),
        1 => (sub(), sub()).prop_map(|(a, b)| a - b),
        1 => (bool_expr(depth - 1), sub(), sub()).prop_map(|(c, a, b)| when(c, a, b)),
        1 => prop::collection::vec(sub(), 1..4).prop_map(Expr::Coalesce),
    ]
    .boxed()
}

fn bool_expr(depth: u32) -> BoxedStrategy<Expr> {
    let leaf = prop_oneof![
        Just(col("b0")),
        Just(col("b1")),
        any::<bool>().prop_map(lit)
    ];
    if depth == 0 {
        return leaf.boxed();
    }
    let sub = || bool_expr(depth - 1);
    let int = || int_expr(depth - 1);
    prop_oneof![
        2 => leaf,
        1 => (sub(), sub()).prop_map(|(a, b)| a & b),
        1 => (sub(), sub()).prop_map(|(a, b)| a | b),
        1 => sub().prop_map(|a| !a),
        1 => (int(), int()).prop_map(|(a, b)| a.lt(b)),
        1 => (int(), int()).prop_map(|(a, b)| a.equal(b)),
        1 => int().prop_map(|a| Expr::IsNull(Box::new(a))),
        1 => sub().prop_map(|a| Expr::IsNotNull(Box::new(a))),
    ]
    .boxed()
}

/// The reference: one row, one node at a time, on `Option`s.
fn reference(e: &Expr, r: &Row) -> R {
    let int = |e: &Expr| match reference(e, r) {
        R::I(v) => v,
        R::B(_) => panic!("int"),
    };
    let boo = |e: &Expr| match reference(e, r) {
        R::B(v) => v,
        R::I(_) => panic!("bool"),
    };
    match e {
        Expr::Col(n) => match n.as_str() {
            "i0" => R::I(r.0[0]),
            "i1" => R::I(r.0[1]),
            "b0" => R::B(r.1[0]),
            _ => R::B(r.1[1]),
        },
        Expr::Lit(ast::Scalar::Int64(v)) => R::I(Some(*v)),
        Expr::Lit(ast::Scalar::Bool(v)) => R::B(Some(*v)),
        Expr::Add(a, b) => R::I(int(a).zip(int(b)).map(|(x, y)| x + y)),
        Expr::Sub(a, b) => R::I(int(a).zip(int(b)).map(|(x, y)| x - y)),
        Expr::Mul(a, b) => R::I(int(a).zip(int(b)).map(|(x, y)| x * y)),
        Expr::Lt(a, b) => R::B(int(a).zip(int(b)).map(|(x, y)| x < y)),
        Expr::Eq(a, b) => R::B(int(a).zip(int(b)).map(|(x, y)| x == y)),
        Expr::And(a, b) => R::B(match (boo(a), boo(b)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        }),
        Expr::Or(a, b) => R::B(match (boo(a), boo(b)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        }),
        Expr::Not(a) => R::B(boo(a).map(|x| !x)),
        Expr::IsNull(a) => R::B(Some(match reference(a, r) {
            R::I(v) => v.is_none(),
            R::B(v) => v.is_none(),
        })),
        Expr::IsNotNull(a) => R::B(Some(match reference(a, r) {
            R::I(v) => v.is_some(),
            R::B(v) => v.is_some(),
        })),
        Expr::When {
            cond,
            then,
            otherwise,
        } => {
            if boo(cond) == Some(true) {
                reference(then, r)
            } else {
                reference(otherwise, r)
            }
        }
        Expr::Coalesce(args) => R::I(args.iter().find_map(int)),
        other => panic!("not generated: {other}"),
    }
}

fn encode(v: R) -> u64 {
    match v {
        R::I(v) => v.map_or(null_word(DType::Int64), encode_i64),
        R::B(v) => v.map_or(null_word(DType::Bool), encode_bool),
    }
}

fn row() -> impl Strategy<Value = Row> {
    let i = prop_oneof![3 => (-4i64..5).prop_map(Some), 1 => Just(None)];
    let b = prop_oneof![3 => any::<bool>().prop_map(Some), 1 => Just(None)];
    ([i.clone(), i], [b.clone(), b])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn nulls_match_the_option_reference(
        e in prop_oneof![int_expr(3), bool_expr(3)],
        rows in prop::collection::vec(row(), 0..16),
    ) {
        let bound = e.bind(&schema()).unwrap();
        let got = bound.eval(&batch(&rows)).unwrap();
        let want: Vec<u64> = rows.iter().map(|r| encode(reference(&e, r))).collect();
        prop_assert_eq!(got, want, "{}", e);
        if bound.dtype() == DType::Bool {
            // A filter keeps the rows whose predicate is true: null drops.
            let kept = bound.eval_predicate(&batch(&rows)).unwrap();
            let want: Vec<bool> = rows
                .iter()
                .map(|r| reference(&e, r) == R::B(Some(true)))
                .collect();
            prop_assert_eq!(kept, want, "{}", e);
        }
    }
}

#[test]
fn null_operands_never_fail() {
    // `x // 0` fails, but not where `x` is null; a cast of a null is null.
    let rows = vec![
        ([None, Some(0)], [None, None]),
        ([Some(4), Some(2)], [None, None]),
    ];
    let e = col("i0").floor_div(col("i1"));
    let out = e.bind(&schema()).unwrap().eval(&batch(&rows)).unwrap();
    assert_eq!(out, vec![null_word(DType::Int64), encode_i64(2)]);
    let e = col("i0").cast(DType::Float64);
    let out = e.bind(&schema()).unwrap().eval(&batch(&rows)).unwrap();
    assert_eq!(out[0], null_word(DType::Float64));
}
