//! `join`, `semijoin` and `antijoin` of two arrangements.
//!
//! Both inputs are arrangements whose traces already contain this activation's new batches
//! `dA` and `dB`. By bilinearity the output change is `dA x B + A x dB - dA x dB` (with `A`,
//! `B` the traces after insertion), each product pairing updates of equal key with time
//! `ta v tb` and diff `da * db` (exact: a product outside `i64` becomes several updates).
//! Output rows are `key, left vals, right vals` (`join`) or `key, left vals` (`semijoin`);
//! `antijoin` emits `dA` minus the semijoin output.

use super::{Operator, Output, RunCtx};
use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::Msg;
use crate::engine::errors::{render_row, ErrorUpdate};
use crate::engine::plan::JoinKind;
use crate::error::{Error, Result};
use crate::lattice::{Antichain, Lattice, Time};
use crate::updates::Updates;
use std::sync::Arc;

/// A join node: its flavour. It reads the traces and fresh batches of its two input
/// arrangements.
pub struct Join {
    kind: JoinKind,
}

impl Join {
    /// A join of flavour `kind`.
    pub fn new(kind: JoinKind) -> Self {
        Join { kind }
    }
}

impl Operator for Join {
    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        _inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let plan = cx.plan;
        let spec = &plan.nodes[cx.node];
        let kind = self.kind;
        let (a, b) = (spec.inputs[0], spec.inputs[1]);
        let da = cx.fresh_for(a);
        let db = cx.fresh_for(b);
        if da.is_none() && db.is_none() {
            return Ok(Output::none());
        }
        let (sa, sb) = match (&da, &db) {
            (Some(x), Some(y)) => (x.schema.clone(), y.schema.clone()),
            _ => (
                cx.schema_of(a).unwrap_or_else(|| Arc::new(Vec::new())),
                cx.schema_of(b).unwrap_or_else(|| Arc::new(Vec::new())),
            ),
        };
        let (ta, tb) = (cx.trace(a), cx.trace(b));
        let kw = ta.key_width;
        if let (Some(ka), Some(kb)) = (sa.get(..kw), sb.get(..kw)) {
            if ka != kb {
                let names = &plan.nodes[cx.trace_of[a].expect("trace")].columns;
                let i = (0..kw).find(|&i| ka[i] != kb[i]).unwrap_or(0);
                return Err(Error::Type(format!(
                    "join key column {:?} is {} on the left but {} on the right; keys of \
                     different dtypes never match",
                    names.get(i).cloned().unwrap_or_default(),
                    ka[i].name(),
                    kb[i].name()
                )));
            }
        }
        if sa.is_empty() || (sb.is_empty() && kind == JoinKind::Join) {
            // One side has never seen data: its schema is unknown, and it is empty.
            return Ok(Output::none());
        }
        let mut out_schema: Vec<DType> = sa.to_vec();
        if kind == JoinKind::Join {
            out_schema.extend_from_slice(sb.get(kw..).unwrap_or(&[]));
        }
        let empty_a = Updates::new(ta.width);
        let empty_b = Updates::new(tb.width);
        let mut overflow = Vec::new();
        let upd = join_delta(
            kind,
            kw,
            da.as_ref().map(|m| &m.upd).unwrap_or(&empty_a),
            db.as_ref().map(|m| &m.upd).unwrap_or(&empty_b),
            ta,
            tb,
            out_schema.len(),
            &mut overflow,
        )?;
        for (row, time, d) in overflow {
            // A diff product outside int64: an error update with the product's sign.
            cx.errors.push(ErrorUpdate {
                node: cx.node,
                message: "overflow: the product of the joined diffs is outside the 64-bit \
                          signed range"
                    .to_string(),
                values: render_row(&spec.columns, &out_schema, &row),
                time,
                diff: d.signum() as i64,
            });
        }
        Ok(Output {
            msgs: vec![Msg {
                schema: Arc::new(out_schema),
                upd,
            }],
            did: true,
        })
    }

    fn reads_arrangements(&self) -> bool {
        true
    }
}

/// The `[start, end)` index ranges of equal keys in a batch sorted by row.
pub fn key_runs(b: &Updates, kw: usize) -> Vec<(usize, usize)> {
    let w = b.width;
    let n = b.len();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n && b.rows[j * w..j * w + kw] == b.rows[i * w..i * w + kw] {
            j += 1;
        }
        runs.push((i, j));
        i = j;
    }
    runs
}

/// Appends to `out` the product of left rows `l[li]` and right rows `r[ri]` (same key).
#[allow(clippy::too_many_arguments)]
fn product(
    l: &Updates,
    lrange: (usize, usize),
    r: &Updates,
    rrange: (usize, usize),
    kw: usize,
    kind: JoinKind,
    sign: i64,
    out: &mut Updates,
    scratch: &mut Vec<u64>,
    overflow: &mut Vec<(Vec<u64>, Time, i128)>,
) -> Result<()> {
    let (lw, rw) = (l.width, r.width);
    for i in lrange.0..lrange.1 {
        let lrow = &l.rows[i * lw..(i + 1) * lw];
        for j in rrange.0..rrange.1 {
            let rrow = &r.rows[j * rw..(j + 1) * rw];
            // Exact: a product outside i64 is emitted as several updates summing to it.
            let d = l.diffs[i] as i128 * r.diffs[j] as i128 * sign as i128;
            scratch.clear();
            scratch.extend_from_slice(lrow);
            if kind == JoinKind::Join {
                scratch.extend_from_slice(&rrow[kw..]);
            }
            let t = l.times[i].join(&r.times[j]);
            if i64::try_from(d).is_ok() {
                out.push(scratch, t, d as i64);
            } else {
                // Not representable: the engine makes it an error update (errors as data).
                overflow.push((scratch.clone(), t, d));
            }
        }
    }
    Ok(())
}

/// Computes the join output for new batches `da` (left) and `db` (right), given the traces.
/// Diff products outside `i64` go to `overflow` (the engine makes them error updates).
#[allow(clippy::too_many_arguments)]
pub fn join_delta(
    kind: JoinKind,
    kw: usize,
    da: &Updates,
    db: &Updates,
    ta: &Arrangement,
    tb: &Arrangement,
    out_width: usize,
    overflow: &mut Vec<(Vec<u64>, Time, i128)>,
) -> Result<Updates> {
    let pkind = if kind == JoinKind::Antijoin {
        JoinKind::Semijoin
    } else {
        kind
    };
    let sign = if kind == JoinKind::Antijoin { -1 } else { 1 };
    let mut out = Updates::new(out_width);
    let mut scratch = Vec::new();
    let runs_a = key_runs(da, kw);
    let runs_b = key_runs(db, kw);
    let (aw, bw) = (da.width, db.width);
    // dA x B
    let mut hist = Updates::new(tb.width);
    let mut reader_b = tb.reader();
    for &(s, e) in &runs_a {
        hist.clear();
        reader_b.key_history(&da.rows[s * aw..s * aw + kw], &mut hist);
        let n = hist.len();
        product(
            da,
            (s, e),
            &hist,
            (0, n),
            kw,
            pkind,
            sign,
            &mut out,
            &mut scratch,
            overflow,
        )?;
    }
    // A x dB
    let mut lhist = Updates::new(ta.width);
    let mut reader_a = ta.reader();
    for &(s, e) in &runs_b {
        lhist.clear();
        reader_a.key_history(&db.rows[s * bw..s * bw + kw], &mut lhist);
        let n = lhist.len();
        product(
            &lhist,
            (0, n),
            db,
            (s, e),
            kw,
            pkind,
            sign,
            &mut out,
            &mut scratch,
            overflow,
        )?;
    }
    // - dA x dB: a merge join of the two sorted batches.
    let (mut i, mut j) = (0, 0);
    while i < runs_a.len() && j < runs_b.len() {
        let ka = &da.rows[runs_a[i].0 * aw..runs_a[i].0 * aw + kw];
        let kb = &db.rows[runs_b[j].0 * bw..runs_b[j].0 * bw + kw];
        match ka.cmp(kb) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                product(
                    da,
                    runs_a[i],
                    db,
                    runs_b[j],
                    kw,
                    pkind,
                    -sign,
                    &mut out,
                    &mut scratch,
                    overflow,
                )?;
                i += 1;
                j += 1;
            }
        }
    }
    if kind == JoinKind::Antijoin {
        out.extend(da);
    }
    Ok(out)
}
