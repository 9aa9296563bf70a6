//! Expression bindings: `_core.eval_expr` evaluates an expression (JSON, see
//! `ddflow_core::expr`) on a dict of numpy columns — the public kernel a Spark backend's
//! executors can call per partition — plus helpers that expose the core's view of an
//! expression (`expr_repr`, `expr_output_name`, `expr_dtype`).
//!
//! Columns are read by the bindings' one conversion module ([`crate::convert`]): int64 /
//! float64 / bool in place, other widths cast by numpy, uint64 as int64 with every value
//! checked to fit (its uint64 policy); str columns (numpy `U`, `T` or `object` arrays of
//! `str`) are interned, only those the expression reads. Evaluation runs with the GIL
//! released. str results come back as `object` arrays of `str`.

// pyo3 0.23's #[pyfunction] expansion trips this lint on `PyResult` returns.
#![allow(clippy::useless_conversion)]

use crate::convert::{col_to_py, hold, prepare, ColHold, ColOut, ColType, ColView, Unsigned};
use crate::errors::{without_gil, IntoPyResult};
use ddflow_core::encoding::DType;
use ddflow_core::expr::{ColumnRef, Expr};
use ddflow_core::Error;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;

fn fail<T>(e: Error) -> PyResult<T> {
    Err(e).py()
}

/// Evaluates an expression on numpy columns.
///
/// `columns` maps names to 1-D arrays (or sequences) of equal length; `length` gives the row
/// count when the expression reads no column (default: the columns' length, else 0). Returns
/// an int64, float64 or bool array, or an object array of str. Raises the `ddflow.errors`
/// classes: `ColumnNotFoundError`, `SchemaTypeError`, `OverflowError`,
/// `DivisionByZeroError`, `ShapeError`, `PlanError` (malformed JSON).
#[pyfunction]
#[pyo3(signature = (expr_json, columns, length=None))]
fn eval_expr<'py>(
    py: Python<'py>,
    expr_json: &str,
    columns: &Bound<'py, PyDict>,
    length: Option<usize>,
) -> PyResult<Bound<'py, PyAny>> {
    let expr = Expr::from_json_str(expr_json).py()?;
    let mut schema: Vec<(String, DType)> = Vec::with_capacity(columns.len());
    let mut arrays: Vec<Bound<'py, PyUntypedArray>> = Vec::with_capacity(columns.len());
    let mut types: Vec<ColType> = Vec::with_capacity(columns.len());
    let mut n = length;
    for (key, value) in columns.iter() {
        let Ok(name) = key.extract::<String>() else {
            return fail(Error::Type(format!(
                "column names must be str, got {}",
                key.repr()?
            )));
        };
        let (arr, ty) = prepare(&format!("column {name:?}"), &value, Unsigned::AsInt64)?;
        let len = arr.len();
        match n {
            Some(m) if m != len => {
                return fail(Error::Shape(format!(
                    "column {name:?} has {len} values, expected {m}"
                )))
            }
            _ => n = Some(len),
        }
        let dtype = ty.dtype().expect("Unsigned::AsInt64 reads uint64 as int64");
        types.push(ty);
        schema.push((name, dtype));
        arrays.push(arr);
    }
    let n = n.unwrap_or(0);
    let bound = expr.bind(&schema).py()?;
    // Only the columns the expression reads are borrowed (and str ones interned).
    let mut held: Vec<Option<ColHold<'py>>> = (0..schema.len()).map(|_| None).collect();
    for &i in bound.inputs() {
        held[i] = Some(hold(
            &format!("column {:?}", schema[i].0),
            &arrays[i],
            types[i],
        )?);
    }
    let views: Vec<Option<ColView<'_>>> =
        held.iter().map(|h| h.as_ref().map(ColHold::view)).collect();
    let refs: Vec<Option<ColumnRef<'_>>> = views
        .iter()
        .map(|v| v.as_ref().and_then(ColView::as_expr_column))
        .collect();
    let out = without_gil(py, || ColOut::from_expr(bound.eval_columns(&refs, n)?))?;
    Ok(col_to_py(py, out))
}

/// The core's text form of an expression (what `Expr.__repr__` prints).
#[pyfunction]
fn expr_repr(expr_json: &str) -> PyResult<String> {
    Ok(Expr::from_json_str(expr_json).py()?.to_string())
}

/// The output column name of an expression.
#[pyfunction]
fn expr_output_name(expr_json: &str) -> PyResult<String> {
    Ok(Expr::from_json_str(expr_json).py()?.output_name())
}

/// Binds an expression to `schema` (a list of `(name, dtype name)` pairs) and returns its
/// output dtype name (`"int64"`, `"float64"`, `"bool"` or `"str"`).
#[pyfunction]
fn expr_dtype(expr_json: &str, schema: Vec<(String, String)>) -> PyResult<&'static str> {
    let expr = Expr::from_json_str(expr_json).py()?;
    let schema = schema
        .into_iter()
        .map(|(n, d)| Ok((n, DType::parse(&d)?)))
        .collect::<ddflow_core::Result<Vec<_>>>()
        .py()?;
    Ok(expr.bind(&schema).py()?.dtype().name())
}

/// Adds the expression functions to `ddflow._core`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(eval_expr, m)?)?;
    m.add_function(wrap_pyfunction!(expr_repr, m)?)?;
    m.add_function(wrap_pyfunction!(expr_output_name, m)?)?;
    m.add_function(wrap_pyfunction!(expr_dtype, m)?)?;
    Ok(())
}
