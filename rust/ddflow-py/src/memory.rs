//! The memory accounting as Python sees it: the live bytes of ddflow's heap, the default
//! limit and the parser of sizes such as `"4GB"` (see `ddflow_core::memory`).

use crate::errors::IntoPyResult;
use pyo3::prelude::*;

/// `_core.memory_live_bytes()`: bytes live in ddflow's Rust heap across the process.
#[pyfunction]
fn memory_live_bytes() -> usize {
    ddflow_core::memory::live_bytes()
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

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(memory_live_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(default_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(machine_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(parse_memory_limit, m)?)
}
