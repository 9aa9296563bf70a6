//! `ddflow._core`: the thin PyO3 layer over `ddflow-core`.
//!
//! Each binding converts numpy/Arrow columns to core types, calls the core with the GIL
//! released, and maps core errors to `ddflow` exception classes (see [`errors`]).
//! One file per area: `kernels.rs` (sort, consolidate, traces, lattice, interesting times),
//! `expr.rs` (expression evaluation), `engine.rs` (dataflows), `capture.rs` (capture
//! state), `batch.rs` (batch operators); `convert.rs` is the one numpy <-> core conversion
//! module they all use (with the bindings' uint64 policy).

// PyO3 0.23's #[pymethods] expansion trips this lint on every `PyResult` method.
#![allow(clippy::useless_conversion)]

mod batch;
mod capture;
mod convert;
mod engine;
mod errors;
mod expr;
mod kernels;

use pyo3::prelude::*;

/// The native module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    kernels::register(m)?;
    engine::register(m)?;
    capture::register(m)?;
    errors::register(m)?;
    expr::register(m)?;
    batch::register(m)?;
    Ok(())
}
