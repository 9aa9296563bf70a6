//! A batch builder's diffs: implicit ones, then exceptions to one, then one per update.
//!
//! A builder used to write every diff out (8 bytes per update) at the first diff other
//! than 1 and compact them to sparse exceptions only when the batch was done. A load with a
//! few repeated rows has a few diffs of 2: the 10M-edge arrange of the 1M/10M BFS wrote
//! out 76 MB of diffs for some thousands of exceptions. [`DiffBuf`] keeps the exceptions
//! (position and diff) until they are half the updates, and only then writes diffs out.

use super::batch::Diffs;
use super::time_vec::TimeVec;

/// Exceptions are written out as one diff per update once there are more than this many
/// and they are more than half the updates.
const DENSE_MIN: usize = 8;

/// The diffs of the updates pushed so far (positions `0..n`, `n` kept by the builder).
#[derive(Clone, Debug, Default)]
pub(crate) enum DiffBuf {
    /// Every diff is 1.
    #[default]
    Ones,
    /// Diffs are 1 except at positions `idx` (increasing), which have `d` (never 1).
    Sparse { idx: Vec<usize>, d: Vec<i64> },
    /// One diff per update.
    Dense(Vec<i64>),
}

impl DiffBuf {
    /// Diff `diff` of the update at position `pos` (the next one); `cap` is the builder's
    /// capacity hint for a written-out vector.
    #[inline]
    pub(crate) fn push(&mut self, pos: usize, diff: i64, cap: usize) {
        match self {
            DiffBuf::Dense(v) => {
                if v.len() < pos {
                    v.resize(pos, 1);
                }
                v.push(diff);
            }
            _ if diff == 1 => {}
            DiffBuf::Ones => {
                *self = DiffBuf::Sparse {
                    idx: vec![pos],
                    d: vec![diff],
                }
            }
            DiffBuf::Sparse { idx, d } => {
                idx.push(pos);
                d.push(diff);
                if idx.len() > DENSE_MIN && idx.len() * 2 > pos + 1 {
                    self.write_out(pos + 1, cap);
                }
            }
        }
    }

    /// Writes the diffs of positions `0..n` out as one per update.
    #[cold]
    fn write_out(&mut self, n: usize, cap: usize) {
        let mut v = Vec::with_capacity(cap.max(n + 1));
        v.resize(n, 1);
        if let DiffBuf::Sparse { idx, d } = self {
            for (&i, &x) in idx.iter().zip(d.iter()) {
                v[i] = x;
            }
        }
        *self = DiffBuf::Dense(v);
    }

    /// Adds `diff` to the diff of the last update, at `pos`; `false` (nothing changed) if
    /// the sum leaves `i64`.
    #[inline]
    pub(crate) fn add_to_last(&mut self, pos: usize, diff: i64) -> bool {
        let cur = match self {
            DiffBuf::Dense(v) => {
                let last = v.last_mut().expect("no update to add to");
                return match last.checked_add(diff) {
                    Some(s) => {
                        *last = s;
                        true
                    }
                    None => false,
                };
            }
            DiffBuf::Sparse { idx, d } if idx.last() == Some(&pos) => *d.last().expect("diff"),
            _ => 1,
        };
        let Some(sum) = cur.checked_add(diff) else {
            return false;
        };
        match self {
            DiffBuf::Sparse { idx, d } if idx.last() == Some(&pos) => {
                if sum == 1 {
                    idx.pop();
                    d.pop();
                } else {
                    *d.last_mut().expect("diff") = sum;
                }
            }
            _ if sum == 1 => {}
            DiffBuf::Ones => {
                *self = DiffBuf::Sparse {
                    idx: vec![pos],
                    d: vec![sum],
                }
            }
            DiffBuf::Sparse { idx, d } => {
                idx.push(pos);
                d.push(sum);
            }
            DiffBuf::Dense(_) => unreachable!("handled above"),
        }
        true
    }

    /// Drops the updates with diff 0 among positions `start..n` (their times in `times`
    /// too), moving the later ones back; returns the new number of updates.
    pub(crate) fn drop_zeros(
        &mut self,
        start: usize,
        n: usize,
        mut times: Option<&mut TimeVec>,
    ) -> usize {
        let mut w = start;
        match self {
            DiffBuf::Ones => return n,
            DiffBuf::Dense(d) => {
                for r in start..n {
                    if d[r] != 0 {
                        d[w] = d[r];
                        if let Some(t) = times.as_deref_mut() {
                            t.move_back(r, w);
                        }
                        w += 1;
                    }
                }
                d.truncate(w);
            }
            DiffBuf::Sparse { idx, d } => {
                let first = idx.partition_point(|&i| i < start);
                if !d[first..].contains(&0) {
                    return n;
                }
                let (mut e, mut we) = (first, first);
                for r in start..n {
                    let x = if e < idx.len() && idx[e] == r {
                        e += 1;
                        d[e - 1]
                    } else {
                        1
                    };
                    if x == 0 {
                        continue;
                    }
                    if x != 1 {
                        idx[we] = w;
                        d[we] = x;
                        we += 1;
                    }
                    if let Some(t) = times.as_deref_mut() {
                        t.move_back(r, w);
                    }
                    w += 1;
                }
                idx.truncate(we);
                d.truncate(we);
            }
        }
        if let Some(t) = times {
            t.truncate(w);
        }
        w
    }

    /// Appends the diffs of a batch's updates `u0..u1` (its `diffs`) at positions from
    /// `base`.
    pub(crate) fn extend_from(
        &mut self,
        diffs: &Diffs,
        (u0, u1): (usize, usize),
        base: usize,
        cap: usize,
    ) {
        match (&mut *self, diffs) {
            (DiffBuf::Dense(v), Diffs::Ones) => v.extend(std::iter::repeat_n(1, u1 - u0)),
            (_, Diffs::Ones) => {}
            (DiffBuf::Dense(v), Diffs::Dense(d)) => v.extend_from_slice(&d[u0..u1]),
            (DiffBuf::Dense(v), Diffs::Sparse { idx, diffs }) => {
                let at = v.len();
                v.extend(std::iter::repeat_n(1, u1 - u0));
                let lo = idx.partition_point(|&i| i < u0);
                let hi = idx.partition_point(|&i| i < u1);
                for (&i, &x) in idx[lo..hi].iter().zip(&diffs[lo..hi]) {
                    v[at + i - u0] = x;
                }
            }
            (_, Diffs::Sparse { idx, diffs }) => {
                let lo = idx.partition_point(|&i| i < u0);
                let hi = idx.partition_point(|&i| i < u1);
                for (&i, &x) in idx[lo..hi].iter().zip(&diffs[lo..hi]) {
                    self.push(base + i - u0, x, cap);
                }
                self.pad(base + u1 - u0);
            }
            (_, Diffs::Dense(d)) => {
                for (j, &x) in d[u0..u1].iter().enumerate() {
                    self.push(base + j, x, cap);
                }
                self.pad(base + u1 - u0);
            }
        }
    }

    /// After exceptions were pushed at positions below `n` and the buffer was written out
    /// partway: the ones after the last exception.
    fn pad(&mut self, n: usize) {
        if let DiffBuf::Dense(v) = self {
            if v.len() < n {
                v.resize(n, 1);
            }
        }
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            DiffBuf::Ones => 0,
            DiffBuf::Sparse { idx, d } => idx.capacity() * 8 + d.capacity() * 8,
            DiffBuf::Dense(v) => v.capacity() * 8,
        }
    }

    /// The batch's diffs for `n` updates: implicit ones, sparse exceptions when at most a
    /// quarter differ from 1, or dense (as [`super::builder::compact_diffs`] chooses).
    pub(crate) fn finish(self, n: usize) -> Diffs {
        match self {
            DiffBuf::Ones => Diffs::Ones,
            DiffBuf::Dense(v) => super::builder::compact_diffs(v),
            DiffBuf::Sparse { idx, .. } if idx.is_empty() => Diffs::Ones,
            DiffBuf::Sparse { mut idx, mut d } if idx.len() * 4 <= n => {
                idx.shrink_to_fit();
                d.shrink_to_fit();
                Diffs::Sparse { idx, diffs: d }
            }
            mut sparse => {
                sparse.write_out(n, n);
                sparse.finish(n)
            }
        }
    }
}

#[cfg(test)]
#[path = "diff_buf_tests.rs"]
mod tests;
