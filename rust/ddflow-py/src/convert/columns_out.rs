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
use std::sync::Arc;

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
    /// Strings (`None` for a null).
    Str(Vec<Option<Arc<str>>>),
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
            ColOut::Str(resolve_nullable(&ids)?)
        }
    })
}

/// The strings of interned ids, `None` for the null id.
pub fn resolve_nullable(ids: &[u64]) -> Result<Vec<Option<Arc<str>>>, Error> {
    if !ids.contains(&NULL_STR) {
        return Ok(Interner::resolve_all(ids)?.into_iter().map(Some).collect());
    }
    let known: Vec<u64> = ids.iter().copied().filter(|&i| i != NULL_STR).collect();
    let mut strings = Interner::resolve_all(&known)?.into_iter();
    Ok(ids
        .iter()
        .map(|&i| if i == NULL_STR { None } else { strings.next() })
        .collect())
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
            let mut cache: HashMap<*const u8, PyObject> = HashMap::new();
            let objs: Vec<PyObject> = v
                .iter()
                .map(|s| match s {
                    None => py.None(),
                    Some(s) => cache
                        .entry(s.as_ptr())
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
            ExprColumn::Str(ids) => ColOut::Str(resolve_nullable(&ids)?),
        })
    }
}
