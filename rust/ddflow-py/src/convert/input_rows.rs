//! An input batch as the engine holds it: the columns written straight into row-major words
//! (each column converted, written and dropped before the next), and times or diffs given
//! as one repeated row (`np.broadcast_to`, stride 0) converted once (one time is then held
//! as one, `TimeColumn`). A load of 10M two-column rows at one time was held as numpy times
//! and diffs (160 MB), the columns' words (160 MB), the rows (160 MB) and a 32-byte time per
//! row (320 MB) at once; now as the rows, the diffs and one column's words.

use super::{column_from_py, i64s_from_py, shape_err, times_from_py};
use ddflow_core::encoding::DType;
use ddflow_core::updates::TimeColumn;
use numpy::{PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PySlice;

/// The rows of an input batch's `columns` (in order), their dtypes and the number of rows
/// (`None` without columns); `what` names the input in errors.
pub fn rows_from_py(
    columns: &[Bound<'_, PyAny>],
    what: &str,
) -> PyResult<(Vec<DType>, Vec<u64>, Option<usize>)> {
    let w = columns.len();
    let mut dtypes = Vec::with_capacity(w);
    let mut rows = Vec::new();
    let mut n = None;
    for (c, obj) in columns.iter().enumerate() {
        let col = column_from_py(obj, &format!("{what}, column {c}"))?;
        let len = col.words.len();
        match n {
            None => {
                n = Some(len);
                rows = vec![0u64; len * w];
            }
            Some(n) if n != len => {
                return Err(shape_err(format!(
                    "{what}: column {c} has {len} values, column 0 has {n}"
                )))
            }
            Some(_) => {}
        }
        for (row, &v) in rows.chunks_exact_mut(w).zip(&col.words) {
            row[c] = v;
        }
        dtypes.push(col.dtype);
    }
    Ok((dtypes, rows, n))
}

/// The first row of `obj` when it is a numpy array of `n > 1` rows that all are its first
/// (stride 0 along the first axis, as `np.broadcast_to` makes it), else `None`.
fn repeated_row<'py>(
    obj: &Bound<'py, PyAny>,
    n: Option<usize>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let (Some(n), Ok(a)) = (n, obj.downcast::<PyUntypedArray>()) {
        if n > 1 && a.ndim() >= 1 && a.shape()[0] == n && a.strides()[0] == 0 {
            return Ok(Some(obj.get_item(PySlice::new(obj.py(), 0, 1, 1))?));
        }
    }
    Ok(None)
}

/// The times of a batch of `n` updates (see [`times_from_py`]); one repeated time (a
/// broadcast row) is converted once and held as one time ([`TimeColumn::repeat`]).
pub fn batch_times(
    obj: &Bound<'_, PyAny>,
    n: Option<usize>,
    dims: usize,
    what: &str,
) -> PyResult<TimeColumn> {
    if let (Some(first), Some(n)) = (repeated_row(obj, n)?, n) {
        if let [t] = times_from_py(&first, dims, what)?.as_slice() {
            return Ok(TimeColumn::repeat(*t, n));
        }
    }
    Ok(times_from_py(obj, dims, what)?.into())
}

/// The diffs of a batch of `n` updates (see [`i64s_from_py`]); one repeated diff (a
/// broadcast row) is converted once.
pub fn batch_diffs(obj: &Bound<'_, PyAny>, n: Option<usize>, what: &str) -> PyResult<Vec<i64>> {
    if let (Some(first), Some(n)) = (repeated_row(obj, n)?, n) {
        if let [d] = i64s_from_py(&first, what)?.as_slice() {
            return Ok(vec![*d; n]);
        }
    }
    i64s_from_py(obj, what)
}
