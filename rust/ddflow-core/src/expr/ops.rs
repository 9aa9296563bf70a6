//! Scalar semantics of the operators that are not plain Rust arithmetic: floor division and
//! modulo (Python / numpy conventions), NaN-propagating min/max, float -> int casts.
//!
//! The integer helpers never panic: they return a (meaningless) value for the inputs that
//! [`floordiv_i64_bad`] / [`mod_i64_bad`] flag, and the evaluator raises for those rows.

/// `a // b` rounding toward negative infinity; 0 when `b == 0` and `i64::MIN` for
/// `i64::MIN // -1` (both flagged by [`floordiv_i64_bad`]).
#[inline]
pub(crate) fn floordiv_i64(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let q = a.wrapping_div(b);
    if a.wrapping_rem(b) != 0 && (a ^ b) < 0 {
        q - 1
    } else {
        q
    }
}

/// Whether `a // b` is undefined (`b == 0`) or overflows (`i64::MIN // -1`).
#[inline]
pub(crate) fn floordiv_i64_bad(a: i64, b: i64) -> bool {
    b == 0 || (a == i64::MIN && b == -1)
}

/// `a % b` with the sign of `b` (Python); 0 when `b == 0` (flagged by [`mod_i64_bad`]).
/// `i64::MIN % -1` is 0, as in Python.
#[inline]
pub(crate) fn mod_i64(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let r = a.wrapping_rem(b);
    if r != 0 && (r ^ b) < 0 {
        r + b
    } else {
        r
    }
}

/// Whether `a % b` is undefined (`b == 0`).
#[inline]
pub(crate) fn mod_i64_bad(_a: i64, b: i64) -> bool {
    b == 0
}

/// numpy's `npy_divmod`: floor quotient and remainder of floats, for `b != 0`.
#[inline]
fn divmod_f64(a: f64, b: f64) -> (f64, f64) {
    let mut m = a % b; // C fmod
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0f64.copysign(b);
    }
    let floordiv = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0f64.copysign(a / b)
    };
    (floordiv, m)
}

/// numpy's `floor_divide` on float64: `a / b` (±inf or NaN) when `b == 0`.
#[inline]
pub(crate) fn floordiv_f64(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        a / b
    } else {
        divmod_f64(a, b).0
    }
}

/// numpy's `remainder` on float64 (sign of `b`): NaN when `b == 0`.
#[inline]
pub(crate) fn mod_f64(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        a % b
    } else {
        divmod_f64(a, b).1
    }
}

/// numpy's `minimum` on float64 (NaN propagates).
#[inline]
pub(crate) fn min_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// numpy's `maximum` on float64 (NaN propagates).
#[inline]
pub(crate) fn max_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

/// Whether a float64 truncates to an int64 (false for NaN, ±inf and out of range).
#[inline]
pub(crate) fn f64_fits_i64(v: f64) -> bool {
    (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_floor_semantics() {
        let cases = [
            (7, 2, 3, 1),
            (-7, 2, -4, 1),
            (7, -2, -4, -1),
            (-7, -2, 3, -1),
            (6, 3, 2, 0),
            (-6, 3, -2, 0),
            (i64::MIN, 1, i64::MIN, 0),
            (i64::MAX, -1, -i64::MAX, 0),
        ];
        for (a, b, q, r) in cases {
            assert_eq!(floordiv_i64(a, b), q, "{a} // {b}");
            assert_eq!(mod_i64(a, b), r, "{a} % {b}");
            assert!(!floordiv_i64_bad(a, b));
        }
        assert!(floordiv_i64_bad(i64::MIN, -1));
        assert!(floordiv_i64_bad(1, 0));
        assert_eq!(mod_i64(i64::MIN, -1), 0);
        assert!(mod_i64_bad(1, 0));
    }

    #[test]
    fn float_floor_semantics() {
        assert_eq!(floordiv_f64(7.5, 2.0), 3.0);
        assert_eq!(floordiv_f64(-7.5, 2.0), -4.0);
        assert_eq!(mod_f64(-7.5, 2.0), 0.5);
        assert_eq!(mod_f64(7.5, -2.0), -0.5);
        assert_eq!(floordiv_f64(1.0, 0.0), f64::INFINITY);
        assert_eq!(floordiv_f64(-1.0, 0.0), f64::NEG_INFINITY);
        assert!(floordiv_f64(0.0, 0.0).is_nan());
        assert!(mod_f64(1.0, 0.0).is_nan());
        assert_eq!(floordiv_f64(-1.0, f64::INFINITY), -1.0);
        assert_eq!(mod_f64(-1.0, f64::INFINITY), f64::INFINITY);
        assert!(f64_fits_i64(-(2f64.powi(63))));
        assert!(!f64_fits_i64(2f64.powi(63)));
        assert!(!f64_fits_i64(f64::NAN));
        assert!(min_f64(1.0, f64::NAN).is_nan());
        assert_eq!(max_f64(1.0, 2.0), 2.0);
    }
}
