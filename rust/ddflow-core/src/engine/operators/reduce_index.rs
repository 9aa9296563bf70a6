//! One key's history indexed for `reduce`: its distinct val rows numbered once, so that
//! accumulating at a time is a scan adding diffs into a counts array (no sorting or
//! allocation per time), and a sweep over two-dimensional times that accumulates each
//! history entry once for keys with long histories (see "Reduce" in `ENGINE.md`).

use crate::error::{Error, Result};
use crate::lattice::{PartialOrder, Time};
use crate::trace::packed::unpack;
use crate::updates::Updates;

/// One key's history with its distinct val rows numbered in sorted order, so that
/// accumulating at a time is a scan that adds diffs into a counts array (no sorting or
/// allocation per time).
#[derive(Default)]
pub struct Indexed {
    /// Distinct val rows, `vw` words each, sorted.
    pub vals: Vec<u64>,
    /// Per history entry: (val id, time, diff). Private: entries are added by the build or
    /// [`Indexed::push_entry`], which keep `flat` true to them.
    entries: Vec<(u32, Time, i64)>,
    /// Whether every entry's time has at most two non-zero coordinates (then
    /// [`Indexed::accumulate`] compares two coordinates per entry at a 2-D time, not four).
    flat: bool,
    pub counts: Vec<i64>,
    order: Vec<u32>,
    /// 2-D sweep: distinct second coordinates (sorted), counts per (val, level) of the
    /// entries consumed so far, and how many entries (sorted by time) are consumed.
    levels: Vec<u64>,
    grid: Vec<i64>,
    pos: usize,
    /// `sweep_start`'s sort: packed (first coordinate, position) keys and the entries in
    /// their order.
    keys: Vec<u64>,
    sorted: Vec<(u32, Time, i64)>,
}

impl Indexed {
    #[inline]
    pub fn build(&mut self, hist: &Updates, kw: usize) {
        self.build_range(hist, 0, hist.len(), kw)
    }

    #[inline]
    pub fn build_range(&mut self, hist: &Updates, lo: usize, hi: usize, kw: usize) {
        let w = hist.width;
        let vw = w - kw;
        self.vals.clear();
        self.entries.clear();
        let n = hi - lo;
        let mut nvals = 0u32;
        let mut flat = None;
        if vw == 1 {
            // One-word vals (the common case).
            flat = self.build_one_word(hist, lo..hi, kw);
            if flat.is_none() {
                // Unsorted vals: sort the distinct words, then look each entry's id up (the
                // history stays in its order; no indirect sort).
                self.vals.clear();
                self.entries.clear();
                self.vals.extend((lo..hi).map(|o| hist.rows[o * w + kw]));
                self.vals.sort_unstable();
                self.vals.dedup();
                let vals = &self.vals;
                self.entries.extend((lo..hi).map(|o| {
                    let id = vals.partition_point(|&v| v < hist.rows[o * w + kw]);
                    (id as u32, hist.times[o], hist.diffs[o])
                }));
            }
            nvals = self.vals.len() as u32;
        } else {
            self.order.clear();
            self.order.extend(lo as u32..hi as u32);
            let mut order = std::mem::take(&mut self.order);
            order.sort_unstable_by(|&a, &b| {
                let (a, b) = (a as usize, b as usize);
                hist.rows[a * w + kw..(a + 1) * w].cmp(&hist.rows[b * w + kw..(b + 1) * w])
            });
            self.entries.resize(n, (0, Time::minimum(), 0));
            for (i, &o) in order.iter().enumerate() {
                let o = o as usize;
                let row = &hist.rows[o * w + kw..(o + 1) * w];
                if i == 0 || &self.vals[(nvals as usize - 1) * vw..nvals as usize * vw] != row {
                    self.vals.extend_from_slice(row);
                    nvals += 1;
                }
                self.entries[o - lo] = (nvals - 1, hist.times[o], hist.diffs[o]);
            }
            self.order = order;
        }
        if vw == 0 && n > 0 {
            // Zero-width vals: one (empty) distinct val.
            nvals = 1;
            for e in self.entries.iter_mut() {
                e.0 = 0;
            }
        }
        self.flat =
            flat.unwrap_or_else(|| self.entries.iter().all(|e| (e.1 .0[2] | e.1 .0[3]) == 0));
        self.counts.clear();
        self.counts.resize(nvals as usize, 0);
    }

    /// The build of the one-word vals of `hist[range]` (rows of `kw` key words then the val)
    /// if they are sorted (a consolidated history): one pass numbers the vals as they
    /// change and writes the entries; returns whether every time has at most two
    /// coordinates, or `None` (the index half built) at the first val out of order.
    #[inline]
    fn build_one_word(
        &mut self,
        hist: &Updates,
        range: std::ops::Range<usize>,
        kw: usize,
    ) -> Option<bool> {
        let w = hist.width;
        let rows = hist.rows[range.start * w..range.end * w].chunks_exact(w);
        let times = hist.times.range_iter(range.clone());
        let diffs = &hist.diffs[range];
        self.entries.reserve(diffs.len());
        let mut flat = true;
        for ((row, t), &d) in rows.zip(times).zip(diffs) {
            let v = row[kw];
            match self.vals.last() {
                Some(&last) if last == v => {}
                Some(&last) if last > v => return None,
                _ => self.vals.push(v),
            }
            flat &= (t.0[2] | t.0[3]) == 0;
            self.entries.push((self.vals.len() as u32 - 1, *t, d));
        }
        Some(flat)
    }

    /// Builds the index of one key's updates `words`, `(val, packed time, diff)` sorted by
    /// (val, time) (`trace::packed`), consolidating as it goes: equal (val, time)s summed,
    /// zero sums dropped, a sum outside `i64` kept as its updates (they still sum to it).
    /// The val words are the vals' one word, or ignored (`has_val` false: vals of no
    /// words). Each entry's time is also appended to `times`. The same index as
    /// [`Indexed::build`] of the consolidated rows, without writing them.
    pub fn build_from_sorted_words(
        &mut self,
        words: &[(u64, u64, i64)],
        has_val: bool,
        times: &mut Vec<Time>,
    ) {
        self.vals.clear();
        self.entries.clear();
        self.entries.reserve(words.len());
        times.reserve(words.len());
        let mut nvals = 0usize;
        let mut g = 0;
        while g < words.len() {
            let (v, t, d) = words[g];
            let mut e = g + 1;
            let mut total = d as i128;
            while e < words.len() && words[e].0 == v && words[e].1 == t {
                total += words[e].2 as i128;
                e += 1;
            }
            let mut push = |d: i64| {
                if nvals == 0 || (has_val && self.vals[nvals - 1] != v) {
                    if has_val {
                        self.vals.push(v);
                    }
                    nvals += 1;
                }
                let time = unpack(t);
                self.entries.push((nvals as u32 - 1, time, d));
                times.push(time);
            };
            match i64::try_from(total) {
                Ok(0) => {}
                Ok(d) => push(d),
                Err(_) => words[g..e].iter().for_each(|w| push(w.2)),
            }
            g = e;
        }
        self.flat = true;
        self.counts.clear();
        self.counts.resize(nvals, 0);
    }

    /// Number of history entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the history has no entries.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Appends the entries as rows `key ++ val` to `u` (vals of `vw` words, `u`'s width the
    /// key's plus `vw`), in entry order: the history an index was built from, consolidated.
    pub fn write_rows(&self, key: &[u64], vw: usize, u: &mut Updates) {
        for &(v, t, d) in &self.entries {
            u.rows.extend_from_slice(key);
            u.rows
                .extend_from_slice(&self.vals[v as usize * vw..(v as usize + 1) * vw]);
            u.times.push(t);
            u.diffs.push(d);
        }
    }

    /// Adds a history entry (val id `v`, time `t`, diff `d`) after the build.
    #[inline]
    pub fn push_entry(&mut self, v: u32, t: Time, d: i64) {
        self.flat &= (t.0[2] | t.0[3]) == 0;
        self.entries.push((v, t, d));
    }

    #[inline]
    pub fn num_vals(&self) -> usize {
        self.counts.len()
    }

    /// Finds or adds a val row; returns its id.
    #[inline]
    pub fn id_of(&mut self, row: &[u64], vw: usize) -> u32 {
        let n = self.counts.len();
        for i in 0..n {
            if &self.vals[i * vw..(i + 1) * vw] == row {
                return i as u32;
            }
        }
        self.vals.extend_from_slice(row);
        self.counts.push(0);
        n as u32
    }

    /// Accumulates counts at `t`.
    #[inline]
    pub fn accumulate(&mut self, t: &Time, label: &str) -> Result<()> {
        for c in self.counts.iter_mut() {
            *c = 0;
        }
        let mut wrapped = false;
        if self.flat && (t.0[2] | t.0[3]) == 0 {
            // Every time involved has at most two non-zero coordinates (the BFS's loop):
            // two comparisons per entry, and its diff added masked, without a branch.
            let (tx, ty) = (t.0[0], t.0[1]);
            for &(v, time, d) in &self.entries {
                let mask = -i64::from((time.0[0] <= tx) & (time.0[1] <= ty));
                let c = &mut self.counts[v as usize];
                let (sum, o) = c.overflowing_add(d & mask);
                *c = sum;
                wrapped |= o;
            }
        } else {
            for &(v, time, d) in &self.entries {
                if time.less_equal(t) {
                    let c = &mut self.counts[v as usize];
                    let (sum, o) = c.overflowing_add(d);
                    *c = sum;
                    wrapped |= o;
                }
            }
        }
        if wrapped {
            // Rare: a partial sum left i64. Only the totals must fit: recompute exactly.
            let mut exact = vec![0i128; self.counts.len()];
            for &(v, time, d) in &self.entries {
                if time.less_equal(t) {
                    exact[v as usize] += d as i128;
                }
            }
            for (c, e) in self.counts.iter_mut().zip(exact) {
                *c = i64::try_from(e).map_err(|_| {
                    Error::Overflow(format!("{label}: count overflow (the counts sum to {e})"))
                })?;
            }
        }
        Ok(())
    }

    /// Starts a sweep over times in lexicographic order, for times with at most two non-zero
    /// coordinates. `extra` are times whose second coordinates entries added later
    /// ([`Indexed::sweep_push`]) may have.
    ///
    /// Accumulating at `(x, y)` then costs `O(new entries + vals x levels)` instead of a scan
    /// of the whole history: entries with first coordinate `<= x` are folded into a grid of
    /// counts per (val, level of second coordinate) as `x` grows, and the counts at `(x, y)`
    /// are the sums over the levels `<= y`. This keeps a key with many distinct times per
    /// batch linear instead of quadratic.
    #[inline]
    pub fn sweep_start(&mut self, extra: &[Time]) {
        self.sort_by_x();
        self.levels.clear();
        self.levels.extend(self.entries.iter().map(|e| e.1 .0[1]));
        self.levels.extend(extra.iter().map(|t| t.0[1]));
        self.levels.sort_unstable();
        self.levels.dedup();
        self.grid.clear();
        self.grid.resize(self.counts.len() * self.levels.len(), 0);
        self.pos = 0;
    }

    /// Orders the entries by first time coordinate, which is all [`Indexed::sweep_to`] needs
    /// (it folds every entry up to a first coordinate, whatever its second). A history read
    /// advanced by the meet of the key's new times has many of its entries at the meet's
    /// first coordinate: those go first as they are, and only the others are sorted, as
    /// `x << 32 | position` words while `x` and the positions fit 32 bits (rounds do).
    fn sort_by_x(&mut self) {
        let Some(x0) = self.entries.iter().map(|e| e.1 .0[0]).min() else {
            return;
        };
        let n = self.entries.len();
        let fits = n >> 32 == 0 && self.entries.iter().all(|e| e.1 .0[0] >> 32 == 0);
        if !fits {
            self.entries.sort_unstable_by_key(|e| e.1 .0[0]);
            return;
        }
        self.keys.clear();
        self.keys.extend(
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.1 .0[0] != x0)
                .map(|(i, e)| e.1 .0[0] << 32 | i as u64),
        );
        if self.keys.is_empty() {
            return;
        }
        self.keys.sort_unstable();
        self.sorted.clear();
        let entries = &self.entries;
        self.sorted
            .extend(entries.iter().filter(|e| e.1 .0[0] == x0).copied());
        self.sorted.extend(
            self.keys
                .iter()
                .map(|&k| entries[(k & u64::from(u32::MAX)) as usize]),
        );
        std::mem::swap(&mut self.entries, &mut self.sorted);
    }

    /// Sets `counts` to the accumulation at `t`; `t` must not decrease in its first coordinate
    /// between calls.
    #[inline]
    pub fn sweep_to(&mut self, t: &Time, label: &str) -> Result<()> {
        let l = self.levels.len();
        let nv = self.counts.len();
        if self.grid.len() < nv * l {
            self.grid.resize(nv * l, 0);
        }
        let overflow = || Error::Overflow(format!("{label}: count overflow"));
        while self.pos < self.entries.len() && self.entries[self.pos].1 .0[0] <= t.0[0] {
            let (v, time, d) = self.entries[self.pos];
            let lv = self.levels.partition_point(|&y| y < time.0[1]);
            let g = &mut self.grid[v as usize * l + lv];
            *g = g.checked_add(d).ok_or_else(overflow)?;
            self.pos += 1;
        }
        let ub = self.levels.partition_point(|&y| y <= t.0[1]);
        for v in 0..nv {
            let mut c: i64 = 0;
            for &g in &self.grid[v * l..v * l + ub] {
                c = c.checked_add(g).ok_or_else(overflow)?;
            }
            self.counts[v] = c;
        }
        Ok(())
    }

    /// Adds an entry at the current sweep time (its second coordinate must be among the
    /// levels, see [`Indexed::sweep_start`]).
    #[inline]
    pub fn sweep_push(&mut self, v: u32, t: Time, d: i64, label: &str) -> Result<()> {
        let l = self.levels.len();
        let nv = self.counts.len();
        if self.grid.len() < nv * l {
            self.grid.resize(nv * l, 0);
        }
        let lv = self.levels.partition_point(|&y| y < t.0[1]);
        debug_assert!(self.levels.get(lv) == Some(&t.0[1]), "sweep level missing");
        let g = &mut self.grid[v as usize * l + lv];
        *g = g
            .checked_add(d)
            .ok_or_else(|| Error::Overflow(format!("{label}: count overflow")))?;
        Ok(())
    }

    /// The (val rows, counts) with non-zero count after `accumulate`, in val order.
    #[inline]
    pub fn nonzero(&self, vw: usize, vals: &mut Vec<u64>, counts: &mut Vec<i64>) {
        vals.clear();
        counts.clear();
        for (i, &c) in self.counts.iter().enumerate() {
            if c != 0 {
                vals.extend_from_slice(&self.vals[i * vw..(i + 1) * vw]);
                counts.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Indexed;
    use crate::lattice::{PartialOrder, Time};
    use proptest::prelude::*;

    proptest! {
        /// An index built from a history of sorted vals (numbered without a search) or of
        /// unsorted ones accumulates like the definition (the sum of the diffs of each val's
        /// entries at or before the time), with 2-D or partly 3-D entries (also pushed after
        /// the build) and times; with `flat` the built entries are all 2-D, so 2-D times take
        /// the two-coordinate scan until a 3-D entry is pushed.
        #[test]
        fn accumulate_matches_definition(
            sorted in any::<bool>(),
            flat in any::<bool>(),
            hist in proptest::collection::vec((0u64..4, 0u64..4, 0u64..4, 0u64..2, -3i64..4), 0..30),
            pushed in proptest::collection::vec((0u64..4, 0u64..4, 0u64..2, -3i64..4), 0..4),
            probes in proptest::collection::vec((0u64..5, 0u64..5, 0u64..2), 1..10),
        ) {
            let mut hist = hist;
            if sorted {
                hist.sort();
            }
            let mut upd = crate::updates::Updates::new(2);
            for &(v, a, b, c, d) in &hist {
                let c = if flat { 0 } else { c };
                upd.push(&[9, v], Time::from_coords(&[a, b, c]), d);
            }
            let mut ix = Indexed::default();
            ix.build(&upd, 1);
            let mut all: Vec<(Vec<u64>, Time, i64)> =
                (0..upd.len()).map(|i| (upd.row(i)[1..].to_vec(), upd.times[i], upd.diffs[i])).collect();
            for &(a, b, c, d) in &pushed {
                let t = Time::from_coords(&[a, b, c]);
                let v = ix.id_of(&[a], 1);
                ix.push_entry(v, t, d);
                all.push((vec![a], t, d));
            }
            for &(a, b, c) in &probes {
                let t = Time::from_coords(&[a, b, c]);
                ix.accumulate(&t, "test").unwrap();
                for id in 0..ix.num_vals() {
                    let want: i64 = all
                        .iter()
                        .filter(|e| e.0 == ix.vals[id..id + 1] && e.1.less_equal(&t))
                        .map(|e| e.2)
                        .sum();
                    prop_assert_eq!(ix.counts[id], want);
                }
            }
        }

        /// The 2-D sweep accumulates exactly like the plain scan, also with entries pushed
        /// at the current time between steps (as phase 3 does with emitted output); with
        /// first coordinates past 32 bits (`wide`) the entries are sorted unpacked.
        #[test]
        fn sweep_matches_scan(
            hist in proptest::collection::vec((0u64..4, 0u64..6, 0u64..6, -3i64..4), 0..40),
            probes in proptest::collection::vec((0u64..7, 0u64..7, 0u64..4, -2i64..3), 1..20),
            wide in any::<bool>(),
        ) {
            let x0 = if wide { 1u64 << 32 } else { 0 };
            let mut upd = crate::updates::Updates::new(2);
            for &(v, a, b, d) in &hist {
                upd.push(&[9, v], Time::from_coords(&[x0 + a, b]), d);
            }
            let mut times: Vec<Time> =
                probes.iter().map(|p| Time::from_coords(&[x0 + p.0, p.1])).collect();
            times.sort();
            let mut sweep = Indexed::default();
            sweep.build(&upd, 1);
            let mut scan = Indexed::default();
            scan.build(&upd, 1);
            sweep.sweep_start(&times);
            for (t, p) in times.iter().zip(&probes) {
                sweep.sweep_to(t, "test").unwrap();
                scan.accumulate(t, "test").unwrap();
                prop_assert_eq!(&sweep.counts, &scan.counts);
                // Push an entry at this time for an existing or new val.
                let v = sweep.id_of(&[p.2], 1);
                prop_assert_eq!(scan.id_of(&[p.2], 1), v);
                sweep.sweep_push(v, *t, p.3, "test").unwrap();
                scan.push_entry(v, *t, p.3);
            }
        }
    }
}
