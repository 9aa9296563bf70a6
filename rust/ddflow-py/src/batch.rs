//! `ddflow._core.batch_*`: the engine's operators on whole batches (`ddflow_core::batch`).
//!
//! A batch crosses as `(columns, times, diffs)`: a list of columns, an `(n, time_dims)`
//! int64 array and an int64 array, as `Engine.capture_take` returns them. Each function
//! converts, calls the core with the GIL released, and converts back. (Consolidation is
//! `_core.consolidate`, in `kernels/`.)

use crate::convert::{column_from_py, column_to_py, i64s_from_py, times_from_py, times_to_py};
use crate::errors::{without_gil, IntoPyResult};
use ddflow_core::batch;
use ddflow_core::encoding::DType;
use ddflow_core::engine::column::{columns_to_rows, rows_to_columns, Column, NoCallbacks};
use ddflow_core::engine::plan::{Agg, JoinKind};
use ddflow_core::{Error, Updates};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// A batch as Python passes it.
type PyBatch<'py> = (Vec<Bound<'py, PyAny>>, Bound<'py, PyAny>, Bound<'py, PyAny>);

/// A batch as Python receives it.
type PyOut<'py> = (Bound<'py, PyList>, Bound<'py, PyAny>, Bound<'py, PyAny>);

/// Reads a Python batch: its dtypes and its updates.
fn from_py(b: &PyBatch<'_>, time_dims: usize, what: &str) -> PyResult<(Vec<DType>, Updates)> {
    let cols =
        b.0.iter()
            .enumerate()
            .map(|(i, c)| column_from_py(c, &format!("{what}, column {i}")))
            .collect::<PyResult<Vec<Column>>>()?;
    let times = times_from_py(&b.1, time_dims, what)?;
    let diffs = i64s_from_py(&b.2, &format!("{what}: diffs"))?;
    let n = times.len();
    let rows = columns_to_rows(&cols, n, what).py()?;
    let dtypes = cols.iter().map(|c| c.dtype).collect();
    Ok((
        dtypes,
        Updates::from_parts(cols.len(), rows, times, diffs).py()?,
    ))
}

/// Writes a batch of rows with `dtypes` back as Python columns, times and diffs.
fn to_py<'py>(
    py: Python<'py>,
    dtypes: &[DType],
    u: Updates,
    time_dims: usize,
) -> PyResult<PyOut<'py>> {
    let cols = rows_to_columns(dtypes, &u)
        .iter()
        .map(|c| column_to_py(py, c))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((
        PyList::new(py, cols)?,
        times_to_py(py, &u.times, time_dims, false)?,
        numpy::PyArray1::from_vec(py, u.diffs).into_any(),
    ))
}

/// The key columns `key` first, then the others; sorted and consolidated.
#[pyfunction]
fn batch_arrange<'py>(
    py: Python<'py>,
    batch: PyBatch<'py>,
    key: Vec<usize>,
    time_dims: usize,
) -> PyResult<PyOut<'py>> {
    let (dtypes, u) = from_py(&batch, time_dims, "batch")?;
    let mut out_dtypes: Vec<DType> = key.iter().filter_map(|&k| dtypes.get(k).copied()).collect();
    out_dtypes.extend(
        (0..dtypes.len())
            .filter(|c| !key.contains(c))
            .map(|c| dtypes[c]),
    );
    let u = without_gil(py, move || batch::arrange(u, &key))?;
    to_py(py, &out_dtypes, u, time_dims)
}

/// Joins two arranged batches on their first `key_width` columns; `kind` is `"join"`,
/// `"semijoin"` or `"antijoin"`. Products outside int64 raise `OverflowError`.
#[pyfunction]
fn batch_join<'py>(
    py: Python<'py>,
    kind: &str,
    key_width: usize,
    left: PyBatch<'py>,
    right: PyBatch<'py>,
    time_dims: usize,
) -> PyResult<PyOut<'py>> {
    let kind = match kind {
        "join" => JoinKind::Join,
        "semijoin" => JoinKind::Semijoin,
        "antijoin" => JoinKind::Antijoin,
        other => return Err(Error::Value(format!("unknown join kind {other:?}"))).py(),
    };
    let (ld, l) = from_py(&left, time_dims, "left")?;
    let (rd, r) = from_py(&right, time_dims, "right")?;
    let mut dtypes = ld;
    if kind == JoinKind::Join {
        dtypes.extend(rd.iter().skip(key_width));
    }
    let out = without_gil(py, move || {
        let j = batch::join(kind, key_width, &l, &r)?;
        match j.overflow.first() {
            Some((_, _, d)) => Err(Error::Overflow(format!(
                "the product of the joined diffs is {d}, outside the 64-bit signed range"
            ))),
            None => Ok(j.updates),
        }
    })?;
    to_py(py, &dtypes, out, time_dims)
}

/// Applies the aggregate `agg_json` (a `reduce` node's `agg`, see PLAN.md) per key to an
/// arranged batch with `key_width` key columns named by `names`. Python aggregates are not
/// available here; a key whose aggregate fails raises.
#[pyfunction]
fn batch_reduce<'py>(
    py: Python<'py>,
    agg_json: &str,
    key_width: usize,
    names: Vec<String>,
    batch: PyBatch<'py>,
    time_dims: usize,
) -> PyResult<PyOut<'py>> {
    let agg = Agg::from_json(agg_json).py()?;
    let (dtypes, u) = from_py(&batch, time_dims, "batch")?;
    let key_dtypes = dtypes[..key_width.min(dtypes.len())].to_vec();
    let out = without_gil(py, move || {
        let r = batch::reduce(&agg, key_width, &dtypes, &names, &u, &NoCallbacks)?;
        match r.errors.first() {
            Some((_, _, message, _)) => Err(Error::Value(message.clone())),
            None => Ok(r),
        }
    })?;
    let mut out_dtypes = key_dtypes;
    out_dtypes.extend(out.dtypes);
    to_py(py, &out_dtypes, out.updates, time_dims)
}

/// Registers the `batch_*` functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_arrange, m)?)?;
    m.add_function(wrap_pyfunction!(batch_join, m)?)?;
    m.add_function(wrap_pyfunction!(batch_reduce, m)?)?;
    Ok(())
}
