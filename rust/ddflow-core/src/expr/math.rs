//! Row kernels of the math functions: `abs`, `round`, `rem` (and the float64 one-liners
//! `floor`, `ceil`, `sqrt`, `log`, `exp`, `pow`, which are Rust's `f64` methods).
//!
//! The integer kernels never panic: they return a (meaningless) value for the inputs their
//! `*_bad` test flags, and the evaluator raises an error for those rows.
//!
//! * `abs` keeps the dtype; `abs(i64::MIN)` is flagged (int64 overflow).
//! * `round(x, d)` rounds half away from zero (SQL and Spark `round`) the *shortest decimal
//!   form* of `x` (the digits Python's `repr` prints), so `round(2.675, 2)` is `2.68` and
//!   `round(0.125, 2)` is `0.13`; the result is the float nearest that decimal.
//! * `rem(a, b)` takes the sign of the dividend `a` (SQL, Spark and Rust `%`; Python's `%`
//!   takes the divisor's sign and is the `%` operator); `b == 0` is flagged for int64, and
//!   is NaN for float64 (C `fmod`).

/// `|a|`, wrapping `i64::MIN` to itself (flagged by [`abs_i64_bad`]).
#[inline]
pub(crate) fn abs_i64(a: i64) -> i64 {
    a.wrapping_abs()
}

/// Whether `|a|` overflows int64.
#[inline]
pub(crate) fn abs_i64_bad(a: i64) -> bool {
    a == i64::MIN
}

/// `a` remainder `b` with the sign of `a`; 0 when `b == 0` (flagged by [`rem_i64_bad`]).
/// `i64::MIN rem -1` is 0.
#[inline]
pub(crate) fn rem_i64(a: i64, b: i64) -> i64 {
    if b == 0 {
        0
    } else {
        a.wrapping_rem(b)
    }
}

/// Whether `a rem b` is undefined (`b == 0`).
#[inline]
pub(crate) fn rem_i64_bad(_a: i64, b: i64) -> bool {
    b == 0
}

/// `a rem b` on float64: C `fmod` (sign of `a`; NaN when `b == 0`).
#[inline]
pub(crate) fn rem_f64(a: f64, b: f64) -> f64 {
    a % b
}

/// `x` rounded to `decimals` decimal places, half away from zero, on the shortest decimal
/// form of `x`. NaN, ±inf and zeros are returned as they are; a result of zero keeps the sign
/// of `x`.
pub(crate) fn round_f64(x: f64, decimals: u32) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    // Shortest round-trip digits d0.d1d2... and exponent: x = d0.d1d2... * 10^exp.
    let text = format!("{:e}", x.abs());
    let (mantissa, exp) = text.split_once('e').expect("LowerExp has an exponent");
    let exp: i64 = exp.parse().expect("integer exponent");
    let digits: Vec<u8> = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    // Digit k has place value 10^(exp - k); keep those with place >= 10^-decimals.
    let keep = exp + i64::from(decimals) + 1;
    if keep >= digits.len() as i64 {
        return x;
    }
    let up = keep >= 0 && digits[keep as usize] >= 5;
    let mut kept: u64 = 0;
    for &d in &digits[..keep.max(0) as usize] {
        kept = kept * 10 + u64::from(d);
    }
    if up {
        kept += 1;
    }
    if keep < 0 || kept == 0 {
        return 0f64.copysign(x);
    }
    let value: f64 = format!("{kept}e-{decimals}")
        .parse()
        .expect("a decimal literal parses");
    value.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive reference: the shortest decimal digits as an exact big decimal, rounded
    /// half away from zero digit by digit on a string.
    fn round_reference(x: f64, decimals: u32) -> f64 {
        if !x.is_finite() || x == 0.0 {
            return x;
        }
        // Positional decimal text of the shortest round-trip digits (Rust's `Display`).
        let text = format!("{}", x.abs());
        let (int_part, frac_part) = text.split_once('.').unwrap_or((&text, ""));
        let d = decimals as usize;
        if frac_part.len() <= d {
            return x;
        }
        let mut kept: Vec<u8> = format!("{int_part}{}", &frac_part[..d]).into_bytes();
        if frac_part.as_bytes()[d] >= b'5' {
            // Add one in the last kept place, carrying.
            let mut i = kept.len();
            loop {
                if i == 0 {
                    kept.insert(0, b'1');
                    break;
                }
                i -= 1;
                if kept[i] == b'9' {
                    kept[i] = b'0';
                } else {
                    kept[i] += 1;
                    break;
                }
            }
        }
        let kept = String::from_utf8(kept).unwrap();
        let v: f64 = format!("{kept}e-{d}").parse().unwrap();
        v.copysign(x)
    }

    #[test]
    fn round_cases() {
        let cases = [
            (2.5, 0, 3.0),
            (-2.5, 0, -3.0),
            (0.5, 0, 1.0),
            (0.49999999999999994, 0, 0.0),
            (2.675, 2, 2.68),
            (0.125, 2, 0.13),
            (1.005, 2, 1.01),
            (-1.005, 2, -1.01),
            (9.995, 2, 10.0),
            (123.456, 1, 123.5),
            (1e300, 2, 1e300),
            (1e-300, 2, 0.0),
            (0.0005, 3, 0.001),
            (0.0004, 3, 0.0),
            (5e-324, 0, 0.0),
            (f64::MAX, 0, f64::MAX),
            (4.35, 1, 4.4),
        ];
        for (x, d, want) in cases {
            assert_eq!(round_f64(x, d), want, "round({x}, {d})");
        }
        assert!(round_f64(f64::NAN, 1).is_nan());
        assert_eq!(round_f64(f64::NEG_INFINITY, 1), f64::NEG_INFINITY);
        assert!(round_f64(-0.1, 0).is_sign_negative());
    }

    #[test]
    fn int_kernels() {
        assert_eq!(abs_i64(-5), 5);
        assert!(abs_i64_bad(i64::MIN) && !abs_i64_bad(i64::MIN + 1));
        assert_eq!(rem_i64(-7, 2), -1);
        assert_eq!(rem_i64(7, -2), 1);
        assert_eq!(rem_i64(i64::MIN, -1), 0);
        assert!(rem_i64_bad(3, 0));
        assert_eq!(rem_f64(-7.5, 2.0), -1.5);
        assert!(rem_f64(1.0, 0.0).is_nan());
    }

    fn arb_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            (-1_000_000i64..1_000_000, 0u32..6).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
            (-100_000i64..100_000).prop_map(|m| m as f64 / 8.0),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn prop_round_matches_reference(x in arb_f64(), d in 0u32..12) {
            let got = round_f64(x, d);
            let want = round_reference(x, d);
            prop_assert!(got == want || (got.is_nan() && want.is_nan()), "round({x:e}, {d}): {got:e} vs {want:e}");
        }

        #[test]
        fn prop_int_kernels_match_reference(a in any::<i64>(), b in prop_oneof![any::<i64>(), -5i64..5]) {
            let wide = |v: i64| i128::from(v);
            prop_assert_eq!(abs_i64_bad(a), wide(a).abs() > wide(i64::MAX));
            if !abs_i64_bad(a) {
                prop_assert_eq!(wide(abs_i64(a)), wide(a).abs());
            }
            prop_assert_eq!(rem_i64_bad(a, b), b == 0);
            if b != 0 {
                // Truncated division: a = q * b + r with |r| < |b| and r of a's sign (or 0).
                let r = wide(rem_i64(a, b));
                let q = (wide(a) - r) / wide(b);
                prop_assert_eq!(q * wide(b) + r, wide(a));
                prop_assert!(r.abs() < wide(b).abs());
                prop_assert!(r == 0 || (r < 0) == (a < 0));
            }
        }
    }
}

/// `a * 10**shift / b` rounded half away from zero; `None` on division by zero or when the
/// result leaves int64 (or is `i64::MIN`, the null word).
pub(super) fn decimal_div(a: i64, b: i64, shift: u32) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let num = (a as i128).checked_mul(10i128.checked_pow(shift)?)?;
    let (b, q, r) = (b as i128, num / b as i128, num % b as i128);
    let q = if 2 * r.abs() >= b.abs() {
        q + if (num < 0) == (b < 0) { 1 } else { -1 }
    } else {
        q
    };
    i64::try_from(q).ok().filter(|&v| v != i64::MIN)
}

#[cfg(test)]
mod decimal_tests {
    use super::decimal_div;

    #[test]
    fn decimal_division_rounds_half_away_from_zero() {
        // 1.00 / 3 at scale 6 (shift 4): 0.333333
        assert_eq!(decimal_div(100, 3, 4), Some(333_333));
        assert_eq!(decimal_div(200, 3, 4), Some(666_667));
        assert_eq!(decimal_div(-200, 3, 4), Some(-666_667));
        assert_eq!(decimal_div(200, -3, 4), Some(-666_667));
        assert_eq!(decimal_div(5, 10, 0), Some(1));
        assert_eq!(decimal_div(-5, 10, 0), Some(-1));
        assert_eq!(decimal_div(4, 10, 0), Some(0));
        assert_eq!(decimal_div(1, 0, 4), None);
        assert_eq!(decimal_div(i64::MAX, 1, 4), None);
        // Against exact rational arithmetic on random operands.
        for a in [-997i64, -10, -1, 0, 1, 7, 12345, 99_999] {
            for b in [-13i64, -2, 1, 3, 8, 1000] {
                for shift in 0..6u32 {
                    let num = a as f64 * 10f64.powi(shift as i32) / b as f64;
                    let want = num.abs().round() * num.signum();
                    assert_eq!(
                        decimal_div(a, b, shift),
                        Some(want as i64),
                        "{a} {b} {shift}"
                    );
                }
            }
        }
    }
}
