//! Moving a large batch of updates into the order of a permutation, in place.
//!
//! Walking the permutation's cycles (update `perm[j]` to slot `j`, then the update that
//! belongs where it came from, ...) moves each update once but reads them in random order,
//! each read waiting for the last: for the 10M edges of the 1M/10M BFS's load one cache and
//! TLB miss after another, 54% of the load's CPU samples (`perf record` of
//! `bfs_bench 1000000 10000000 1000 1000`). Instead, as in American flag sort:
//!
//! 1. each update's destination is written down (`dest[perm[j]] = j`: independent writes,
//!    which the CPU overlaps);
//! 2. the updates are swapped into their destination's *block* of about 512 kB, one block
//!    after the other: every swap places one update in its block for good, reading the
//!    current block and writing the next free slot of another, so the memory traffic is a
//!    few hundred sequential streams;
//! 3. as soon as a block is full, while it is cached, its updates are written to their
//!    slots in a block of scratch and copied back.
//!
//! Every update moves at most three times, and no second copy of the batch is made (`dest`
//! is 4 bytes per update, the scratch one block). Rows always move; times and diffs only when asked (a column of
//! equal values is in order as it is).

use crate::lattice::Time;
use crate::updates::Updates;

/// Bytes of updates (and their destinations) per block: a quarter of the 2 MB L2 cache per
/// core of the benchmark machine, leaving room for the other blocks' streams.
const BLOCK_BYTES: usize = 512 << 10;

/// How far ahead of a block's next free slot step 2 asks for the cache lines it will write:
/// a block's slot is written again only after about as many swaps as there are blocks, so
/// the line arrives in time, where the hardware prefetchers cannot follow hundreds of
/// streams.
const PREFETCH_AHEAD: usize = 8;

/// Moves update `perm[j]` to position `j` for every `j`, in place; `dest` is scratch.
pub(super) fn permute_in_place(
    updates: &mut Updates,
    perm: &[u32],
    dest: &mut Vec<u32>,
    move_times: bool,
    move_diffs: bool,
) {
    let w = updates.width;
    let per_update =
        4 + 8 * w + if move_times { size_of::<Time>() } else { 0 } + if move_diffs { 8 } else { 0 };
    let shift = (BLOCK_BYTES / per_update).max(64).ilog2();
    permute_in_blocks(updates, perm, dest, move_times, move_diffs, shift);
}

/// [`permute_in_place`] with blocks of `2^shift` updates (tests choose small blocks).
pub(super) fn permute_in_blocks(
    updates: &mut Updates,
    perm: &[u32],
    dest: &mut Vec<u32>,
    move_times: bool,
    move_diffs: bool,
    shift: u32,
) {
    let n = perm.len();
    debug_assert_eq!(updates.len(), n);
    dest.clear();
    dest.resize(n, 0);
    for (j, &p) in perm.iter().enumerate() {
        dest[p as usize] = j as u32;
    }
    let Updates {
        rows, times, diffs, ..
    } = updates;
    let mut columns = Columns {
        w: updates.width,
        rows,
        times: move_times.then(|| times.make_mut().as_mut_slice()),
        diffs: move_diffs.then_some(&mut diffs[..]),
        dest,
    };
    let block = 1usize << shift;
    let blocks = n.div_ceil(block);
    // Step 2: the next free slot of each block; a block is full when it reaches the next
    // block's start. Once block `b` is full (and all before it), step 3 orders it at once,
    // while the sweep of step 2 has left it in cache.
    let mut head: Vec<usize> = (0..blocks).map(|b| b * block).collect();
    let mut scratch = Scratch::default();
    for b in 0..blocks {
        let (start, end) = (b * block, ((b + 1) * block).min(n));
        while head[b] < end {
            let p = head[b];
            let c = (columns.dest[p] >> shift) as usize;
            if c == b {
                head[b] += 1;
            } else {
                let q = head[c];
                columns.prefetch(q + PREFETCH_AHEAD);
                columns.swap(p, q);
                head[c] = q + 1;
            }
        }
        columns.order_block(start, end, &mut scratch);
    }
}

/// One block's columns, written in order before they are copied back.
#[derive(Default)]
struct Scratch {
    rows: Vec<u64>,
    times: Vec<Time>,
    diffs: Vec<i64>,
}

/// The columns moved together, with each update's destination.
struct Columns<'a> {
    w: usize,
    rows: &'a mut [u64],
    times: Option<&'a mut [Time]>,
    diffs: Option<&'a mut [i64]>,
    dest: &'a mut [u32],
}

impl Columns<'_> {
    /// Puts each update of `[start, end)`, whose destinations all lie in that range, at its
    /// destination: written into `scratch` at its slot (independent writes, which the CPU
    /// overlaps, where swapping each update to its slot makes every step wait for the last),
    /// then copied back.
    fn order_block(&mut self, start: usize, end: usize, scratch: &mut Scratch) {
        let (n, w) = (end - start, self.w);
        let dest = &self.dest[start..end];
        debug_assert!(dest.iter().all(|&d| (start..end).contains(&(d as usize))));
        scratch.rows.clear();
        scratch.rows.resize(n * w, 0);
        match w {
            0 => {}
            1 => {
                for (&d, &x) in dest.iter().zip(&self.rows[start..end]) {
                    scratch.rows[d as usize - start] = x;
                }
            }
            2 => {
                for (&d, r) in dest
                    .iter()
                    .zip(self.rows[2 * start..2 * end].chunks_exact(2))
                {
                    let o = 2 * (d as usize - start);
                    scratch.rows[o] = r[0];
                    scratch.rows[o + 1] = r[1];
                }
            }
            _ => {
                for (&d, r) in dest
                    .iter()
                    .zip(self.rows[w * start..w * end].chunks_exact(w))
                {
                    let o = w * (d as usize - start);
                    scratch.rows[o..o + w].copy_from_slice(r);
                }
            }
        }
        self.rows[w * start..w * end].copy_from_slice(&scratch.rows);
        if let Some(t) = self.times.as_deref_mut() {
            scratch.times.clear();
            scratch.times.resize(n, Time::default());
            for (&d, &x) in dest.iter().zip(&t[start..end]) {
                scratch.times[d as usize - start] = x;
            }
            t[start..end].copy_from_slice(&scratch.times);
        }
        if let Some(df) = self.diffs.as_deref_mut() {
            scratch.diffs.clear();
            scratch.diffs.resize(n, 0);
            for (&d, &x) in dest.iter().zip(&df[start..end]) {
                scratch.diffs[d as usize - start] = x;
            }
            df[start..end].copy_from_slice(&scratch.diffs);
        }
    }

    /// Asks for the cache lines of update `i` (if there is one) in every column moved.
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        if i < self.dest.len() {
            prefetch(self.rows.as_ptr().wrapping_add(i * self.w));
            prefetch(self.dest.as_ptr().wrapping_add(i));
            if let Some(t) = self.times.as_deref() {
                prefetch(t.as_ptr().wrapping_add(i));
            }
            if let Some(d) = self.diffs.as_deref() {
                prefetch(d.as_ptr().wrapping_add(i));
            }
        }
    }

    /// Swaps updates `a` and `b` (with their destinations).
    #[inline(always)]
    fn swap(&mut self, a: usize, b: usize) {
        match self.w {
            0 => {}
            1 => self.rows.swap(a, b),
            2 => {
                self.rows.swap(2 * a, 2 * b);
                self.rows.swap(2 * a + 1, 2 * b + 1);
            }
            w => {
                for k in 0..w {
                    self.rows.swap(a * w + k, b * w + k);
                }
            }
        }
        if let Some(t) = self.times.as_deref_mut() {
            t.swap(a, b);
        }
        if let Some(d) = self.diffs.as_deref_mut() {
            d.swap(a, b);
        }
        self.dest.swap(a, b);
    }
}

/// A hint to load the cache line at `p` (nothing on targets without one).
#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The naive reference: a new batch gathered through the permutation.
    fn gathered(u: &Updates, perm: &[u32], move_times: bool, move_diffs: bool) -> Updates {
        let mut out = Updates::new(u.width);
        for &p in perm {
            let p = p as usize;
            let t = if move_times { u.times[p] } else { u.times[0] };
            let d = if move_diffs { u.diffs[p] } else { u.diffs[0] };
            out.push(&u.rows[p * u.width..(p + 1) * u.width], t, d);
        }
        out
    }

    fn batch(width: usize, n: usize, seed: u64, same_times: bool, same_diffs: bool) -> Updates {
        let mut u = Updates::new(width);
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..n {
            let row: Vec<u64> = (0..width).map(|_| next() % 1000).collect();
            let t = if same_times {
                Time::scalar(3)
            } else {
                Time::from_coords(&[next() % 50, next() % 7])
            };
            let d = if same_diffs {
                1
            } else {
                (next() % 5) as i64 - 2
            };
            u.push(&row, t, d);
        }
        u
    }

    proptest! {
        #[test]
        fn matches_a_gather(
            width in 0usize..4,
            keys in proptest::collection::vec(any::<u32>(), 0..600),
            shift in 0u32..8,
            same_times in any::<bool>(),
            same_diffs in any::<bool>(),
        ) {
            let n = keys.len();
            let mut perm: Vec<u32> = (0..n as u32).collect();
            perm.sort_by_key(|&i| keys[i as usize]);
            let u = batch(width, n, n as u64 + shift as u64, same_times, same_diffs);
            let (move_times, move_diffs) = (!same_times, !same_diffs);
            let expected = gathered(&u, &perm, move_times, move_diffs);
            let mut moved = u.clone();
            let mut dest = Vec::new();
            permute_in_blocks(&mut moved, &perm, &mut dest, move_times, move_diffs, shift);
            prop_assert_eq!(&moved, &expected);
            // The block size the sorter picks, too.
            let mut moved = u.clone();
            permute_in_place(&mut moved, &perm, &mut dest, move_times, move_diffs);
            prop_assert_eq!(moved, expected);
        }
    }

    #[test]
    fn reverses_a_large_batch_across_many_blocks() {
        let u = batch(2, 100_000, 7, false, false);
        let perm: Vec<u32> = (0..100_000u32).rev().collect();
        let expected = gathered(&u, &perm, true, true);
        let mut moved = u;
        permute_in_blocks(&mut moved, &perm, &mut Vec::new(), true, true, 10);
        assert_eq!(moved, expected);
    }
}
