//! Record columns out: [`ColOut`] columns, decoded from row words without the GIL, as
//! numpy arrays.

use super::{decode_word, ColType, Enc};
use ddflow_core::encoding::{decode_f64, Interner, NULL_STR};
use ddflow_core::expr::Column as ExprColumn;
use ddflow_core::{Error, Result as CoreResult};
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};
use std::collections::HashMap;

/// An output column, decoded without the GIL.
pub enum ColOut {
    /// int64 values.
    I64(Vec<i64>),
    /// uint64 values.
    U64(Vec<u64>),
    /// float64 values.
    F64(Vec<f64>),
    /// bool values.
    Bool(Vec<bool>),
    /// Strings.
    Str(StrOut),
}

/// Strings resolved from their ids, back to back in one buffer: value `i` is
/// `text[ends[i]..ends[i + 1]]`, empty for a null (`ids[i] == NULL_STR`). Made under one
/// read lock of the interner with one copy per value; Arrow buffers are this layout already.
pub struct StrOut {
    /// The interned ids ([`NULL_STR`] for a null).
    pub ids: Vec<u64>,
    /// `n + 1` offsets into `text`, from 0.
    pub ends: Vec<usize>,
    /// The values' UTF-8 text.
    pub text: String,
}

impl StrOut {
    /// Value `i` (`None` for a null).
    pub fn get(&self, i: usize) -> Option<&str> {
        (self.ids[i] != NULL_STR).then(|| &self.text[self.ends[i]..self.ends[i + 1]])
    }
}

/// Decodes column `c` of rows of `w` words (encoding `enc`) as type `ty`.
pub fn decode_column(
    ty: ColType,
    rows: &[u64],
    w: usize,
    c: usize,
    enc: Enc,
) -> Result<ColOut, Error> {
    let words = rows.iter().skip(c).step_by(w.max(1));
    Ok(match ty {
        ColType::Int64 => ColOut::I64(words.map(|&x| decode_word(ty, x, enc) as i64).collect()),
        ColType::UInt64 => ColOut::U64(words.copied().collect()),
        ColType::Float64 => ColOut::F64(
            words
                .map(|&x| decode_f64(decode_word(ty, x, enc)))
                .collect(),
        ),
        ColType::Bool => ColOut::Bool(words.map(|&x| x != 0).collect()),
        ColType::Str => {
            let ids: Vec<u64> = words.copied().collect();
            ColOut::Str(resolve_nullable(ids)?)
        }
    })
}

/// The strings of interned ids ([`NULL_STR`]: a null); an unknown id is an error.
pub fn resolve_nullable(ids: Vec<u64>) -> Result<StrOut, Error> {
    let mut ends = Vec::with_capacity(ids.len() + 1);
    ends.push(0);
    // A first guess at the text's size; the buffer grows as needed.
    let mut text = String::with_capacity(ids.len() * 16);
    Interner::resolve_each(ids.iter().copied(), |s| {
        if let Some(s) = s {
            text.push_str(s);
        }
        ends.push(text.len());
        Ok(())
    })?;
    Ok(StrOut { ids, ends, text })
}

/// Decodes every column of rows of `types.len()` words.
pub fn decode_rows(types: &[ColType], rows: &[u64], enc: Enc) -> Result<Vec<ColOut>, Error> {
    let w = types.len();
    if w == 0 {
        return Ok(Vec::new());
    }
    types
        .iter()
        .enumerate()
        .map(|(c, &t)| decode_column(t, rows, w, c, enc))
        .collect()
}

/// One output column as a numpy array.
pub fn col_to_py(py: Python<'_>, col: ColOut) -> Bound<'_, PyAny> {
    match col {
        ColOut::I64(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::U64(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::F64(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::Bool(v) => PyArray1::from_vec(py, v).into_any(),
        ColOut::Str(v) => {
            // Strings with the same id share one Python object.
            let mut cache: HashMap<u64, PyObject> = HashMap::new();
            let objs: Vec<PyObject> = (0..v.ids.len())
                .map(|i| match v.get(i) {
                    None => py.None(),
                    Some(s) => cache
                        .entry(v.ids[i])
                        .or_insert_with(|| PyString::new(py, s).into_any().unbind())
                        .clone_ref(py),
                })
                .collect();
            PyArray1::from_vec(py, objs).into_any()
        }
    }
}

/// Output columns as a Python list of numpy arrays.
pub fn cols_to_py(py: Python<'_>, cols: Vec<ColOut>) -> PyResult<Bound<'_, PyList>> {
    PyList::new(py, cols.into_iter().map(|c| col_to_py(py, c)))
}

impl ColOut {
    /// An expression's result column (strings resolved; call without the GIL).
    pub fn from_expr(c: ExprColumn) -> CoreResult<ColOut> {
        Ok(match c {
            ExprColumn::Int64(v) => ColOut::I64(v),
            ExprColumn::Float64(v) => ColOut::F64(v),
            ExprColumn::Bool(v) => ColOut::Bool(v),
            ExprColumn::Str(ids) => ColOut::Str(resolve_nullable(ids)?),
        })
    }
}
