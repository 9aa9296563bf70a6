//! Typed columns at the engine boundary, engine messages, and the callback interface.
//!
//! Data enters (`Engine::push`) and leaves (`capture_take`, callbacks) as [`Column`]s: a
//! dtype plus one encoded word per row (see [`crate::encoding`]). Inside the engine, data
//! moves as [`Msg`]: a batch of updates whose rows carry the batch's dtypes.

use crate::encoding::DType;
use crate::error::{Error, Result};
use crate::lattice::Time;
use crate::updates::Updates;
use std::sync::Arc;

/// One column: a dtype and one encoded word per row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The column's dtype.
    pub dtype: DType,
    /// Encoded values.
    pub words: Vec<u64>,
}

/// The dtypes of a batch's row columns, shared between batches.
pub type Schema = Arc<Vec<DType>>;

/// A batch of updates travelling between operators.
#[derive(Clone, Debug)]
pub struct Msg {
    /// Dtypes of the row columns (`upd.width` of them).
    pub schema: Schema,
    /// The updates.
    pub upd: Updates,
}

impl Msg {
    /// An empty message with the given schema.
    pub fn empty(schema: Schema) -> Msg {
        let w = schema.len();
        Msg {
            schema,
            upd: Updates::new(w),
        }
    }
}

/// Splits row-major updates into columns.
pub fn rows_to_columns(schema: &[DType], upd: &Updates) -> Vec<Column> {
    let w = upd.width;
    (0..w)
        .map(|c| Column {
            dtype: schema[c],
            words: (0..upd.len()).map(|r| upd.rows[r * w + c]).collect(),
        })
        .collect()
}

/// Interleaves columns into row-major words; checks lengths.
pub fn columns_to_rows(columns: &[Column], n: usize, ctx: &str) -> Result<Vec<u64>> {
    for (i, c) in columns.iter().enumerate() {
        if c.words.len() != n {
            return Err(Error::Shape(format!(
                "{ctx}: column {i} has {} values, expected {n}",
                c.words.len()
            )));
        }
    }
    let w = columns.len();
    let mut rows = vec![0u64; n * w];
    for (c, col) in columns.iter().enumerate() {
        for (r, &v) in col.words.iter().enumerate() {
            rows[r * w + c] = v;
        }
    }
    Ok(rows)
}

/// What the engine hands to a Python callback.
#[derive(Debug)]
pub enum Payload {
    /// `map_py`, `flat_map_py`, `filter_py`: the batch's columns (names from the plan).
    Columns {
        names: Vec<String>,
        columns: Vec<Column>,
    },
    /// `inspect_py`: columns plus times and diffs.
    Inspect {
        names: Vec<String>,
        columns: Vec<Column>,
        times: Vec<Time>,
        time_dims: usize,
        diffs: Vec<i64>,
    },
    /// `reduce_py`: grouped input per key.
    Reduce {
        key_names: Vec<String>,
        keys: Vec<Column>,
        offsets: Vec<i64>,
        val_names: Vec<String>,
        values: Vec<Column>,
        counts: Vec<i64>,
    },
    /// `threshold_py`: signed counts.
    Counts(Vec<i64>),
}

/// What a Python callback returns.
#[derive(Debug)]
pub enum Reply {
    /// Output columns (map, flat_map with `row_index`, reduce with `offsets` and optional `counts`).
    Columns {
        columns: Vec<Column>,
        row_index: Option<Vec<i64>>,
        offsets: Option<Vec<i64>>,
        counts: Option<Vec<i64>>,
    },
    /// A boolean mask (filter).
    Mask(Vec<bool>),
    /// Counts (threshold).
    Counts(Vec<i64>),
    /// Nothing (inspect).
    Unit,
}

/// The engine's way into user code. Implemented by the Python bindings.
pub trait Callbacks: Send + Sync {
    /// Calls user function `func` of the given kind with a payload; the label names the
    /// operator for error messages.
    fn call(&self, func: u64, kind: &str, label: &str, payload: Payload) -> Result<Reply>;
}

/// Callbacks for dataflows without user functions: every call is an error.
pub struct NoCallbacks;

impl Callbacks for NoCallbacks {
    fn call(&self, func: u64, kind: &str, label: &str, _payload: Payload) -> Result<Reply> {
        Err(Error::Plan(format!(
            "{label}: no callback registered for {kind} function {func}"
        )))
    }
}
