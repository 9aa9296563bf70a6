//! Sorting `(key, val)` word pairs by key, then val, packed into one word when they fit.
//!
//! When the bits that vary across the keys and across the vals fit one `u64` together,
//! each pair is packed (`low(key) << vbits | low(val)`, the high bits every key (val) shares
//! kept aside) and the radix sort moves plain `u64`s, half the memory of `(u64, u64)` pairs;
//! otherwise the pairs are sorted as they are.

use super::RadixSorter;

/// Bit statistics of a column of words: how many low bits vary (the bits above are shared
/// by all words) and the shared high bits.
#[derive(Clone, Copy, Debug)]
struct WordStats {
    bits: u32,
    high: u64,
}

fn word_stats(words: &[u64]) -> WordStats {
    let Some(&first) = words.first() else {
        return WordStats { bits: 0, high: 0 };
    };
    let mask = words.iter().fold(0u64, |m, &w| m | (w ^ first));
    let bits = 64 - mask.leading_zeros();
    let high = if bits == 64 {
        0
    } else {
        first & !((1u64 << bits) - 1)
    };
    WordStats { bits, high }
}

fn low_mask(bits: u32) -> u64 {
    if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// `keys` and `vals` (equal lengths) sorted together by key, then val.
pub fn sort_pairs_by_key(
    sorter: &mut RadixSorter,
    keys: &[u64],
    vals: &[u64],
) -> (Vec<u64>, Vec<u64>) {
    assert_eq!(
        keys.len(),
        vals.len(),
        "sort_pairs_by_key: keys and vals differ in length"
    );
    let (ks, vs) = (word_stats(keys), word_stats(vals));
    let n = keys.len();
    let (mut ko, mut vo) = (Vec::with_capacity(n), Vec::with_capacity(n));
    if ks.bits + vs.bits <= 64 {
        let (kmask, vmask) = (low_mask(ks.bits), low_mask(vs.bits));
        let vbits = vs.bits;
        let mut data: Vec<u64> = keys
            .iter()
            .zip(vals)
            .map(|(&k, &v)| {
                let (k, v) = (k & kmask, v & vmask);
                if vbits == 64 {
                    v
                } else {
                    (k << vbits) | v
                }
            })
            .collect();
        sorter.sort_u64(&mut data);
        for p in data {
            let (k, v) = match vbits {
                64 => (0, p),
                0 => (p, 0),
                _ => (p >> vbits, p & vmask),
            };
            ko.push(ks.high | k);
            vo.push(vs.high | v);
        }
    } else {
        let mut data: Vec<(u64, u64)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        sorter.sort_pairs(&mut data);
        for (k, v) in data {
            ko.push(k);
            vo.push(v);
        }
    }
    (ko, vo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The reference: a comparison sort of the pairs.
    fn naive(keys: &[u64], vals: &[u64]) -> (Vec<u64>, Vec<u64>) {
        let mut p: Vec<(u64, u64)> = keys.iter().copied().zip(vals.iter().copied()).collect();
        p.sort_unstable();
        p.into_iter().unzip()
    }

    #[test]
    fn packed_and_plain_paths_match_a_comparison_sort() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let mut sorter = RadixSorter::new();
        // (key bits, val bits, shared high bits): packed (sum <= 64), a val of 64 varying
        // bits, a key-only spread, and plain pairs (sum > 64).
        for &(kb, vb, high) in &[
            (0u32, 0u32, 0u64),
            (10, 12, 0),
            (20, 30, 0xABC0_0000_0000_0000),
            (0, 64, 7 << 40),
            (40, 0, 1 << 62),
            (33, 33, 0),
            (64, 64, 0),
        ] {
            for &n in &[0usize, 1, 5, 300, 5000] {
                let gen = |bits: u32, rng: &mut rand::rngs::StdRng| {
                    let w = if bits == 0 {
                        0
                    } else {
                        rng.gen::<u64>() & low_mask(bits)
                    };
                    if bits == 64 {
                        w
                    } else {
                        w | high
                    }
                };
                let keys: Vec<u64> = (0..n).map(|_| gen(kb, &mut rng)).collect();
                let vals: Vec<u64> = (0..n).map(|_| gen(vb, &mut rng)).collect();
                assert_eq!(
                    sort_pairs_by_key(&mut sorter, &keys, &vals),
                    naive(&keys, &vals),
                    "key bits {kb}, val bits {vb}, n {n}"
                );
            }
        }
    }
}
