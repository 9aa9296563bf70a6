//! Tests of [`ExactSum`] against a naive exact reference: terms whose exact total fits an
//! `i128` count of `2^-48` units, rounded by Rust's own (correctly rounded) int-to-float
//! conversion; and order independence and exact cancellation on arbitrary floats.

use super::ExactSum;
use proptest::prelude::*;

/// `m * 2^k` for `k` in `-40..=20`: exactly `m * 2^(k + 48)` units of `2^-48` (60 terms of
/// at most `2^40 * 2^10 * 2^68` stay below `2^127`).
fn term() -> impl Strategy<Value = (i64, i32, i64)> {
    (-(1i64 << 40)..(1i64 << 40), -40i32..=20, -1000i64..=1000)
}

fn reference(terms: &[(i64, i32, i64)]) -> f64 {
    let units: i128 = terms
        .iter()
        .map(|&(m, k, n)| (m as i128 * n as i128) << (k + 48))
        .sum();
    // i128 -> f64 rounds to nearest, ties to even; scaling by 2^-48 is exact here.
    (units as f64) * 2f64.powi(-48)
}

fn float_of(m: i64, k: i32) -> f64 {
    (m as f64) * 2f64.powi(k)
}

proptest! {
    #[test]
    fn equals_the_exact_total_rounded_once(terms in proptest::collection::vec(term(), 0..60)) {
        let mut s = ExactSum::new();
        for &(m, k, n) in &terms {
            s.add(float_of(m, k), n);
        }
        prop_assert_eq!(s.value().to_bits(), reference(&terms).to_bits());
    }

    #[test]
    fn any_order_and_any_split_give_the_same_sum(
        xs in proptest::collection::vec((any::<f64>(), -5i64..=5), 0..40),
        cut in 0usize..40,
    ) {
        let finite: Vec<(f64, i64)> = xs.into_iter().filter(|(x, _)| x.is_finite()).collect();
        let mut forward = ExactSum::new();
        for &(x, n) in &finite {
            forward.add(x, n);
        }
        let mut backward = ExactSum::new();
        for &(x, n) in finite.iter().rev() {
            backward.add(x, n);
        }
        prop_assert_eq!(&forward, &backward);
        let cut = cut.min(finite.len());
        let (mut a, mut b) = (ExactSum::new(), ExactSum::new());
        finite[..cut].iter().for_each(|&(x, n)| a.add(x, n));
        finite[cut..].iter().for_each(|&(x, n)| b.add(x, n));
        a.merge(&b);
        prop_assert_eq!(&a, &forward);
        // Retracting every term leaves exactly nothing.
        for &(x, n) in &finite {
            forward.add(x, -n);
        }
        prop_assert!(forward.is_zero());
        prop_assert_eq!(forward.value().to_bits(), 0.0f64.to_bits());
    }
}

#[test]
fn cancellation_that_a_float_sum_gets_wrong() {
    let mut s = ExactSum::new();
    for x in [1e308, 0.1, -1e308, 0.2] {
        s.add(x, 1);
    }
    // The exact total is 0.1 + 0.2 (as floats), rounded once: 0.30000000000000004.
    assert_eq!(s.value(), 0.1f64 + 0.2f64);
    let mut t = ExactSum::new();
    t.add(0.1, 3);
    t.add(0.1, -3);
    assert!(t.is_zero());
    let mut u = ExactSum::new();
    u.add(0.1, 10);
    assert_eq!(u.value(), 1.0); // exactly 10 * 0.1 rounded once
}

#[test]
fn extremes_subnormals_overflow_and_non_finite_terms() {
    let tiny = f64::from_bits(1);
    let mut s = ExactSum::new();
    s.add(tiny, 3);
    assert_eq!(s.value(), f64::from_bits(3));
    let mut big = ExactSum::new();
    big.add(f64::MAX, 2);
    assert_eq!(big.value(), f64::INFINITY);
    big.add(f64::MAX, -1);
    assert_eq!(big.value(), f64::MAX);
    let mut neg = ExactSum::new();
    neg.add(-f64::MAX, i64::MAX);
    neg.add(-f64::MAX, i64::MIN);
    assert_eq!(neg.value(), f64::MAX); // -MAX * (MAX + MIN) = -MAX * -1
    let mut inf = ExactSum::new();
    inf.add(f64::INFINITY, 1);
    inf.add(1.0, 5);
    assert_eq!(inf.value(), f64::INFINITY);
    inf.add(f64::NEG_INFINITY, 1);
    assert!(inf.value().is_nan());
    inf.add(f64::INFINITY, -1);
    assert_eq!(inf.value(), f64::NEG_INFINITY);
    inf.add(f64::NEG_INFINITY, -1);
    assert_eq!(inf.value(), 5.0);
    let mut nan = ExactSum::new();
    nan.add(f64::NAN, 2);
    assert!(nan.value().is_nan());
    nan.add(f64::NAN, -2);
    assert_eq!(nan.value(), 0.0);
    let mut halfway = ExactSum::new(); // 2^53 + 1: a tie, rounded to even
    halfway.add(9007199254740992.0, 1);
    halfway.add(1.0, 1);
    assert_eq!(halfway.value(), 9007199254740992.0);
    halfway.add(1.0, 2); // 2^53 + 3: a tie, rounded up to even
    assert_eq!(halfway.value(), 9007199254740996.0);
}
