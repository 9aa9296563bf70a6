//! How typed column values map to the `u64` words of a row.
//!
//! Every record column occupies exactly one word:
//!
//! | dtype   | word                                                              |
//! |---------|-------------------------------------------------------------------|
//! | int64   | the two's complement bits (`v as u64`)                            |
//! | float64 | the IEEE-754 bits, with `-0.0` stored as `0.0` and NaN canonical  |
//! | bool    | `0` or `1`                                                        |
//! | str     | an id from the process-wide [`Interner`] (`crate::interner`)      |
//!
//! ## Nulls
//!
//! A SQL null is one reserved word per dtype (a sentinel), so a nullable column still takes
//! one word and hashing, sorting, grouping and `distinct` treat null as a value (null keys
//! group together; `distinct` treats nulls as equal) with no change to traces or operators:
//!
//! | dtype   | null word                                                             |
//! |---------|-----------------------------------------------------------------------|
//! | int64   | `i64::MIN` ([`NULL_I64`]): the one int64 value a column cannot hold   |
//! | float64 | [`NULL_F64`], a quiet NaN with a payload no value encodes to          |
//! | bool    | `2` ([`NULL_BOOL`])                                                   |
//! | str     | `u64::MAX` ([`NULL_STR`]), an id the interner never hands out         |
//!
//! [`encode_f64`] maps every NaN to the canonical NaN, so no float value becomes null; the
//! boundary refuses an int64 value equal to `i64::MIN` (it would read as null). Null words
//! are made only by [`null_word`]; [`is_null_word`] is the one test. Why sentinels and not a
//! validity bitmap: every operator, trace and kernel moves rows as plain words, and a
//! bitmap would be a second word (or a side structure) everywhere; the cost is one reserved
//! value per dtype.
//!
//! Words define equality and a consistent sort order (used for grouping and consolidation),
//! not the value order: kernels that need value order (`min`, `max`, `top_k`, comparisons)
//! decode words with the column's [`DType`]. A string id keeps its meaning while any live
//! data holds it; strings no live data holds are freed and their ids reused
//! ([`crate::string_gc`]).

pub use crate::dtype::DType;
pub use crate::interner::Interner;

/// The null word of int64 columns (`i64::MIN`).
pub const NULL_I64: u64 = i64::MIN as u64;
/// The null word of float64 columns: a quiet NaN whose payload [`encode_f64`] never makes.
pub const NULL_F64: u64 = 0x7ff8_0000_0000_dd01;
/// The null word of bool columns.
pub const NULL_BOOL: u64 = 2;
/// The null word of str columns (an id the interner never reaches).
pub const NULL_STR: u64 = u64::MAX;

/// The null word of `dtype`.
#[inline]
pub fn null_word(dtype: DType) -> u64 {
    match dtype.physical() {
        DType::Int64 => NULL_I64,
        DType::Float64 => NULL_F64,
        DType::Bool => NULL_BOOL,
        _ => NULL_STR,
    }
}

/// Whether `w` is the null word of `dtype`.
#[inline]
pub fn is_null_word(dtype: DType, w: u64) -> bool {
    w == null_word(dtype)
}

/// Encodes an int64.
#[inline]
pub fn encode_i64(v: i64) -> u64 {
    v as u64
}

/// Decodes an int64.
#[inline]
pub fn decode_i64(w: u64) -> i64 {
    w as i64
}

/// Encodes a float64 (canonical zero and NaN).
#[inline]
pub fn encode_f64(v: f64) -> u64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    }
}

/// Decodes a float64.
#[inline]
pub fn decode_f64(w: u64) -> f64 {
    f64::from_bits(w)
}

/// Encodes a bool.
#[inline]
pub fn encode_bool(v: bool) -> u64 {
    v as u64
}

/// Decodes a bool.
#[inline]
pub fn decode_bool(w: u64) -> bool {
    w != 0
}

/// The order-preserving form of a word of `dtype`: ordered words compare (as `u64`) in the
/// value order (int64: the sign bit flipped; float64: its total-order bits, as
/// `f64::total_cmp`, NaN last; bool: unchanged; str: the id itself, which groups equal
/// strings but is not text order). The sort and consolidation kernels sort these so that their outputs come
/// back in value order; [`from_ordered_word`] is the inverse.
#[inline]
pub fn ordered_word(dtype: DType, w: u64) -> u64 {
    const SIGN: u64 = 1 << 63;
    match dtype.physical() {
        DType::Int64 => w ^ SIGN,
        DType::Float64 if w & SIGN != 0 => !w,
        DType::Float64 => w | SIGN,
        _ => w,
    }
}

/// The word of `dtype` whose [`ordered_word`] is `o`.
#[inline]
pub fn from_ordered_word(dtype: DType, o: u64) -> u64 {
    const SIGN: u64 = 1 << 63;
    match dtype.physical() {
        DType::Int64 => o ^ SIGN,
        DType::Float64 if o & SIGN != 0 => o & !SIGN,
        DType::Float64 => !o,
        _ => o,
    }
}

/// The interned text of a binary value: each byte as the char of that code point
/// (Latin-1), so equal bytes give equal text and byte order is text order.
pub fn binary_text(bytes: &[u8]) -> String {
    bytes.iter().map(|&b| b as char).collect()
}

/// The bytes of a binary value's interned text (the inverse of [`binary_text`]; a char
/// above U+00FF, which `binary_text` never writes, keeps its low byte).
pub fn binary_bytes(text: &str) -> Vec<u8> {
    text.chars().map(|c| c as u32 as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrips() {
        for v in [i64::MIN, -1, 0, 7, i64::MAX] {
            assert_eq!(decode_i64(encode_i64(v)), v);
        }
        assert_eq!(encode_f64(-0.0), encode_f64(0.0));
        assert_eq!(decode_f64(encode_f64(2.5)), 2.5);
        let a = Interner::intern("alpha");
        let b = Interner::intern("beta");
        assert_ne!(a, b);
        assert_eq!(Interner::intern("alpha"), a);
        let r = Interner::resolve_all(&[b, a]).unwrap();
        assert_eq!(&*r[0], "beta");
        assert_eq!(&*r[1], "alpha");
    }

    #[test]
    fn null_words_are_no_value() {
        assert!(is_null_word(DType::Int64, encode_i64(i64::MIN)));
        assert!(!is_null_word(DType::Int64, encode_i64(i64::MIN + 1)));
        let nan_payload = f64::from_bits(NULL_F64);
        assert!(nan_payload.is_nan());
        for v in [f64::NAN, -f64::NAN, nan_payload, 0.0, -0.0, f64::INFINITY] {
            assert!(!is_null_word(DType::Float64, encode_f64(v)), "{v}");
        }
        assert!(!is_null_word(DType::Bool, encode_bool(true)));
        assert!(is_null_word(DType::Str, NULL_STR));
        assert!(Interner::resolve_all(&[NULL_STR]).is_err());
        for d in [DType::Int64, DType::Float64, DType::Bool, DType::Str] {
            assert!(is_null_word(d, null_word(d)));
        }
    }

    #[test]
    fn ordered_words_sort_in_value_order_and_invert() {
        use crate::engine::operators::aggregate::cmp_words;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        let ints: Vec<u64> = [i64::MIN, -2, -1, 0, 1, i64::MAX]
            .iter()
            .map(|&v| encode_i64(v))
            .chain((0..200).map(|_| rng.gen::<u64>()))
            .collect();
        let floats: Vec<u64> = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            2.5,
            f64::INFINITY,
            f64::NAN,
        ]
        .iter()
        .map(|&v| encode_f64(v))
        .chain((0..200).map(|_| encode_f64(f64::from_bits(rng.gen::<u64>()))))
        .collect();
        for (dtype, words) in [
            (DType::Int64, &ints),
            (DType::Float64, &floats),
            (DType::Bool, &vec![0, 1]),
            (DType::Str, &ints),
        ] {
            for &a in words.iter() {
                assert_eq!(from_ordered_word(dtype, ordered_word(dtype, a)), a);
                for &b in words.iter() {
                    // str ids only group equal strings: ordered words keep the id order.
                    let want = match dtype {
                        DType::Str => a.cmp(&b),
                        _ => cmp_words(dtype, a, b),
                    };
                    assert_eq!(
                        ordered_word(dtype, a).cmp(&ordered_word(dtype, b)),
                        want,
                        "{dtype:?}: {a:#x} vs {b:#x}"
                    );
                }
            }
        }
    }
}
