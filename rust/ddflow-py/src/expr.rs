//! Expression bindings: `_core.eval_expr` evaluates an expression (JSON, see
//! `ddflow_core::expr`) on a dict of numpy columns — the public kernel a Spark backend's
//! executors can call per partition — plus helpers that expose the core's view of an
//! expression (`expr_repr`, `expr_output_name`, `expr_dtype`).
//!
//! Columns are read by the bindings' one column reader (`kernels::convert::prepare` and
//! `hold`): int64 / float64 / bool in place, other widths cast by numpy, uint64 as int64 with
//! every value checked to fit; str columns (numpy `U`, `T` or `object` arrays of `str`) are
//! interned, only those the expression reads. Evaluation runs with the GIL released. str results come back as `object` arrays of `str`.

// pyo3 0.23's #[pyfunction] expansion trips this lint on `PyResult` returns.
#![allow(clippy::useless_conversion)]

use crate::errors::{without_gil, IntoPyResult};
use crate::kernels::convert::{hold, prepare, ColHold, ColType, ColView, Unsigned};
use ddflow_core::encoding::{DType, Interner};
use ddflow_core::expr::{Column, ColumnRef, Expr};
use ddflow_core::Error;
use numpy::{PyArray1, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::sync::Arc;

fn fail<T>(e: Error) -> PyResult<T> {
    Err(e).py()
}

/// The expression dtype of a column the bindings' reader prepared.
fn dtype_of(ty: ColType) -> DType {
    match ty {
        // `Unsigned::AsInt64` reads uint64 as int64.
        ColType::Int64 | ColType::UInt64 => DType::Int64,
        ColType::Float64 => DType::Float64,
        ColType::Bool => DType::Bool,
        ColType::Str => DType::Str,
    }
}

/// A column's values as the expression evaluator reads them.
fn column_ref<'a>(view: &'a ColView<'_>) -> ColumnRef<'a> {
    match view {
        ColView::I64(v) => ColumnRef::Int64(v),
        ColView::F64(v) => ColumnRef::Float64(v),
        ColView::Bool(v) => ColumnRef::Bool(v),
        ColView::Str(v) => ColumnRef::Str(v),
        ColView::U64(_) => unreachable!("read as int64"),
    }
}

/// A result computed without the GIL.
enum Out {
    Col(Column),
    Strings(Vec<Arc<str>>),
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
        let dtype = dtype_of(ty);
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
    let refs: Vec<Option<ColumnRef<'_>>> =
        views.iter().map(|v| v.as_ref().map(column_ref)).collect();
    let out = without_gil(py, || {
        Ok(match bound.eval_columns(&refs, n)? {
            Column::Str(ids) => Out::Strings(Interner::resolve_all(&ids)?),
            c => Out::Col(c),
        })
    })?;
    Ok(match out {
        Out::Col(Column::Int64(v)) => PyArray1::from_vec(py, v).into_any(),
        Out::Col(Column::Float64(v)) => PyArray1::from_vec(py, v).into_any(),
        Out::Col(Column::Bool(v)) => PyArray1::from_vec(py, v).into_any(),
        Out::Col(Column::Str(_)) => unreachable!("resolved above"),
        Out::Strings(s) => {
            let objs: Vec<PyObject> = s
                .iter()
                .map(|s| PyString::new(py, s).into_any().unbind())
                .collect();
            PyArray1::from_vec(py, objs).into_any()
        }
    })
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
