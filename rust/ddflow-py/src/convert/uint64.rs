//! The bindings' one uint64 policy, and the engine's integer arrays it governs (diffs,
//! counts, offsets, row indexes and times).
//!
//! Decided here, by [`Unsigned`], and nowhere else:
//! * the kernel API (`ddflow.kernels`: sort and consolidation kernels, `Trace`) keeps uint64
//!   columns as their own type ([`ColType::UInt64`]): traces may be keyed by uint64 ids and
//!   the sort kernels order them unsigned;
//! * everywhere else (engine inputs such as `InputSession.update_batch`, Python callbacks'
//!   results, captures, `eval_expr`, and integer arrays such as diffs, counts and
//!   times) the engine's dtypes are int64, float64, bool and str, so a
//!   uint64 array is read as int64 when every value fits, and otherwise raises
//!   `ddflow.errors.OverflowError`: `"<what>: value <v> at row <i> does not fit in int64"`
//!   (nothing is ever wrapped). Narrower unsigned ints always fit and are widened.

use super::columns_in::{dtype_name, readonly, slice1};
use super::times::times;
use super::{err, type_err, untyped1, value_err};
use ddflow_core::lattice::Time;
use ddflow_core::Error;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// How uint64 arrays are read: the one uint64 policy of the bindings (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsigned {
    /// As their own type: the kernel API (`ddflow.kernels`) keys traces by uint64.
    Keep,
    /// As int64, every value checked to fit (an `OverflowError` naming the first value that
    /// does not; nothing is wrapped): engine inputs, callbacks' results, captures,
    /// expressions and integer arrays, whose dtypes are int64, float64, bool and str.
    AsInt64,
}

/// The uint64 -> int64 check of [`Unsigned::AsInt64`]: the first value above `i64::MAX`
/// raises `OverflowError` naming it and its row (`per_row` values per row).
pub(super) fn check_fits_i64(arg: &str, values: &[u64], per_row: usize) -> PyResult<()> {
    match values.iter().position(|&v| v > i64::MAX as u64) {
        None => Ok(()),
        Some(i) => Err(err(Error::Overflow(format!(
            "{arg}: value {} at row {} does not fit in int64",
            values[i],
            i / per_row.max(1)
        )))),
    }
}

/// An integer array of any shape (or a sequence numpy reads) as a C-contiguous int64
/// array: ints and bools cast, uint64 per [`Unsigned::AsInt64`] (the row its message names
/// is the first index); other dtypes raise `SchemaTypeError`.
pub(super) fn int64_array<'py>(
    what: &str,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyUntypedArray>> {
    let np = obj.py().import("numpy")?;
    let arr = if obj.downcast::<PyUntypedArray>().is_ok() {
        obj.clone()
    } else {
        np.call_method1("asarray", (obj,)).map_err(|e| {
            err(Error::Overflow(format!(
                "{what}: cannot be read as 64-bit integers ({e})"
            )))
        })?
    };
    let a = arr.downcast::<PyUntypedArray>()?;
    let d = a.dtype();
    match (d.kind(), d.itemsize()) {
        (b'u', 8) => {
            let per_row = if a.ndim() == 2 { a.shape()[1] } else { 1 };
            let flat = np
                .call_method1("ascontiguousarray", (a,))?
                .call_method1("reshape", (-1,))?;
            let flat = flat.downcast::<PyUntypedArray>()?;
            let held = readonly::<u64>(what, flat)?;
            check_fits_i64(what, &slice1(&held), per_row)?;
        }
        (b'i' | b'u' | b'b', _) => {}
        _ => {
            return Err(type_err(format!(
                "{what}: expected integers, got dtype {}",
                dtype_name(a)
            )))
        }
    }
    let c = np.call_method1("ascontiguousarray", (a, "int64"))?;
    Ok(c.downcast::<PyUntypedArray>()?.clone())
}

/// A 1-D integer array of diffs, counts, offsets or row indexes for the engine (see
/// [`int64_array`]).
pub fn i64s_from_py(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    let a = int64_array(what, obj)?;
    let a = untyped1(what, a.as_any())?;
    let held = readonly::<i64>(what, &a)?;
    Ok(slice1(&held).into_owned())
}

/// Engine times: an integer array of shape `(n,)` or `(n, dims)` (see [`int64_array`]) as
/// times of `dims` coordinates; negative coordinates are rejected.
pub fn times_from_py(obj: &Bound<'_, PyAny>, dims: usize, what: &str) -> PyResult<Vec<Time>> {
    let arr = int64_array(what, obj)?;
    let held = times(what, arr.as_any())?;
    if held.k != dims {
        return Err(value_err(format!(
            "{what}: times have {} coordinates, the dataflow's times have {dims}",
            held.k
        )));
    }
    held.view().to_times(what).map_err(err)
}
