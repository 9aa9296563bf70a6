//! An input batch as the engine holds it: the columns written straight into row-major words
//! (each column converted, written and dropped before the next), and times or diffs given
//! as one repeated row (`np.broadcast_to`, stride 0) converted once and repeated. A load of
//! 10M two-column rows at one time was held as numpy times and diffs (160 MB), the columns'
//! words (160 MB) and the rows (160 MB) at once; now as the rows and one column's words.

use super::{column_from_py, shape_err};
use ddflow_core::encoding::DType;
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

/// `convert(obj)`; but when `obj` is a numpy array of `n > 1` rows that all are its first
/// (stride 0 along the first axis, as `np.broadcast_to` makes it), that row is converted
/// alone and repeated, without a contiguous copy of the array first.
pub fn repeated_or<T: Clone>(
    obj: &Bound<'_, PyAny>,
    n: Option<usize>,
    convert: impl Fn(&Bound<'_, PyAny>) -> PyResult<Vec<T>>,
) -> PyResult<Vec<T>> {
    if let (Some(n), Ok(a)) = (n, obj.downcast::<PyUntypedArray>()) {
        if n > 1 && a.ndim() >= 1 && a.shape()[0] == n && a.strides()[0] == 0 {
            let first = obj.get_item(PySlice::new(obj.py(), 0, 1, 1))?;
            if let [x] = convert(&first)?.as_slice() {
                return Ok(vec![x.clone(); n]);
            }
        }
    }
    convert(obj)
}
