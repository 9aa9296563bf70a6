//! Phase 2 of a `reduce` activation, for Python aggregates (`reduce.rs` runs phases 1 and
//! 3): the accumulated values of every complete (key, time) group of the activation go to
//! the Python function in one callback, and its reply becomes the groups' desired output.
//! Groups that make the function fail are isolated by bisection and become errors
//! (`reduce_errors.rs`).

use super::reduce::{Desired, Group, ReduceInput, ReduceState};
use super::reduce_errors::bisect_groups;
use super::reduce_work::Work;
use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::{Column, Payload, Reply};
use crate::engine::plan::Agg;
use crate::error::{Error, Result};
use std::ops::Range;

/// The accumulated values of the groups of a Python aggregate, gathered in phase 1 for one
/// callback in phase 2: entry `j` is group `groups[j]` of the activation, its value rows
/// `offsets[j]..offsets[j + 1]`. Groups whose accumulation failed have no entry (they are
/// errors already; the function never sees them).
pub(super) struct PyGroups {
    groups: Vec<usize>,
    vals: Vec<u64>,
    counts: Vec<i64>,
    offsets: Vec<i64>,
}

impl Default for PyGroups {
    fn default() -> Self {
        PyGroups {
            groups: Vec::new(),
            vals: Vec::new(),
            counts: Vec::new(),
            offsets: vec![0],
        }
    }
}

impl PyGroups {
    /// Adds group `group`'s values (rows of `vals`) with their counts.
    pub(super) fn push(&mut self, group: usize, vals: &[u64], counts: &[i64]) {
        self.groups.push(group);
        self.vals.extend_from_slice(vals);
        self.counts.extend_from_slice(counts);
        self.offsets.push(self.counts.len() as i64);
    }

    /// The gathered value rows of entries `j`.
    fn rows(&self, j: Range<usize>) -> Range<usize> {
        self.offsets[j.start] as usize..self.offsets[j.end] as usize
    }
}

/// The columns, offsets and counts of a Python reducer's reply.
struct ReducerReply {
    columns: Vec<Column>,
    offsets: Vec<i64>,
    counts: Option<Vec<i64>>,
}

impl ReduceState {
    /// Phase 2: Python aggregates, one callback for all groups (a Python reducer writes the
    /// groups' desired rows, a threshold function their counts).
    pub(super) fn python_aggregates(
        &mut self,
        inp: &ReduceInput<'_>,
        work: &Work,
        desired: &mut Desired,
        py: &PyGroups,
    ) -> Result<()> {
        match inp.agg {
            Agg::Python { func, columns } => {
                self.python_reducer(inp, (*func, *columns), work, desired, py)
            }
            Agg::ThresholdPy { func } => threshold(inp, *func, desired, py),
            _ => Ok(()),
        }
    }

    /// A Python reducer `func` writing `ncols` columns, called on the gathered groups
    /// (bisected where it fails).
    fn python_reducer(
        &mut self,
        inp: &ReduceInput<'_>,
        (func, ncols): (u64, usize),
        work: &Work,
        desired: &mut Desired,
        py: &PyGroups,
    ) -> Result<()> {
        let failed = bisect_groups(py.groups.len(), &mut |lo, hi| {
            let payload = reducer_payload(inp, work, &desired.groups, py, lo..hi);
            let reply = inp.callbacks.call(func, "reduce_py", inp.label, payload)?;
            let reply = reducer_reply(inp, reply, ncols, hi - lo)?;
            self.reducer_dtypes(inp, &reply.columns, ncols)?;
            reducer_rows(desired, &py.groups[lo..hi], &reply);
            Ok(())
        })?;
        for (j, message) in failed {
            desired.groups[py.groups[j]].err = Some(message);
        }
        Ok(())
    }

    /// Fixes the output dtypes from a reducer's first non-empty reply, or checks a later
    /// reply against them.
    fn reducer_dtypes(
        &mut self,
        inp: &ReduceInput<'_>,
        columns: &[Column],
        ncols: usize,
    ) -> Result<()> {
        let rows = columns.first().map(|c| c.words.len()).unwrap_or(0);
        let dtypes: Vec<DType> = columns.iter().map(|c| c.dtype).collect();
        match &self.out_dtypes {
            _ if rows == 0 => {}
            None => {
                self.out_dtypes = Some(dtypes);
                if self.out.is_empty() {
                    self.out = Arrangement::new(inp.key_width, inp.key_width + ncols);
                }
            }
            Some(d) if *d != dtypes => {
                return Err(Error::Type(format!(
                    "{}: reducer returned dtypes {:?}, earlier batches had {:?}",
                    inp.label,
                    dtypes.iter().map(|d| d.name()).collect::<Vec<_>>(),
                    d.iter().map(|d| d.name()).collect::<Vec<_>>()
                )))
            }
            _ => {}
        }
        Ok(())
    }
}

/// The payload of a reducer call on entries `range` of `py`: per group its key, and its
/// values with their counts.
fn reducer_payload(
    inp: &ReduceInput<'_>,
    work: &Work,
    groups: &[Group],
    py: &PyGroups,
    range: Range<usize>,
) -> Payload {
    let vw = inp.val_dtypes.len();
    let rows = py.rows(range.clone());
    let vals = &py.vals[rows.start * vw..rows.end * vw];
    let keys: Vec<Column> = (0..inp.key_width)
        .map(|c| Column {
            dtype: inp.key_dtypes[c],
            words: py.groups[range.clone()]
                .iter()
                .map(|&g| work.key(groups[g].key)[c])
                .collect(),
        })
        .collect();
    let values: Vec<Column> = (0..vw)
        .map(|c| Column {
            dtype: inp.val_dtypes[c],
            words: (0..rows.len()).map(|r| vals[r * vw + c]).collect(),
        })
        .collect();
    let first = py.offsets[range.start];
    Payload::Reduce {
        key_names: inp.key_names.to_vec(),
        keys,
        offsets: py.offsets[range.start..=range.end]
            .iter()
            .map(|o| o - first)
            .collect(),
        val_names: inp.val_names.to_vec(),
        values,
        counts: py.counts[rows].to_vec(),
    }
}

/// A reducer's reply for `n_groups` groups, checked: `ncols` columns of equal length and
/// offsets from 0 to that length, one per group and one more.
fn reducer_reply(
    inp: &ReduceInput<'_>,
    reply: Reply,
    ncols: usize,
    n_groups: usize,
) -> Result<ReducerReply> {
    let Reply::Columns {
        columns,
        offsets: Some(offsets),
        counts,
        ..
    } = reply
    else {
        return Err(Error::User(format!(
            "{}: reducer must return output columns and offsets",
            inp.label
        )));
    };
    if columns.len() != ncols {
        return Err(Error::User(format!(
            "{}: reducer returned {} columns, expected {ncols}",
            inp.label,
            columns.len()
        )));
    }
    if offsets.len() != n_groups + 1 {
        return Err(Error::User(format!(
            "{}: reducer returned {} offsets for {} keys (expected keys + 1)",
            inp.label,
            offsets.len(),
            n_groups
        )));
    }
    let rows = columns.first().map(|c| c.words.len()).unwrap_or(0);
    if columns.iter().any(|c| c.words.len() != rows)
        || offsets.windows(2).any(|w| w[0] > w[1])
        || offsets[0] != 0
        || *offsets.last().unwrap_or(&0) as usize != rows
    {
        return Err(Error::User(format!(
            "{}: reducer output columns and offsets do not agree ({rows} rows, offsets ending at {})",
            inp.label,
            offsets.last().unwrap_or(&0)
        )));
    }
    Ok(ReducerReply {
        columns,
        offsets,
        counts,
    })
}

/// Writes a reducer's reply as the desired rows of `groups` (in order; rows with count 0 are
/// dropped; a reply without counts means 1 each).
fn reducer_rows(desired: &mut Desired, groups: &[usize], reply: &ReducerReply) {
    let Desired {
        groups: all,
        rows,
        counts,
    } = desired;
    for (gi, &g) in groups.iter().enumerate() {
        let g = &mut all[g];
        g.start = counts.len();
        for r in reply.offsets[gi] as usize..reply.offsets[gi + 1] as usize {
            let c = reply.counts.as_ref().map(|c| c[r]).unwrap_or(1);
            if c != 0 {
                rows.extend(reply.columns.iter().map(|c| c.words[r]));
                counts.push(c);
            }
        }
        g.end = counts.len();
    }
}

/// A threshold function `func`: each group (a whole record, no value columns) gets output
/// count `func(count)`, computed for all groups in one vectorised call (bisected where it
/// fails).
fn threshold(inp: &ReduceInput<'_>, func: u64, desired: &mut Desired, py: &PyGroups) -> Result<()> {
    let Desired { groups, counts, .. } = desired;
    let group_counts: Vec<i64> = (0..py.groups.len())
        .map(|j| py.counts[py.rows(j..j + 1)].iter().sum())
        .collect();
    let mut results: Vec<Option<i64>> = vec![None; py.groups.len()];
    let failed = bisect_groups(py.groups.len(), &mut |lo, hi| {
        let new_counts = threshold_call(inp, func, &group_counts[lo..hi])?;
        for (r, c) in results[lo..hi].iter_mut().zip(new_counts) {
            *r = Some(c);
        }
        Ok(())
    })?;
    for (&g, c) in py.groups.iter().zip(results) {
        let g = &mut groups[g];
        g.start = counts.len();
        if let Some(c) = c.filter(|&c| c != 0) {
            counts.push(c);
        }
        g.end = counts.len();
    }
    for (j, message) in failed {
        groups[py.groups[j]].err = Some(message);
    }
    Ok(())
}

/// One call of a threshold function on `inputs`; its reply checked to be one count each.
fn threshold_call(inp: &ReduceInput<'_>, func: u64, inputs: &[i64]) -> Result<Vec<i64>> {
    let reply = inp.callbacks.call(
        func,
        "threshold_py",
        inp.label,
        Payload::Counts(inputs.to_vec()),
    )?;
    let Reply::Counts(new_counts) = reply else {
        return Err(Error::User(format!(
            "{}: threshold function must return int64 counts",
            inp.label
        )));
    };
    if new_counts.len() != inputs.len() {
        return Err(Error::User(format!(
            "{}: threshold function returned {} counts for {} inputs",
            inp.label,
            new_counts.len(),
            inputs.len()
        )));
    }
    Ok(new_counts)
}
