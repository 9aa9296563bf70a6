//! `map_py`, `flat_map_py` and `filter_py`: a Python function called once per batch with
//! the batch's columns (see "Callbacks into Python" in `PLAN.md`).

use super::records::Failures;
use super::{Operator, Output, RunCtx};
use crate::engine::column::{columns_to_rows, rows_to_columns, Msg, Payload, Reply, Schema};
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// What the Python function computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PyKind {
    /// New columns for every row (`map_py`).
    Map,
    /// Any number of rows per input row (`flat_map_py`).
    FlatMap,
    /// A mask of the rows to keep (`filter_py`).
    Filter,
}

impl PyKind {
    /// The callback kind the dispatcher receives.
    fn name(self) -> &'static str {
        match self {
            PyKind::Map => "map_py",
            PyKind::FlatMap => "flat_map_py",
            PyKind::Filter => "filter_py",
        }
    }
}

/// A node calling Python function `func` on each batch.
pub struct PyStage {
    kind: PyKind,
    func: u64,
}

impl PyStage {
    /// Calls `func` as a `kind` function.
    pub fn new(kind: PyKind, func: u64) -> Self {
        PyStage { kind, func }
    }
}

impl Operator for PyStage {
    /// Keeps no rows.
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let spec = cx.spec();
        let names = cx.input_columns();
        let label = spec.label.as_str();
        let kind = self.kind.name();
        let callbacks = cx.callbacks;
        let mut out = Vec::new();
        let mut failures = Failures::default();
        for m in inputs.iter().flatten() {
            let mut call = |sub: &Msg| -> Result<Msg> {
                let payload = Payload::Columns {
                    names: names.clone(),
                    columns: rows_to_columns(&sub.schema, &sub.upd),
                };
                let reply = callbacks.call(self.func, kind, label, payload)?;
                py_reply(self.kind, label, sub, reply, spec.columns.len())
            };
            failures.isolated(m, &mut call, &mut out)?;
        }
        failures.record(cx, names);
        Ok(Output::pass(out))
    }

    fn calls_python(&self) -> bool {
        true
    }
}

/// Turns a Python callback's reply into an output message.
fn py_reply(kind: PyKind, label: &str, m: &Msg, reply: Reply, ncols: usize) -> Result<Msg> {
    let n = m.upd.len();
    match (kind, reply) {
        (PyKind::Filter, Reply::Mask(mask)) => {
            if mask.len() != n {
                return Err(Error::User(format!(
                    "{label}: filter function returned {} booleans for {n} rows",
                    mask.len()
                )));
            }
            let mut o = Msg::empty(m.schema.clone());
            for (i, keep) in mask.iter().enumerate() {
                if *keep {
                    o.upd.push(m.upd.row(i), m.upd.times[i], m.upd.diffs[i]);
                }
            }
            Ok(o)
        }
        (
            PyKind::Map | PyKind::FlatMap,
            Reply::Columns {
                columns, row_index, ..
            },
        ) => {
            if ncols > 0 && columns.len() != ncols {
                return Err(Error::User(format!(
                    "{label}: function returned {} columns, expected {ncols}",
                    columns.len()
                )));
            }
            let out_n = columns.first().map(|c| c.words.len()).unwrap_or(n);
            let schema: Schema = Arc::new(columns.iter().map(|c| c.dtype).collect());
            let rows =
                columns_to_rows(&columns, out_n, label).map_err(|e| Error::User(e.to_string()))?;
            let (times, diffs) = if kind == PyKind::Map {
                if out_n != n {
                    return Err(Error::User(format!(
                        "{label}: map function returned {out_n} rows for {n} input rows"
                    )));
                }
                (m.upd.times.clone(), m.upd.diffs.clone())
            } else {
                let idx = row_index.ok_or_else(|| {
                    Error::User(format!(
                        "{label}: flat_map reply lacks the source row index"
                    ))
                })?;
                if idx.len() != out_n {
                    return Err(Error::User(format!(
                        "{label}: flat_map row index has {} entries for {out_n} rows",
                        idx.len()
                    )));
                }
                let mut times = crate::updates::TimeColumn::new();
                let mut diffs = Vec::with_capacity(out_n);
                for &i in &idx {
                    if i < 0 || i as usize >= n {
                        return Err(Error::User(format!(
                            "{label}: flat_map row index {i} out of range 0..{n}"
                        )));
                    }
                    times.push(m.upd.times[i as usize]);
                    diffs.push(m.upd.diffs[i as usize]);
                }
                (times, diffs)
            };
            Ok(Msg {
                schema,
                upd: Updates {
                    width: columns.len(),
                    rows,
                    times,
                    diffs,
                },
            })
        }
        (_, other) => Err(Error::User(format!(
            "{label}: unexpected reply {other:?} for {}",
            kind.name()
        ))),
    }
}
