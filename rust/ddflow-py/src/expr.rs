//! Expression bindings: `_core.eval_expr` evaluates an expression (JSON, see
//! `ddflow_core::expr`) on a dict of numpy columns — the public kernel a Spark backend's
//! executors can call per partition — plus helpers that expose the core's view of an
//! expression (`expr_repr`, `expr_output_name`, `expr_dtype`).
//!
//! int64 / float64 / bool columns are read in place (other int and float widths are cast by
//! numpy first); str columns (numpy `U`, `T` or `object` arrays of `str`) are interned.
//! Evaluation runs with the GIL released. str results come back as `object` arrays of `str`.

// pyo3 0.23's #[pyfunction] expansion trips this lint on `PyResult` returns.
#![allow(clippy::useless_conversion)]

use crate::errors::{without_gil, IntoPyResult};
use ddflow_core::encoding::{DType, Interner};
use ddflow_core::expr::{Column, ColumnRef, Expr};
use ddflow_core::Error;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use std::sync::Arc;

fn fail<T>(e: Error) -> PyResult<T> {
    Err(e).py()
}

/// The dtype a numpy array maps to, from its dtype kind and item size.
fn dtype_of(name: &str, kind: &str, itemsize: usize) -> PyResult<DType> {
    Ok(match kind {
        "i" => DType::Int64,
        "u" if itemsize < 8 => DType::Int64,
        "f" => DType::Float64,
        "b" => DType::Bool,
        "U" | "O" | "T" => DType::Str,
        _ => {
            return fail(Error::Type(format!(
                "column {name:?}: unsupported numpy dtype kind {kind:?} with item size {itemsize} \
                 (expected int64, float64, bool or str; uint64 must be cast to int64 explicitly)"
            )))
        }
    })
}

/// A converted input column, kept alive while its slice is borrowed.
enum Held<'py> {
    Int(PyReadonlyArray1<'py, i64>),
    Float(PyReadonlyArray1<'py, f64>),
    Bool(PyReadonlyArray1<'py, bool>),
    Str(Vec<u64>),
}

impl Held<'_> {
    fn view(&self) -> PyResult<ColumnRef<'_>> {
        Ok(match self {
            Held::Int(a) => ColumnRef::Int64(a.as_slice()?),
            Held::Float(a) => ColumnRef::Float64(a.as_slice()?),
            Held::Bool(a) => ColumnRef::Bool(a.as_slice()?),
            Held::Str(v) => ColumnRef::Str(v),
        })
    }
}

fn convert<'py>(
    np: &Bound<'py, PyModule>,
    name: &str,
    arr: &Bound<'py, PyAny>,
    dtype: DType,
) -> PyResult<Held<'py>> {
    let contiguous = |t: &str| np.call_method1("ascontiguousarray", (arr, t));
    Ok(match dtype {
        DType::Int64 => Held::Int(contiguous("int64")?.extract()?),
        DType::Float64 => Held::Float(contiguous("float64")?.extract()?),
        DType::Bool => Held::Bool(contiguous("bool")?.extract()?),
        DType::Str => {
            let list = arr.call_method0("tolist")?;
            let mut strings: Vec<Bound<'py, PyString>> = Vec::new();
            for (i, item) in list.try_iter()?.enumerate() {
                let item = item?;
                match item.downcast_into::<PyString>() {
                    Ok(s) => strings.push(s),
                    Err(e) => {
                        let item = e.into_inner();
                        return fail(Error::Type(format!(
                            "column {name:?}: value {} at row {i} has type {}; str columns must hold only str",
                            item.repr()?,
                            item.get_type().name()?
                        )));
                    }
                }
            }
            let texts: Vec<&str> = strings
                .iter()
                .map(|s| s.to_str())
                .collect::<PyResult<_>>()?;
            let mut ids = Vec::with_capacity(texts.len());
            Interner::intern_all(texts.iter().copied(), &mut ids);
            Held::Str(ids)
        }
    })
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
    let np = py.import("numpy")?;
    let mut schema: Vec<(String, DType)> = Vec::with_capacity(columns.len());
    let mut arrays: Vec<Bound<'py, PyAny>> = Vec::with_capacity(columns.len());
    let mut n = length;
    for (key, value) in columns.iter() {
        let Ok(name) = key.extract::<String>() else {
            return fail(Error::Type(format!(
                "column names must be str, got {}",
                key.repr()?
            )));
        };
        let arr = if value.hasattr("dtype")? && value.hasattr("ndim")? {
            value
        } else {
            np.call_method1("asarray", (value,))?
        };
        let ndim: usize = arr.getattr("ndim")?.extract()?;
        if ndim != 1 {
            return fail(Error::Shape(format!(
                "column {name:?}: expected a 1-D array, got {ndim} dimensions"
            )));
        }
        let len = arr.len()?;
        match n {
            Some(m) if m != len => {
                return fail(Error::Shape(format!(
                    "column {name:?} has {len} values, expected {m}"
                )))
            }
            _ => n = Some(len),
        }
        let dt = arr.getattr("dtype")?;
        let dtype = dtype_of(
            &name,
            &dt.getattr("kind")?.extract::<String>()?,
            dt.getattr("itemsize")?.extract()?,
        )?;
        schema.push((name, dtype));
        arrays.push(arr);
    }
    let n = n.unwrap_or(0);
    let bound = expr.bind(&schema).py()?;
    let mut held: Vec<Option<Held<'py>>> = (0..schema.len()).map(|_| None).collect();
    for &i in bound.inputs() {
        held[i] = Some(convert(&np, &schema[i].0, &arrays[i], schema[i].1)?);
    }
    let refs: Vec<Option<ColumnRef<'_>>> = held
        .iter()
        .map(|h| h.as_ref().map(Held::view).transpose())
        .collect::<PyResult<_>>()?;
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
