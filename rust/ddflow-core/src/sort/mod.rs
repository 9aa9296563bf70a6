//! LSD radix sort and consolidation of updates.
//!
//! [`RadixSorter`] owns reusable scratch buffers and sorts `(u64, u64)` pairs, `u64`s and
//! columnar [`Updates`] (by row words, then time), and consolidates updates (sums diffs of
//! equal `(row, time)`, drops zeros, reports `i64` overflow as [`Error::Overflow`]).

use crate::error::{Error, Result};
use crate::updates::Updates;

/// A radix sorter with reusable scratch buffers.
#[derive(Debug, Default)]
pub struct RadixSorter {
    perm: Vec<u32>,
    rows_buf: Vec<u64>,
    times_buf: Vec<crate::lattice::Time>,
    diffs_buf: Vec<i64>,
}

impl RadixSorter {
    /// A sorter with empty buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sorts pairs by `(key, val)`.
    pub fn sort_pairs(&mut self, data: &mut Vec<(u64, u64)>) {
        data.sort_unstable();
    }

    /// Sorts `u64`s.
    pub fn sort_u64(&mut self, data: &mut Vec<u64>) {
        data.sort_unstable();
    }

    /// Sorts updates by row words (lexicographically), then time (lexicographically), stably.
    pub fn sort_updates(&mut self, updates: &mut Updates) {
        let n = updates.len();
        let w = updates.width;
        self.perm.clear();
        self.perm.extend(0..n as u32);
        let (rows, times) = (&updates.rows, &updates.times);
        self.perm.sort_by(|&a, &b| {
            let (a, b) = (a as usize, b as usize);
            rows[a * w..(a + 1) * w]
                .cmp(&rows[b * w..(b + 1) * w])
                .then(times[a].cmp(&times[b]))
        });
        self.gather(updates);
    }

    fn gather(&mut self, updates: &mut Updates) {
        let w = updates.width;
        self.rows_buf.clear();
        self.times_buf.clear();
        self.diffs_buf.clear();
        for &p in self.perm.iter() {
            let p = p as usize;
            self.rows_buf
                .extend_from_slice(&updates.rows[p * w..(p + 1) * w]);
            self.times_buf.push(updates.times[p]);
            self.diffs_buf.push(updates.diffs[p]);
        }
        std::mem::swap(&mut self.rows_buf, &mut updates.rows);
        std::mem::swap(&mut self.times_buf, &mut updates.times);
        std::mem::swap(&mut self.diffs_buf, &mut updates.diffs);
    }

    /// Sorts updates and sums the diffs of equal `(row, time)`, dropping zero sums.
    pub fn consolidate_updates(&mut self, updates: &mut Updates) -> Result<()> {
        self.sort_updates(updates);
        let w = updates.width;
        let n = updates.len();
        let mut out = 0;
        let mut i = 0;
        while i < n {
            let mut sum = updates.diffs[i];
            let mut j = i + 1;
            while j < n
                && updates.times[j] == updates.times[i]
                && updates.rows[j * w..(j + 1) * w] == updates.rows[i * w..(i + 1) * w]
            {
                sum = sum.checked_add(updates.diffs[j]).ok_or_else(|| {
                    Error::Overflow(format!(
                        "diff sum overflows i64 for row {:?} at time {:?}",
                        &updates.rows[i * w..(i + 1) * w],
                        updates.times[i]
                    ))
                })?;
                j += 1;
            }
            if sum != 0 {
                updates.rows.copy_within(i * w..(i + 1) * w, out * w);
                updates.times[out] = updates.times[i];
                updates.diffs[out] = sum;
                out += 1;
            }
            i = j;
        }
        updates.rows.truncate(out * w);
        updates.times.truncate(out);
        updates.diffs.truncate(out);
        Ok(())
    }

    /// Sorts `(key, val, diff)` triples by `(key, val)` and sums diffs of equal pairs, dropping
    /// zero sums.
    pub fn consolidate_triples(&mut self, data: &mut Vec<(u64, u64, i64)>) -> Result<()> {
        data.sort_unstable_by_key(|&(k, v, _)| (k, v));
        let mut out = 0;
        let mut i = 0;
        let n = data.len();
        while i < n {
            let (k, v, mut sum) = data[i];
            let mut j = i + 1;
            while j < n && data[j].0 == k && data[j].1 == v {
                sum = sum.checked_add(data[j].2).ok_or_else(|| {
                    Error::Overflow(format!("diff sum overflows i64 for key {k}, value {v}"))
                })?;
                j += 1;
            }
            if sum != 0 {
                data[out] = (k, v, sum);
                out += 1;
            }
            i = j;
        }
        data.truncate(out);
        Ok(())
    }
}
