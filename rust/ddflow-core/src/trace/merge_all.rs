//! Merging many batches into one in a single pass, with compaction.
//!
//! [`merge_all`] merges adjacent batches (oldest first) key by key, as a [`MergeState`]
//! merges two, and gives the same batch a chain of pairwise merges would: every time
//! advanced by the frontier, each `(key, val)`'s updates consolidated, diffs summed exactly.
//! A chain of `k` batches merged pairwise reads the newer batches again in every merge after
//! their first; here each update is read once. A trace merged whole as its compaction
//! frontier moves (`Spine::merge_all`) holds two to four batches at that moment.
//!
//! Per key, the inputs whose next key is the least are found by a linear scan (there are
//! few inputs). A key held by one input only starts a run: the input's keys below every
//! other input's next key are copied in bulk where advancing cannot merge two updates of a
//! val (see [`MergeState`]), else val by val. A key held by several inputs is merged val by
//! val the same way: a val of one input is copied, a val of several has its updates
//! gathered from each (oldest first) and consolidated (`merge_val.rs`).
//!
//! [`MergeState`]: super::MergeState

use super::batch::{gallop, Batch};
use super::builder::Builder;
use super::description::Description;
use super::merge_val::{TimeReading, ValScratch};
use super::packed::{self, advance, meet_of, PackedTimes};
use crate::lattice::{Antichain, Time};
use std::cmp::Ordering;
use std::sync::Arc;

/// The most heap bytes a builder of the merge of `batches` may hold: room for every input's
/// keys, vals and key offsets, and (once two times, diffs or update counts differ) 8-byte
/// times, diffs and val offsets for every update, before [`Builder::done`] makes them
/// compact. A merge of two batches of 5M static edges at 4 bytes each may hold 280 MB while
/// it builds a 45 MB batch.
pub(crate) fn build_bytes(batches: &[&Batch]) -> usize {
    let word = |narrow: bool| if narrow { 4 } else { 8 };
    let Some(first) = batches.first() else {
        return 0;
    };
    let keys_narrow = batches.iter().all(|b| b.keys_narrow());
    let vals_narrow = batches.iter().all(|b| b.vals_narrow());
    let n_keys: usize = batches.iter().map(|b| b.n_keys()).sum();
    let n_vals: usize = batches.iter().map(|b| b.n_vals()).sum();
    let len: usize = batches.iter().map(|b| b.len()).sum();
    n_keys * (first.key_width() * word(keys_narrow) + 8)
        + n_vals * first.val_width() * word(vals_narrow)
        + len * 24
}

/// One input of [`merge_all`] and its reading position.
struct Input {
    batch: Arc<Batch>,
    /// Next key to merge.
    k: usize,
    /// The batch's single time advanced, if it stores one.
    single: Option<Time>,
    /// How to read its times packed, when every input's times and the meet pack.
    packed: Option<PackedTimes>,
    /// Whether advancing leaves its times as they are (its `since` is the frontier).
    identity: bool,
}

impl Input {
    #[inline(always)]
    fn is_done(&self) -> bool {
        self.k >= self.batch.n_keys()
    }

    #[inline(always)]
    fn reading<'a>(&'a self, meet: &'a Option<Time>, packed_meet: u64) -> TimeReading<'a> {
        match &self.packed {
            Some(p) => TimeReading::Packed(p, packed_meet),
            None => TimeReading::Full(self.single, meet.as_ref()),
        }
    }
}

/// Merges `batches` (adjacent, oldest first, of equal widths) into one batch whose times
/// are advanced by `frontier`: its `lower` is the oldest's, its `upper` the newest's, its
/// `since` the frontier.
///
/// Panics if `batches` is empty or their widths differ.
pub fn merge_all(batches: &[Arc<Batch>], frontier: &Antichain<Time>) -> Batch {
    let (first, last) = match (batches.first(), batches.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => panic!("merging no batches"),
    };
    let (kw, vw) = (first.key_width(), first.val_width());
    assert!(
        batches
            .iter()
            .all(|b| b.key_width() == kw && b.val_width() == vw),
        "merging batches of different widths"
    );
    let desc = Description::new(
        first.lower().clone(),
        last.upper().clone(),
        frontier.clone(),
    );
    let meet = meet_of(frontier.elements());
    let refs: Vec<&Batch> = batches.iter().map(|b| &**b).collect();
    let builder = Builder::with_layout_in(
        super::spill::write_through_dir(build_bytes(&refs)),
        kw,
        vw,
        refs.iter().all(|b| b.keys_narrow()),
        refs.iter().all(|b| b.vals_narrow()),
        refs.iter().map(|b| b.n_keys()).sum(),
        refs.iter().map(|b| b.n_vals()).sum(),
        refs.iter().map(|b| b.len()).sum(),
    );
    // Packed only if the meet and every input's times pack.
    let packed_meet = match &meet {
        Some(m) => packed::pack(m),
        None => Some(0),
    };
    let packed_times: Option<Vec<PackedTimes>> =
        packed_meet.and_then(|pm| refs.iter().map(|b| PackedTimes::of(b, pm)).collect());
    let f = frontier.elements();
    let all_identity = f.is_empty() || f == [Time::minimum()];
    let mut packed_times = packed_times.map(|v| v.into_iter());
    let inputs = batches
        .iter()
        .map(|b| Input {
            batch: b.clone(),
            k: 0,
            single: b.single_time().map(|t| advance(t, meet.as_ref())),
            packed: packed_times.as_mut().and_then(|it| it.next()),
            identity: all_identity || b.since() == frontier,
        })
        .collect();
    let mut m = ManyMerge {
        inputs,
        packed_meet: packed_meet.filter(|_| packed_times.is_some()).unwrap_or(0),
        packed: packed_times.is_some(),
        meet,
        builder,
        vals: ValScratch::default(),
        at_key: Vec::new(),
        val_pos: Vec::new(),
        at_val: Vec::new(),
    };
    m.run();
    m.builder.done(desc)
}

/// The state of [`merge_all`].
struct ManyMerge {
    inputs: Vec<Input>,
    /// The frontier's meet (`None` for the empty frontier).
    meet: Option<Time>,
    /// The meet packed (when `packed`).
    packed_meet: u64,
    /// Whether every input is read packed.
    packed: bool,
    builder: Builder,
    vals: ValScratch,
    /// Inputs holding the key being merged.
    at_key: Vec<usize>,
    /// Per input of `at_key`: its next val and the end of the key's vals.
    val_pos: Vec<(usize, usize)>,
    /// Positions in `at_key` holding the val being merged.
    at_val: Vec<usize>,
}

impl ManyMerge {
    /// Merges every key.
    fn run(&mut self) {
        loop {
            // The least next key, the inputs holding it, and the input with the least
            // next key above it.
            self.at_key.clear();
            let mut above: Option<usize> = None;
            for i in 0..self.inputs.len() {
                if self.inputs[i].is_done() {
                    continue;
                }
                let Some(&least) = self.at_key.first() else {
                    self.at_key.push(i);
                    continue;
                };
                match self.cmp_heads(i, least) {
                    Ordering::Less => {
                        above = Some(least);
                        self.at_key.clear();
                        self.at_key.push(i);
                    }
                    Ordering::Equal => self.at_key.push(i),
                    Ordering::Greater => {
                        if above.is_none_or(|a| self.cmp_heads(i, a) == Ordering::Less) {
                            above = Some(i);
                        }
                    }
                }
            }
            match self.at_key.len() {
                0 => return,
                1 => {
                    let x = self.at_key[0];
                    self.copy_run(x, above);
                }
                _ => self.merge_key(),
            }
        }
    }

    /// Compares the next keys of inputs `i` and `j`.
    #[inline(always)]
    fn cmp_heads(&self, i: usize, j: usize) -> Ordering {
        let (x, y) = (&self.inputs[i], &self.inputs[j]);
        x.batch.cmp_key_with(x.k, &y.batch, y.k)
    }

    /// Copies the keys of input `x` below the next key of input `above` (all its keys if
    /// `None`): at least one.
    fn copy_run(&mut self, x: usize, above: Option<usize>) {
        let input = &self.inputs[x];
        let batch = input.batch.clone();
        let (kx, nx) = (input.k, batch.n_keys());
        let end = match above {
            Some(a) => {
                let (y, ky) = (&self.inputs[a].batch, self.inputs[a].k);
                gallop(kx + 1, nx, |k| {
                    batch.cmp_key_with(k, y, ky) == Ordering::Less
                })
            }
            None => nx,
        };
        self.inputs[x].k = end;
        let input = &self.inputs[x];
        if input.identity || input.single.is_some() || batch.len() == batch.n_vals() {
            let adv = if input.identity {
                None
            } else {
                self.meet.as_ref()
            };
            self.builder
                .extend_keys_from(&batch, kx..end, adv, input.single);
            return;
        }
        // Copied whole with times advanced, then consolidated where advancing made two
        // times of a val equal (or out of order).
        let first_key = self.builder.n_keys();
        self.builder
            .extend_keys_from(&batch, kx..end, self.meet.as_ref(), input.single);
        self.builder.consolidate_keys_from(first_key);
    }

    /// Merges the next key of the inputs `at_key` (equal keys, at least two inputs).
    fn merge_key(&mut self) {
        let first = self.at_key[0];
        self.builder
            .push_key_from(&self.inputs[first].batch, self.inputs[first].k);
        self.val_pos.clear();
        for &i in &self.at_key {
            let input = &mut self.inputs[i];
            let vals = input.batch.vals_of(input.k);
            self.val_pos.push((vals.start, vals.end));
            input.k += 1;
        }
        loop {
            // The least next val and the inputs (positions in `at_key`) holding it.
            self.at_val.clear();
            for p in 0..self.at_key.len() {
                let (v, end) = self.val_pos[p];
                if v >= end {
                    continue;
                }
                let Some(&q) = self.at_val.first() else {
                    self.at_val.push(p);
                    continue;
                };
                let (x, y) = (&self.inputs[self.at_key[p]], &self.inputs[self.at_key[q]]);
                match x.batch.cmp_val_with(v, &y.batch, self.val_pos[q].0) {
                    Ordering::Less => {
                        self.at_val.clear();
                        self.at_val.push(p);
                    }
                    Ordering::Equal => self.at_val.push(p),
                    Ordering::Greater => {}
                }
            }
            let Some(&p0) = self.at_val.first() else {
                break;
            };
            let batch = &self.inputs[self.at_key[p0]].batch;
            self.builder.push_val_from(batch, self.val_pos[p0].0);
            if self.at_val.len() == 1 {
                let input = &self.inputs[self.at_key[p0]];
                let reading = input.reading(&self.meet, self.packed_meet);
                let v = self.val_pos[p0].0;
                self.vals
                    .copy_val(&mut self.builder, &input.batch, v, reading);
            } else {
                for &p in &self.at_val {
                    let input = &self.inputs[self.at_key[p]];
                    let reading = input.reading(&self.meet, self.packed_meet);
                    self.vals.gather(&input.batch, self.val_pos[p].0, reading);
                }
                self.vals.flush(&mut self.builder, self.packed);
            }
            for &p in &self.at_val {
                self.val_pos[p].0 += 1;
            }
        }
        self.builder.seal_key();
    }
}
