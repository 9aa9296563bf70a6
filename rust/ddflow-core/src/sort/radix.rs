//! The LSD radix sort kernel shared by every public sort: digit planning (which bit ranges
//! vary across the input), one-pass histograms, and stable counting-sort scatter passes.
//!
//! An element exposes up to [`MAX_WORDS`] `u64` words through [`RadixKey`], word 0 the most
//! significant. Sorting by a set of [`Digit`]s (least significant first) with stable passes
//! sorts by the concatenation of those bit ranges.

/// Most words a [`RadixKey`] may expose.
pub(crate) const MAX_WORDS: usize = 4;

/// Widest digit, in bits. 11 bits (2048 buckets) keeps the scatter's active write
/// positions within L1/L2 while cutting a 64-bit word to 6 passes instead of 8.
pub(crate) const MAX_DIGIT_BITS: u32 = 11;

const BUCKETS: usize = 1 << MAX_DIGIT_BITS;

/// An element sortable by its `u64` words.
pub(crate) trait RadixKey: Copy {
    /// Number of words, at most [`MAX_WORDS`].
    const WORDS: usize;
    /// Word `i`; word 0 is the most significant.
    fn word(&self, i: usize) -> u64;
}

impl RadixKey for u64 {
    const WORDS: usize = 1;
    #[inline(always)]
    fn word(&self, _i: usize) -> u64 {
        *self
    }
}

impl RadixKey for (u64, u64) {
    const WORDS: usize = 2;
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        if i == 0 {
            self.0
        } else {
            self.1
        }
    }
}

impl RadixKey for (u64, u64, i64) {
    const WORDS: usize = 2;
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        if i == 0 {
            self.0
        } else {
            self.1
        }
    }
}

/// A sort key with the index of the element it came from (used to build permutations when
/// the key and the index do not fit one `u64` together).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct KeyIdx {
    pub key: u64,
    pub idx: u32,
}

impl RadixKey for KeyIdx {
    const WORDS: usize = 1;
    #[inline(always)]
    fn word(&self, _i: usize) -> u64 {
        self.key
    }
}

/// One counting-sort pass: bits `shift .. shift + bits` of word `word`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Digit {
    pub word: usize,
    pub shift: u32,
    pub bits: u32,
}

impl Digit {
    #[inline(always)]
    fn bucket<T: RadixKey>(&self, x: &T) -> usize {
        ((x.word(self.word) >> self.shift) & ((1u64 << self.bits) - 1)) as usize
    }
}

/// For each word, the bits that differ between some element and the first one. Bits outside
/// the mask are constant across `data` and never need a pass.
pub(crate) fn varying_bits<T: RadixKey>(data: &[T]) -> [u64; MAX_WORDS] {
    let mut masks = [0u64; MAX_WORDS];
    let Some(first) = data.first() else {
        return masks;
    };
    for (w, m) in masks.iter_mut().enumerate().take(T::WORDS) {
        let f = first.word(w);
        // A separate loop per word vectorises; the data is re-read once per word.
        *m = data.iter().fold(0u64, |acc, x| acc | (x.word(w) ^ f));
    }
    masks
}

/// Appends digits covering the varying bits `mask` of word `word`, least significant first:
/// the span from the lowest to the highest varying bit, cut into equal digits of at most
/// [`MAX_DIGIT_BITS`] bits.
pub(crate) fn plan_word(word: usize, mask: u64, digits: &mut Vec<Digit>) {
    if mask == 0 {
        return;
    }
    let lo = mask.trailing_zeros();
    let hi = 63 - mask.leading_zeros();
    let span = hi - lo + 1;
    let passes = span.div_ceil(MAX_DIGIT_BITS);
    let bits = span.div_ceil(passes);
    let mut shift = lo;
    while shift <= hi {
        let b = bits.min(hi + 1 - shift);
        digits.push(Digit {
            word,
            shift,
            bits: b,
        });
        shift += b;
    }
}

/// Reusable state of the LSD kernel.
#[derive(Debug, Default)]
pub(crate) struct Lsd {
    counts: Vec<usize>,
    active: Vec<Digit>,
}

impl Lsd {
    /// Sorts `data` stably by `digits` (least significant first), using `buf` as the other
    /// half of the ping-pong. Digits constant across `data` are skipped. Returns `true` when
    /// the sorted result ended up in `buf[..data.len()]` instead of `data`.
    pub(crate) fn sort<T: RadixKey>(
        &mut self,
        data: &mut [T],
        buf: &mut Vec<T>,
        digits: &[Digit],
    ) -> bool {
        let n = data.len();
        if n < 2 || digits.is_empty() {
            return false;
        }
        let nd = digits.len();
        self.counts.clear();
        self.counts.resize(nd * BUCKETS, 0);
        // All histograms in one read of the data.
        match nd {
            1 => histogram1(data, digits[0], &mut self.counts),
            2 => histogram2(data, digits[0], digits[1], &mut self.counts),
            _ => {
                for x in data.iter() {
                    for (d, digit) in digits.iter().enumerate() {
                        self.counts[d * BUCKETS + digit.bucket(x)] += 1;
                    }
                }
            }
        }
        // Skip digits whose value is the same for every element; turn counts into offsets.
        self.active.clear();
        for (d, digit) in digits.iter().enumerate() {
            let c = &mut self.counts[d * BUCKETS..d * BUCKETS + (1 << digit.bits)];
            if c.contains(&n) {
                continue;
            }
            let mut sum = 0;
            for k in c.iter_mut() {
                let v = *k;
                *k = sum;
                sum += v;
            }
            self.active.push(*digit);
            if self.active.len() != d + 1 {
                // Keep offsets of active digits packed at the front.
                let a = self.active.len() - 1;
                self.counts
                    .copy_within(d * BUCKETS..(d + 1) * BUCKETS, a * BUCKETS);
            }
        }
        if self.active.is_empty() {
            return false;
        }
        if buf.len() < n {
            buf.resize(n, data[0]);
        }
        let buf = &mut buf[..n];
        let mut in_buf = false;
        for (a, digit) in self.active.iter().enumerate() {
            let offsets = &mut self.counts[a * BUCKETS..(a + 1) * BUCKETS];
            if in_buf {
                scatter(buf, data, *digit, offsets);
            } else {
                scatter(data, buf, *digit, offsets);
            }
            in_buf = !in_buf;
        }
        in_buf
    }
}

fn histogram1<T: RadixKey>(data: &[T], d0: Digit, counts: &mut [usize]) {
    let c0 = &mut counts[..BUCKETS];
    for x in data {
        c0[d0.bucket(x)] += 1;
    }
}

fn histogram2<T: RadixKey>(data: &[T], d0: Digit, d1: Digit, counts: &mut [usize]) {
    let (c0, rest) = counts.split_at_mut(BUCKETS);
    let c1 = &mut rest[..BUCKETS];
    for x in data {
        c0[d0.bucket(x)] += 1;
        c1[d1.bucket(x)] += 1;
    }
}

/// One stable counting-sort pass from `src` to `dst` by `digit`; `offsets` holds each
/// bucket's first output position and is advanced.
#[inline(never)]
fn scatter<T: RadixKey>(src: &[T], dst: &mut [T], digit: Digit, offsets: &mut [usize]) {
    debug_assert_eq!(src.len(), dst.len());
    let offsets = &mut offsets[..BUCKETS];
    let mask = (1u64 << digit.bits) - 1;
    for x in src {
        let b = ((x.word(digit.word) >> digit.shift) & mask) as usize;
        let o = offsets[b];
        dst[o] = *x;
        offsets[b] = o + 1;
    }
}
