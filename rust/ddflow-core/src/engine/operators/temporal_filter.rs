//! `temporal_filter`: keeps each record only while `now()` (the logical time) lies in the
//! record's validity interval `[lo, hi)`, as Materialize's `mz_now()` filters do.
//!
//! The plan gives lower bounds (`now >= x`, or `now > x` when `strict`) and upper bounds
//! (`now < x` when `strict`, or `now <= x`), each an expression over the record's columns.
//! A record's `lo` is the greatest of its lower bounds and `hi` the least of its upper bounds
//! (no lower bound: `lo` is the least time; no upper bound: `hi` is unbounded). A null bound
//! value means the record never holds (SQL: a comparison with null is not true).
//!
//! An update `(r, t, d)` becomes `(r, max(t, lo), d)` and, when `hi` is finite,
//! `(r, max(t, hi), -d)`; nothing when `max(t, lo) >= hi`. An insertion at the update's own
//! time passes straight on; every other output update is held, by time, until the input
//! frontier passes its time, then released consolidated. Held times are the operator's
//! pointstamps, so its output frontier never passes the earliest one: downstream
//! arrangements and captures see times complete only once the retractions due at them are
//! out. What is held is the rows whose interval has not closed yet (a sliding window holds
//! the window, and nothing once the frontier has passed every `hi`).
//!
//! Units. `now()` is the logical time, an integer. A bound of an integer dtype compares
//! with it as it is; a timestamp compares as milliseconds since the Unix epoch (the run
//! loop's processing time, and the time a source takes from a timestamp `time_column`),
//! rounded so that the comparison is exact (`now < ts` with `ts` in microseconds holds for
//! `now * 1000 < ts`); a date compares as the milliseconds of its midnight. Other dtypes are
//! refused (every record of the batch becomes an error update naming the bound). Times must
//! be one-coordinate top-level times (checked when the plan is read).

use super::records::{Bound, Failures};
use super::{take_all, Operator, Output, RunCtx};
use crate::dtype::{DType, Family};
use crate::encoding::NULL_I64;
use crate::engine::column::Msg;
use crate::engine::util::consolidate;
use crate::error::{Error, Result};
use crate::expr::{BoundExpr, Expr};
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One side of a comparison with `now()`: `now >= expr` (lower, not strict), `now > expr`
/// (lower, strict), `now < expr` (upper, strict), `now <= expr` (upper, not strict).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TimeBound {
    /// The bound, over the record's columns.
    #[serde(with = "expr_json")]
    pub expr: Expr,
    /// Whether the comparison is strict (`>` / `<`).
    pub strict: bool,
}

/// An expression as its JSON form inside the plan.
mod expr_json {
    use crate::expr::Expr;
    use serde::{de::Error as _, Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::Value;

    pub fn serialize<S: Serializer>(e: &Expr, s: S) -> Result<S::Ok, S::Error> {
        e.to_json().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Expr, D::Error> {
        Expr::from_json(&Value::deserialize(d)?).map_err(D::Error::custom)
    }
}

/// A bound bound to a schema: the expression and how its values become milliseconds.
struct BoundBound {
    expr: BoundExpr,
    strict: bool,
    /// Units per millisecond as a fraction `num / den` of the value: integers 1/1,
    /// timestamps in seconds 1000/1, in microseconds 1/1000, dates 86_400_000/1.
    scale: (i128, i128),
}

/// The state of one `temporal_filter` node on one worker.
pub struct TemporalFilter {
    lower: Vec<TimeBound>,
    upper: Vec<TimeBound>,
    bound: Bound<(Vec<BoundBound>, Vec<BoundBound>)>,
    /// Output updates at future times, by time (the first coordinate: times are 1-D).
    held: BTreeMap<u64, Vec<Msg>>,
    /// Number of held updates.
    len: usize,
}

impl TemporalFilter {
    /// A temporal filter with `lower` and `upper` bounds.
    pub fn new(lower: &[TimeBound], upper: &[TimeBound]) -> Self {
        TemporalFilter {
            lower: lower.to_vec(),
            upper: upper.to_vec(),
            bound: Bound::default(),
            held: BTreeMap::new(),
            len: 0,
        }
    }

    /// Number of held updates.
    pub fn held_len(&self) -> usize {
        self.len
    }

    /// Holds `m`'s updates under their times.
    fn hold(&mut self, m: Msg) {
        let n = m.upd.len();
        self.len += n;
        let mut i = 0;
        while i < n {
            let t = m.upd.times[i].0[0];
            let mut j = i + 1;
            while j < n && m.upd.times[j].0[0] == t {
                j += 1;
            }
            let at = self.held.entry(t).or_default();
            if at.last().is_none_or(|x| x.schema != m.schema) {
                at.push(Msg::empty(m.schema.clone()));
            }
            let last = at.last_mut().expect("a message");
            for k in i..j {
                last.upd.push(m.upd.row(k), m.upd.times[k], m.upd.diffs[k]);
            }
            i = j;
        }
    }

    /// Removes and returns the held updates at times the frontier has passed, consolidated.
    fn release(&mut self, frontier: &Antichain<Time>) -> Result<Vec<Msg>> {
        let mut out = Vec::new();
        while let Some(entry) = self.held.first_entry() {
            if frontier.less_equal(&Time::scalar(*entry.key())) {
                break;
            }
            for mut m in entry.remove() {
                self.len -= m.upd.len();
                consolidate(&mut m.upd)?;
                if !m.upd.is_empty() {
                    out.push(m);
                }
            }
        }
        Ok(out)
    }
}

/// Binds each bound to `schema`, checking its dtype.
fn bind_all(bounds: &[TimeBound], schema: &[(String, DType)]) -> Result<Vec<BoundBound>> {
    bounds
        .iter()
        .map(|b| {
            let expr = b.expr.bind(schema)?;
            let dtype = expr.dtype();
            let scale = match dtype.family() {
                Family::Integer => (1, 1),
                Family::Timestamp => match dtype {
                    DType::Timestamp(unit, _) => {
                        let per_s = i128::from(unit.per_second());
                        if per_s >= 1000 {
                            (1, per_s / 1000)
                        } else {
                            (1000 / per_s, 1)
                        }
                    }
                    _ => unreachable!("a timestamp family dtype"),
                },
                Family::Date => (86_400_000, 1),
                _ => {
                    return Err(Error::Type(format!(
                        "now() compared with {} of dtype {}: now() is the logical time, which \
                         compares with integers (as they are), timestamps (milliseconds since \
                         the epoch) and dates (the milliseconds of their midnight)",
                        b.expr,
                        dtype.name()
                    )))
                }
            };
            Ok(BoundBound {
                expr,
                strict: b.strict,
                scale,
            })
        })
        .collect()
}

/// `ceil(v * num / den)` (or the floor), exactly.
fn scaled(v: i64, (num, den): (i128, i128), ceil: bool) -> i128 {
    let x = i128::from(v) * num;
    let q = x.div_euclid(den);
    if ceil && x.rem_euclid(den) != 0 {
        q + 1
    } else {
        q
    }
}

/// A row's validity interval `[lo, hi)` in logical time; `hi = None` is unbounded.
type Span = (i128, Option<i128>);

/// Per row, the validity interval (`None` for a row that never holds: a null bound).
fn intervals(
    lower: &[BoundBound],
    upper: &[BoundBound],
    upd: &Updates,
) -> Result<Vec<Option<Span>>> {
    let mut out: Vec<Option<Span>> = vec![Some((0, None)); upd.len()];
    for b in lower {
        let words = b.expr.eval(upd)?;
        for (slot, w) in out.iter_mut().zip(words) {
            let Some((lo, _)) = slot else { continue };
            if w == NULL_I64 {
                *slot = None;
                continue;
            }
            // now >= x: now >= ceil(x); now > x: now >= floor(x) + 1.
            let v = if b.strict {
                scaled(w as i64, b.scale, false) + 1
            } else {
                scaled(w as i64, b.scale, true)
            };
            *lo = (*lo).max(v);
        }
    }
    for b in upper {
        let words = b.expr.eval(upd)?;
        for (slot, w) in out.iter_mut().zip(words) {
            let Some((_, hi)) = slot else { continue };
            if w == NULL_I64 {
                *slot = None;
                continue;
            }
            // now < x: now < ceil(x); now <= x: now < floor(x) + 1.
            let v = if b.strict {
                scaled(w as i64, b.scale, true)
            } else {
                scaled(w as i64, b.scale, false) + 1
            };
            *hi = Some(hi.map_or(v, |h| h.min(v)));
        }
    }
    Ok(out)
}

/// The updates `m` becomes: `(now, later)`, those at their own time and those after it.
fn shift(lower: &[BoundBound], upper: &[BoundBound], m: &Msg) -> Result<(Msg, Msg)> {
    let spans = intervals(lower, upper, &m.upd)?;
    let mut now = Msg::empty(m.schema.clone());
    let mut later = Msg::empty(m.schema.clone());
    for (i, span) in spans.into_iter().enumerate() {
        let Some((lo, hi)) = span else { continue };
        let t = m.upd.times[i];
        let d = m.upd.diffs[i];
        let t0 = i128::from(t.0[0]);
        let start = t0.max(lo);
        if hi.is_some_and(|h| start >= h) {
            continue;
        }
        let row = m.upd.row(i);
        if start == t0 {
            now.upd.push(row, t, d);
        } else {
            later.upd.push(row, t.with_coord(0, clamp(start)), d);
        }
        if let Some(h) = hi {
            later.upd.push(row, t.with_coord(0, clamp(h)), -d);
        }
    }
    Ok((now, later))
}

/// A logical time from an i128 above the update's own time (at most `u64::MAX`).
fn clamp(t: i128) -> u64 {
    u64::try_from(t).unwrap_or(u64::MAX)
}

impl Operator for TemporalFilter {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.held
            .values()
            .flatten()
            .for_each(|m| marks.words(&m.upd.rows));
    }

    fn run(
        &mut self,
        cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let spec = cx.spec();
        let names = cx.input_columns();
        let msgs = take_all(inputs);
        let mut shifted: Vec<(Msg, Msg)> = Vec::new();
        let mut failures = Failures::default();
        let (lower, upper) = (&self.lower, &self.upper);
        for m in &msgs {
            let bound = self.bound.get(m, names, &spec.label, |schema| {
                Ok((bind_all(lower, schema)?, bind_all(upper, schema)?))
            })?;
            match bound {
                Ok((lo, hi)) => {
                    failures.isolated(m, &mut |sub| shift(lo, hi, sub), &mut shifted)?
                }
                Err(e) => failures.fail_all(m, &e),
            }
        }
        failures.record(cx, names);
        let mut out = Vec::new();
        for (now, later) in shifted {
            if !now.upd.is_empty() {
                out.push(now);
            }
            if !later.upd.is_empty() {
                self.hold(later);
            }
        }
        let released = self.release(frontier)?;
        let did = !released.is_empty();
        out.extend(released);
        Ok(Output { msgs: out, did })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        if let Some(&t) = self.held.keys().next() {
            held.insert(Time::scalar(t));
        }
    }

    fn sizes(&self) -> (usize, usize) {
        (0, self.len)
    }

    fn heap_bytes(&self) -> usize {
        self.held
            .values()
            .flatten()
            .map(|m| m.upd.heap_bytes())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    //! The operator's intervals and shifted updates against a naive reference: for each
    //! logical time `now`, the input accumulated at `now` filtered by `lo <= now < hi`, and
    //! the output accumulated at `now`, must be equal.
    use super::*;
    use std::sync::Arc;

    fn col(name: &str) -> Expr {
        Expr::from_json_str(&format!(r#"{{"op":"col","name":"{name}"}}"#)).expect("expr")
    }

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn accumulations_match_a_recompute_at_every_time() {
        let schema = Arc::new(vec![DType::Int64, DType::Int64]);
        let named = vec![
            ("lo".to_string(), DType::Int64),
            ("hi".to_string(), DType::Int64),
        ];
        for case in 0..300u64 {
            let mut seed = case + 7;
            let lower = [TimeBound {
                expr: col("lo"),
                strict: case % 2 == 0,
            }];
            let upper = [TimeBound {
                expr: col("hi"),
                strict: case % 3 != 0,
            }];
            let lo_b = bind_all(&lower, &named).expect("bind");
            let hi_b = bind_all(&upper, &named).expect("bind");
            let mut m = Msg::empty(schema.clone());
            let mut input = Vec::new();
            for _ in 0..(lcg(&mut seed) % 12) {
                let lo = (lcg(&mut seed) % 14) as i64 - 2;
                let hi = (lcg(&mut seed) % 14) as i64 - 2;
                let t = lcg(&mut seed) % 10;
                let d = if lcg(&mut seed).is_multiple_of(4) {
                    -1
                } else {
                    1
                };
                m.upd.push(&[lo as u64, hi as u64], Time::scalar(t), d);
                input.push((lo, hi, t, d));
            }
            let mut op = TemporalFilter::new(&lower, &upper);
            let (now, later) = shift(&lo_b, &hi_b, &m).expect("shift");
            let mut out: Vec<Msg> = vec![now];
            op.hold(later);
            for f in 0..30 {
                out.extend(op.release(&Antichain::from_elem(Time::scalar(f))).unwrap());
            }
            assert_eq!(op.held_len(), 0);
            for at in 0..30u64 {
                let mut want: BTreeMap<(i64, i64), i64> = BTreeMap::new();
                for &(lo, hi, t, d) in &input {
                    let n = at as i64;
                    let ok_lo = if case % 2 == 0 { n > lo } else { n >= lo };
                    let ok_hi = if case % 3 != 0 { n < hi } else { n <= hi };
                    if t <= at && ok_lo && ok_hi {
                        *want.entry((lo, hi)).or_default() += d;
                    }
                }
                want.retain(|_, d| *d != 0);
                let mut got: BTreeMap<(i64, i64), i64> = BTreeMap::new();
                for o in &out {
                    for i in 0..o.upd.len() {
                        if o.upd.times[i].0[0] <= at {
                            let r = o.upd.row(i);
                            *got.entry((r[0] as i64, r[1] as i64)).or_default() += o.upd.diffs[i];
                        }
                    }
                }
                got.retain(|_, d| *d != 0);
                assert_eq!(got, want, "case {case} at {at}");
            }
        }
    }

    #[test]
    fn timestamps_compare_as_exact_milliseconds() {
        // 1500 us: now < 1500us holds for now <= 1 ms; now <= 1500 us too; now > 1500 us
        // from 2 ms; now >= 1500 us from 2 ms.
        let us = (1, 1000);
        assert_eq!(scaled(1500, us, true), 2);
        assert_eq!(scaled(1500, us, false), 1);
        assert_eq!(scaled(-1500, us, false), -2);
        assert_eq!(scaled(-1500, us, true), -1);
        assert_eq!(scaled(3, (1000, 1), true), 3000);
    }
}
