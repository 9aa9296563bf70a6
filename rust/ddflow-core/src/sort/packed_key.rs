//! An update's `(row, time)` sort key packed into `u64` chunks.
//!
//! [`KeyLayout::plan`] finds, per row word and time coordinate, the span of bits that vary
//! across a batch, and packs the spans, least significant word first, into as few 64-bit
//! chunks as possible. Bits outside the spans are equal in every update, so two updates
//! have equal `(row, time)` exactly when all their chunks are equal, and the chunks in
//! order (most significant chunk first) compare as `(row, time)` does.
//!
//! [`pack_with_index`] writes the first chunk of every update with the update's index
//! below it (`key << index_bits | index`); for rows of one or two words it reads each
//! update's words into fixed fields (no loop over the spans, no branch per word).

use super::radix::span;
use crate::lattice::{Time, MAX_DIMS};

/// Where one word of an update's sort key lives and which of its bits vary.
#[derive(Clone, Copy, Debug)]
pub(super) struct Part {
    /// Index into row words (`< width`), or `width + c` for time coordinate `c`.
    pub word: usize,
    /// Lowest varying bit.
    pub lo: u32,
    /// Mask of the varying span, after shifting down by `lo`.
    pub mask: u64,
    /// Position of the span inside the chunk key.
    pub shift: u32,
}

/// The chunks of a batch's packed sort key (see the module docs).
#[derive(Debug, Default)]
pub(super) struct KeyLayout {
    /// Per key word (row words, then time coordinates), the bits that vary.
    word_masks: Vec<u64>,
    /// The varying spans, least significant first, chunk after chunk.
    pub parts: Vec<Part>,
    /// `(end index into parts, total bits)` per chunk, least significant chunk first.
    pub chunks: Vec<(usize, u32)>,
}

impl KeyLayout {
    /// Plans the chunks for `rows` (of `w` words each) and `times` (empty for a column held
    /// as one time: no part reads it). Returns `false` when nothing varies (every update has
    /// the same row and time).
    pub fn plan(&mut self, rows: &[u64], times: &[Time], w: usize) -> bool {
        let nwords = w + MAX_DIMS;
        let masks = &mut self.word_masks;
        masks.clear();
        masks.resize(nwords, 0);
        match w {
            0 => {}
            1 => masks[0] = or_xor_first(rows.iter().copied()),
            2 => {
                let (f0, f1) = (rows[0], rows[1]);
                let (m0, m1) = rows
                    .chunks_exact(2)
                    .fold((0, 0), |(m0, m1), r| (m0 | (r[0] ^ f0), m1 | (r[1] ^ f1)));
                masks[0] = m0;
                masks[1] = m1;
            }
            _ => {
                let first = &rows[..w];
                for row in rows.chunks_exact(w) {
                    for ((m, &x), &f) in masks.iter_mut().zip(row).zip(first) {
                        *m |= x ^ f;
                    }
                }
            }
        }
        let t0 = times.first().map_or([0; MAX_DIMS], |t| t.0);
        let mut tm = [0u64; MAX_DIMS];
        for t in times {
            for c in 0..MAX_DIMS {
                tm[c] |= t.0[c] ^ t0[c];
            }
        }
        masks[w..].copy_from_slice(&tm);

        let (parts, chunks) = (&mut self.parts, &mut self.chunks);
        parts.clear();
        chunks.clear();
        let mut bits = 0;
        for word in (0..nwords).rev() {
            let s = span(masks[word]);
            if s == 0 {
                continue;
            }
            if bits + s > 64 {
                chunks.push((parts.len(), bits));
                bits = 0;
            }
            let lo = masks[word].trailing_zeros();
            let mask = if s == 64 { u64::MAX } else { (1u64 << s) - 1 };
            parts.push(Part {
                word,
                lo,
                mask,
                shift: bits,
            });
            bits += s;
        }
        if bits > 0 {
            chunks.push((parts.len(), bits));
        }
        !chunks.is_empty()
    }

    /// The bits of chunk 0 that vary across the batch, at their place in the chunk.
    pub fn first_chunk_varying(&self) -> u64 {
        let end = self.chunks.first().map_or(0, |c| c.0);
        self.parts[..end].iter().fold(0, |acc, p| {
            acc | ((self.word_masks[p.word] >> p.lo) & p.mask) << p.shift
        })
    }

    /// Whether some time coordinate varies (a part reads the times).
    pub fn times_vary(&self, w: usize) -> bool {
        self.word_masks[w..].iter().any(|&m| m != 0)
    }
}

/// The OR of every value's XOR with the first: its set bits vary.
fn or_xor_first(mut values: impl Iterator<Item = u64>) -> u64 {
    let Some(first) = values.next() else {
        return 0;
    };
    values.fold(0, |m, x| m | (x ^ first))
}

#[inline(always)]
fn update_word(rows: &[u64], times: &[Time], w: usize, e: usize, word: usize) -> u64 {
    if word < w {
        rows[e * w + word]
    } else {
        times[e].0[word - w]
    }
}

/// The chunk key of update `e` from the chunk's `parts`.
#[inline(always)]
pub(super) fn chunk_key(parts: &[Part], rows: &[u64], times: &[Time], w: usize, e: usize) -> u64 {
    let mut k = 0;
    for p in parts {
        k |= ((update_word(rows, times, w, e, p.word) >> p.lo) & p.mask) << p.shift;
    }
    k
}

/// One word's span in a fixed-field packing: `(x >> lo) & mask` placed at `shift` (a word
/// that does not vary has `mask` 0 and contributes nothing).
#[derive(Clone, Copy, Debug, Default)]
struct Field {
    lo: u32,
    mask: u64,
    shift: u32,
}

impl Field {
    #[inline(always)]
    fn take(self, x: u64) -> u64 {
        ((x >> self.lo) & self.mask) << self.shift
    }
}

/// Replaces `out` with `chunk_key(parts, ..) << ib | e` for every update `e` in batch order
/// (`parts` one chunk's, at most `64 - ib` bits wide; `times` empty for a column held as
/// one time).
pub(super) fn pack_with_index(
    parts: &[Part],
    rows: &[u64],
    times: &[Time],
    w: usize,
    n: usize,
    ib: u32,
    out: &mut Vec<u64>,
) {
    out.clear();
    out.reserve(n);
    // The time coordinates that may vary are the leading `dims` (a key word past them is
    // constant): only those are read.
    let dims = parts
        .iter()
        .filter(|p| p.word >= w)
        .map(|p| p.word - w + 1)
        .max()
        .unwrap_or(0);
    match (w, dims) {
        (1, 0) => pack_fixed::<1, 0>(parts, rows, times, n, ib, out),
        (1, 1) => pack_fixed::<1, 1>(parts, rows, times, n, ib, out),
        (1, 2) => pack_fixed::<1, 2>(parts, rows, times, n, ib, out),
        (1, _) => pack_fixed::<1, MAX_DIMS>(parts, rows, times, n, ib, out),
        (2, 0) => pack_fixed::<2, 0>(parts, rows, times, n, ib, out),
        (2, 1) => pack_fixed::<2, 1>(parts, rows, times, n, ib, out),
        (2, 2) => pack_fixed::<2, 2>(parts, rows, times, n, ib, out),
        (2, _) => pack_fixed::<2, MAX_DIMS>(parts, rows, times, n, ib, out),
        _ => out.extend((0..n).map(|e| chunk_key(parts, rows, times, w, e) << ib | e as u64)),
    }
}

/// [`pack_with_index`] for rows of `W` words whose varying time coordinates are among the
/// first `D`.
fn pack_fixed<const W: usize, const D: usize>(
    parts: &[Part],
    rows: &[u64],
    times: &[Time],
    n: usize,
    ib: u32,
    out: &mut Vec<u64>,
) {
    let mut row_fields = [Field::default(); W];
    let mut time_fields = [Field::default(); D];
    for p in parts {
        let f = Field {
            lo: p.lo,
            mask: p.mask,
            shift: p.shift,
        };
        if p.word < W {
            row_fields[p.word] = f;
        } else {
            time_fields[p.word - W] = f;
        }
    }
    let rows = rows.chunks_exact(W).take(n);
    let row_key = |r: &[u64]| {
        let mut k = 0;
        for c in 0..W {
            k |= row_fields[c].take(r[c]);
        }
        k
    };
    if D == 0 {
        out.extend(rows.enumerate().map(|(e, r)| row_key(r) << ib | e as u64));
    } else {
        out.extend(rows.zip(times).enumerate().map(|(e, (r, t))| {
            let mut k = row_key(r);
            for c in 0..D {
                k |= time_fields[c].take(t.0[c]);
            }
            k << ib | e as u64
        }));
    }
}
