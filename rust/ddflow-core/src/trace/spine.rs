//! The spine: a trace as batches of geometrically decreasing size, merged progressively.
//!
//! Batches live in *levels*: level `i` holds batches of at most about `2^i` updates, and is
//! vacant, holds one batch, or holds a [`MergeState`] of two. Higher levels hold older
//! batches, so reading the levels from the top down lists batches oldest first, each
//! adjacent in time to the next.
//!
//! Inserting a batch of `n` updates (size class `i = ceil(log2 n)`):
//!
//! 1. gives every merge in progress `effort * 2^i` units of fuel (updates read), highest
//!    level first; a merge that completes moves its result up to level `i + 1`, or keeps it
//!    at its level (or lower, through vacant levels) if compaction made it small enough;
//! 2. rolls up: merges everything below level `i` into one batch (all small) and places it
//!    at level `i`, so that the new batch is newer than everything at or above its level;
//! 3. places the new batch at level `i`, starting a merge if the level holds a batch (and
//!    completing the level's merge first if, rarely, it had not finished).
//!
//! The fuel is proportional to the inserted updates, so no insert pays for a huge merge,
//! while every merge finishes long before its level would need to merge again. Merges
//! advance times by the logical compaction frontier ([`Spine::set_logical_compaction`],
//! which also applies to merges started but not yet worked on),
//! so a trace whose frontier keeps advancing stays proportional to its distinct
//! `(key, val)`s and unresolved times, not to its history. [`Spine::exert`] uses idle time
//! to finish merges, merge the remaining batches into one, and compact a lone batch.
//! [`Spine::merge_all`] merges every batch into one at once, in one k-way pass.

use super::batch::Batch;
use super::cursor::Cursor;
use super::description::Description;
use super::merge::MergeState;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// Batches replaced by their spilled copies: `(original, spilled copy)` (see
/// [`Spine::spill_into`]).
pub type Swaps = Vec<(Arc<Batch>, Arc<Batch>)>;

/// Default fuel multiplier: each insert of size class `i` gives each merge `4 * 2^i` fuel.
pub const DEFAULT_EFFORT: usize = 4;

#[derive(Debug)]
enum Level {
    Vacant,
    Single(Arc<Batch>),
    Merging(Box<MergeState>),
}

impl Level {
    fn is_vacant(&self) -> bool {
        matches!(self, Level::Vacant)
    }
}

/// A trace: the batches of one arranged collection (see the module docs).
#[derive(Debug)]
pub struct Spine {
    key_width: usize,
    val_width: usize,
    levels: Vec<Level>,
    logical: Antichain<Time>,
    lower: Antichain<Time>,
    upper: Antichain<Time>,
    effort: usize,
    /// Fuel budget of the insert in progress.
    budget: usize,
    forced: usize,
}

/// The size class of a batch of `n` updates: `ceil(log2 n)`.
fn level_of(n: usize) -> usize {
    n.max(1).next_power_of_two().trailing_zeros() as usize
}

impl Spine {
    /// Marks the words of every batch and merge in progress (see [`crate::string_gc`]).
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        for level in &self.levels {
            match level {
                Level::Vacant => {}
                Level::Single(b) => b.mark_strings(marks),
                Level::Merging(m) => m.mark_strings(marks),
            }
        }
    }

    /// An empty spine for keys of `key_width` and vals of `val_width` words.
    pub fn new(key_width: usize, val_width: usize) -> Spine {
        let m = Antichain::from_elem(Time::minimum());
        Spine {
            key_width,
            val_width,
            levels: Vec::new(),
            logical: m.clone(),
            lower: m.clone(),
            upper: m,
            effort: DEFAULT_EFFORT,
            budget: 0,
            forced: 0,
        }
    }

    /// Sets the fuel multiplier (at least 1); larger values finish merges sooner, using
    /// fewer batches at the cost of more work per insert.
    pub fn set_effort(&mut self, effort: usize) {
        self.effort = effort.max(1);
    }

    /// Words per key.
    pub fn key_width(&self) -> usize {
        self.key_width
    }

    /// Words per val.
    pub fn val_width(&self) -> usize {
        self.val_width
    }

    /// Inserts a batch. Its `lower` should equal the spine's [`upper`](Spine::upper); the
    /// spine's upper becomes the batch's upper. Empty batches only advance the upper (and
    /// give merges a little fuel).
    ///
    /// Panics if the batch's widths differ from the spine's.
    pub fn insert(&mut self, batch: Arc<Batch>) {
        assert!(
            batch.key_width() == self.key_width && batch.val_width() == self.val_width,
            "spine of widths ({}, {}) given a batch of widths ({}, {})",
            self.key_width,
            self.val_width,
            batch.key_width(),
            batch.val_width()
        );
        self.upper = batch.upper().clone();
        if batch.is_empty() {
            self.budget = self.effort;
            self.apply_fuel(self.effort as isize);
            return;
        }
        let i = level_of(batch.len());
        self.budget = self.effort << i;
        self.apply_fuel(self.budget as isize);
        self.roll_up(i);
        self.insert_at(batch, i);
    }

    /// Sets the logical compaction frontier: readers will only ask about times in its
    /// future, so merges may advance times by it. It must be in the future of the current
    /// frontier ([`Error::Time`] otherwise).
    pub fn set_logical_compaction(&mut self, frontier: &Antichain<Time>) -> Result<()> {
        if !self.logical.dominates(frontier) {
            return Err(Error::Time(format!(
                "compaction frontier {frontier:?} is not in the future of the current {:?}",
                self.logical
            )));
        }
        self.logical = frontier.clone();
        // Merges that have not begun work adopt the new frontier.
        for l in self.levels.iter_mut() {
            if let Level::Merging(m) = l {
                m.set_frontier(frontier);
            }
        }
        Ok(())
    }

    /// The logical compaction frontier.
    pub fn logical_compaction(&self) -> &Antichain<Time> {
        &self.logical
    }

    /// Lower frontier of the spine (the least time).
    pub fn lower(&self) -> &Antichain<Time> {
        &self.lower
    }

    /// Upper frontier: the upper of the last inserted batch.
    pub fn upper(&self) -> &Antichain<Time> {
        &self.upper
    }

    /// Updates physically stored: those of every batch, counting both inputs of a merge in
    /// progress and the part of its output already written.
    pub fn len(&self) -> usize {
        self.levels
            .iter()
            .map(|l| match l {
                Level::Vacant => 0,
                Level::Single(b) => b.len(),
                Level::Merging(m) => m.older().len() + m.newer().len() + m.output_len(),
            })
            .sum()
    }

    /// Whether no updates are stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes of the stored batches and partial merge outputs.
    pub fn heap_bytes(&self) -> usize {
        self.levels
            .iter()
            .map(|l| match l {
                Level::Vacant => 0,
                Level::Single(b) => b.heap_bytes(),
                Level::Merging(m) => {
                    m.older().heap_bytes() + m.newer().heap_bytes() + m.heap_bytes()
                }
            })
            .sum()
    }

    /// Bytes of the stored batches that live in mapped spill files.
    pub fn spilled_bytes(&self) -> usize {
        self.levels
            .iter()
            .map(|l| match l {
                Level::Vacant => 0,
                Level::Single(b) => b.spilled_bytes(),
                Level::Merging(m) => m.older().spilled_bytes() + m.newer().spilled_bytes(),
            })
            .sum()
    }

    /// Spills batches to files in `dir` (see `spill.rs`), largest first, until at least
    /// `want` heap bytes were freed or none is left: batches not spilled yet that hold at
    /// least `min_bytes` of heap, lone batches and inputs of merges in progress alike (a
    /// merge reads on from the same positions in the spilled copy; what it has written so
    /// far stays on the heap). Returns the heap bytes the spine no longer holds (a batch also
    /// held elsewhere, by a cursor or as an operator's fresh batch, is freed when that holder
    /// lets go). The batches read the same after as before.
    pub fn spill(&mut self, dir: &std::path::Path, want: usize, min_bytes: usize) -> Result<usize> {
        self.spill_into(dir, want, min_bytes, &mut Vec::new())
    }

    /// As [`Spine::spill`], adding each batch replaced and its spilled copy to `swaps`, so
    /// that other holders of the batch (a join's snapshot of the trace) can let go of the
    /// heap copy too ([`crate::trace::Cursor::swap_batches`]).
    pub fn spill_into(
        &mut self,
        dir: &std::path::Path,
        want: usize,
        min_bytes: usize,
        swaps: &mut Swaps,
    ) -> Result<usize> {
        // (heap bytes, level, which: 0 a lone batch, 1 a merge's older input, 2 its newer).
        let mut cold: Vec<(usize, usize, u8)> = Vec::new();
        let mut consider = |b: &Batch, i: usize, which: u8| {
            if !b.is_spilled() && b.heap_bytes() >= min_bytes.max(1) {
                cold.push((b.heap_bytes(), i, which));
            }
        };
        for (i, l) in self.levels.iter().enumerate() {
            match l {
                Level::Vacant => {}
                Level::Single(b) => consider(b, i, 0),
                Level::Merging(m) => {
                    consider(m.older(), i, 1);
                    consider(m.newer(), i, 2);
                }
            }
        }
        cold.sort_unstable_by(|a, b| b.cmp(a));
        let mut freed = 0;
        for (bytes, i, which) in cold {
            if freed >= want {
                break;
            }
            match (&mut self.levels[i], which) {
                (Level::Single(b), _) => {
                    let spilled = Arc::new(b.spill(dir)?);
                    freed += bytes.saturating_sub(spilled.heap_bytes());
                    swaps.push((std::mem::replace(b, spilled.clone()), spilled));
                }
                (Level::Merging(m), which) => {
                    let newer = which == 2;
                    let input = if newer { m.newer() } else { m.older() };
                    let old = input.clone();
                    let spilled = Arc::new(input.spill(dir)?);
                    freed += bytes.saturating_sub(spilled.heap_bytes());
                    m.replace_input(newer, spilled.clone());
                    swaps.push((old, spilled));
                }
                (Level::Vacant, _) => {}
            }
        }
        Ok(freed)
    }

    /// Number of readable batches (merge inputs counted separately).
    pub fn n_batches(&self) -> usize {
        self.levels
            .iter()
            .map(|l| match l {
                Level::Vacant => 0,
                Level::Single(_) => 1,
                Level::Merging(_) => 2,
            })
            .sum()
    }

    /// Number of merges that had to be completed at once with more work left than the
    /// current insert's fuel budget (fuel fell short). A diagnostic: should stay at or near
    /// zero.
    pub fn forced_merges(&self) -> usize {
        self.forced
    }

    /// The readable batches, oldest first (both inputs of merges in progress).
    pub fn batches(&self) -> Vec<Arc<Batch>> {
        let mut out = Vec::new();
        for l in self.levels.iter().rev() {
            match l {
                Level::Vacant => {}
                Level::Single(b) => out.push(b.clone()),
                Level::Merging(m) => {
                    out.push(m.older().clone());
                    out.push(m.newer().clone());
                }
            }
        }
        out
    }

    /// A cursor over the current batches.
    pub fn cursor(&self) -> Cursor {
        Cursor::new(self.key_width, self.val_width, self.batches())
    }

    /// The whole trace as consolidated updates (rows `key ++ val`, sorted by row then
    /// time; times as stored, i.e. possibly advanced by compaction), and the key width.
    pub fn to_updates(&self) -> (Updates, usize) {
        (self.cursor().to_updates(), self.key_width)
    }

    /// Uses up to `fuel` units of idle work: advances merges in progress, then merges the
    /// two newest batches, then compacts a lone batch whose `since` is behind the logical
    /// frontier. Returns whether idle work remains.
    pub fn exert(&mut self, fuel: usize) -> bool {
        let mut fuel = fuel.min(isize::MAX as usize) as isize;
        while fuel > 0 {
            if self.levels.iter().any(|l| matches!(l, Level::Merging(_))) {
                for i in (0..self.levels.len()).rev() {
                    if fuel <= 0 {
                        break;
                    }
                    self.work_at(i, &mut fuel);
                }
                continue;
            }
            let occupied: Vec<usize> = (0..self.levels.len())
                .filter(|&i| !self.levels[i].is_vacant())
                .collect();
            match occupied.as_slice() {
                [] => break,
                [only] => {
                    let only = *only;
                    let Level::Single(b) = &self.levels[only] else {
                        unreachable!()
                    };
                    if b.since() == &self.logical {
                        break;
                    }
                    let empty = Arc::new(Batch::empty(
                        self.key_width,
                        self.val_width,
                        Description::new(
                            b.upper().clone(),
                            b.upper().clone(),
                            self.logical.clone(),
                        ),
                    ));
                    let b = b.clone();
                    self.levels[only] =
                        Level::Merging(Box::new(MergeState::new(b, empty, &self.logical)));
                }
                [p, q, ..] => {
                    let (p, q) = (*p, *q);
                    let newer = self.take_single(p);
                    let older = self.take_single(q);
                    self.levels[q] =
                        Level::Merging(Box::new(MergeState::new(older, newer, &self.logical)));
                }
            }
        }
        self.levels.iter().any(|l| matches!(l, Level::Merging(_)))
            || self.n_batches() > 1
            || self.levels.iter().any(|l| match l {
                Level::Single(b) => b.since() != &self.logical,
                _ => false,
            })
    }

    /// Merges every batch into one in a single pass (`merge_all.rs`; two by a
    /// [`MergeState`]), advanced to the
    /// logical frontier, and places it at its size class; merges in progress are dropped and
    /// their inputs merged instead. Does nothing if the spine holds one batch already
    /// advanced to the frontier (or none).
    ///
    /// Gives the batch that [`Spine::exert`] with unbounded fuel leaves, reading each
    /// update once rather than again in every merge of a pairwise chain.
    pub fn merge_all(&mut self) {
        let batches = self.batches();
        match batches.as_slice() {
            [] => return,
            [only] if only.since() == &self.logical => return,
            _ => {}
        }
        // Two batches read the same in either merge, and the pairwise one's two-pointer
        // loops cost less per key than the k-way scans.
        let merged = match batches.as_slice() {
            [a, b] => MergeState::new(a.clone(), b.clone(), &self.logical).finish(),
            _ => super::merge_all::merge_all(&batches, &self.logical),
        };
        drop(batches);
        for l in self.levels.iter_mut() {
            *l = Level::Vacant;
        }
        if !merged.is_empty() {
            let i = level_of(merged.len());
            self.ensure(i);
            self.levels[i] = Level::Single(Arc::new(merged));
        }
    }

    fn take_single(&mut self, i: usize) -> Arc<Batch> {
        match std::mem::replace(&mut self.levels[i], Level::Vacant) {
            Level::Single(b) => b,
            _ => unreachable!("level {i} does not hold a single batch"),
        }
    }

    fn ensure(&mut self, i: usize) {
        while self.levels.len() <= i {
            self.levels.push(Level::Vacant);
        }
    }

    /// Gives `fuel` to the merge at level `i`, if any; places its result when complete.
    fn work_at(&mut self, i: usize, fuel: &mut isize) {
        if let Level::Merging(m) = &mut self.levels[i] {
            m.work(fuel);
            if m.is_complete() {
                if let Some(r) = self.complete_at(i) {
                    self.place(r, i, true);
                }
            }
        }
    }

    /// Gives each merge in progress `fuel`, highest level first.
    fn apply_fuel(&mut self, fuel: isize) {
        for i in (0..self.levels.len()).rev() {
            let mut f = fuel;
            self.work_at(i, &mut f);
        }
    }

    /// Empties level `i`, completing its merge if needed; `None` if it held nothing (or
    /// everything cancelled).
    fn complete_at(&mut self, i: usize) -> Option<Arc<Batch>> {
        let b = match std::mem::replace(&mut self.levels[i], Level::Vacant) {
            Level::Vacant => return None,
            Level::Single(b) => b,
            Level::Merging(m) => Arc::new(m.finish()),
        };
        (!b.is_empty()).then_some(b)
    }

    /// Places the completed result `r` of level `i` (now vacant): up to level `i + 1` if it
    /// outgrew level `i`, else at level `i`, or lower through vacant levels if `descend`.
    fn place(&mut self, r: Arc<Batch>, i: usize, descend: bool) {
        let want = level_of(r.len());
        if want > i {
            self.insert_at(r, i + 1);
            return;
        }
        let mut t = i;
        if descend {
            while t > want && self.levels[t - 1].is_vacant() {
                t -= 1;
            }
        }
        self.levels[t] = Level::Single(r);
    }

    /// Merges everything below level `i` into one batch placed at level `i`.
    fn roll_up(&mut self, i: usize) {
        self.ensure(i);
        if self.levels[..i].iter().all(Level::is_vacant) {
            return;
        }
        let mut acc: Option<Arc<Batch>> = None;
        for l in 0..i {
            // Level `l` is older than everything accumulated from below it.
            let older = self.complete_at(l);
            acc = match (older, acc) {
                (Some(o), Some(n)) => {
                    let r = MergeState::new(o, n, &self.logical).finish();
                    (!r.is_empty()).then(|| Arc::new(r))
                }
                (o, n) => o.or(n),
            };
        }
        if let Some(r) = acc {
            self.insert_at(r, i);
        }
    }

    /// Inserts `batch` (newer than everything at or above level `i`, older than anything
    /// below) at level `i`.
    fn insert_at(&mut self, batch: Arc<Batch>, i: usize) {
        self.ensure(i);
        match std::mem::replace(&mut self.levels[i], Level::Vacant) {
            Level::Vacant => self.levels[i] = Level::Single(batch),
            Level::Single(old) => {
                self.levels[i] =
                    Level::Merging(Box::new(MergeState::new(old, batch, &self.logical)))
            }
            Level::Merging(m) => {
                // Finish the merge now (normal after a roll-up into this level; a sign of
                // fuel falling short if more work remains than the insert's budget).
                if m.remaining() > self.budget {
                    self.forced += 1;
                }
                let r = m.finish();
                if !r.is_empty() {
                    self.place(Arc::new(r), i, false);
                }
                self.insert_at(batch, i);
            }
        }
    }
}
