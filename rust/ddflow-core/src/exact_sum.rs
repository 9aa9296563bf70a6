//! Exact sums of float64 values weighted by integer counts, rounded once at the end.
//!
//! A float64 is an integer times a power of two (`m * 2^e`, `|m| < 2^53`), so every finite
//! float is an exact multiple of the least subnormal, `2^-1074`, and a sum of finitely many
//! of them, weighted by counts, is an integer number of those units. [`ExactSum`] keeps that
//! integer in a fixed-point two's-complement accumulator wide enough for any float times
//! any int64 count, added up `2^64` times: 2,304 bits (1,074 below the binary point, 1,024
//! above, and headroom). Adding `x * n` costs a shifted add of a 117-bit product;
//! [`ExactSum::value`] rounds the exact total to the nearest float64 (ties to even), as
//! Python's `float(sum(map(Fraction, ...)))` would.
//!
//! So the sum does not depend on the order of its terms, and retracting a term (`n < 0`)
//! cancels it exactly: `+0.1` then `-0.1` leave exactly nothing. That lets a group carry its
//! float sum from batch to batch (`aggregate_group::RunningTotals`) with the result of a sum
//! recomputed from scratch, whatever the batching.
//!
//! Infinities and NaN are counted apart: the sum is NaN when a NaN has a non-zero count or
//! both infinities are present, else the present infinity, else the rounded total (which
//! overflows to an infinity beyond float64's range).

/// Limbs of the accumulator (64 bits each).
const LIMBS: usize = 36;

/// An exact running sum of `value * count` terms (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExactSum {
    /// The finite terms' total in units of `2^-1074`, two's complement, least limb first.
    limbs: [u64; LIMBS],
    /// Accumulated counts of `+inf`, `-inf` and NaN terms.
    pos_inf: i128,
    neg_inf: i128,
    nan: i128,
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum {
            limbs: [0; LIMBS],
            pos_inf: 0,
            neg_inf: 0,
            nan: 0,
        }
    }
}

impl ExactSum {
    /// An empty sum (zero).
    pub fn new() -> ExactSum {
        ExactSum::default()
    }

    /// Adds `x * n`, exactly.
    pub fn add(&mut self, x: f64, n: i64) {
        if n == 0 {
            return;
        }
        if x.is_nan() {
            self.nan += n as i128;
            return;
        }
        if x.is_infinite() {
            if x > 0.0 {
                self.pos_inf += n as i128;
            } else {
                self.neg_inf += n as i128;
            }
            return;
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as usize;
        let frac = bits & ((1u64 << 52) - 1);
        let (m, shift) = if biased == 0 {
            (frac, 0)
        } else {
            (frac | (1u64 << 52), biased - 1)
        };
        if m == 0 {
            return;
        }
        let mut p = m as i128 * n as i128;
        if x < 0.0 {
            p = -p;
        }
        self.add_shifted(p, shift);
    }

    /// Adds `p * 2^shift` units (two's complement, sign-extended to the top).
    fn add_shifted(&mut self, p: i128, shift: usize) {
        let (word, bit) = (shift / 64, shift % 64);
        let u = p as u128;
        let fill = if p < 0 { u64::MAX } else { 0 };
        // The shifted value's limbs from `word` up: three, then the sign extension.
        let parts = if bit == 0 {
            [u as u64, (u >> 64) as u64, fill]
        } else {
            [
                (u as u64) << bit,
                ((u >> (64 - bit)) as u64),
                ((u >> (128 - bit)) as u64) | (fill << bit),
            ]
        };
        let mut carry = 0u64;
        for i in word..LIMBS {
            let add = if i - word < 3 { parts[i - word] } else { fill };
            if add == 0 && carry == 0 && i - word >= 3 {
                break;
            }
            let (s1, c1) = self.limbs[i].overflowing_add(add);
            let (s2, c2) = s1.overflowing_add(carry);
            self.limbs[i] = s2;
            carry = (c1 as u64) + (c2 as u64);
        }
    }

    /// Adds every term of `other`.
    pub fn merge(&mut self, other: &ExactSum) {
        let mut carry = 0u64;
        for i in 0..LIMBS {
            let (s1, c1) = self.limbs[i].overflowing_add(other.limbs[i]);
            let (s2, c2) = s1.overflowing_add(carry);
            self.limbs[i] = s2;
            carry = (c1 as u64) + (c2 as u64);
        }
        self.pos_inf += other.pos_inf;
        self.neg_inf += other.neg_inf;
        self.nan += other.nan;
    }

    /// The total rounded to the nearest float64 (ties to even; `+0.0` for an exact zero).
    pub fn value(&self) -> f64 {
        let has_pos = self.pos_inf > 0 || self.neg_inf < 0;
        let has_neg = self.pos_inf < 0 || self.neg_inf > 0;
        if self.nan != 0 || (has_pos && has_neg) {
            return f64::NAN;
        }
        if has_pos {
            return f64::INFINITY;
        }
        if has_neg {
            return f64::NEG_INFINITY;
        }
        let negative = self.limbs[LIMBS - 1] >> 63 == 1;
        let mut mag = self.limbs;
        if negative {
            let mut carry = 1u64;
            for limb in mag.iter_mut() {
                let (s, c) = (!*limb).overflowing_add(carry);
                *limb = s;
                carry = c as u64;
            }
        }
        let Some(top) = (0..LIMBS).rev().find(|&i| mag[i] != 0) else {
            return 0.0;
        };
        let h = top * 64 + 63 - mag[top].leading_zeros() as usize; // highest set bit
        let magnitude = if h < 53 {
            // Fewer than 54 significant bits: exact (a subnormal or the least normals).
            (mag[0] as f64) * f64::from_bits(1)
        } else {
            let lo = h - 52; // the lowest bit of the 53-bit significand
            let bit = |i: usize| (mag[i / 64] >> (i % 64)) & 1 == 1;
            let (w, s) = (lo / 64, lo % 64);
            let next = if w + 1 < LIMBS { mag[w + 1] } else { 0 };
            let window = (((next as u128) << 64) | mag[w] as u128) >> s;
            let mut mant = (window as u64) & ((1u64 << 53) - 1);
            let round = bit(lo - 1);
            let sticky = {
                let below = lo - 1; // bits 0 .. below
                let (bw, bs) = (below / 64, below % 64);
                mag[..bw].iter().any(|&l| l != 0) || (mag[bw] & ((1u64 << bs) - 1)) != 0
            };
            let mut h = h;
            if round && (sticky || mant & 1 == 1) {
                mant += 1;
                if mant == 1u64 << 53 {
                    mant >>= 1;
                    h += 1;
                }
            }
            let biased = h as i64 - 51; // the leading bit's exponent, h - 1074, plus 1023
            if biased >= 0x7ff {
                f64::INFINITY
            } else {
                f64::from_bits(((biased as u64) << 52) | (mant & ((1u64 << 52) - 1)))
            }
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// Whether no term is left (every finite, infinite and NaN term cancelled).
    pub fn is_zero(&self) -> bool {
        self.nan == 0
            && self.pos_inf == 0
            && self.neg_inf == 0
            && self.limbs.iter().all(|&l| l == 0)
    }
}

#[cfg(test)]
#[path = "exact_sum_tests.rs"]
mod tests;
