//! Plan analyses the Python package asks for before data flows: which columns of each node
//! some operator reads (`ddflow_core::engine::live_columns`).

// pyo3 0.23's #[pyfunction] expansion trips this lint on `PyResult` returns.
#![allow(clippy::useless_conversion)]

use crate::convert::err;
use ddflow_core::engine::live_columns::live_columns;
use ddflow_core::engine::plan::Plan;
use pyo3::prelude::*;

/// Per node of the plan (JSON), per column: whether some operator reads it. `pinned` nodes
/// (arrangements with trace handles) keep every column.
#[pyfunction]
fn plan_live_columns(plan_json: &str, pinned: Vec<usize>) -> PyResult<Vec<Vec<bool>>> {
    let plan = Plan::from_json(plan_json).map_err(err)?;
    Ok(live_columns(&plan, &pinned))
}

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan_live_columns, m)?)?;
    Ok(())
}
