//! The static-graph fast path: a batch of `(src, dst)` pairs at the least time.
//!
//! [`Batch::from_static_pairs`] radix-sorts the pairs (packed into one `u64` each when both
//! ids fit in 32 bits), counts duplicates into diffs (sparse: only repeated pairs carry a
//! diff) and stores keys and vals as `u32` when they fit. The result has no time and no
//! val offsets: `u32` vals, `u32` keys and key offsets, i.e. about `4 + 12 * nodes / edges`
//! bytes per edge.

use super::batch::{Batch, Diffs, Times, Words};
use super::builder::compact_diffs;
use super::description::Description;
use crate::error::{Error, Result};
use crate::lattice::Time;
use crate::sort::with_thread_sorter;

/// Run-length encodes sorted `(key, val)` pairs into keys, key offsets, vals and diffs.
struct Runs<K> {
    keys: Vec<K>,
    key_offs: Vec<usize>,
    vals: Vec<K>,
    dup_idx: Vec<usize>,
    dup_cnt: Vec<i64>,
}

impl<K: Copy + PartialEq> Runs<K> {
    fn new(n: usize) -> Self {
        Runs {
            keys: Vec::new(),
            key_offs: vec![0],
            vals: Vec::with_capacity(n),
            dup_idx: Vec::new(),
            dup_cnt: Vec::new(),
        }
    }

    #[inline]
    fn push(&mut self, key: K, val: K, count: usize) {
        if self.keys.last() != Some(&key) {
            if !self.keys.is_empty() {
                self.key_offs.push(self.vals.len());
            }
            self.keys.push(key);
        }
        if count > 1 {
            self.dup_idx.push(self.vals.len());
            self.dup_cnt.push(count as i64);
        }
        self.vals.push(val);
    }

    fn finish(mut self) -> (Vec<K>, Vec<usize>, Vec<K>, Diffs) {
        if !self.keys.is_empty() {
            self.key_offs.push(self.vals.len());
        }
        let n = self.vals.len();
        let diffs = if self.dup_idx.is_empty() {
            Diffs::Ones
        } else if self.dup_idx.len() * 4 <= n {
            Diffs::Sparse {
                idx: self.dup_idx.into(),
                diffs: self.dup_cnt.into(),
            }
        } else {
            let mut d = vec![1i64; n];
            for (&i, &c) in self.dup_idx.iter().zip(self.dup_cnt.iter()) {
                d[i] = c;
            }
            compact_diffs(d)
        };
        self.vals.shrink_to_fit();
        self.keys.shrink_to_fit();
        self.key_offs.shrink_to_fit();
        (self.keys, self.key_offs, self.vals, diffs)
    }
}

impl Batch {
    /// A batch of the pairs `(src[i], dst[i])` (key = src, val = dst, one word each) at the
    /// least time, each with diff 1, duplicates counted into diffs; described by
    /// [`Description::least_time`]. The input need not be sorted.
    ///
    /// Errors: [`Error::Shape`] if the slices' lengths differ.
    pub fn from_static_pairs(src: &[u64], dst: &[u64]) -> Result<Batch> {
        Batch::from_static_pairs_in(src, dst, crate::lattice::MAX_DIMS)
    }

    /// As [`Batch::from_static_pairs`], for a trace of `time_dims`-coordinate times: the
    /// batch's upper is [`Description::least_time_in`]`(time_dims)`.
    pub fn from_static_pairs_in(src: &[u64], dst: &[u64], time_dims: usize) -> Result<Batch> {
        if src.len() != dst.len() {
            return Err(Error::Shape(format!(
                "static pairs: {} sources and {} destinations",
                src.len(),
                dst.len()
            )));
        }
        let n = src.len();
        let or = src.iter().chain(dst.iter()).fold(0u64, |m, &w| m | w);
        let (keys, key_offs, vals, diffs) = if or >> 32 == 0 {
            let mut packed: Vec<u64> = src
                .iter()
                .zip(dst.iter())
                .map(|(&s, &d)| (s << 32) | d)
                .collect();
            with_thread_sorter(|s| s.sort_u64(&mut packed));
            let mut runs = Runs::<u32>::new(n);
            let mut i = 0;
            while i < n {
                let x = packed[i];
                let mut j = i + 1;
                while j < n && packed[j] == x {
                    j += 1;
                }
                runs.push((x >> 32) as u32, x as u32, j - i);
                i = j;
            }
            drop(packed);
            let (k, ko, v, d) = runs.finish();
            (Words::U32(k.into()), ko, Words::U32(v.into()), d)
        } else {
            let mut pairs: Vec<(u64, u64)> =
                src.iter().zip(dst.iter()).map(|(&s, &d)| (s, d)).collect();
            with_thread_sorter(|s| s.sort_pairs(&mut pairs));
            let mut runs = Runs::<u64>::new(n);
            let mut i = 0;
            while i < n {
                let x = pairs[i];
                let mut j = i + 1;
                while j < n && pairs[j] == x {
                    j += 1;
                }
                runs.push(x.0, x.1, j - i);
                i = j;
            }
            drop(pairs);
            let (k, ko, v, d) = runs.finish();
            (Words::narrowed(k), ko, Words::narrowed(v), d)
        };
        Ok(Batch {
            desc: Description::least_time_in(time_dims),
            key_width: 1,
            val_width: 1,
            keys,
            key_offs: key_offs.into(),
            vals,
            val_offs: None,
            times: Times::Single(Time::minimum()),
            diffs,
        })
    }
}
