//! Errors as data: a record that makes an operator fail becomes an *error update*.
//!
//! An [`ErrorUpdate`] names the operator (plan node), the message and the offending values,
//! and carries the failing record's time and diff. Operators append them to their worker's
//! error list during an activation; the engine hands them out with
//! [`crate::engine::Engine::errors_take`]. The message and values depend only on the record
//! (never on its position in a batch), so retracting the record produces the same error with
//! the opposite diff and the two cancel.
//!
//! Progress: an error update is recorded while the operator activates on the failing record,
//! that is before the operator's output frontier can pass the record's time, so every output
//! downstream sees it before it sees that time as complete.

use crate::encoding::{decode_bool, decode_f64, decode_i64, DType, Interner};
use crate::error::Error;
use crate::lattice::Time;

/// One error update: operator `node` failed on `values` with `message`, at `time`, `diff`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorUpdate {
    /// The plan node of the failing operator.
    pub node: usize,
    /// What went wrong (independent of the record's position in its batch).
    pub message: String,
    /// The offending record, rendered as `name=value, ...`.
    pub values: String,
    /// The record's time.
    pub time: Time,
    /// The record's diff.
    pub diff: i64,
}

/// Renders one encoded value.
pub fn render_value(dtype: DType, word: u64) -> String {
    if crate::encoding::is_null_word(dtype, word) {
        return "null".to_string();
    }
    if let Some(text) = crate::values::render_logical(dtype, word) {
        return text;
    }
    match dtype {
        DType::Int64 => decode_i64(word).to_string(),
        DType::Float64 => format!("{:?}", decode_f64(word)),
        DType::Bool => if decode_bool(word) { "True" } else { "False" }.to_string(),
        _ => match Interner::resolve_all(&[word]) {
            Ok(s) => format!("{:?}", &*s[0]),
            Err(_) => format!("<string {word}>"),
        },
    }
}

/// Renders a row as `name=value, ...` (names may be fewer than the values).
pub fn render_row(names: &[String], schema: &[DType], row: &[u64]) -> String {
    row.iter()
        .enumerate()
        .map(|(i, &w)| {
            let v = schema
                .get(i)
                .map(|&d| render_value(d, w))
                .unwrap_or_else(|| w.to_string());
            match names.get(i) {
                Some(n) => format!("{n}={v}"),
                None => v,
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The message of an error caused by one record: the error's text without batch positions
/// (expression errors say "at row 0" when evaluated on the record alone) and without the
/// operator's label (the error update names the operator already).
pub fn record_message(e: &Error, label: &str) -> String {
    e.to_string()
        .replace(&format!("{label}: "), "")
        .replace(" at row 0:", ":")
        .replace(" at row 0", "")
}
