//! `reduce` over an arrangement.
//!
//! For each key with new input updates or with pending times, the operator computes the
//! *interesting times* (joins of a subset of the key's history times with a non-empty subset
//! of its new and pending times, see [`crate::times`]). Times not in the future of the input
//! frontier are complete and processed in lexicographic order (a linear extension of the
//! partial order): the input is accumulated at the time, the aggregate applied, and the
//! difference against the operator's accumulated output at that time emitted. Times still in
//! the future of the frontier are kept as pending (they hold back the output frontier).
//!
//! Python aggregates are evaluated in one callback for all (key, time) groups of an
//! activation: the groups are collected first, the callback runs once, and the differences
//! are formed afterwards.

use super::aggregate;
use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::{Callbacks, Column, Payload, Reply};
use crate::engine::plan::Agg;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, PartialOrder, Time};
use crate::updates::Updates;

/// State of one reduce operator (per worker).
#[derive(Debug)]
pub struct ReduceState {
    /// The operator's output trace (rows: key, output columns).
    pub out: Arrangement,
    /// Pending `(key, time)` pairs, not yet complete.
    pub pending: Vec<(Vec<u64>, Time)>,
    /// Output dtypes once known.
    pub out_dtypes: Option<Vec<DType>>,
}

/// Everything a reduce activation reads.
pub struct ReduceInput<'a> {
    pub agg: &'a Agg,
    pub key_width: usize,
    pub key_dtypes: &'a [DType],
    pub val_dtypes: &'a [DType],
    pub key_names: &'a [String],
    pub val_names: &'a [String],
    pub trace: &'a Arrangement,
    pub batch: &'a Updates,
    pub frontier: &'a Antichain<Time>,
    pub callbacks: &'a dyn Callbacks,
    pub label: &'a str,
}

struct Group {
    key: usize,
    time: Time,
    desired: Vec<(Vec<u64>, i64)>,
}

/// Accumulates `hist` (rows key+val) at `t`: returns `(val rows, counts)` with non-zero counts.
fn accumulate(
    hist: &Updates,
    kw: usize,
    t: &Time,
    vals: &mut Vec<u64>,
    counts: &mut Vec<i64>,
) -> Result<()> {
    let w = hist.width;
    let vw = w - kw;
    let mut idx: Vec<usize> = (0..hist.len())
        .filter(|&i| hist.times[i].less_equal(t))
        .collect();
    idx.sort_by(|&a, &b| {
        hist.rows[a * w + kw..(a + 1) * w].cmp(&hist.rows[b * w + kw..(b + 1) * w])
    });
    vals.clear();
    counts.clear();
    let mut i = 0;
    while i < idx.len() {
        let row = &hist.rows[idx[i] * w + kw..(idx[i] + 1) * w];
        let mut c: i64 = 0;
        let mut j = i;
        while j < idx.len() && &hist.rows[idx[j] * w + kw..(idx[j] + 1) * w] == row {
            c = c
                .checked_add(hist.diffs[idx[j]])
                .ok_or_else(|| Error::Overflow("reduce: count overflow".into()))?;
            j += 1;
        }
        if c != 0 {
            vals.extend_from_slice(row);
            counts.push(c);
        }
        i = j;
        let _ = vw;
    }
    Ok(())
}

impl ReduceState {
    /// A new reduce with an output trace keyed like its input.
    pub fn new(key_width: usize) -> Self {
        ReduceState {
            out: Arrangement::new(key_width, key_width),
            pending: Vec::new(),
            out_dtypes: None,
        }
    }

    /// Whether some pending time is complete with respect to `frontier`.
    pub fn has_complete_pending(&self, frontier: &Antichain<Time>) -> bool {
        self.pending.iter().any(|(_, t)| !frontier.less_equal(t))
    }

    /// Runs one activation; returns the output updates (rows: key, output columns).
    pub fn activate(&mut self, inp: &ReduceInput<'_>) -> Result<Updates> {
        let kw = inp.key_width;
        let bw = inp.batch.width;
        let vw = bw - kw;
        if self.out_dtypes.is_none() {
            self.out_dtypes = aggregate::output_dtypes(inp.agg, inp.val_dtypes, inp.label)?;
            if let Some(d) = &self.out_dtypes {
                self.out = Arrangement::new(kw, kw + d.len());
            }
        }
        // Keys with work: new batch keys, and pending keys (whose times may now be complete).
        let mut work: Vec<(Vec<u64>, Vec<Time>)> = Vec::new();
        for (s, e) in super::join::key_runs(inp.batch, kw) {
            let key = inp.batch.rows[s * bw..s * bw + kw].to_vec();
            let mut ts: Vec<Time> = inp.batch.times[s..e].to_vec();
            ts.sort();
            ts.dedup();
            work.push((key, ts));
        }
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort();
        pending.dedup();
        let mut still_pending = Vec::new();
        {
            // Merge pending keys into `work`, only for keys with a complete pending time.
            let mut extra: Vec<(Vec<u64>, Vec<Time>)> = Vec::new();
            let mut i = 0;
            while i < pending.len() {
                let mut j = i;
                while j < pending.len() && pending[j].0 == pending[i].0 {
                    j += 1;
                }
                let key = &pending[i].0;
                let times: Vec<Time> = pending[i..j].iter().map(|p| p.1).collect();
                match work.binary_search_by(|w| w.0.as_slice().cmp(key)) {
                    Ok(pos) => {
                        work[pos].1.extend(times);
                        work[pos].1.sort();
                        work[pos].1.dedup();
                    }
                    Err(_) => {
                        if times.iter().any(|t| !inp.frontier.less_equal(t)) {
                            extra.push((key.clone(), times));
                        } else {
                            still_pending.extend(times.into_iter().map(|t| (key.clone(), t)));
                        }
                    }
                }
                i = j;
            }
            work.extend(extra);
            work.sort_by(|a, b| a.0.cmp(&b.0));
        }

        // Phase 1: per key, candidate times; complete ones become groups.
        let mut groups: Vec<Group> = Vec::new();
        let mut py_vals: Vec<u64> = Vec::new();
        let mut py_counts: Vec<i64> = Vec::new();
        let mut py_offsets: Vec<i64> = vec![0];
        let mut in_hist = Updates::new(bw);
        let mut out_hist_all: Vec<Updates> = Vec::with_capacity(work.len());
        let mut edits: Vec<Time> = Vec::new();
        let mut cands: Vec<Time> = Vec::new();
        let mut vals = Vec::new();
        let mut counts = Vec::new();
        let mut key_complete_times: Vec<Vec<Time>> = Vec::with_capacity(work.len());
        let mut in_hists: Vec<Updates> = Vec::new();
        for (ki, (key, new_times)) in work.iter().enumerate() {
            in_hist.clear();
            inp.trace.key_history(key, &mut in_hist);
            let mut out_hist = Updates::new(self.out.width);
            self.out.key_history(key, &mut out_hist);
            edits.clear();
            edits.extend_from_slice(&in_hist.times);
            edits.extend_from_slice(&out_hist.times);
            edits.sort();
            edits.dedup();
            cands.clear();
            crate::times::interesting_times(&edits, new_times, &mut cands);
            let mut complete = Vec::new();
            for &t in cands.iter() {
                if inp.frontier.less_equal(&t) {
                    still_pending.push((key.clone(), t));
                } else {
                    complete.push(t);
                }
            }
            complete.sort();
            complete.dedup();
            for &t in &complete {
                accumulate(&in_hist, kw, &t, &mut vals, &mut counts)?;
                let mut desired = Vec::new();
                match inp.agg {
                    Agg::Python { .. } | Agg::ThresholdPy(_) => {
                        py_vals.extend_from_slice(&vals);
                        py_counts.extend_from_slice(&counts);
                        py_offsets.push(py_counts.len() as i64);
                    }
                    _ => aggregate::apply(
                        inp.agg,
                        inp.val_dtypes,
                        vw,
                        &vals,
                        &counts,
                        inp.label,
                        &mut desired,
                    )?,
                }
                groups.push(Group {
                    key: ki,
                    time: t,
                    desired,
                });
            }
            key_complete_times.push(complete);
            out_hist_all.push(out_hist);
            if matches!(inp.agg, Agg::ThresholdPy(_)) {
                in_hists.push(in_hist.clone());
            }
        }
        self.pending = still_pending;

        // Phase 2: Python aggregates, one callback for all groups.
        match inp.agg {
            Agg::Python { func, columns } => self.python_groups(
                inp,
                *func,
                *columns,
                &work,
                &mut groups,
                py_vals,
                py_counts,
                py_offsets,
            )?,
            Agg::ThresholdPy(func) => {
                // Rows are whole records (no val columns): one count per group.
                let group_counts: Vec<i64> = (0..groups.len())
                    .map(|g| {
                        py_counts[py_offsets[g] as usize..py_offsets[g + 1] as usize]
                            .iter()
                            .sum()
                    })
                    .collect();
                let reply = inp.callbacks.call(
                    *func,
                    "threshold_py",
                    inp.label,
                    Payload::Counts(group_counts),
                )?;
                let Reply::Counts(new_counts) = reply else {
                    return Err(Error::User(format!(
                        "{}: threshold function must return int64 counts",
                        inp.label
                    )));
                };
                if new_counts.len() != groups.len() {
                    return Err(Error::User(format!(
                        "{}: threshold function returned {} counts for {} inputs",
                        inp.label,
                        new_counts.len(),
                        groups.len()
                    )));
                }
                for (g, c) in groups.iter_mut().zip(new_counts) {
                    if c != 0 {
                        g.desired.push((Vec::new(), c));
                    }
                }
            }
            _ => {}
        }

        // Phase 3: differences against the accumulated output, per key in time order.
        let out_width = self.out.width;
        let mut output = Updates::new(out_width);
        let mut gi = 0;
        let mut row = Vec::new();
        for (ki, (key, _)) in work.iter().enumerate() {
            let mut hist = std::mem::replace(&mut out_hist_all[ki], Updates::new(out_width));
            while gi < groups.len() && groups[gi].key == ki {
                let g = &groups[gi];
                // acc_out(t)
                let mut acc: Vec<(Vec<u64>, i64)> = Vec::new();
                for i in 0..hist.len() {
                    if hist.times[i].less_equal(&g.time) {
                        acc.push((
                            hist.rows[i * out_width + kw..(i + 1) * out_width].to_vec(),
                            hist.diffs[i],
                        ));
                    }
                }
                for (r, c) in g.desired.iter() {
                    acc.push((r.clone(), -c));
                }
                acc.sort();
                let mut i = 0;
                while i < acc.len() {
                    let mut s: i64 = 0;
                    let mut j = i;
                    while j < acc.len() && acc[j].0 == acc[i].0 {
                        s = s.checked_add(acc[j].1).ok_or_else(|| {
                            Error::Overflow(format!("{}: output count overflow", inp.label))
                        })?;
                        j += 1;
                    }
                    if s != 0 {
                        row.clear();
                        row.extend_from_slice(key);
                        row.extend_from_slice(&acc[i].0);
                        if row.len() != out_width {
                            return Err(Error::User(format!(
                                "{}: reducer produced rows of {} columns, expected {}",
                                inp.label,
                                row.len() - kw,
                                out_width - kw
                            )));
                        }
                        output.push(&row, g.time, -s);
                        hist.push(&row, g.time, -s);
                    }
                    i = j;
                }
                gi += 1;
            }
        }
        let mut sorted = output.clone();
        crate::engine::util::consolidate(&mut sorted)?;
        self.out.insert(sorted);
        Ok(output)
    }

    #[allow(clippy::too_many_arguments)]
    fn python_groups(
        &mut self,
        inp: &ReduceInput<'_>,
        func: u64,
        ncols: usize,
        work: &[(Vec<u64>, Vec<Time>)],
        groups: &mut [Group],
        vals: Vec<u64>,
        counts: Vec<i64>,
        offsets: Vec<i64>,
    ) -> Result<()> {
        if groups.is_empty() {
            return Ok(());
        }
        let kw = inp.key_width;
        let vw = inp.val_dtypes.len();
        let keys: Vec<Column> = (0..kw)
            .map(|c| Column {
                dtype: inp.key_dtypes[c],
                words: groups.iter().map(|g| work[g.key].0[c]).collect(),
            })
            .collect();
        let n = counts.len();
        let values: Vec<Column> = (0..vw)
            .map(|c| Column {
                dtype: inp.val_dtypes[c],
                words: (0..n).map(|r| vals[r * vw + c]).collect(),
            })
            .collect();
        let payload = Payload::Reduce {
            key_names: inp.key_names.to_vec(),
            keys,
            offsets,
            val_names: inp.val_names.to_vec(),
            values,
            counts,
        };
        let reply = inp.callbacks.call(func, "reduce_py", inp.label, payload)?;
        let Reply::Columns {
            columns,
            offsets: Some(out_offsets),
            counts: out_counts,
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
        if out_offsets.len() != groups.len() + 1 {
            return Err(Error::User(format!(
                "{}: reducer returned {} offsets for {} keys (expected keys + 1)",
                inp.label,
                out_offsets.len(),
                groups.len()
            )));
        }
        let rows = columns.first().map(|c| c.words.len()).unwrap_or(0);
        if columns.iter().any(|c| c.words.len() != rows)
            || out_offsets.windows(2).any(|w| w[0] > w[1])
            || out_offsets[0] != 0
            || *out_offsets.last().unwrap_or(&0) as usize != rows
        {
            return Err(Error::User(format!(
                "{}: reducer output columns and offsets do not agree ({rows} rows, offsets ending at {})",
                inp.label,
                out_offsets.last().unwrap_or(&0)
            )));
        }
        let dtypes: Vec<DType> = columns.iter().map(|c| c.dtype).collect();
        match &self.out_dtypes {
            None => {
                self.out_dtypes = Some(dtypes.clone());
                if self.out.is_empty() {
                    self.out = Arrangement::new(kw, kw + ncols);
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
        for (gi, g) in groups.iter_mut().enumerate() {
            for r in out_offsets[gi] as usize..out_offsets[gi + 1] as usize {
                let row: Vec<u64> = columns.iter().map(|c| c.words[r]).collect();
                let c = out_counts.as_ref().map(|c| c[r]).unwrap_or(1);
                if c != 0 {
                    g.desired.push((row, c));
                }
            }
        }
        Ok(())
    }
}
