//! One key's histories for `reduce`: its input and output histories read out of the two
//! arrangements, and advanced by the meet of the key's new times and consolidated before the
//! reduce computes interesting times and accumulations (see "Reduce" in `ENGINE.md`).

use super::reduce_errors::ReduceErrors;
use super::reduce_index::Indexed;
use crate::engine::arrangement::Reader;
use crate::lattice::{Lattice, Time};
use crate::trace::packed::{pack, unpack};
use crate::updates::Updates;

/// Histories read as full rows ([`Histories::read_key`]) shorter than this are used as read:
/// advancing and consolidating them costs more than it saves (histories read packed by
/// [`Histories::read_key_advanced`] are consolidated at any length). Instructions under `valgrind --tool=callgrind` of `bfs_bench 1000
/// 2000 1000 4000` / `bfs_bench 100000 1000000 1000 10000`: no advancing 1,301 M / 4,465 M;
/// from 4 updates 1,023 M / 4,534 M; from 8 1,035 M / 4,491 M (with the packed sort of
/// [`consolidate_tail`]; 1,180 M / 4,492 M comparing row slices).
const ADVANCE_MIN_HISTORY: usize = 8;

/// The histories phase 1 reads: the input history of the key at hand; the output histories
/// of every key with work, flat (key `i`'s rows are `out_offs[i]..out_offs[i + 1]`, read
/// again in phase 3); the times of the key's input, output and error histories (`edits`);
/// and per key whether its times have at most two non-zero coordinates.
#[derive(Default)]
pub(super) struct Histories {
    pub(super) input: Updates,
    pub(super) outputs: Updates,
    pub(super) out_offs: Vec<usize>,
    pub(super) edits: Vec<Time>,
    pub(super) two_d: Vec<bool>,
    /// Whether the last key's input history was read into phase 1's index only
    /// ([`Histories::read_key_advanced`]); `input` is then empty until
    /// [`Histories::input_rows`] writes it.
    pub(super) input_indexed: bool,
    /// One key's history while it is consolidated.
    tail: TailScratch,
}

impl Histories {
    /// Heap bytes held (the buffers' capacity).
    pub(super) fn heap_bytes(&self) -> usize {
        let t = &self.tail;
        self.input.heap_bytes()
            + self.outputs.heap_bytes()
            + self.out_offs.capacity() * 8
            + self.edits.capacity() * size_of::<Time>()
            + self.two_d.capacity()
            + t.perm.capacity() * 4
            + t.packed.capacity() * size_of::<(u64, u64, u64, i64)>()
            + t.words.capacity() * size_of::<(u64, u64, i64)>()
            + t.key.capacity() * 8
            + t.tmp.heap_bytes()
    }
}

/// Buffers of [`consolidate_tail`].
#[derive(Default)]
struct TailScratch {
    perm: Vec<u32>,
    packed: Vec<(u64, u64, u64, i64)>,
    /// A key's updates read as `(val, packed time, diff)` (`trace::packed`).
    words: Vec<(u64, u64, i64)>,
    key: Vec<u64>,
    tmp: Updates,
}

/// Appends one key's updates `p`, sorted so that updates of equal val and time are adjacent,
/// to `u` as rows `key ++ val` (`key` alone when `has_val` is false), equal ones summed and
/// zeros dropped: `parts(e)` is update `e`'s `(val, time, diff)`, `same(a, b)` whether two
/// have the same val and time. A sum outside `i64` keeps its updates as they are (they still
/// sum to it).
#[inline]
fn push_consolidated<E>(
    p: &[E],
    (key, has_val): (&[u64], bool),
    u: &mut Updates,
    same: impl Fn(&E, &E) -> bool,
    parts: impl Fn(&E) -> (u64, Time, i64),
) {
    let Updates {
        rows, times, diffs, ..
    } = u;
    rows.reserve(p.len() * (key.len() + has_val as usize));
    // The times as a vector (a history's column holds one time only until its first read),
    // so that each push is a vector's.
    let times = times.make_mut();
    times.reserve(p.len());
    diffs.reserve(p.len());
    let mut g = 0;
    while g < p.len() {
        let (v, t, d) = parts(&p[g]);
        let mut e = g + 1;
        let mut total = d as i128;
        while e < p.len() && same(&p[g], &p[e]) {
            total += parts(&p[e]).2 as i128;
            e += 1;
        }
        let mut push = |d: i64| {
            match key {
                [k] => rows.push(*k),
                _ => rows.extend_from_slice(key),
            }
            if has_val {
                rows.push(v);
            }
            times.push(t);
            diffs.push(d);
        };
        match i64::try_from(total) {
            Ok(0) => {}
            Ok(d) => push(d),
            Err(_) => p[g..e].iter().for_each(|q| push(parts(q).2)),
        }
        g = e;
    }
}

/// [`push_consolidated`] for updates `(val, x, y, diff)` sorted by (val, x, y).
fn push_sorted_packed(p: &[(u64, u64, u64, i64)], key: &[u64], has_val: bool, u: &mut Updates) {
    push_consolidated(
        p,
        (key, has_val),
        u,
        |a, b| (a.0, a.1, a.2) == (b.0, b.1, b.2),
        |e| (e.0, Time([e.1, e.2, 0, 0]), e.3),
    );
}

/// [`push_consolidated`] for updates `(val, packed time, diff)` sorted by (val, time).
fn push_sorted_words(p: &[(u64, u64, i64)], key: &[u64], has_val: bool, u: &mut Updates) {
    push_consolidated(
        p,
        (key, has_val),
        u,
        |a, b| (a.0, a.1) == (b.0, b.1),
        |e| (e.0, unpack(e.1), e.2),
    );
}

/// Consolidates the updates `u[from..]` (one key's history, rows of `kw` key words then the
/// value) in place: sorted by (row, time), equal ones summed, zeros dropped. A sum outside
/// `i64` keeps its updates as they are (they still sum to it). One key's few rows are sorted
/// by comparison (the radix sorter's setup cost more than the sort on the 100k/1M BFS); a
/// value of at most one word with times of at most two coordinates (the BFS) sorts packed
/// tuples instead of comparing row slices.
fn consolidate_tail(u: &mut Updates, from: usize, kw: usize, sc: &mut TailScratch) {
    let w = u.width;
    if from >= u.len() {
        return;
    }
    let two_d = u
        .times
        .range_iter(from..u.len())
        .all(|t| t.0[2] == 0 && t.0[3] == 0);
    if w <= kw + 1 && two_d {
        let p = &mut sc.packed;
        p.clear();
        p.extend((from..u.len()).map(|i| {
            let v = if w > kw { u.rows[i * w + kw] } else { 0 };
            (v, u.times[i].0[0], u.times[i].0[1], u.diffs[i])
        }));
        p.sort_unstable_by_key(|e| (e.0, e.1, e.2));
        sc.key.clear();
        sc.key.extend_from_slice(&u.rows[from * w..from * w + kw]);
        u.truncate(from);
        push_sorted_packed(p, &sc.key, w > kw, u);
        return;
    }
    let row = |i: u32| &u.rows[i as usize * w..(i as usize + 1) * w];
    let perm = &mut sc.perm;
    perm.clear();
    perm.extend(from as u32..u.len() as u32);
    perm.sort_unstable_by(|&a, &b| {
        row(a)
            .cmp(row(b))
            .then_with(|| u.times[a as usize].cmp(&u.times[b as usize]))
    });
    let tmp = &mut sc.tmp;
    if tmp.width != w {
        *tmp = Updates::new(w);
    }
    tmp.clear();
    let mut g = 0;
    while g < perm.len() {
        let first = perm[g] as usize;
        let mut e = g + 1;
        let mut total = u.diffs[first] as i128;
        while e < perm.len()
            && u.times[perm[e] as usize] == u.times[first]
            && row(perm[e]) == row(perm[g])
        {
            total += u.diffs[perm[e] as usize] as i128;
            e += 1;
        }
        match i64::try_from(total) {
            Ok(0) => {}
            Ok(d) => tmp.push(row(perm[g]), u.times[first], d),
            Err(_) => {
                for &i in &perm[g..e] {
                    tmp.push(row(i), u.times[i as usize], u.diffs[i as usize]);
                }
            }
        }
        g = e;
    }
    u.truncate(from);
    u.extend(tmp);
}

/// Advances the times of `u[from..]` by `m` (joins them with it); returns whether one moved.
fn advance_times(u: &mut Updates, from: usize, m: &Time) -> bool {
    // Coordinate by coordinate in registers: building the joined time and comparing it
    // whole went through the stack (a store-forwarding stall per update).
    let mut moved = false;
    for t in &mut u.times[from..] {
        for (c, &mc) in t.0.iter_mut().zip(&m.0) {
            moved |= mc > *c;
            *c = (*c).max(mc);
        }
    }
    moved
}

/// Appends `key`'s history from `reader` to `u` (rows `key ++ val`), its times advanced by
/// `m` and consolidated: sorted by (val, time), equal ones summed, zeros dropped. For values
/// of at most one word and `m` of at most two coordinates the updates are advanced as they
/// are read, and written out once consolidated: as `(val, x << 32 | y, diff)` words when `m`
/// and every time the key's batches store pack in one word (`trace::packed`), else as
/// `(val, x, y, diff)` tuples; a history with a time of more coordinates is read again as
/// rows and consolidated as [`Histories::advance_key`] does.
fn read_advanced(
    reader: &mut Reader,
    key: &[u64],
    m: &Time,
    u: &mut Updates,
    sc: &mut TailScratch,
) {
    let from = u.len();
    let has_val = u.width > key.len();
    if let Some(meet) = pack(m) {
        // Times stored as two `u32`s (or a few distinct ones): read as words, joined with
        // the meet as one word each, sorted by (val, time) as one 128-bit integer (a
        // `u128` compare costs less than a pair's two). The sort is the stable one, which
        // merges the runs it finds: each batch's updates of the key come sorted by val (and
        // by time, but where the join with the meet moved them), so a key's history is a
        // few runs (1k/2k BFS at batches of 1,000: 36 M instructions fewer than the
        // unstable sort, of 4,626 M).
        let p = &mut sc.words;
        p.clear();
        if reader.gather_key_packed(key, meet, p) {
            p.sort_by_key(|e| (e.0 as u128) << 64 | e.1 as u128);
            push_sorted_words(p, key, has_val, u);
            return;
        }
    }
    let p = &mut sc.packed;
    p.clear();
    let (mx, my) = (m.0[0], m.0[1]);
    let mut flat = true;
    reader.for_each_key_update(key, |val, t, d| {
        flat &= (t.0[2] | t.0[3]) == 0;
        let v = if has_val { val[0] } else { 0 };
        p.push((v, t.0[0].max(mx), t.0[1].max(my), d));
    });
    if flat {
        p.sort_unstable_by_key(|e| (e.0, e.1, e.2));
        push_sorted_packed(p, key, has_val, u);
        return;
    }
    reader.key_history(key, u);
    if u.len() - from >= ADVANCE_MIN_HISTORY && advance_times(u, from, m) {
        consolidate_tail(u, from, key.len(), sc);
    }
}

/// As [`read_advanced`] into `index` (phase 1's) instead of rows, where the key's times
/// pack: its updates read as words, sorted, and consolidated straight into the index
/// ([`Indexed::build_from_sorted_words`]), each entry's time appended to `edits`. Returns
/// false, with `index` and `edits` untouched, where they do not pack (then
/// [`read_advanced`] reads the key as rows).
fn read_advanced_indexed(
    reader: &mut Reader,
    (key, has_val): (&[u64], bool),
    m: &Time,
    (index, edits): (&mut Indexed, &mut Vec<Time>),
    sc: &mut TailScratch,
) -> bool {
    let Some(meet) = pack(m) else {
        return false;
    };
    let p = &mut sc.words;
    p.clear();
    if !reader.gather_key_packed(key, meet, p) {
        return false;
    }
    p.sort_by_key(|e| (e.0 as u128) << 64 | e.1 as u128);
    index.build_from_sorted_words(p, has_val, edits);
    true
}

impl Histories {
    /// Empties the histories for input rows of `in_width` words and output rows of
    /// `out_width` words.
    pub(super) fn reset(&mut self, in_width: usize, out_width: usize) {
        if self.input.width != in_width {
            self.input = Updates::new(in_width);
        }
        if self.outputs.width != out_width {
            self.outputs = Updates::new(out_width);
        }
        self.outputs.clear();
        self.out_offs.clear();
        self.out_offs.push(0);
        self.two_d.clear();
    }

    /// Advances the times of the key's input and output histories (`outputs[out_lo..]`, the
    /// last key read) by the meet `m` of its new times and consolidates them, then recomputes
    /// its edit times. Every candidate time `t` is a join with some new time, so `t >= m`,
    /// and then `e <= t` iff `e v m <= t`: accumulations at candidate times do not change,
    /// and neither do the interesting times (each is a join that includes a new time).
    /// History from earlier rounds collapses to the few updates still live (a proposal made
    /// and withdrawn in older rounds cancels), so everything after reads less.
    #[inline]
    pub(super) fn advance_key(
        &mut self,
        key: &[u64],
        out_lo: usize,
        new_times: &[Time],
        errors: &ReduceErrors,
    ) {
        let Some(m) = new_times.iter().copied().reduce(|a, b| a.meet(&b)) else {
            return;
        };
        let kw = key.len();
        if self.input.len() >= ADVANCE_MIN_HISTORY && advance_times(&mut self.input, 0, &m) {
            consolidate_tail(&mut self.input, 0, kw, &mut self.tail);
        }
        let out_len = self.outputs.len() - out_lo;
        if out_len >= ADVANCE_MIN_HISTORY && advance_times(&mut self.outputs, out_lo, &m) {
            consolidate_tail(&mut self.outputs, out_lo, kw, &mut self.tail);
            *self.out_offs.last_mut().expect("offsets") = self.outputs.len();
        }
        self.edits.clear();
        // Iterated, not sliced: a column held as one time is not written out.
        self.edits.extend(self.input.times.iter());
        let out_hi = self.outputs.len();
        self.edits
            .extend(self.outputs.times.range_iter(out_lo..out_hi));
        errors.times_of(key, &mut self.edits);
    }

    /// Whether [`Histories::read_key_advanced`] applies to keys of `key_width` words whose new
    /// times meet at `m`: values of at most one word (input and output) and `m` of at most
    /// two coordinates.
    pub(super) fn reads_advanced(&self, key_width: usize, m: &Time) -> bool {
        self.input.width <= key_width + 1
            && self.outputs.width <= key_width + 1
            && (m.0[2] | m.0[3]) == 0
    }

    /// Reads `key`'s input and output histories with their times advanced by `m`, the meet of
    /// the key's new times, while reading, consolidated (see [`Histories::advance_key`] for
    /// why the accumulations at every candidate time stay the same), and its edit times;
    /// returns where its output history starts in `outputs`. Only where
    /// [`Histories::reads_advanced`] holds. Where the input's times pack, it is read into
    /// `index` (phase 1's) and not as rows (`input_indexed`).
    #[inline]
    pub(super) fn read_key_advanced(
        &mut self,
        key: &[u64],
        m: &Time,
        (input, output): (&mut Reader, &mut Reader),
        index: &mut Indexed,
        errors: &ReduceErrors,
    ) -> usize {
        self.input.clear();
        self.edits.clear();
        let has_val = self.input.width > key.len();
        let sink = (&mut *index, &mut self.edits);
        self.input_indexed = read_advanced_indexed(input, (key, has_val), m, sink, &mut self.tail);
        if !self.input_indexed {
            read_advanced(input, key, m, &mut self.input, &mut self.tail);
            self.edits.extend(self.input.times.iter());
        }
        let out_lo = self.outputs.len();
        read_advanced(output, key, m, &mut self.outputs, &mut self.tail);
        self.out_offs.push(self.outputs.len());
        let out_hi = self.outputs.len();
        self.edits
            .extend(self.outputs.times.range_iter(out_lo..out_hi));
        errors.times_of(key, &mut self.edits);
        out_lo
    }

    /// Writes the key's input history as rows into `input` if it was read into `index` only
    /// (see [`Histories::read_key_advanced`]), for the paths that read rows.
    pub(super) fn input_rows(&mut self, key: &[u64], index: &Indexed) {
        if self.input_indexed {
            let vw = self.input.width - key.len();
            index.write_rows(key, vw, &mut self.input);
            self.input_indexed = false;
        }
    }

    /// The number of updates of the key's input history (read as rows or into the index).
    pub(super) fn input_len(&self, index: &Indexed) -> usize {
        if self.input_indexed {
            index.len()
        } else {
            self.input.len()
        }
    }

    /// For a key whose input accumulation is carried (`reduce_cache.rs`): its new input
    /// updates (`batch` rows `lo..hi`) in place of its input history, its output history and
    /// its edit times; returns where its output history starts in `outputs`.
    #[inline]
    pub(super) fn read_key_carried(
        &mut self,
        key: &[u64],
        (batch, lo, hi): (&Updates, usize, usize),
        output: &mut Reader,
        errors: &ReduceErrors,
    ) -> usize {
        self.input.clear();
        self.input_indexed = false;
        let w = batch.width;
        self.input
            .rows
            .extend_from_slice(&batch.rows[lo * w..hi * w]);
        self.input.times.extend_range(&batch.times, lo..hi);
        self.input.diffs.extend_from_slice(&batch.diffs[lo..hi]);
        self.read_output_and_edits(key, output, errors)
    }

    /// Reads `key`'s output history and its edit times (the input's, the output's and its
    /// errors'), once `self.input` holds the key's input; returns where its output history
    /// starts in `outputs`.
    fn read_output_and_edits(
        &mut self,
        key: &[u64],
        output: &mut Reader,
        errors: &ReduceErrors,
    ) -> usize {
        let out_lo = self.outputs.len();
        output.key_history(key, &mut self.outputs);
        self.key_read(key, out_lo, errors)
    }

    /// Once `key`'s input is in `self.input` and its output history in `outputs` from
    /// `out_lo`: records where that history ends and gathers the key's edit times (the
    /// input's, the output's and its errors'); returns `out_lo`.
    #[inline]
    fn key_read(&mut self, key: &[u64], out_lo: usize, errors: &ReduceErrors) -> usize {
        self.out_offs.push(self.outputs.len());
        self.edits.clear();
        // Iterated, not sliced: a column held as one time is not written out.
        self.edits.extend(self.input.times.iter());
        let out_hi = self.outputs.len();
        self.edits
            .extend(self.outputs.times.range_iter(out_lo..out_hi));
        errors.times_of(key, &mut self.edits);
        out_lo
    }

    /// Forgets the last key read (its output history and offset).
    pub(super) fn unread_key(&mut self, out_lo: usize) {
        self.outputs.truncate(out_lo);
        self.out_offs.pop();
    }

    /// Reads `key`'s input and output histories (unconsolidated) and its edit times; returns
    /// where its output history starts in `outputs`.
    #[inline]
    pub(super) fn read_key(
        &mut self,
        key: &[u64],
        (input, output): (&mut Reader, &mut Reader),
        errors: &ReduceErrors,
    ) -> usize {
        self.input.clear();
        self.input_indexed = false;
        input.key_history(key, &mut self.input);
        self.read_output_and_edits(key, output, errors)
    }
}

#[cfg(test)]
mod tests {
    use super::{consolidate_tail, push_sorted_words, read_advanced, TailScratch};
    use crate::engine::arrangement::Arrangement;
    use crate::engine::operators::reduce_index::Indexed;
    use crate::lattice::{Antichain, Lattice, PartialOrder, Time};
    use crate::updates::Updates;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Per (row, time joined with `m`), the diffs summed, zero sums absent.
    fn advanced_sums(u: &Updates, from: usize, m: &Time) -> BTreeMap<(Vec<u64>, Time), i128> {
        let mut acc = BTreeMap::new();
        for i in from..u.len() {
            *acc.entry((u.row(i).to_vec(), u.times[i].join(m)))
                .or_insert(0) += u.diffs[i] as i128;
        }
        acc.retain(|_, d| *d != 0);
        acc
    }

    proptest! {
        /// Histories read advanced out of a trace of several batches (keys 0..3, values of
        /// `vw` words, some past 32 bits, 2-D times, some with a coordinate past 32 bits, or
        /// some 3-D ones; updates that cancel across batches) after a prefix: each key's
        /// updates summed at their times joined with `m` equal the inserted ones'; with 2-D
        /// times (read as packed words, or as tuples where a time or `m` does not pack) they
        /// are consolidated: sorted by (row, time), no zero diff, every time at or after `m`.
        #[test]
        fn read_advanced_matches_reference(
            vw in 0usize..2,
            three_d in any::<bool>(),
            big in prop_oneof![3 => Just(None), 1 => (0usize..3).prop_map(Some)],
            batches in prop::collection::vec(
                prop::collection::vec((0u64..3, 0u64..3, 0u64..4, 0u64..2, -2i64..3), 0..12),
                1..5,
            ),
            (mx, my) in (0u64..5, 0u64..4),
        ) {
            // Past 32 bits: a val word (stored wide, still read packed), a time's second
            // coordinate (that batch's times do not pack) or `m`'s.
            let wide = 1u64 << 40;
            let w = 1 + vw;
            let mut a = Arrangement::new(1, w);
            let mut all = Updates::new(w);
            for (s, ups) in batches.iter().enumerate() {
                let mut b = Updates::new(w);
                for &(k, v, y, z, d) in ups {
                    let v = if big == Some(0) && v == 2 { wide } else { v };
                    let y = if big == Some(1) && y == 3 { wide } else { y };
                    let row = if vw == 1 { vec![k, v] } else { vec![k] };
                    let z = if three_d { z } else { 0 };
                    b.push(&row, Time::from_coords(&[s as u64, y, z]), d);
                }
                crate::engine::util::consolidate(&mut b).unwrap();
                all.extend(&b);
                a.insert(&b, &Antichain::from_elem(Time::from_coords(&[s as u64 + 1])));
            }
            let my = if big == Some(2) && my == 3 { wide } else { my };
            let m = Time::from_coords(&[mx, my]);
            let mut reader = a.reader();
            let mut sc = TailScratch::default();
            let mut u = Updates::new(w);
            u.push(&vec![7; w], Time::default(), 5);
            for key in 0..3u64 {
                let from = u.len();
                read_advanced(&mut reader, &[key], &m, &mut u, &mut sc);
                let mut want = Updates::new(w);
                for i in 0..all.len() {
                    if all.row(i)[0] == key {
                        want.push(all.row(i), all.times[i], all.diffs[i]);
                    }
                }
                prop_assert_eq!(advanced_sums(&u, from, &m), advanced_sums(&want, 0, &m));
                if !three_d {
                    for i in from..u.len() {
                        prop_assert!(u.diffs[i] != 0 && m.less_equal(&u.times[i]));
                        prop_assert!(i == from || (u.row(i - 1), u.times[i - 1]) < (u.row(i), u.times[i]));
                    }
                }
            }
            prop_assert_eq!((u.row(0).to_vec(), u.diffs[0]), (vec![7; w], 5));
        }
    }

    /// The reference: per (row, time), the diffs summed, zero sums absent.
    fn summed(u: &Updates, from: usize) -> BTreeMap<(Vec<u64>, Time), i128> {
        advanced_sums(u, from, &Time::minimum())
    }

    proptest! {
        /// One key's history (key word 9, `vw` value words, 2-D or 3-D times) after a prefix
        /// of another key: consolidated in place, prefix untouched, sorted, no zero or
        /// repeated (row, time) left, equal to the reference, for the packed path (`vw <= 1`,
        /// 2-D) and the general one.
        #[test]
        fn consolidate_tail_matches_reference(
            vw in 0usize..3,
            three_d in any::<bool>(),
            ups in prop::collection::vec((0u64..3, 0u64..3, 0u64..3, 0u64..2, -2i64..3), 0..30),
        ) {
            let w = 1 + vw;
            let mut u = Updates::new(w);
            u.push(&vec![1; w], Time::default(), 5);
            for &(v, x, y, z, d) in &ups {
                let mut row = vec![9u64];
                row.extend(std::iter::repeat_n(v, vw));
                let t = Time([x, y, if three_d { z } else { 0 }, 0]);
                u.push(&row, t, d);
            }
            let want = summed(&u, 1);
            consolidate_tail(&mut u, 1, 1, &mut TailScratch::default());
            prop_assert_eq!((u.row(0).to_vec(), u.diffs[0]), (vec![1; w], 5));
            prop_assert_eq!(summed(&u, 1), want);
            for i in 2..u.len() {
                prop_assert!((u.row(i - 1), u.times[i - 1]) < (u.row(i), u.times[i]));
            }
            prop_assert!(u.diffs[1..].iter().all(|&d| d != 0));
        }
    }

    proptest! {
        /// One key's sorted `(val, packed time, diff)` words (vals of one word, some past 32
        /// bits, or of none; diffs that cancel or sum past int64) indexed directly: the
        /// index's rows, written back, equal the consolidated rows [`push_sorted_words`]
        /// writes, the times appended are theirs, and it accumulates as the index built
        /// from those rows at every probe.
        #[test]
        fn index_from_words_matches_rows(
            has_val in any::<bool>(),
            words in prop::collection::vec(
                (0u64..4, 0u64..3, 0u64..3, prop_oneof![4 => -2i64..3, 1 => Just(i64::MAX)]),
                0..24,
            ),
            probes in prop::collection::vec((0u64..4, 0u64..4), 1..6),
        ) {
            let mut p: Vec<(u64, u64, i64)> = words
                .iter()
                .map(|&(v, x, y, d)| {
                    let v = if !has_val { 0 } else if v == 3 { 1 << 40 } else { v };
                    (v, crate::trace::packed::pack_xy(x, y), d)
                })
                .collect();
            p.sort_by_key(|e| (e.0 as u128) << 64 | e.1 as u128);
            let key = [9u64];
            let w = 1 + has_val as usize;
            let mut rows = Updates::new(w);
            push_sorted_words(&p, &key, has_val, &mut rows);
            let mut direct = Indexed::default();
            let mut times = vec![Time::minimum()];
            direct.build_from_sorted_words(&p, has_val, &mut times);
            let mut back = Updates::new(w);
            direct.write_rows(&key, w - 1, &mut back);
            prop_assert_eq!(&back.rows, &rows.rows);
            prop_assert_eq!(&back.diffs, &rows.diffs);
            let row_times: Vec<Time> = rows.times.iter().copied().collect();
            prop_assert_eq!(back.times.iter().copied().collect::<Vec<_>>(), row_times.clone());
            prop_assert_eq!(&times[1..], row_times.as_slice());
            prop_assert_eq!(direct.len(), rows.len());
            let mut built = Indexed::default();
            built.build(&rows, 1);
            prop_assert_eq!(direct.num_vals(), built.num_vals());
            prop_assert_eq!(&direct.vals, &built.vals);
            for &(x, y) in &probes {
                let t = Time::from_coords(&[x, y]);
                let (a, b) = (direct.accumulate(&t, "t"), built.accumulate(&t, "t"));
                prop_assert_eq!(a.is_ok(), b.is_ok());
                if a.is_ok() {
                    prop_assert_eq!(&direct.counts, &built.counts);
                }
            }
        }
    }

    /// A sum outside int64 keeps its updates instead of wrapping.
    #[test]
    fn consolidate_tail_keeps_overflowing_sums() {
        let mut u = Updates::new(2);
        for _ in 0..3 {
            u.push(&[9, 4], Time::default(), i64::MAX);
        }
        consolidate_tail(&mut u, 0, 1, &mut TailScratch::default());
        assert_eq!(u.len(), 3);
        assert!(u.diffs.iter().all(|&d| d == i64::MAX));
    }
}
