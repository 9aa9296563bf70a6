//! Progressive merging of two batches with compaction.
//!
//! A [`MergeState`] merges two adjacent batches (`a` older, `b` newer) key by key. Every
//! time is advanced by the compaction frontier (`t.advance_by(frontier)`), and the updates
//! of each `(key, val)` are consolidated: equal advanced times are summed, zero sums
//! dropped, and vals and keys left without updates dropped. [`MergeState::work`] does a
//! bounded amount of work (about `fuel` updates read, always whole keys) and can be called
//! again later; the inputs stay readable meanwhile.
//!
//! The frontier is the one given at creation, or a later one set with
//! [`MergeState::set_frontier`] before the first unit of work (a spine starts merges on
//! insert and works on them at later inserts, by which time its frontier has usually
//! advanced). Once work has begun the frontier is fixed, so every time of the result is
//! advanced by exactly the result's `since`.
//!
//! Runs of keys present in only one input are copied in bulk (whole layer slices, times
//! joined with the frontier's meet). Where advancing may make two updates of a val equal (a
//! val with several updates, in an input whose `since` is not the frontier), the copied run
//! is then consolidated in place (`Builder::consolidate_keys_from`). A val present in both
//! inputs is gathered and consolidated by `merge_val.rs`.
//!
//! Advancing a time is one join with the frontier's meet (`packed::meet_of`). When every
//! time of both inputs and that meet have two coordinates below 2^32 (the common shape:
//! an outer time and one iteration), each val's updates are read, advanced, sorted and
//! summed as 16-byte `(packed time, diff)` pairs (`packed.rs`) instead of 40-byte
//! `(Time, diff)` ones.
//!
//! The result's description is `lower` of `a`, `upper` of `b`, and `since` = the frontier.
//! Diffs are summed exactly (in `i128`): a total outside `i64` is kept as several updates
//! of the same time whose diffs sum to it, never wrapped.

use super::batch::{gallop, Batch};
use super::builder::Builder;
use super::description::Description;
use super::merge_val::{TimeReading, ValScratch};
use super::packed::{self, advance, meet_of, PackedTimes};
use crate::lattice::{Antichain, Time};
use std::cmp::Ordering;
use std::sync::Arc;

/// A merge of two batches in progress.
#[derive(Debug)]
pub struct MergeState {
    a: Arc<Batch>,
    b: Arc<Batch>,
    /// Next key of `a` and of `b` to merge.
    ka: usize,
    kb: usize,
    frontier: Antichain<Time>,
    /// The meet of the frontier's elements (`None` if it is empty): advancing is a join
    /// with it.
    meet: Option<Time>,
    /// Advanced single times of `a` and `b`, when they store one.
    single_a: Option<Time>,
    single_b: Option<Time>,
    /// How to read both inputs' times packed, when all of them and the meet pack.
    packed: Option<Packed>,
    builder: Builder,
    /// The open val's gathered updates.
    vals: ValScratch,
}

/// A merge whose times all pack in one word (`packed.rs`).
#[derive(Clone, Debug)]
struct Packed {
    /// The frontier's meet, packed (0 for the empty frontier).
    meet: u64,
    a: PackedTimes,
    b: PackedTimes,
}

impl Packed {
    /// The packed reading of `a` and `b` advanced by `meet`, if every time packs.
    fn of(a: &Batch, b: &Batch, meet: Option<&Time>) -> Option<Packed> {
        let meet = match meet {
            Some(m) => packed::pack(m)?,
            None => 0,
        };
        Some(Packed {
            meet,
            a: PackedTimes::of(a, meet)?,
            b: PackedTimes::of(b, meet)?,
        })
    }
}

/// The most heap bytes a builder of the merge of `a` and `b` may hold: room for both
/// inputs' keys, vals and key offsets, and (once two times, diffs or update counts differ)
/// 8-byte times, diffs and val offsets for every update, before [`Builder::done`] makes
/// them compact. A merge of two batches of 5M static edges at 4 bytes each may hold 280 MB
/// while it builds a 45 MB batch.
fn build_bytes(a: &Batch, b: &Batch) -> usize {
    let word = |narrow: bool| if narrow { 4 } else { 8 };
    let keys =
        (a.n_keys() + b.n_keys()) * (a.key_width() * word(a.keys_narrow() && b.keys_narrow()) + 8);
    let vals = (a.n_vals() + b.n_vals()) * a.val_width() * word(a.vals_narrow() && b.vals_narrow());
    keys + vals + (a.len() + b.len()) * 24
}

impl MergeState {
    /// Marks the words of the two batches merged (the output so far holds only theirs).
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.a.mark_strings(marks);
        self.b.mark_strings(marks);
    }

    /// Begins merging `a` (older) with `b` (newer), compacting to `frontier`.
    ///
    /// Panics if the batches' widths differ.
    pub fn new(a: Arc<Batch>, b: Arc<Batch>, frontier: &Antichain<Time>) -> MergeState {
        assert!(
            a.key_width() == b.key_width() && a.val_width() == b.val_width(),
            "merging batches of different widths"
        );
        let meet = meet_of(frontier.elements());
        // A large output built while the heap is near its limit goes straight to files.
        let builder = Builder::with_layout_in(
            super::spill::write_through_dir(build_bytes(&a, &b)),
            a.key_width(),
            a.val_width(),
            a.keys_narrow() && b.keys_narrow(),
            a.vals_narrow() && b.vals_narrow(),
            a.n_keys() + b.n_keys(),
            a.n_vals() + b.n_vals(),
            a.len() + b.len(),
        );
        MergeState {
            single_a: a.single_time().map(|t| advance(t, meet.as_ref())),
            single_b: b.single_time().map(|t| advance(t, meet.as_ref())),
            packed: Packed::of(&a, &b, meet.as_ref()),
            meet,
            a,
            b,
            ka: 0,
            kb: 0,
            frontier: frontier.clone(),
            builder,
            vals: ValScratch::default(),
        }
    }

    /// Whether the output is written through to files (see `stored.rs`).
    #[cfg(test)]
    pub(crate) fn writes_through(&self) -> bool {
        self.builder.writes_through()
    }

    /// The older input.
    pub fn older(&self) -> &Arc<Batch> {
        &self.a
    }

    /// The newer input.
    pub fn newer(&self) -> &Arc<Batch> {
        &self.b
    }

    /// Replaces the older (`newer == false`) or newer input with `batch`, which must read
    /// exactly as it (a spilled copy, see `spill.rs`): the merge goes on from the same
    /// positions.
    pub(crate) fn replace_input(&mut self, newer: bool, batch: Arc<Batch>) {
        let input = if newer { &mut self.b } else { &mut self.a };
        debug_assert!(
            **input == *batch,
            "a merge input replaced by a different batch"
        );
        *input = batch;
        // Equal batches store times alike, so this reads them as before; recomputed so
        // that the packed reading always describes the inputs it reads (between keys, no
        // val is open).
        self.packed = Packed::of(&self.a, &self.b, self.meet.as_ref());
    }

    /// The frontier times are advanced by.
    pub fn frontier(&self) -> &Antichain<Time> {
        &self.frontier
    }

    /// Whether work has begun (the frontier is then fixed).
    pub fn started(&self) -> bool {
        self.ka > 0 || self.kb > 0
    }

    /// Replaces the compaction frontier (which should be in the future of the current one)
    /// if no work has been done yet; returns whether it was replaced.
    pub fn set_frontier(&mut self, frontier: &Antichain<Time>) -> bool {
        if self.started() {
            return false;
        }
        let meet = meet_of(frontier.elements());
        self.single_a = self.a.single_time().map(|t| advance(t, meet.as_ref()));
        self.single_b = self.b.single_time().map(|t| advance(t, meet.as_ref()));
        self.packed = Packed::of(&self.a, &self.b, meet.as_ref());
        self.meet = meet;
        self.frontier = frontier.clone();
        true
    }

    /// Whether all keys have been merged.
    #[inline]
    pub fn is_complete(&self) -> bool {
        self.ka >= self.a.n_keys() && self.kb >= self.b.n_keys()
    }

    /// Updates written to the (partial) output so far.
    pub fn output_len(&self) -> usize {
        self.builder.len()
    }

    /// Updates of the inputs not yet read.
    pub fn remaining(&self) -> usize {
        let ra = self.a.len()
            - if self.ka < self.a.n_keys() {
                self.a.updates_of_key(self.ka).start
            } else {
                self.a.len()
            };
        let rb = self.b.len()
            - if self.kb < self.b.n_keys() {
                self.b.updates_of_key(self.kb).start
            } else {
                self.b.len()
            };
        ra + rb
    }

    /// Heap bytes of the partial output (inputs are accounted by their owners).
    pub fn heap_bytes(&self) -> usize {
        self.builder.heap_bytes() + self.vals.heap_bytes()
    }

    /// Merges whole keys until `fuel` (in updates read) is exhausted or the merge is
    /// complete. `fuel` may end negative when the last key was large.
    pub fn work(&mut self, fuel: &mut isize) {
        let (na, nb) = (self.a.n_keys(), self.b.n_keys());
        while *fuel > 0 && (self.ka < na || self.kb < nb) {
            let ord = if self.ka >= na {
                Ordering::Greater
            } else if self.kb >= nb {
                Ordering::Less
            } else {
                self.a.cmp_key_with(self.ka, &self.b, self.kb)
            };
            let read = match ord {
                Ordering::Less => self.copy_run(true, *fuel),
                Ordering::Greater => self.copy_run(false, *fuel),
                Ordering::Equal => {
                    let (ka, kb) = (self.ka, self.kb);
                    self.ka += 1;
                    self.kb += 1;
                    self.merge_key(ka, kb)
                }
            };
            *fuel -= read.max(1) as isize;
        }
    }

    /// Completes the merge and returns the result.
    pub fn finish(mut self) -> Batch {
        let mut fuel = isize::MAX;
        self.work(&mut fuel);
        let desc = Description::new(
            self.a.lower().clone(),
            self.b.upper().clone(),
            self.frontier.clone(),
        );
        self.builder.done(desc)
    }

    /// Pushes val `v` of one input, alone, into the open val and seals it; returns the
    /// updates read.
    #[inline(always)]
    fn copy_val(&mut self, from_a: bool, v: usize) -> usize {
        let reading = reading(
            self.packed.as_ref(),
            self.meet.as_ref(),
            self.single(from_a),
            from_a,
        );
        let batch = if from_a { &self.a } else { &self.b };
        self.vals.copy_val(&mut self.builder, batch, v, reading)
    }

    /// The advanced single time of `a` (if `from_a`) or `b`, if it stores one.
    #[inline(always)]
    fn single(&self, from_a: bool) -> Option<Time> {
        if from_a {
            self.single_a
        } else {
            self.single_b
        }
    }

    /// Copies the run of keys of one input that precede the other input's next key (at
    /// least one key, at most about `fuel` updates); returns the updates read.
    fn copy_run(&mut self, from_a: bool, fuel: isize) -> usize {
        let (x, y) = if from_a {
            (self.a.clone(), self.b.clone())
        } else {
            (self.b.clone(), self.a.clone())
        };
        let (kx, ky) = if from_a {
            (self.ka, self.kb)
        } else {
            (self.kb, self.ka)
        };
        let nx = x.n_keys();
        let mut end = if ky < y.n_keys() {
            gallop(kx + 1, nx, |k| x.cmp_key_with(k, &y, ky) == Ordering::Less)
        } else {
            nx
        };
        // At most `fuel` updates (but at least one key).
        let first = x.updates_of_key(kx).start;
        let limit = first + fuel.max(1) as usize;
        if x.updates_of_key(end - 1).end > limit {
            end = gallop(kx + 1, end, |k| x.updates_of_key(k).end <= limit);
            end = end.max(kx + 1);
        }
        if from_a {
            self.ka = end;
        } else {
            self.kb = end;
        }
        let f = self.frontier.elements();
        let identity = f.is_empty() || x.since() == &self.frontier || f == [Time::minimum()];
        if identity || x.single_time().is_some() || x.len() == x.n_vals() {
            let single = if from_a { self.single_a } else { self.single_b };
            let adv = if identity { None } else { self.meet.as_ref() };
            self.builder.extend_keys_from(&x, kx..end, adv, single);
            x.updates_of_key(end - 1).end - first
        } else {
            // Copied whole with times advanced, then consolidated where advancing made
            // two times of a val equal (or out of order).
            let first_key = self.builder.n_keys();
            let single = if from_a { self.single_a } else { self.single_b };
            self.builder
                .extend_keys_from(&x, kx..end, self.meet.as_ref(), single);
            self.builder.consolidate_keys_from(first_key);
            x.updates_of_key(end - 1).end - first
        }
    }

    /// Merges key `ka` of `a` with the equal key `kb` of `b`; returns the updates read.
    fn merge_key(&mut self, ka: usize, kb: usize) -> usize {
        let (a, b) = (self.a.clone(), self.b.clone());
        self.builder.push_key_from(&a, ka);
        let (mut va, ea) = (a.vals_of(ka).start, a.vals_of(ka).end);
        let (mut vb, eb) = (b.vals_of(kb).start, b.vals_of(kb).end);
        let mut read = 0;
        while va < ea || vb < eb {
            let ord = if va >= ea {
                Ordering::Greater
            } else if vb >= eb {
                Ordering::Less
            } else {
                a.cmp_val_with(va, &b, vb)
            };
            match ord {
                Ordering::Less => {
                    self.builder.push_val_from(&a, va);
                    read += self.copy_val(true, va);
                    va += 1;
                }
                Ordering::Greater => {
                    self.builder.push_val_from(&b, vb);
                    read += self.copy_val(false, vb);
                    vb += 1;
                }
                Ordering::Equal => {
                    self.builder.push_val_from(&a, va);
                    let (p, m) = (self.packed.as_ref(), self.meet.as_ref());
                    read += self.vals.gather(&a, va, reading(p, m, self.single_a, true));
                    read += self
                        .vals
                        .gather(&b, vb, reading(p, m, self.single_b, false));
                    self.vals.flush(&mut self.builder, self.packed.is_some());
                    va += 1;
                    vb += 1;
                }
            }
        }
        self.builder.seal_key();
        read
    }
}

/// How to read the times of input `a` (if `from_a`) or `b` of a merge: packed, or in full
/// with `single` (the input's single time advanced, if it stores one) and the meet.
#[inline(always)]
fn reading<'a>(
    packed: Option<&'a Packed>,
    meet: Option<&'a Time>,
    single: Option<Time>,
    from_a: bool,
) -> TimeReading<'a> {
    match packed {
        Some(p) => TimeReading::Packed(if from_a { &p.a } else { &p.b }, p.meet),
        None => TimeReading::Full(single, meet),
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
