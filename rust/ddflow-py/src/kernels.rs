//! Kernel bindings: the public, columnar API over `ddflow-core`'s sort, consolidation,
//! lattice, interesting-times and trace modules.
//!
//! Every function takes and returns numpy arrays (columns), runs its kernel with the GIL
//! released ([`crate::errors::without_gil`], which also turns a Rust panic into
//! `ddflow.errors.InternalError`), and reports bad input as a `ddflow.errors` class naming
//! the argument: `ShapeError` (lengths or shapes disagree), `SchemaTypeError` (unsupported
//! dtype), `InvalidValueError` (negative times, wrong time dimension), `UnsortedInputError`,
//! `OverflowError` (diff sums outside `i64`), `TimeError` (times behind a frontier).
//!
//! * [`sort`]: `sort_values`, `sort_pairs`, `consolidate`, `consolidate_pairs`,
//!   `release_sort_buffers`;
//! * [`lattice`]: `less_equal`, `join`, `meet`, `advance_by`, `antichain`,
//!   `frontier_less_equal`, `interesting_times`, `interesting_times_reference`;
//! * [`trace`]: the `Trace` and `TraceHandle` classes.
//!
//! Arrays are read and written by the bindings' one conversion module, [`crate::convert`].
//!
//! `python/ddflow/_core.pyi` documents the Python signatures; `python/ddflow/kernels.py`
//! is the typed facade that also accepts lists and pyarrow arrays.

// pyo3 0.23's #[pyfunction] / #[pymethods] expansion trips this lint on `PyResult` returns.
#![allow(clippy::useless_conversion)]

mod lattice;
mod sort;
mod trace;

use pyo3::prelude::*;

/// Adds the kernel functions and classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    sort::register(m)?;
    lattice::register(m)?;
    trace::register(m)?;
    Ok(())
}
