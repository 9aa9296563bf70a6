//! `ddflow._core`: the thin PyO3 layer over `ddflow-core`.
//!
//! Each binding converts numpy/Arrow columns to core types, calls the core with the GIL
//! released, and maps core errors to `ddflow` exception classes (see [`errors`]).
//! One file per area: `kernels.rs` (sort, consolidate, traces, lattice, interesting times),
//! `expr.rs` (expression evaluation), `dtypes.rs` (dtype names and values), `engine.rs` (dataflows), `capture.rs` (capture
//! state), `memory.rs` (the counting allocator's figures and the memory limit); `convert/` is the one numpy <-> core conversion module they all use (with the
//! bindings' uint64 policy, in `convert/uint64.rs`).

// PyO3 0.23's #[pymethods] expansion trips this lint on every `PyResult` method.
#![allow(clippy::useless_conversion)]

mod capture;
mod convert;
mod dtypes;
mod engine;
mod errors;
mod expr;
mod kernels;
mod memory;
mod plan_analysis;

use pyo3::prelude::*;

/// Every Rust allocation of the module is counted, so that an engine can stop at its memory
/// limit with an error instead of the allocator aborting the process (`memory.rs`).
#[global_allocator]
static ALLOCATOR: ddflow_core::memory::CountingAlloc = ddflow_core::memory::CountingAlloc;

/// The native module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "PLAN_OPERATORS",
        ddflow_core::engine::plan::OPERATORS.to_vec(),
    )?;
    m.add("EXPR_FUNCTIONS", ddflow_core::expr::FUNC_OPS.to_vec())?;
    kernels::register(m)?;
    engine::register(m)?;
    capture::register(m)?;
    errors::register(m)?;
    expr::register(m)?;
    dtypes::register(m)?;
    plan_analysis::register(m)?;
    memory::register(m)?;
    Ok(())
}
