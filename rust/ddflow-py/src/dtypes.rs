//! Dtype names and values for the Python package: the one parser of dtype names
//! (`ddflow_core::dtype::DType::parse`) and the one renderer of logical values
//! (`ddflow_core::values`), so Python never spells them a second way.

// pyo3 0.23's #[pyfunction] expansion trips this lint on `PyResult` returns.
#![allow(clippy::useless_conversion)]

use crate::convert::err;
use ddflow_core::dtype::DType;
use ddflow_core::encoding::{encode_i64, is_null_word};
use pyo3::prelude::*;

/// The canonical name of the dtype `name` (`"date32[day]"` -> `"date32"`,
/// `"decimal(5,1)"` -> `"decimal128(5, 1)"`); `SchemaTypeError` for a name ddflow cannot
/// hold.
#[pyfunction]
fn canonical_dtype(name: &str) -> PyResult<&'static str> {
    Ok(DType::parse(name).map_err(err)?.name())
}

/// The physical dtype (`int64`, `float64`, `bool` or `str`) the words of `name` are read as.
#[pyfunction]
fn physical_dtype(name: &str) -> PyResult<&'static str> {
    Ok(DType::parse(name).map_err(err)?.physical().name())
}

/// The text of an int64-stored value of the logical dtype `name` (a date's days, a
/// decimal's unscaled value, ...), as error messages and expressions print it.
#[pyfunction]
fn render_word(name: &str, value: i64) -> PyResult<String> {
    let dtype = DType::parse(name).map_err(err)?;
    let w = encode_i64(value);
    if is_null_word(dtype, w) {
        return Ok("null".to_string());
    }
    Ok(ddflow_core::values::render_logical(dtype, w).unwrap_or_else(|| value.to_string()))
}

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(canonical_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(physical_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(render_word, m)?)?;
    Ok(())
}
