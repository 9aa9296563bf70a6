//! A column of 64-bit words stored in 32 bits while every word fits.
//!
//! Most words a capture keeps are small: int64 values and string ids near zero, times below
//! 2^31, diffs of ±1. [`Narrow`] keeps them as `i32` (a word `w` fits when `w as i64` lies in
//! `i32`'s range, so `-1`, the null string id `u64::MAX`, fits too) and switches the whole
//! column to `u64` words the first time one does not fit. Reading gives back the exact word.
//! It grows by half its length at a time (not double), so a long history overshoots its
//! size by at most a half.

/// Words stored as `i32` while they all fit, as `u64` after.
#[derive(Debug, Clone)]
pub(super) enum Narrow {
    /// Every word `w` so far has `w as i64` in `i32`'s range.
    Small(Vec<i32>),
    /// Some word did not fit.
    Wide(Vec<u64>),
}

impl Default for Narrow {
    fn default() -> Narrow {
        Narrow::Small(Vec::new())
    }
}

/// Whether `w` fits in an `i32` (read as a signed word).
#[inline]
fn fits(w: u64) -> bool {
    i32::try_from(w as i64).is_ok()
}

/// Reserves room for `extra` more items, growing by at least half the length.
fn reserve<T>(v: &mut Vec<T>, extra: usize) {
    let need = v.len() + extra;
    if need > v.capacity() {
        let grown = (v.len() + v.len() / 2).max(need).max(64);
        v.reserve_exact(grown - v.len());
    }
}

impl Narrow {
    /// Number of words.
    pub(super) fn len(&self) -> usize {
        match self {
            Narrow::Small(v) => v.len(),
            Narrow::Wide(v) => v.len(),
        }
    }

    /// The word at `i`.
    #[inline]
    pub(super) fn get(&self, i: usize) -> u64 {
        match self {
            Narrow::Small(v) => v[i] as i64 as u64,
            Narrow::Wide(v) => v[i],
        }
    }

    /// Appends words; widens the column first if one of them does not fit in 32 bits.
    ///
    /// `words` is read twice: once for its least and greatest value as signed words (a
    /// loop without branches), then to copy. Given an iterator of known length (a slice's,
    /// or `chunks_exact` of one, mapped), the copy writes without a capacity check per word:
    /// the capture's append was a tenth of the `count` micro-case's update phase when it
    /// stepped through rows word by word.
    pub(super) fn extend<I>(&mut self, words: I)
    where
        I: ExactSizeIterator<Item = u64> + Clone,
    {
        if let Narrow::Small(v) = self {
            let (lo, hi) = words.clone().fold((0i64, 0i64), |(lo, hi), w| {
                (lo.min(w as i64), hi.max(w as i64))
            });
            if fits(lo as u64) && fits(hi as u64) {
                reserve(v, words.len());
                v.extend(words.map(|w| w as i64 as i32));
                return;
            }
            let mut wide = Vec::new();
            reserve(&mut wide, v.len() + words.len());
            wide.extend(v.iter().map(|&x| x as i64 as u64));
            *self = Narrow::Wide(wide);
        }
        if let Narrow::Wide(v) = self {
            reserve(v, words.len());
            v.extend(words);
        }
    }

    /// Every word, in order (a copy).
    pub(super) fn to_words(&self) -> Vec<u64> {
        match self {
            Narrow::Small(v) => v.iter().map(|&x| x as i64 as u64).collect(),
            Narrow::Wide(v) => v.clone(),
        }
    }

    /// The words at `order`, in that order (a copy).
    pub(super) fn gather(&self, order: &[u32]) -> Vec<u64> {
        match self {
            Narrow::Small(v) => order.iter().map(|&i| v[i as usize] as i64 as u64).collect(),
            Narrow::Wide(v) => order.iter().map(|&i| v[i as usize]).collect(),
        }
    }

    /// Marks every word (see [`crate::string_gc::Marks::word`]).
    pub(super) fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        match self {
            Narrow::Small(v) => v.iter().for_each(|&x| marks.word(x as i64 as u64)),
            Narrow::Wide(v) => marks.words(v),
        }
    }

    /// Heap bytes held.
    pub(super) fn heap_bytes(&self) -> usize {
        match self {
            Narrow::Small(v) => v.capacity() * 4,
            Narrow::Wide(v) => v.capacity() * 8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any words appended in any chunks read back exactly, and the column stays narrow
        /// exactly as long as every word fits.
        #[test]
        fn reads_back_what_was_appended(
            chunks in prop::collection::vec(
                prop::collection::vec(
                    prop_oneof![
                        -3i64..3,
                        Just(i32::MAX as i64),
                        Just(i32::MIN as i64),
                        Just(i32::MAX as i64 + 1),
                        Just(i32::MIN as i64 - 1),
                        any::<i64>(),
                    ].prop_map(|x| x as u64),
                    0..20,
                ),
                0..8,
            )
        ) {
            let mut col = Narrow::default();
            let mut all: Vec<u64> = Vec::new();
            for c in &chunks {
                col.extend(c.iter().copied());
                all.extend(c);
            }
            prop_assert_eq!(col.len(), all.len());
            prop_assert_eq!(col.to_words(), all.clone());
            for (i, &w) in all.iter().enumerate() {
                prop_assert_eq!(col.get(i), w);
            }
            prop_assert_eq!(matches!(col, Narrow::Small(_)), all.iter().all(|&w| fits(w)));
            let order: Vec<u32> = (0..all.len() as u32).rev().collect();
            let rev: Vec<u64> = all.iter().rev().copied().collect();
            prop_assert_eq!(col.gather(&order), rev);
        }
    }

    #[test]
    fn null_string_id_and_minus_one_fit() {
        let mut col = Narrow::default();
        col.extend([u64::MAX, 0, (-1i64) as u64].into_iter());
        assert!(matches!(col, Narrow::Small(_)));
        assert_eq!(col.to_words(), vec![u64::MAX, 0, u64::MAX]);
        col.extend([1u64 << 40].into_iter());
        assert!(matches!(col, Narrow::Wide(_)));
        assert_eq!(col.to_words(), vec![u64::MAX, 0, u64::MAX, 1 << 40]);
    }
}
