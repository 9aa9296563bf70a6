//! The memory accounting as Python sees it: the live bytes of ddflow's heap, the default
//! limit and the parser of sizes such as `"4GB"` (see `ddflow_core::memory`), and the
//! string interner's size and collections (`ddflow_core::string_gc`).

use crate::errors::IntoPyResult;
use pyo3::prelude::*;

/// `_core.memory_live_bytes()`: bytes live in ddflow's Rust heap across the process.
#[pyfunction]
fn memory_live_bytes() -> usize {
    ddflow_core::memory::live_bytes()
}

/// `_core.spilled_bytes_total()`: bytes written to spill files by this process so far.
#[pyfunction]
fn spilled_bytes_total() -> usize {
    ddflow_core::trace::spill::spilled_bytes_total()
}

/// `_core.default_memory_limit()`: the process default limit in bytes (`None`: none).
#[pyfunction]
fn default_memory_limit() -> Option<usize> {
    ddflow_core::memory::default_limit()
}

/// `_core.machine_memory_limit()`: 80% of the smaller of physical memory and the cgroup
/// limit (`None` where neither can be read).
#[pyfunction]
fn machine_memory_limit() -> Option<usize> {
    ddflow_core::memory::machine_default()
}

/// `_core.parse_memory_limit(text)`: bytes of a size such as `"4GB"` (`None` for `"none"`).
#[pyfunction]
fn parse_memory_limit(text: &str) -> PyResult<Option<usize>> {
    ddflow_core::memory::parse_limit(text).py()
}

/// `_core.string_memory()`: the interner's size and the collector's counters: a dict of
/// `strings` (ids in use), `string_bytes`, `arena_bytes`, `collections`, `freed`.
#[pyfunction]
fn string_memory(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let (strings, string_bytes, arena_bytes) = ddflow_core::string_gc::interner_size();
    let (collections, freed) = ddflow_core::string_gc::counters();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("strings", strings)?;
    d.set_item("string_bytes", string_bytes)?;
    d.set_item("arena_bytes", arena_bytes)?;
    d.set_item("collections", collections)?;
    d.set_item("freed", freed)?;
    Ok(d)
}

/// `_core.collect_strings()`: frees the interned strings no live data holds now (whether
/// due or not); the number freed, or `None` if a dataflow was busy (in another thread).
#[pyfunction]
fn collect_strings() -> Option<usize> {
    ddflow_core::string_gc::collect_now().map(|s| s.freed)
}

/// `_core.trim_memory()`: gives the allocator's free pages back to the system when the
/// resident memory beyond ddflow's heap grew since the last time (`engine::trim_slack`);
/// whether it did.
#[pyfunction]
fn trim_memory() -> bool {
    ddflow_core::engine::trim_slack()
}

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trim_memory, m)?)?;
    m.add_function(wrap_pyfunction!(memory_live_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(spilled_bytes_total, m)?)?;
    m.add_function(wrap_pyfunction!(default_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(machine_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(parse_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(string_memory, m)?)?;
    m.add_function(wrap_pyfunction!(collect_strings, m)?)
}
