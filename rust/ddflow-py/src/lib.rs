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

/// Allocations of at least this many bytes get their own pages from the kernel (glibc's
/// `M_MMAP_THRESHOLD`), returned when freed; see [`bound_heap_fragmentation`].
const MMAP_THRESHOLD: i32 = 1 << 20;

/// Fixes glibc malloc's mmap threshold at [`MMAP_THRESHOLD`] for the process (unless
/// `MALLOC_MMAP_THRESHOLD_` is set: then that value stands). By default the threshold rises
/// to the size of every mmapped block freed, up to 32 MB, so after an engine frees its first
/// large vector, the many vectors of 1-32 MB that a pass allocates and frees (messages,
/// key histories, sort scratch) come from the heap and leave it fragmented: RSS stays far
/// above the live bytes. Measured on the 1M/10M BFS (`benches/memory_stages.py`): 766 MB
/// of RSS for 375 MB of Rust heap after the load before, 565 MB after, and a peak 140 MB
/// lower (`benches/results/memory_1m.md`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn bound_heap_fragmentation() {
    extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_MMAP_THRESHOLD: i32 = -3;
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: `mallopt` only sets a tuning parameter of glibc's allocator.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn bound_heap_fragmentation() {}

/// The native module.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    bound_heap_fragmentation();
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
