//! What the record-at-a-time stages (`select`, `filter`, `advance_iteration`, the Python
//! callbacks) share: expressions bound once per input schema, and errors as data.
//!
//! A stage runs on a whole message. If that fails because of the data, the failing records
//! are found by bisection (halves that succeed keep their output) and each becomes an
//! [`ErrorUpdate`] with the error it causes alone, so the rest of the batch goes on. Errors
//! that are not about the data (plan errors, bugs) stop the run instead.

use super::RunCtx;
use crate::encoding::DType;
use crate::engine::column::{Msg, Schema};
use crate::engine::errors::{record_message, render_row, ErrorUpdate};
use crate::error::{Error, Result};
use crate::updates::Updates;

/// A value (bound expressions) derived from an input schema, kept until the schema changes.
pub struct Bound<B>(Option<(Schema, B)>);

impl<B> Default for Bound<B> {
    fn default() -> Self {
        Bound(None)
    }
}

impl<B> Bound<B> {
    /// The value for `m`'s schema, from `bind` on the named input columns when the schema
    /// changed. `Ok(Err(e))`: the batch's dtypes do not fit (every record is an error);
    /// `Err`: the plan and the batch disagree on the number of columns.
    pub fn get(
        &mut self,
        m: &Msg,
        names: &[String],
        label: &str,
        bind: impl FnOnce(&[(String, DType)]) -> Result<B>,
    ) -> Result<std::result::Result<&B, Error>> {
        if self.0.as_ref().is_none_or(|(s, _)| s != &m.schema) {
            let schema = named(names, &m.schema, label)?;
            match bind(&schema) {
                Ok(b) => self.0 = Some((m.schema.clone(), b)),
                Err(e) => return Ok(Err(e)),
            }
        }
        Ok(Ok(&self.0.as_ref().expect("bound").1))
    }
}

/// Pairs column names with a batch's dtypes.
fn named(names: &[String], schema: &Schema, label: &str) -> Result<Vec<(String, DType)>> {
    if names.len() != schema.len() {
        return Err(Error::Plan(format!(
            "{label}: input has {} columns {:?} in the plan but batches of {} columns",
            names.len(),
            names,
            schema.len()
        )));
    }
    Ok(names.iter().cloned().zip(schema.iter().copied()).collect())
}

/// Records that failed because of their data, per message, until the activation records
/// them as error updates ([`Failures::record`], after every message ran: an activation that
/// stops with an error records none, and its retry records them once).
#[derive(Default)]
pub struct Failures<'m>(Vec<(&'m Msg, Vec<(usize, Error)>)>);

impl<'m> Failures<'m> {
    /// Runs `f` on message `m`; outputs of the parts that succeed go to `out`, records that
    /// fail alone are kept (see the module docs).
    pub fn isolated<T>(
        &mut self,
        m: &'m Msg,
        f: &mut dyn FnMut(&Msg) -> Result<T>,
        out: &mut Vec<T>,
    ) -> Result<()> {
        let mut failed = Vec::new();
        match f(m) {
            Ok(t) => out.push(t),
            Err(e) if !is_data_error(&e) => return Err(e),
            Err(e) => bisect(m, 0, m.upd.len(), e, f, &mut failed, out)?,
        }
        if !failed.is_empty() {
            self.0.push((m, failed));
        }
        Ok(())
    }

    /// Every record of `m` fails with `e`.
    pub fn fail_all(&mut self, m: &'m Msg, e: &Error) {
        self.0
            .push((m, (0..m.upd.len()).map(|i| (i, e.clone())).collect()));
    }

    /// Appends an error update for each failing record, its values named by `names`.
    pub fn record(self, cx: &mut RunCtx<'_>, names: &[String]) {
        let label = &cx.plan.nodes[cx.node].label;
        for (m, failed) in self.0 {
            for (i, e) in failed {
                cx.errors.push(ErrorUpdate {
                    node: cx.node,
                    message: record_message(&e, label),
                    values: render_row(names, &m.schema, m.upd.row(i)),
                    time: m.upd.times[i],
                    diff: m.upd.diffs[i],
                });
            }
        }
    }
}

/// Whether an error is caused by the data (and so becomes an error update) rather than by
/// the plan or a bug (and so stops the run).
pub(super) fn is_data_error(e: &Error) -> bool {
    !matches!(
        e,
        Error::Internal(_) | Error::Plan(_) | Error::MemoryLimit(_)
    )
}

/// The rows `lo..hi` of a message, copied.
fn slice(m: &Msg, lo: usize, hi: usize) -> Msg {
    let w = m.upd.width;
    Msg {
        schema: m.schema.clone(),
        upd: Updates {
            width: w,
            rows: m.upd.rows[lo * w..hi * w].to_vec(),
            times: m.upd.times.iter().skip(lo).take(hi - lo).copied().collect(),
            diffs: m.upd.diffs[lo..hi].to_vec(),
        },
    }
}

fn bisect<T>(
    m: &Msg,
    lo: usize,
    hi: usize,
    err: Error,
    f: &mut dyn FnMut(&Msg) -> Result<T>,
    failed: &mut Vec<(usize, Error)>,
    out: &mut Vec<T>,
) -> Result<()> {
    if hi - lo <= 1 {
        if hi > lo {
            failed.push((lo, err));
        }
        return Ok(());
    }
    let mid = lo + (hi - lo) / 2;
    for (a, b) in [(lo, mid), (mid, hi)] {
        match f(&slice(m, a, b)) {
            Ok(t) => out.push(t),
            Err(e) if !is_data_error(&e) => return Err(e),
            Err(e) => bisect(m, a, b, e, f, failed, out)?,
        }
    }
    Ok(())
}
