//! `watermark`: event time. Splits a collection by a watermark over one of its int64
//! columns (the event time), or releases the rows of a second collection once the
//! watermark passes them.
//!
//! The watermark is the greatest event time inserted so far minus a fixed lateness. It is
//! defined on logical times (top-level, one-coordinate times, totally ordered), never on
//! how updates were batched: the updates at each time are consolidated, and
//!
//! * `W(t)`, the watermark *before* time `t`, comes from the records inserted (net positive
//!   diff at their time) at times `< t`; a record update at `t` is **late** when its event
//!   time is below `W(t)` (or null). `emit = "on_time"` passes the other updates on,
//!   `emit = "late"` only the late ones: the two partition the input;
//! * `W'(t)`, the watermark *after* time `t`, also counts the records inserted at `t`
//!   (so `W'(t) = W(t + 1)`); `emit = "closed"` holds the updates of its second input
//!   (*probes*) and releases each at the first time `t` at or after its own with
//!   `probe_column <= W'(t)`; a probe update whose `probe_column` the watermark had passed
//!   before its time (`<= W(t)`) is dropped: once released, a row never changes.
//!   `emit = "expire"` releases the same updates negated, one time later (`t + 1`): fed
//!   back beside the probes, it empties what they fed once they are released (windows
//!   `emit="final"` drop the state of closed windows this way). Rows not yet passed wait in
//!   the operator (and only they: a released row is forgotten).
//!
//! Every update goes to one worker (the watermark is global), so the output is the same on
//! any number of workers. The operator emits only at times it holds in its buffers (the
//! watermark changes only at times with input) or one later (`expire`, in the activation
//! that completes the held time), so its output frontier is its input's.

use super::buffer::Buffer;
use super::{take_all, Operator, Output, RunCtx};
use crate::encoding::NULL_I64;
use crate::engine::column::Msg;
use crate::engine::util::consolidate;
use crate::error::Result;
use crate::lattice::{Antichain, Time};
use crate::updates::{TimeColumn, Updates};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Which part the operator emits (the plan's `emit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Emit {
    /// The updates of input 0 that are not late.
    OnTime,
    /// The late updates of input 0.
    Late,
    /// The updates of input 1 released when the watermark passes their `probe_column`.
    Closed,
    /// The same updates negated, one time later.
    Expire,
}

/// The running maximum of inserted event times, and the watermark it gives.
#[derive(Clone, Debug, Default)]
pub struct Clock {
    /// The greatest event time inserted so far.
    max: Option<i64>,
    lateness: i64,
}

impl Clock {
    /// A clock with nothing seen.
    pub fn new(lateness: i64) -> Clock {
        Clock {
            max: None,
            lateness,
        }
    }

    /// The watermark: the greatest event time seen minus the lateness (None before any).
    pub fn watermark(&self) -> Option<i64> {
        self.max.map(|m| m.saturating_sub(self.lateness))
    }

    /// Whether event time `et` (an int64 word) is late against the current watermark.
    pub fn is_late(&self, et: u64) -> bool {
        et == NULL_I64 || self.watermark().is_some_and(|w| (et as i64) < w)
    }

    /// Whether the watermark has passed `et` (`et <= watermark`; never for null).
    pub fn passed(&self, et: u64) -> bool {
        et != NULL_I64 && self.watermark().is_some_and(|w| (et as i64) <= w)
    }

    /// Counts the updates of one time: the event times of rows whose net diff is positive.
    pub fn advance<'a>(&mut self, rows: impl Iterator<Item = (&'a [u64], i64)>, column: usize) {
        let mut net: HashMap<&[u64], i128> = HashMap::new();
        for (row, diff) in rows {
            let et = row[column];
            if et == NULL_I64 || self.max.is_some_and(|m| (et as i64) <= m) {
                continue; // cannot raise the maximum
            }
            *net.entry(row).or_insert(0) += diff as i128;
        }
        for (row, total) in net {
            if total > 0 {
                let et = row[column] as i64;
                self.max = Some(self.max.map_or(et, |m| m.max(et)));
            }
        }
    }
}

/// One `watermark` node on one worker.
pub struct Watermark {
    column: usize,
    probe_column: usize,
    emit: Emit,
    clock: Clock,
    data: Buffer,
    probes: Buffer,
    /// Rows of input 1 the watermark has not passed, by their `probe_column` value (times
    /// meaningless): a release takes the passed prefix, whatever the number still waiting.
    pending: BTreeMap<i64, Vec<Msg>>,
    /// Pending rows with a null `probe_column` (the watermark never passes them).
    pending_null: Vec<Msg>,
    /// The watermark at the last look at the pending rows.
    released_at: Option<i64>,
    no_key: Vec<usize>,
}

impl Watermark {
    /// A watermark over input 0's `column` with `lateness`, emitting `emit`.
    pub fn new(column: usize, lateness: i64, emit: Emit, probe_column: usize) -> Watermark {
        Watermark {
            column,
            probe_column,
            emit,
            clock: Clock::new(lateness),
            data: Buffer::default(),
            probes: Buffer::default(),
            pending: BTreeMap::new(),
            pending_null: Vec::new(),
            released_at: None,
            no_key: Vec::new(),
        }
    }

    /// Processes the complete updates `data` (input 0) and `probes` (input 1), time by time.
    fn process(&mut self, data: Vec<Msg>, probes: Vec<Msg>) -> Result<Vec<Msg>> {
        let data_at = by_time(&data);
        let probes_at = by_time(&probes);
        let mut times: Vec<Time> = data_at.iter().chain(&probes_at).map(|e| e.0).collect();
        times.sort_unstable();
        times.dedup();
        let (mut d, mut p) = (0, 0);
        let mut out: Vec<Msg> = Vec::new();
        for t in times {
            let start = d;
            while d < data_at.len() && data_at[d].0 == t {
                d += 1;
            }
            let here = &data_at[start..d];
            let probing = matches!(self.emit, Emit::Closed | Emit::Expire);
            if !probing {
                let want_late = self.emit == Emit::Late;
                for &(_, k, i) in here {
                    let m = &data[k];
                    if self.clock.is_late(m.upd.row(i)[self.column]) == want_late {
                        push_to(&mut out, m, i, t, m.upd.diffs[i]);
                    }
                }
            }
            let rows = here
                .iter()
                .map(|&(_, k, i)| (data[k].upd.row(i), data[k].upd.diffs[i]));
            let before = self.clock.clone();
            self.clock.advance(rows, self.column);
            if probing {
                let held = p;
                while p < probes_at.len() && probes_at[p].0 == t {
                    let (_, k, i) = probes_at[p];
                    if !before.passed(probes[k].upd.row(i)[self.probe_column]) {
                        self.hold(&probes[k], i)?;
                    }
                    p += 1;
                }
                // Pending rows wait for the watermark: look again only when it moved or
                // rows were added.
                if p > held || self.clock.watermark() != self.released_at {
                    self.release(t, &mut out)?;
                    self.released_at = self.clock.watermark();
                }
            }
        }
        Ok(out)
    }

    /// Adds row `i` of `m` to the pending rows.
    fn hold(&mut self, m: &Msg, i: usize) -> Result<()> {
        let et = m.upd.row(i)[self.probe_column];
        let msgs = if et == NULL_I64 {
            &mut self.pending_null
        } else {
            self.pending.entry(et as i64).or_default()
        };
        let p = match msgs.iter_mut().position(|p| p.schema == m.schema) {
            Some(k) => &mut msgs[k],
            None => {
                msgs.push(Msg::empty(m.schema.clone()));
                msgs.last_mut().expect("pushed")
            }
        };
        reserve_a_quarter(&mut p.upd);
        p.upd.push(m.upd.row(i), Time::minimum(), m.upd.diffs[i]);
        // A window's row changes with every record: consolidate whenever the rows waiting
        // under one value reach a power of two (amortized, and rows that cancel go).
        let n = p.upd.len();
        if n >= 32 && n.is_power_of_two() {
            consolidate(&mut p.upd)?;
            compact_held(&mut p.upd);
        }
        Ok(())
    }

    /// Emits at `t` the pending rows the watermark has passed (`expire`: negated, at the
    /// next time), consolidated, and forgets them.
    fn release(&mut self, t: Time, out: &mut Vec<Msg>) -> Result<()> {
        let (at, sign) = match self.emit {
            Emit::Expire => {
                let mut next = t;
                next.0[0] = next.0[0].saturating_add(1);
                (next, -1)
            }
            _ => (t, 1),
        };
        let Some(w) = self.clock.watermark() else {
            return Ok(());
        };
        let mut passed: Vec<Msg> = Vec::new();
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() > w {
                break;
            }
            for m in entry.remove() {
                match passed.iter_mut().find(|p| p.schema == m.schema) {
                    Some(p) => p.upd.extend(&m.upd),
                    None => passed.push(m),
                }
            }
        }
        for mut p in passed {
            consolidate(&mut p.upd)?;
            for i in 0..p.upd.len() {
                push_to(out, &p, i, at, sign * p.upd.diffs[i]);
            }
        }
        Ok(())
    }
}

impl Watermark {
    /// Every message of pending rows.
    fn pending_msgs(&self) -> impl Iterator<Item = &Msg> {
        self.pending.values().flatten().chain(&self.pending_null)
    }
}

/// Held rows grow by a quarter (at least 64 rows) when full, not by doubling: an open
/// window's rows are held until it closes, so the spare room of a doubled vector would be
/// up to half of them again, for the whole window.
fn reserve_a_quarter(upd: &mut Updates) {
    if upd.diffs.len() == upd.diffs.capacity() {
        let more = (upd.diffs.len() / 4).max(64);
        upd.diffs.reserve_exact(more);
        upd.rows.reserve_exact(more * upd.width);
    }
}

/// Held rows after a consolidation: as one time again (a sort writes the times out, 32
/// bytes a row, and the times of held rows mean nothing), and in a quarter more room than
/// they fill when they fill less than half of it (rows that cancelled went).
fn compact_held(upd: &mut Updates) {
    upd.times = TimeColumn::repeat(Time::minimum(), upd.len());
    let n = upd.diffs.len();
    if 2 * n < upd.diffs.capacity() {
        upd.diffs.shrink_to(n + n / 4);
        upd.rows.shrink_to((n + n / 4) * upd.width);
    }
}

/// Every update of `msgs` as `(time, message, row)`, sorted by time.
fn by_time(msgs: &[Msg]) -> Vec<(Time, usize, usize)> {
    let mut v: Vec<(Time, usize, usize)> = Vec::new();
    for (k, m) in msgs.iter().enumerate() {
        v.extend(m.upd.times.iter().enumerate().map(|(i, t)| (*t, k, i)));
    }
    v.sort_unstable();
    v
}

/// Appends row `i` of `m` at time `t` with `diff` to the message of `m`'s schema in `out`.
fn push_to(out: &mut Vec<Msg>, m: &Msg, i: usize, t: Time, diff: i64) {
    let o = match out.iter().position(|o| o.schema == m.schema) {
        Some(k) => &mut out[k],
        None => {
            out.push(Msg::empty(m.schema.clone()));
            out.last_mut().expect("pushed")
        }
    };
    o.upd.push(m.upd.row(i), t, diff);
}

impl Operator for Watermark {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.data.mark_strings(marks);
        self.probes.mark_strings(marks);
        let pending = self.pending.values().flatten().chain(&self.pending_null);
        pending.for_each(|m| marks.words(&m.upd.rows));
    }

    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output> {
        if let Some(port) = inputs.get_mut(1) {
            self.probes.extend(std::mem::take(port));
        }
        self.data.extend(take_all(inputs));
        let data = self.data.extract_complete(frontier)?;
        let probes = self.probes.extract_complete(frontier)?;
        if data.is_empty() && probes.is_empty() {
            return Ok(Output::none());
        }
        let msgs = self.process(data, probes)?;
        Ok(Output { msgs, did: true })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        self.data.held(held);
        self.probes.held(held);
    }

    fn exchange_key(&self) -> Option<&[usize]> {
        Some(&self.no_key)
    }

    fn sizes(&self) -> (usize, usize) {
        (0, self.pending_msgs().map(|p| p.upd.len()).sum())
    }

    fn heap_bytes(&self) -> usize {
        self.pending_msgs().map(|p| p.upd.heap_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    //! The operator against a naive reference: for each time in order, the watermark from
    //! the rows inserted at earlier times, recomputed from scratch.
    use super::*;
    use crate::encoding::DType;
    use std::sync::Arc;

    fn t(x: u64) -> Time {
        Time::from_coords(&[x])
    }

    /// Rows `(et, tag)` as one-row-per-update messages split at `cuts`.
    fn msgs(upd: &[(i64, u64, u64, i64)], cuts: &[usize]) -> Vec<Msg> {
        let schema = Arc::new(vec![DType::Int64, DType::Int64]);
        let mut out = Vec::new();
        let mut start = 0;
        for &end in cuts.iter().chain(std::iter::once(&upd.len())) {
            let mut m = Msg::empty(schema.clone());
            for &(et, tag, time, diff) in &upd[start..end.max(start)] {
                m.upd.push(&[et as u64, tag], t(time), diff);
            }
            out.push(m);
            start = end.max(start);
        }
        out
    }

    fn flat(ms: &[Msg]) -> Vec<(Vec<u64>, Time, i64)> {
        let mut v: Vec<(Vec<u64>, Time, i64)> = Vec::new();
        for m in ms {
            for i in 0..m.upd.len() {
                v.push((m.upd.row(i).to_vec(), m.upd.times[i], m.upd.diffs[i]));
            }
        }
        v.sort();
        let mut c: Vec<(Vec<u64>, Time, i64)> = Vec::new();
        for (r, tm, d) in v {
            match c.last_mut() {
                Some(l) if l.0 == r && l.1 == tm => l.2 += d,
                _ => c.push((r, tm, d)),
            }
        }
        c.retain(|x| x.2 != 0);
        c
    }

    /// The greatest event time inserted at times `< before` (net positive per row and time).
    fn naive_max(upd: &[(i64, u64, u64, i64)], before: u64) -> Option<i64> {
        let mut net: HashMap<(i64, u64, u64), i64> = HashMap::new();
        for &(et, tag, time, diff) in upd {
            if time < before {
                *net.entry((et, tag, time)).or_insert(0) += diff;
            }
        }
        net.into_iter()
            .filter(|(_, d)| *d > 0)
            .map(|((et, _, _), _)| et)
            .max()
    }

    fn run(op: &mut Watermark, data: Vec<Msg>, probes: Vec<Msg>) -> Vec<Msg> {
        op.process(data, probes).expect("process")
    }

    /// A small deterministic generator (no dependency for one test).
    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn split_and_release_match_the_reference_whatever_the_batching() {
        for case in 0..200u64 {
            let mut seed = case + 1;
            let n = (lcg(&mut seed) % 30) as usize;
            let lateness = (lcg(&mut seed) % 5) as i64;
            let mut upd = Vec::new();
            for _ in 0..n {
                let et = (lcg(&mut seed) % 20) as i64;
                let tag = lcg(&mut seed) % 3;
                let time = lcg(&mut seed) % 8;
                let diff = if lcg(&mut seed).is_multiple_of(4) {
                    -1
                } else {
                    1
                };
                upd.push((et, tag, time, diff));
            }
            let probes: Vec<(i64, u64, u64, i64)> = (0..(lcg(&mut seed) % 10))
                .map(|_| {
                    let d = if lcg(&mut seed).is_multiple_of(5) {
                        -1
                    } else {
                        1
                    };
                    ((lcg(&mut seed) % 25) as i64, 0, lcg(&mut seed) % 8, d)
                })
                .collect();
            // The reference.
            let mut on_time = Vec::new();
            let mut late = Vec::new();
            for &(et, tag, time, diff) in &upd {
                let w = naive_max(&upd, time).map(|m| m - lateness);
                let target = if w.is_some_and(|w| et < w) {
                    &mut late
                } else {
                    &mut on_time
                };
                target.push((et, tag, time, diff));
            }
            let mut closed = Vec::new();
            let mut expired = Vec::new();
            let mut times: Vec<u64> = upd.iter().chain(&probes).map(|u| u.2).collect();
            times.sort();
            times.dedup();
            for &(et, tag, time, diff) in &probes {
                // Dropped if W(time) passed it already; else released at the first time
                // >= its own where W'(t) = W(t + 1) passes it.
                if naive_max(&upd, time).is_some_and(|m| et <= m - lateness) {
                    continue;
                }
                if let Some(&at) = times.iter().find(|&&x| {
                    x >= time && naive_max(&upd, x + 1).is_some_and(|m| et <= m - lateness)
                }) {
                    closed.push((et, tag, at, diff));
                    expired.push((et, tag, at + 1, -diff));
                }
            }
            let want = [
                flat(&msgs(&on_time, &[])),
                flat(&msgs(&late, &[])),
                flat(&msgs(&closed, &[])),
                flat(&msgs(&expired, &[])),
            ];
            let emits = [Emit::OnTime, Emit::Late, Emit::Closed, Emit::Expire];
            for (e, emit) in emits.into_iter().enumerate() {
                // Fed in one activation, and time by time in two activations per time.
                let mut whole = Watermark::new(0, lateness, emit, 0);
                let got = run(&mut whole, msgs(&upd, &[n / 2]), msgs(&probes, &[]));
                assert_eq!(flat(&got), want[e], "case {case} {emit:?} at once");
                let mut stepped = Watermark::new(0, lateness, emit, 0);
                let mut got = Vec::new();
                for time in 0..8 {
                    let d: Vec<_> = upd.iter().copied().filter(|u| u.2 == time).collect();
                    let p: Vec<_> = probes.iter().copied().filter(|u| u.2 == time).collect();
                    got.extend(run(&mut stepped, msgs(&d, &[d.len() / 2]), msgs(&p, &[])));
                }
                assert_eq!(flat(&got), want[e], "case {case} {emit:?} time by time");
            }
        }
    }

    #[test]
    fn held_rows_take_their_words_and_counts_only() {
        // 2^14 probes at times of their own, under one probe value the watermark has not
        // reached: distinct rows are held in about their words and a count each (no
        // 32-byte time), rows that repeat about once with their count.
        let n = 1u64 << 14;
        let distinct: Vec<_> = (0..n).map(|i| (1_000, i, i, 1)).collect();
        let mut op = Watermark::new(0, 0, Emit::Expire, 0);
        assert!(run(&mut op, Vec::new(), msgs(&distinct, &[])).is_empty());
        let (_, held) = op.sizes();
        assert_eq!(held, n as usize);
        assert!(
            op.heap_bytes() <= n as usize * 3 * 8 * 5 / 4 + 4096,
            "{}",
            op.heap_bytes()
        );
        let repeated: Vec<_> = (0..n).map(|i| (1_000, i % 3, i, 1)).collect();
        let mut op = Watermark::new(0, 0, Emit::Expire, 0);
        assert!(run(&mut op, Vec::new(), msgs(&repeated, &[])).is_empty());
        // Consolidated whenever they reach 32 again: three rows and at most 29 since.
        assert!(op.sizes().1 <= 32, "{}", op.sizes().1);
        assert!(op.heap_bytes() < 4096, "{}", op.heap_bytes());
        // Released (negated, one time later) with their counts once the watermark passes.
        let data = msgs(&[(2_000, 0, n, 1)], &[]);
        let out = flat(&run(&mut op, data, Vec::new()));
        let want: Vec<_> = (0..3)
            .map(|tag| (vec![1_000, tag], t(n + 1), -((n - tag + 2) as i64 / 3)))
            .collect();
        assert_eq!(out, want);
        assert_eq!(op.sizes().1, 0);
    }

    #[test]
    fn null_event_times_are_late_and_never_raise_the_watermark() {
        let mut c = Clock::new(0);
        let null_row = [NULL_I64, 0];
        c.advance([(&null_row[..], 1)].into_iter(), 0);
        assert_eq!(c.watermark(), None);
        assert!(c.is_late(NULL_I64));
        assert!(!c.passed(NULL_I64));
    }
}
