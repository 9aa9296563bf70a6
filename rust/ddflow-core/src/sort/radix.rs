//! The radix sort kernel shared by every public sort: digit planning over the bits that vary
//! across the input, one-pass histograms, stable counting-sort scatter passes, and the
//! cache-sized split that keeps the least-significant-digit passes inside L2.
//!
//! An element exposes up to [`MAX_WORDS`] `u64` words through [`RadixKey`]. A sort is
//! described by [`SortKey`]s, least significant first: a word and the mask of its bits that
//! take part in the order (the rest, e.g. an element index packed below a key, is ignored).
//! All passes are stable, so sorting by keys `[k_0, .., k_m]` orders by `k_m`, then `k_m-1`,
//! ..., then keeps the input order.
//!
//! Inputs larger than [`CACHE_BYTES`] first get one most-significant-digit pass over the top
//! [`MSD_DIGIT_BITS`] varying bits (a stable split into buckets), and each bucket, now
//! cache-sized, is sorted by LSD passes of up to [`MAX_DIGIT_BITS`] bits over its remaining
//! varying bits. Straight LSD over a 160 MB input pays a DRAM round trip per pass and, with
//! 11-bit digits, a TLB miss per scattered element; the split pays that once.

use std::cmp::Ordering;
use std::mem::size_of_val;

/// Most words a [`RadixKey`] may expose.
pub(crate) const MAX_WORDS: usize = 4;

/// Widest digit of an in-cache LSD pass, in bits (2048 buckets).
pub(crate) const MAX_DIGIT_BITS: u32 = 11;

/// Widest digit of the out-of-cache split pass. 256 to 1024 write streams stay within the
/// TLB; measured on 1e7 pairs (AMD EPYC): 8 bits ~50 ms/pass, 10 bits ~60 ms, 11 bits
/// ~100-130 ms.
pub(crate) const MSD_DIGIT_BITS: u32 = 10;

/// Inputs up to this many bytes are sorted by LSD passes directly.
pub(crate) const CACHE_BYTES: usize = 256 << 10;

/// Slices up to this length are sorted by insertion sort (stable, no histograms).
const INSERTION: usize = 24;

/// In-cache inputs with many varying bits are first sorted by their top
/// `log2(n) + PREFIX_MARGIN` varying bits only: if those were uniform, groups of equal
/// prefix would hold about `1 + 2^-PREFIX_MARGIN` elements on average, so finishing them by
/// insertion sort costs one comparison per element instead of further passes.
const PREFIX_MARGIN: u32 = 6;

/// Number of bits between the lowest and highest set bit of `mask` inclusive (0 for 0).
pub(crate) fn span(mask: u64) -> u32 {
    if mask == 0 {
        0
    } else {
        64 - mask.leading_zeros() - mask.trailing_zeros()
    }
}

/// The split digit for `n` elements of `bytes` bytes with varying bits `masks`: the top
/// varying bits of the most significant varying key, enough of them (at most
/// [`MSD_DIGIT_BITS`]) for the average bucket to fill half of [`CACHE_BYTES`]. Returns the
/// key's index and the digit, or `None` when nothing varies.
fn split_digit(
    n: usize,
    bytes: usize,
    keys: &[SortKey],
    masks: &[u64; MAX_WORDS],
) -> Option<(usize, Digit)> {
    let top = (0..keys.len()).rev().find(|&i| masks[i] != 0)?;
    let m = masks[top];
    let hi = 63 - m.leading_zeros();
    let want = bytes.div_ceil(CACHE_BYTES / 2).min(n);
    let bits = index_bits(want).clamp(1, MSD_DIGIT_BITS).min(span(m));
    Some((
        top,
        Digit {
            word: keys[top].word,
            shift: hi + 1 - bits,
            bits,
        },
    ))
}

/// Digit width for an in-cache LSD pass over `n` elements: [`MAX_DIGIT_BITS`], narrower
/// for small inputs so that clearing and prefix-summing the histogram (`2^bits` entries)
/// does not dominate the `n` scattered elements.
fn digit_bits(n: usize) -> u32 {
    index_bits(n).clamp(4, MAX_DIGIT_BITS)
}

/// Bits needed to represent every value below `n`.
pub(crate) fn index_bits(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// An element sortable by its `u64` words.
pub(crate) trait RadixKey: Copy {
    /// Number of words, at most [`MAX_WORDS`].
    const WORDS: usize;
    /// Word `i`.
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

/// Word `word` of an element, restricted to the bits `mask`, takes part in the order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SortKey {
    pub word: usize,
    pub mask: u64,
}

/// One counting-sort pass: bits `shift .. shift + bits` of word `word`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Digit {
    word: usize,
    shift: u32,
    bits: u32,
}

impl Digit {
    #[inline(always)]
    fn bucket<T: RadixKey>(&self, x: &T) -> usize {
        ((x.word(self.word) >> self.shift) & ((1u64 << self.bits) - 1)) as usize
    }
}

/// For each key, the bits of its mask that differ between some element and the first one.
/// Bits outside are constant across `data` and never need a pass.
pub(crate) fn varying_bits<T: RadixKey>(data: &[T], keys: &[SortKey]) -> [u64; MAX_WORDS] {
    let mut masks = [0u64; MAX_WORDS];
    let Some(first) = data.first() else {
        return masks;
    };
    match keys {
        [k0, k1] => {
            let (f0, f1) = (first.word(k0.word), first.word(k1.word));
            let (m0, m1) = data.iter().fold((0u64, 0u64), |(m0, m1), x| {
                (m0 | (x.word(k0.word) ^ f0), m1 | (x.word(k1.word) ^ f1))
            });
            masks[0] = m0 & k0.mask;
            masks[1] = m1 & k1.mask;
        }
        _ => {
            for (m, k) in masks.iter_mut().zip(keys) {
                let f = first.word(k.word);
                *m = data.iter().fold(0u64, |acc, x| acc | (x.word(k.word) ^ f)) & k.mask;
            }
        }
    }
    masks
}

/// Appends digits covering the varying bits `mask` of word `word`, least significant first:
/// the span from the lowest to the highest varying bit, cut into equal digits of at most
/// `max_bits` bits.
fn plan_word(word: usize, mask: u64, max_bits: u32, digits: &mut Vec<Digit>) {
    if mask == 0 {
        return;
    }
    let lo = mask.trailing_zeros();
    let hi = 63 - mask.leading_zeros();
    let span = hi - lo + 1;
    let passes = span.div_ceil(max_bits);
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

/// Compares two elements by `keys` (most significant key last).
#[inline]
fn cmp_keys<T: RadixKey>(a: &T, b: &T, keys: &[SortKey]) -> Ordering {
    for k in keys.iter().rev() {
        match (a.word(k.word) & k.mask).cmp(&(b.word(k.word) & k.mask)) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    Ordering::Equal
}

/// Stable insertion sort by `keys`, for tiny slices.
fn insertion_sort<T: RadixKey>(data: &mut [T], keys: &[SortKey]) {
    for i in 1..data.len() {
        let x = data[i];
        let mut j = i;
        while j > 0 && cmp_keys(&data[j - 1], &x, keys) == Ordering::Greater {
            data[j] = data[j - 1];
            j -= 1;
        }
        data[j] = x;
    }
}

/// Reusable state of the kernel (histograms and digit plans).
#[derive(Debug, Default)]
pub(crate) struct Lsd {
    counts: Vec<usize>,
    digits: Vec<Digit>,
    active: Vec<(Digit, usize)>,
}

impl Lsd {
    /// Sorts `data` stably by `keys` (least significant first; at most [`MAX_WORDS`] keys),
    /// using `buf` (same length) as scratch. Returns `true` when the sorted result is in
    /// `buf` instead of `data`.
    pub(crate) fn sort<T: RadixKey>(
        &mut self,
        data: &mut [T],
        buf: &mut [T],
        keys: &[SortKey],
    ) -> bool {
        if data.len() <= INSERTION {
            insertion_sort(data, keys);
            return false;
        }
        if size_of_val(data) > CACHE_BYTES {
            return self.split_top(data, buf, keys);
        }
        let masks = varying_bits(data, keys);
        self.sort_masked(data, buf, keys, &masks)
    }

    /// As [`sort`](Self::sort), given `masks = varying_bits(data, keys)`.
    pub(crate) fn sort_masked<T: RadixKey>(
        &mut self,
        data: &mut [T],
        buf: &mut [T],
        keys: &[SortKey],
        masks: &[u64; MAX_WORDS],
    ) -> bool {
        debug_assert_eq!(data.len(), buf.len());
        debug_assert!(keys.len() <= MAX_WORDS);
        let n = data.len();
        if n <= INSERTION {
            insertion_sort(data, keys);
            return false;
        }
        if size_of_val(data) > CACHE_BYTES {
            return self.split(data, buf, keys, masks);
        }
        let total: u32 = masks.iter().map(|&m| span(m)).sum();
        let prefix_bits = index_bits(n) + PREFIX_MARGIN;
        let max_bits = digit_bits(n);
        if total.div_ceil(max_bits) <= prefix_bits.div_ceil(max_bits) {
            // Few varying bits: sort by all of them.
            self.digits.clear();
            for (k, &m) in keys.iter().zip(masks.iter()) {
                plan_word(k.word, m, max_bits, &mut self.digits);
            }
            return self.lsd(data, buf);
        }
        self.prefix_then_groups(data, buf, keys, masks, prefix_bits)
    }

    /// Sorts by the `prefix_bits` most significant varying bits (keys are then nearly
    /// distinct, so groups of equal prefix are tiny), then sorts each group of equal prefix:
    /// insertion sort when tiny, recursively otherwise.
    fn prefix_then_groups<T: RadixKey>(
        &mut self,
        data: &mut [T],
        buf: &mut [T],
        keys: &[SortKey],
        masks: &[u64; MAX_WORDS],
        prefix_bits: u32,
    ) -> bool {
        let mut prefix = [0u64; MAX_WORDS];
        let mut left = prefix_bits;
        for i in (0..keys.len()).rev() {
            let m = masks[i];
            if m == 0 || left == 0 {
                continue;
            }
            let take = span(m).min(left);
            let hi = 64 - m.leading_zeros();
            let top = if take == 64 {
                u64::MAX
            } else {
                ((1u64 << take) - 1) << (hi - take)
            };
            prefix[i] = m & top;
            left -= take;
        }
        self.digits.clear();
        for (k, &m) in keys.iter().zip(prefix.iter()) {
            plan_word(k.word, m, digit_bits(data.len()), &mut self.digits);
        }
        let in_buf = self.lsd(data, buf);
        let (sorted, other) = if in_buf { (buf, data) } else { (data, buf) };
        match *keys {
            [k0] => {
                let p0 = prefix[0];
                self.finish_groups(sorted, other, keys, |x: &T| x.word(k0.word) & p0);
            }
            [k0, k1] => {
                let (p0, p1) = (prefix[0], prefix[1]);
                self.finish_groups(sorted, other, keys, |x: &T| {
                    (x.word(k0.word) & p0, x.word(k1.word) & p1)
                });
            }
            _ => {
                self.finish_groups(sorted, other, keys, |x: &T| {
                    let mut sig = [0u64; MAX_WORDS];
                    for ((s, k), p) in sig.iter_mut().zip(keys).zip(prefix) {
                        *s = x.word(k.word) & p;
                    }
                    sig
                });
            }
        }
        in_buf
    }

    /// Sorts each run of equal `sig` in `sorted` (by `keys`): insertion sort when tiny,
    /// recursively (with `other` as scratch) otherwise.
    fn finish_groups<T: RadixKey, S: PartialEq>(
        &mut self,
        sorted: &mut [T],
        other: &mut [T],
        keys: &[SortKey],
        sig: impl Fn(&T) -> S,
    ) {
        let n = sorted.len();
        let mut start = 0;
        let mut cur = sig(&sorted[0]);
        for j in 1..=n {
            let next = (j < n).then(|| sig(&sorted[j]));
            if next.as_ref() == Some(&cur) {
                continue;
            }
            if j - start > INSERTION {
                if self.sort(&mut sorted[start..j], &mut other[start..j], keys) {
                    sorted[start..j].copy_from_slice(&other[start..j]);
                }
            } else if j - start > 1 {
                insertion_sort(&mut sorted[start..j], keys);
            }
            start = j;
            if let Some(s) = next {
                cur = s;
            }
        }
    }

    /// The out-of-cache step for a large input whose varying bits are not known yet: one
    /// read computes them together with the histogram of the split digit guessed from a
    /// strided sample (re-counted in the rare case the guess was wrong), then as
    /// [`split`](Self::split).
    fn split_top<T: RadixKey>(&mut self, data: &mut [T], buf: &mut [T], keys: &[SortKey]) -> bool {
        let n = data.len();
        let first = data[0];
        let mut sampled = [0u64; MAX_WORDS];
        for x in data.iter().step_by((n / 4096).max(1)) {
            for (m, k) in sampled.iter_mut().zip(keys) {
                *m |= (x.word(k.word) ^ first.word(k.word)) & k.mask;
            }
        }
        let Some(guess) = split_digit(n, size_of_val(data), keys, &sampled) else {
            // The sample does not vary: it almost surely all is constant; check exactly.
            let masks = varying_bits(data, keys);
            return self.split(data, buf, keys, &masks);
        };
        let mut acc = [0u64; MAX_WORDS];
        let mut counts = [0usize; 1 << MSD_DIGIT_BITS];
        match keys {
            [k0] => {
                let f0 = first.word(k0.word);
                for x in data.iter() {
                    acc[0] |= x.word(k0.word) ^ f0;
                    counts[guess.1.bucket(x)] += 1;
                }
            }
            [k0, k1] => {
                let (f0, f1) = (first.word(k0.word), first.word(k1.word));
                for x in data.iter() {
                    acc[0] |= x.word(k0.word) ^ f0;
                    acc[1] |= x.word(k1.word) ^ f1;
                    counts[guess.1.bucket(x)] += 1;
                }
            }
            _ => {
                for x in data.iter() {
                    for (a, k) in acc.iter_mut().zip(keys) {
                        *a |= x.word(k.word) ^ first.word(k.word);
                    }
                    counts[guess.1.bucket(x)] += 1;
                }
            }
        }
        let mut masks = [0u64; MAX_WORDS];
        for ((m, a), k) in masks.iter_mut().zip(acc).zip(keys) {
            *m = a & k.mask;
        }
        match split_digit(n, size_of_val(data), keys, &masks) {
            Some((top, digit)) if (top, digit) == guess => {
                self.split_with(data, buf, keys, &masks, top, digit, counts)
            }
            _ => self.split(data, buf, keys, &masks),
        }
    }

    /// The out-of-cache step: one stable pass over the most significant varying bits into
    /// `buf`, then each bucket sorted on its own (recursively). Returns where the result is.
    fn split<T: RadixKey>(
        &mut self,
        data: &mut [T],
        buf: &mut [T],
        keys: &[SortKey],
        masks: &[u64; MAX_WORDS],
    ) -> bool {
        let Some((top, digit)) = split_digit(data.len(), size_of_val(data), keys, masks) else {
            return false;
        };
        let mut counts = [0usize; 1 << MSD_DIGIT_BITS];
        for x in data.iter() {
            counts[digit.bucket(x)] += 1;
        }
        self.split_with(data, buf, keys, masks, top, digit, counts)
    }

    /// The split pass by `digit` (of key `top`), given its bucket `counts`.
    #[allow(clippy::too_many_arguments)]
    fn split_with<T: RadixKey>(
        &mut self,
        data: &mut [T],
        buf: &mut [T],
        keys: &[SortKey],
        masks: &[u64; MAX_WORDS],
        top: usize,
        digit: Digit,
        counts: [usize; 1 << MSD_DIGIT_BITS],
    ) -> bool {
        let n = data.len();
        let nb = 1usize << digit.bits;
        let mut offsets = counts;
        let mut sum = 0;
        for o in offsets[..nb].iter_mut() {
            let c = *o;
            *o = sum;
            sum += c;
        }
        let starts = offsets;
        scatter(data, buf, digit, &mut offsets[..nb]);
        // Inside a bucket the split bits are constant; the other varying bits are a superset
        // of the bucket's own (digits that turn out constant are skipped by the histograms).
        let mut child = *masks;
        child[top] &= !(((1u64 << digit.bits) - 1) << digit.shift);
        // After the scatter, `offsets[b]` is the end of bucket `b`.
        // Buckets end up in `buf` or `data` depending on their number of passes; the result
        // goes where most elements landed, and the other buckets are copied there.
        let mut landed_in_buf = [true; 1 << MSD_DIGIT_BITS];
        let mut elements_in_buf = 0;
        for b in 0..nb {
            let (s, e) = (starts[b], offsets[b]);
            if e - s >= 2 && self.sort_masked(&mut buf[s..e], &mut data[s..e], keys, &child) {
                landed_in_buf[b] = false;
            } else {
                elements_in_buf += e - s;
            }
        }
        let in_buf = 2 * elements_in_buf >= n;
        for b in 0..nb {
            let (s, e) = (starts[b], offsets[b]);
            match (landed_in_buf[b], in_buf) {
                (true, false) => data[s..e].copy_from_slice(&buf[s..e]),
                (false, true) => buf[s..e].copy_from_slice(&data[s..e]),
                _ => {}
            }
        }
        in_buf
    }

    /// LSD passes over `self.digits` (least significant first), skipping digits constant
    /// across `data`. Returns `true` when the result is in `buf`.
    fn lsd<T: RadixKey>(&mut self, data: &mut [T], buf: &mut [T]) -> bool {
        let n = data.len();
        if self.digits.is_empty() {
            return false;
        }
        // Histograms of all digits in one read, laid out back to back.
        self.active.clear();
        let mut total = 0;
        for d in self.digits.iter() {
            self.active.push((*d, total));
            total += 1 << d.bits;
        }
        self.counts.clear();
        self.counts.resize(total, 0);
        match self.active.as_slice() {
            [(d0, _)] => {
                let c = &mut self.counts[..1 << d0.bits];
                for x in data.iter() {
                    c[d0.bucket(x)] += 1;
                }
            }
            [(d0, _), (d1, o1)] => {
                let (c0, c1) = self.counts.split_at_mut(*o1);
                for x in data.iter() {
                    c0[d0.bucket(x)] += 1;
                    c1[d1.bucket(x)] += 1;
                }
            }
            [(d0, _), (d1, o1), (d2, o2)] => {
                let (c0, rest) = self.counts.split_at_mut(*o1);
                let (c1, c2) = rest.split_at_mut(o2 - o1);
                for x in data.iter() {
                    c0[d0.bucket(x)] += 1;
                    c1[d1.bucket(x)] += 1;
                    c2[d2.bucket(x)] += 1;
                }
            }
            digits => {
                for x in data.iter() {
                    for (d, o) in digits {
                        self.counts[o + d.bucket(x)] += 1;
                    }
                }
            }
        }
        // Drop digits whose value is the same for every element; counts become offsets.
        let counts = &mut self.counts;
        self.active.retain(|&(d, o)| {
            let c = &mut counts[o..o + (1 << d.bits)];
            if c.contains(&n) {
                return false;
            }
            let mut sum = 0;
            for k in c.iter_mut() {
                let v = *k;
                *k = sum;
                sum += v;
            }
            true
        });
        let mut in_buf = false;
        for &(d, o) in self.active.iter() {
            let offsets = &mut self.counts[o..o + (1 << d.bits)];
            if in_buf {
                scatter(buf, data, d, offsets);
            } else {
                scatter(data, buf, d, offsets);
            }
            in_buf = !in_buf;
        }
        in_buf
    }
}

/// One stable counting-sort pass from `src` to `dst` by `digit`. `offsets` (one entry per
/// bucket, `1 << digit.bits` of them) holds each bucket's first output position, computed
/// as prefix sums of this digit's counts over `src`, and is advanced to the bucket ends.
#[inline(never)]
fn scatter<T: RadixKey>(src: &[T], dst: &mut [T], digit: Digit, offsets: &mut [usize]) {
    assert!(src.len() == dst.len() && offsets.len() == 1 << digit.bits);
    debug_assert!(offsets.iter().all(|&o| o <= dst.len()));
    let mask = (1u64 << digit.bits) - 1;
    let out = dst.as_mut_ptr();
    for x in src {
        let b = ((x.word(digit.word) >> digit.shift) & mask) as usize;
        // SAFETY: `b <= mask < offsets.len()`. `offsets` are the prefix sums of the counts
        // of each bucket over `src`, so bucket `b` receives exactly `count[b]` writes at
        // positions `offsets[b] .. offsets[b] + count[b] <= src.len() == dst.len()`.
        unsafe {
            let o = offsets.get_unchecked_mut(b);
            debug_assert!(*o < dst.len());
            out.add(*o).write(*x);
            *o += 1;
        }
    }
}
