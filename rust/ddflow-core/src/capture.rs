//! Capture state: turning the raw updates a capture node hands out into complete,
//! consolidated output.
//!
//! The engine hands a capture's updates out as they arrive ([`Engine::capture_take_updates`]),
//! in no particular order and at times that may still change. A [`CaptureState`] holds those
//! whose time the capture's frontier has not passed yet and, on [`CaptureState::complete`],
//! returns the rest consolidated: summed per `(record, time)`, zero sums dropped, sorted by
//! `(record words, time)`. Sums are checked: a total outside `i64` is an [`Error::Overflow`]
//! naming the capture and the record (decoded), never a wrapped value.
//!
//! What it keeps of completed updates depends on the [`CaptureMode`]:
//! * [`CaptureMode::History`]: every completed update, consolidated per `(record, time)`, so
//!   the collection can be read at any completed time ([`CaptureState::at`]).
//! * [`CaptureMode::State`]: only the accumulated collection (one count per record), so a
//!   long-running job's memory is bounded by its live data. [`CaptureState::at`] then answers
//!   only for times at or after every completed update.
//!
//! [`Engine::capture_take_updates`]: crate::engine::Engine::capture_take_updates

use crate::encoding::{decode_bool, decode_f64, decode_i64, DType, Interner};
use crate::engine::column::Schema;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Lattice, PartialOrder, Time, MAX_DIMS};
use crate::sort::RadixSorter;
use crate::updates::Updates;
use history::History;
pub use history::{Kept, OrderedHistory};

mod history;
mod narrow;

/// The most a capture's sorter keeps between polls.
const SORTER_KEEP_BYTES: usize = 1 << 20;

/// What a capture keeps of its completed updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureMode {
    /// Every completed update (consolidated per record and time).
    History,
    /// Only the accumulated collection at the capture's frontier.
    State,
}

impl CaptureMode {
    /// Parses `"history"` or `"state"`.
    pub fn parse(name: &str) -> Result<CaptureMode> {
        match name {
            "history" => Ok(CaptureMode::History),
            "state" => Ok(CaptureMode::State),
            other => Err(Error::Value(format!(
                "capture keep must be \"history\" or \"state\", got {other:?}"
            ))),
        }
    }
}

/// The updates a capture holds, and what it keeps of those already complete.
#[derive(Debug)]
pub struct CaptureState {
    label: String,
    columns: Vec<String>,
    mode: CaptureMode,
    schema: Option<Schema>,
    /// Raw updates at times the frontier has not passed.
    pending: Updates,
    /// `History`: every completed update, consolidated per (record, time).
    history: History,
    /// `State`: the accumulated collection (every time the minimum), sorted by record.
    state: Updates,
    /// Coordinates per time.
    dims: usize,
    /// The least upper bound of every completed update's time.
    completed_upper: Option<Time>,
    sorter: RadixSorter,
}

impl crate::string_gc::MarkStrings for CaptureState {
    /// Pending updates, the history kept and the current state.
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        marks.words(&self.pending.rows);
        self.history.mark_strings(marks);
        marks.words(&self.state.rows);
    }
}

impl CaptureState {
    /// An empty capture of records with the given column names, at times of `time_dims`
    /// coordinates; `label` names it in errors.
    pub fn new(
        label: &str,
        mode: CaptureMode,
        columns: &[String],
        time_dims: usize,
    ) -> CaptureState {
        let width = columns.len();
        let dims = time_dims.clamp(1, MAX_DIMS);
        CaptureState {
            label: label.to_string(),
            columns: columns.to_vec(),
            mode,
            schema: None,
            pending: Updates::new(width),
            history: History::new(width, dims),
            state: Updates::new(width),
            dims,
            completed_upper: None,
            sorter: RadixSorter::new(),
        }
    }

    /// The capture's mode.
    pub fn mode(&self) -> CaptureMode {
        self.mode
    }

    /// The record dtypes, once an update has arrived.
    pub fn schema(&self) -> Option<&Schema> {
        self.schema.as_ref()
    }

    /// The least upper bound of the times of all completed updates (`None` before any).
    pub fn completed_upper(&self) -> Option<Time> {
        self.completed_upper
    }

    /// Updates held because their time is not complete yet.
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Adds raw updates handed out by the engine (their records have dtypes `schema`); when
    /// nothing is pending they become the pending updates without a copy.
    ///
    /// # Errors
    /// [`Error::Type`] if `schema` differs from that of earlier updates; [`Error::Shape`] if
    /// the records have another width.
    pub fn absorb(&mut self, schema: Option<Schema>, updates: Updates) -> Result<()> {
        if updates.is_empty() {
            return Ok(());
        }
        if updates.width != self.pending.width {
            return Err(Error::Shape(format!(
                "records of {} columns reached a capture of {}",
                updates.width, self.pending.width
            ))
            .with_operator(&self.label));
        }
        match (&self.schema, schema) {
            (Some(a), Some(b)) if **a != *b => {
                return Err(Error::Type(format!(
                    "batches with different dtypes reached the capture ({} and {})",
                    names(a),
                    names(&b)
                ))
                .with_operator(&self.label))
            }
            (None, s) => self.schema = s,
            _ => {}
        }
        if self.pending.is_empty() {
            self.pending = updates;
        } else {
            self.pending.extend(&updates);
        }
        Ok(())
    }

    /// Takes the pending updates whose time `frontier` has passed, and returns them
    /// consolidated per `(record, time)` and sorted by `(record words, time)`; keeps them as
    /// the mode says.
    ///
    /// # Errors
    /// [`Error::Overflow`] naming the capture, the record and its time when the diffs of a
    /// `(record, time)` (or, in `State` mode, of a record's accumulated count) sum outside
    /// `i64`. The capture then keeps what it held before the call.
    pub fn complete(&mut self, frontier: &Antichain<Time>) -> Result<Updates> {
        let w = self.pending.width;
        let (done, mut rest) = if self.pending.times.iter().all(|t| !frontier.less_equal(t)) {
            // The common case, everything complete: the pending updates move as they are.
            (
                std::mem::replace(&mut self.pending, Updates::new(w)),
                Updates::new(w),
            )
        } else {
            let mut done = Updates::new(w);
            let mut rest = Updates::new(w);
            for i in 0..self.pending.len() {
                let t = self.pending.times[i];
                let out = if frontier.less_equal(&t) {
                    &mut rest
                } else {
                    &mut done
                };
                out.push(self.pending.row(i), t, self.pending.diffs[i]);
            }
            (done, rest)
        };
        if done.is_empty() {
            self.pending = rest;
            return Ok(done);
        }
        let mut fresh = done;
        // On overflow the batches are left equivalent (see `sort::consolidate`): the
        // completed updates go back to the pending ones, nothing is lost.
        let sorted = self.sorter.consolidate_updates(&mut fresh);
        self.release_sorter();
        if let Err(e) = sorted {
            let err = self.overflow(&fresh, true).unwrap_or(e);
            rest.extend(&fresh);
            self.pending = rest;
            return Err(err);
        }
        match self.mode {
            CaptureMode::History => self.history.append(&fresh),
            CaptureMode::State => {
                let mut state = self.state.clone();
                state.extend(&fresh);
                state.times = crate::updates::TimeColumn::repeat(Time::minimum(), state.len());
                let summed = self.sorter.consolidate_updates(&mut state);
                self.release_sorter();
                if let Err(e) = summed {
                    let err = self.overflow(&state, false).unwrap_or(e);
                    rest.extend(&fresh);
                    self.pending = rest;
                    return Err(err);
                }
                self.state = state;
            }
        }
        let upper = fresh.times.iter().fold(self.completed_upper, |acc, t| {
            Some(acc.map_or(*t, |a| a.join(t)))
        });
        self.completed_upper = upper;
        self.pending = rest;
        Ok(fresh)
    }

    /// Every completed update kept, by column: in `History` mode all of them, consolidated
    /// per `(record, time)`, in the order they completed; in `State` mode the accumulated
    /// collection (times the minimum) sorted by record words.
    pub fn kept(&self) -> Kept<'_> {
        match self.mode {
            CaptureMode::History => self.history.kept(None),
            CaptureMode::State => Kept::from_updates(&self.state, self.dims),
        }
    }

    /// As [`CaptureState::kept`], but in `History` mode sorted by time, then record values
    /// where the record dtypes allow it ([`Kept::sorted`] says whether they are).
    pub fn kept_ordered(&self) -> Kept<'_> {
        match self.mode {
            CaptureMode::History => self.history.kept(self.schema.as_deref().map(|s| &s[..])),
            CaptureMode::State => Kept::from_updates(&self.state, self.dims),
        }
    }

    /// In `History` mode, the history in the order of [`CaptureState::kept_ordered`], to be
    /// read one column at a time; `None` in `State` mode.
    pub fn history_ordered(&self) -> Option<OrderedHistory<'_>> {
        (self.mode == CaptureMode::History)
            .then(|| self.history.ordered(self.schema.as_deref().map(|s| &s[..])))
    }

    /// The accumulated collection at `time` (which the caller has checked is complete): one
    /// update per record with a non-zero count, sorted by record words, times the minimum.
    ///
    /// # Errors
    /// [`Error::Time`] in `State` mode when a completed update's time is not `<= time` (the
    /// history needed to answer is not kept); [`Error::Overflow`] when a record's count
    /// leaves `i64`.
    pub fn at(&mut self, time: &Time) -> Result<Updates> {
        match self.mode {
            CaptureMode::State => {
                if let Some(upper) = self.completed_upper.filter(|u| !u.less_equal(time)) {
                    return Err(Error::Time(format!(
                        "the capture keeps only its current state (keep=\"state\"), which \
                         includes updates at {upper:?}, not before {time:?}; capture with \
                         keep=\"history\" to read earlier times"
                    ))
                    .with_operator(&self.label));
                }
                Ok(self.state.clone())
            }
            CaptureMode::History => {
                let mut acc = self.history.up_to(time);
                let summed = self.sorter.consolidate_updates(&mut acc);
                self.release_sorter();
                if let Err(e) = summed {
                    return Err(self.overflow(&acc, false).unwrap_or(e));
                }
                Ok(acc)
            }
        }
    }

    /// The accumulated collection of everything completed (see [`CaptureState::at`]).
    pub fn state(&mut self) -> Result<Updates> {
        match self.completed_upper {
            Some(upper) => self.at(&upper),
            None => Ok(Updates::new(self.pending.width)),
        }
    }

    /// Frees the sorter's buffers when they hold more than [`SORTER_KEEP_BYTES`]: a capture
    /// consolidates once per poll, so keeping the buffers of its largest batch saves little
    /// and holds as much memory as that batch for the rest of the run.
    fn release_sorter(&mut self) {
        if self.sorter.heap_bytes() > SORTER_KEEP_BYTES {
            self.sorter = RadixSorter::new();
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.pending.heap_bytes()
            + self.history.heap_bytes()
            + self.state.heap_bytes()
            + self.sorter.heap_bytes()
    }

    /// The overflow error for a batch consolidation left with an overflowing run (two
    /// adjacent updates of the same record and time, see [`crate::sort::consolidate_sorted`]).
    fn overflow(&self, upd: &Updates, with_time: bool) -> Option<Error> {
        let w = upd.width;
        let i = (1..upd.len())
            .find(|&i| upd.times[i] == upd.times[i - 1] && upd.row(i) == upd.row(i - 1))?;
        let mut j = i + 1;
        while j < upd.len() && upd.times[j] == upd.times[i] && upd.row(j) == upd.row(i) {
            j += 1;
        }
        let total: i128 = upd.diffs[i - 1..j].iter().map(|&d| d as i128).sum();
        let record = describe_record(
            &self.columns,
            self.schema.as_deref().map(|s| &s[..]),
            &upd.rows[(i - 1) * w..i * w],
        );
        let at = if with_time {
            format!(" at time {:?}", upd.times[i])
        } else {
            String::new()
        };
        Some(
            Error::Overflow(format!(
                "the diffs of record {record}{at} sum to {total}, outside the 64-bit signed \
                 range of a diff"
            ))
            .with_operator(&self.label),
        )
    }
}

fn names(schema: &[DType]) -> String {
    let n: Vec<&str> = schema.iter().map(|d| d.name()).collect();
    format!("({})", n.join(", "))
}

/// A record's words decoded for a message, as Python would print a dict of it:
/// `{'k': 1, 's': 'a', 'x': 2.5}`.
pub fn describe_record(columns: &[String], schema: Option<&[DType]>, words: &[u64]) -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let parts: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(c, &w)| {
            let value = match schema.and_then(|s| s.get(c)) {
                Some(&d) if crate::encoding::is_null_word(d, w) => "None".to_string(),
                Some(&d) if !d.is_physical() => {
                    crate::values::render_logical(d, w).unwrap_or_default()
                }
                Some(DType::Int64) => decode_i64(w).to_string(),
                Some(DType::Float64) => format!("{:?}", decode_f64(w)),
                Some(DType::Bool) => if decode_bool(w) { "True" } else { "False" }.to_string(),
                Some(_) => match Interner::resolve_all(&[w]) {
                    Ok(s) => quote(&s[0]),
                    Err(_) => format!("<string {w}>"),
                },
                None => w.to_string(),
            };
            match columns.get(c) {
                Some(name) => format!("{}: {value}", quote(name)),
                None => value,
            }
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests;
