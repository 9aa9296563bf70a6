//! The engine's operators on whole batches of updates, outside any dataflow.
//!
//! A backend that moves batches itself (the Spark executors) calls these on the complete
//! updates of a partition: every time is treated as complete, and the result is what the
//! engine's operator emits for that input when it arrives as one batch. They run the same
//! code as the engine (`engine/operators/`): [`select`] and [`filter`] the expression
//! stages, [`consolidate`] and [`arrange`] the sorting and consolidation of `consolidate` /
//! `arrange`, [`join`] the delta-rule join on traces built from the two sides, [`reduce`]
//! the reduce operator with all times complete.
//!
//! Errors are returned for the whole batch: where the engine isolates the failing records
//! of `select` / `filter` as error updates, these fail the call.
//!
//! Rows are `u64` words (see [`crate::encoding`]); an *arranged* batch has its key columns
//! first and is sorted by (row, time) and consolidated, as [`arrange`] returns it.

use crate::encoding::DType;
use crate::engine::arrangement::Arrangement;
use crate::engine::column::Callbacks;
use crate::engine::operators::arrange::key_first;
use crate::engine::operators::filter::filter_rows;
use crate::engine::operators::join::join_delta;
use crate::engine::operators::reduce::{ReduceInput, ReduceState};
use crate::engine::operators::select::select_rows;
use crate::engine::plan::{Agg, JoinKind};
use crate::error::{Error, Result};
use crate::expr::Expr;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// The output of [`select`].
#[derive(Debug)]
pub struct Selected {
    /// One column per expression, with the input's times and diffs.
    pub updates: Updates,
    /// The expressions' dtypes.
    pub dtypes: Vec<DType>,
}

/// Evaluates `exprs` on every row of `upd`, whose columns are named and typed by `columns`.
pub fn select(exprs: &[Expr], columns: &[(String, DType)], upd: &Updates) -> Result<Selected> {
    check_columns(columns, upd)?;
    let bound = exprs
        .iter()
        .map(|e| e.bind(columns))
        .collect::<Result<Vec<_>>>()?;
    Ok(Selected {
        updates: select_rows(&bound, upd)?,
        dtypes: bound.iter().map(|b| b.dtype()).collect(),
    })
}

/// The updates of `upd` whose rows satisfy the bool expression `predicate`.
pub fn filter(predicate: &Expr, columns: &[(String, DType)], upd: &Updates) -> Result<Updates> {
    check_columns(columns, upd)?;
    let bound = predicate.bind(columns)?;
    if bound.dtype() != DType::Bool {
        return Err(Error::Type(format!(
            "filter predicate {predicate} has dtype {}, expected bool",
            bound.dtype().name()
        )));
    }
    filter_rows(&bound, upd)
}

fn check_columns(columns: &[(String, DType)], upd: &Updates) -> Result<()> {
    if columns.len() != upd.width {
        return Err(Error::Shape(format!(
            "{} named columns for rows of {} columns",
            columns.len(),
            upd.width
        )));
    }
    Ok(())
}

/// Sorts `upd` by (row, time) and sums the diffs of equal (row, time), dropping zeros. A sum
/// outside `i64` stays as several updates that add up to it (never wrapped).
pub fn consolidate(upd: &mut Updates) -> Result<()> {
    crate::engine::util::consolidate(upd)
}

/// `upd` with the columns `key` moved first (the others follow in order), sorted and
/// consolidated: the layout [`join`] and [`reduce`] read.
pub fn arrange(upd: Updates, key: &[usize]) -> Result<Updates> {
    let width = upd.width;
    if let Some(&bad) = key.iter().find(|&&k| k >= width) {
        return Err(Error::Value(format!(
            "key column {bad} is out of range for rows of {width} columns"
        )));
    }
    let mut b = key_first(vec![upd], key, width);
    consolidate(&mut b)?;
    Ok(b)
}

/// Checks that `upd` is arranged: sorted by (row, time), one update per (row, time), no
/// zero diffs.
fn check_arranged(upd: &Updates, what: &str) -> Result<()> {
    for i in 0..upd.len() {
        if upd.diffs[i] == 0 {
            return Err(Error::Unsorted(format!(
                "{what}: update {i} has diff 0; consolidate the batch first"
            )));
        }
        if i > 0 && (upd.row(i - 1), upd.times[i - 1]) >= (upd.row(i), upd.times[i]) {
            return Err(Error::Unsorted(format!(
                "{what}: update {i} is not after update {} in (row, time) order; arrange \
                 the batch first",
                i - 1
            )));
        }
    }
    Ok(())
}

/// A trace holding one arranged batch, all of its times complete.
fn trace_of(upd: &Updates, key_width: usize, what: &str) -> Result<Arrangement> {
    check_arranged(upd, what)?;
    if key_width > upd.width {
        return Err(Error::Value(format!(
            "{what}: key of {key_width} columns but rows of {}",
            upd.width
        )));
    }
    let mut t = Arrangement::new(key_width, upd.width);
    t.insert(upd, &Antichain::new());
    Ok(t)
}

/// The output of [`join`].
#[derive(Debug)]
pub struct Joined {
    /// Rows `key, left vals, right vals` (`join`) or `key, left vals` (`semijoin`,
    /// `antijoin`), time the join of the two times, diff the product.
    pub updates: Updates,
    /// Updates whose diff product is outside `i64`: `(row, time, product)`.
    pub overflow: Vec<(Vec<u64>, Time, i128)>,
}

/// Joins two arranged batches on their first `key_width` columns.
pub fn join(kind: JoinKind, key_width: usize, left: &Updates, right: &Updates) -> Result<Joined> {
    let ta = trace_of(left, key_width, "left side of the join")?;
    let tb = trace_of(right, key_width, "right side of the join")?;
    let out_width = match kind {
        JoinKind::Join => left.width + right.width - key_width,
        JoinKind::Semijoin | JoinKind::Antijoin => left.width,
    };
    // The delta rule with the whole left side new and nothing new on the right:
    // dA x B + A x 0 - dA x 0 = A x B.
    let mut overflow = Vec::new();
    let updates = join_delta(
        kind,
        key_width,
        left,
        &Updates::new(right.width),
        &ta,
        &tb,
        out_width,
        &mut overflow,
    )?;
    Ok(Joined { updates, overflow })
}

/// The output of [`reduce`].
#[derive(Debug)]
pub struct Reduced {
    /// Rows `key, output columns`.
    pub updates: Updates,
    /// Dtypes of the output columns after the key.
    pub dtypes: Vec<DType>,
    /// Keys whose aggregate failed at a time: `(key, time, message, diff)` (errors as data,
    /// see `engine/errors.rs`).
    pub errors: Vec<(Vec<u64>, Time, String, i64)>,
}

/// Applies `agg` per key to an arranged batch whose rows are `key_width` key columns, then
/// val columns (`dtypes` and `names` describe all of them). Every time is complete: the
/// output, accumulated at any time, is the aggregate of the input accumulated there.
pub fn reduce(
    agg: &Agg,
    key_width: usize,
    dtypes: &[DType],
    names: &[String],
    input: &Updates,
    callbacks: &dyn Callbacks,
) -> Result<Reduced> {
    if dtypes.len() != input.width || names.len() != input.width || key_width > input.width {
        return Err(Error::Shape(format!(
            "reduce: rows of {} columns, {} dtypes, {} names and a key of {key_width}",
            input.width,
            dtypes.len(),
            names.len()
        )));
    }
    let trace = trace_of(input, key_width, "reduce input")?;
    let mut state = ReduceState::new(key_width);
    let updates = state.activate(&ReduceInput {
        agg,
        key_width,
        key_dtypes: &dtypes[..key_width],
        val_dtypes: &dtypes[key_width..],
        key_names: &names[..key_width],
        val_names: &names[key_width..],
        trace: &trace,
        batch: input,
        frontier: &Antichain::new(),
        callbacks,
        label: "reduce",
    })?;
    Ok(Reduced {
        updates,
        dtypes: state.out_dtypes.clone().unwrap_or_default(),
        errors: std::mem::take(&mut state.errors.new),
    })
}
