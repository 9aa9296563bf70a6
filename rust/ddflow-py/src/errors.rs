//! Maps core errors and panics to `ddflow` exception classes.
//!
//! The classes live in `ddflow/errors.py` (so they can inherit from both `DdflowError` and
//! the matching builtin, e.g. `ValueError`); [`to_py_err`] looks the class up by the core
//! error's `kind()` name.

use ddflow_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// Converts a core error to the matching `ddflow.errors` exception.
pub fn to_py_err(err: Error) -> PyErr {
    Python::with_gil(|py| {
        let class = py
            .import("ddflow.errors")
            .and_then(|m| m.getattr(err.kind()));
        match class {
            Ok(cls) => match cls.call1((err.to_string(),)) {
                Ok(inst) => PyErr::from_value(inst),
                Err(e) => e,
            },
            Err(_) => PyRuntimeError::new_err(err.to_string()),
        }
    })
}

/// Extension trait: `.py()` converts a core `Result` into a `PyResult`.
pub trait IntoPyResult<T> {
    /// Maps the error with [`to_py_err`].
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for ddflow_core::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py_err)
    }
}

/// Runs `f` with the GIL released, turning a panic into a `ddflow.errors.InternalError`
/// instead of aborting the interpreter.
pub fn without_gil<T: Send, F: FnOnce() -> ddflow_core::Result<T> + Send>(
    py: Python<'_>,
    f: F,
) -> PyResult<T> {
    let result = py.allow_threads(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    match result {
        Ok(r) => r.py(),
        Err(payload) => {
            let msg = if let Some(s) = payload.downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = payload.downcast_ref::<String>() {
                s.clone()
            } else {
                "unknown panic".to_string()
            };
            let cls = py.import("ddflow.errors")?.getattr("InternalError")?;
            Err(PyErr::from_value(cls.call1((format!(
                "internal error (a bug in ddflow): {msg}"
            ),))?))
        }
    }
}
