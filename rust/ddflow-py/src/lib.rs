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
const MMAP_THRESHOLD: i32 = 8 << 20;

/// Free memory at the top of glibc's heap beyond this many bytes is given back to the kernel
/// at once (`M_TRIM_THRESHOLD`); an idle engine gives back the rest (`engine/idle.rs`).
const TRIM_THRESHOLD: i32 = 32 << 20;

/// glibc's heap grows by at least this many bytes at a time (`M_TOP_PAD`; its default is
/// 128 kB), so that the growth holds whole huge pages that the allocator advises before they
/// are touched (`ddflow_core::huge_pages`): a heap grown 128 kB at a time has each huge page
/// touched 4 kB at a time before it is whole, and mapped a page per fault. Untouched, the
/// pad costs address space only.
const TOP_PAD: i32 = 8 << 20;

/// Fixes glibc malloc's mmap threshold at [`MMAP_THRESHOLD`], its trim threshold at
/// [`TRIM_THRESHOLD`] and its top pad at [`TOP_PAD`] for the process (where
/// `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_` or `MALLOC_TOP_PAD_` is set, that
/// value stands).
///
/// By default the mmap threshold rises to the size of every mmapped block freed, up to
/// 32 MB, so after an engine frees its first large vector, the many vectors of 1-32 MB that
/// a pass allocates and frees (messages, key histories, sort scratch) come from the heap and
/// leave it fragmented: RSS stays far above the live bytes (766 MB of RSS for 375 MB of Rust
/// heap after the 1M/10M BFS's load, `benches/results/memory_1m.md`). A fixed threshold
/// stops that; at 1 MB, though, every vector of 1 MB or more was mapped afresh and unmapped
/// when freed, one page fault per 4 kB of it: the kernel's fault handling was about 45% of
/// the CPU samples of the count micro-case's update phase. At 8 MB the vectors of a step
/// that are 1-8 MB reuse the heap's free memory (faults at T = 8,000 15,500 -> 12,700), and
/// a trim threshold of 32 MB (glibc's is 128 kB once the mmap threshold is fixed) keeps a
/// freed block at the top of the heap for the next one. The 1M/10M BFS's peak is unchanged
/// (569 MB, in its load's first pass) and so is its RSS once idle; between the load's later
/// passes its RSS is up to 100 MB higher than at 1 MB, freed heap kept until the idle trim
/// (`benches/results/speed_faults_2026-11-27.md`).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn bound_heap_fragmentation() {
    extern "C" {
        fn mallopt(param: i32, value: i32) -> i32;
    }
    const M_TRIM_THRESHOLD: i32 = -1;
    const M_TOP_PAD: i32 = -2;
    const M_MMAP_THRESHOLD: i32 = -3;
    for (param, value, env) in [
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_"),
        (M_TRIM_THRESHOLD, TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_"),
        (M_TOP_PAD, TOP_PAD, "MALLOC_TOP_PAD_"),
    ] {
        if std::env::var_os(env).is_none() {
            // SAFETY: `mallopt` only sets a tuning parameter of glibc's allocator.
            unsafe {
                mallopt(param, value);
            }
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
