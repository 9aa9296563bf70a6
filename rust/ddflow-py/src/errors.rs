//! Maps core errors and panics to `ddflow` exception classes.
//!
//! The classes live in `ddflow/errors.py` (so they can inherit from both `DdflowError` and
//! the matching builtin, e.g. `ValueError`). [`class_name`] is the one place that says which
//! class each core [`Error`] variant becomes: an exhaustive `match`, so a new variant does not
//! compile until it has a class. An error raised by an operator carries the operator's label,
//! which the exception gets as its `operator` attribute (`None` otherwise).

use ddflow_core::Error;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// The `ddflow.errors` class of a core error.
pub fn class_name(err: &Error) -> &'static str {
    match err {
        Error::Shape(_) => "ShapeError",
        Error::Type(_) => "SchemaTypeError",
        Error::Value(_) => "InvalidValueError",
        Error::Unsorted(_) => "UnsortedInputError",
        Error::Overflow(_) => "OverflowError",
        Error::Time(_) => "TimeError",
        Error::ColumnNotFound(_) => "ColumnNotFoundError",
        Error::Plan(_) => "PlanError",
        Error::DivisionByZero(_) => "DivisionByZeroError",
        Error::User(_) => "UserFunctionError",
        Error::Internal(_) => "InternalError",
        Error::MemoryLimit(_) => "MemoryLimitError",
        Error::Spill(_) => "SpillError",
        Error::Operator { error, .. } => class_name(error),
    }
}

/// Converts a core error to the matching `ddflow.errors` exception, with its `operator`.
pub fn to_py_err(err: Error) -> PyErr {
    Python::with_gil(|py| {
        let made = (|| -> PyResult<PyErr> {
            let cls = py.import("ddflow.errors")?.getattr(class_name(&err))?;
            let inst = cls.call1((err.to_string(),))?;
            inst.setattr("operator", err.operator())?;
            Ok(PyErr::from_value(inst))
        })();
        made.unwrap_or_else(|_| PyRuntimeError::new_err(err.to_string()))
    })
}

/// One error of every variant (the operator variant wrapping a value error), for the test
/// that checks each maps to its class. The `match` fails to compile when a variant is added
/// without an example here.
fn examples() -> Vec<Error> {
    let all = vec![
        Error::Shape("example".into()),
        Error::Type("example".into()),
        Error::Value("example".into()),
        Error::Unsorted("example".into()),
        Error::Overflow("example".into()),
        Error::Time("example".into()),
        Error::ColumnNotFound("example".into()),
        Error::Plan("example".into()),
        Error::DivisionByZero("example".into()),
        Error::User("example".into()),
        Error::Internal("example".into()),
        Error::MemoryLimit("example".into()),
        Error::Spill("example".into()),
        Error::Overflow("example".into()).with_operator("example_op"),
    ];
    for e in &all {
        match e {
            Error::Shape(_)
            | Error::Type(_)
            | Error::Value(_)
            | Error::Unsorted(_)
            | Error::Overflow(_)
            | Error::Time(_)
            | Error::ColumnNotFound(_)
            | Error::Plan(_)
            | Error::DivisionByZero(_)
            | Error::User(_)
            | Error::Internal(_)
            | Error::MemoryLimit(_)
            | Error::Spill(_)
            | Error::Operator { .. } => {}
        }
    }
    all
}

/// `_core._error_examples()`: the number of example errors (one per variant).
#[pyfunction]
fn _error_examples() -> usize {
    examples().len()
}

/// `_core._raise_error_example(i)`: raises example error `i` as Python sees it.
#[pyfunction]
fn _raise_error_example(i: usize) -> PyResult<()> {
    match examples().into_iter().nth(i) {
        Some(e) => Err(to_py_err(e)),
        None => Err(pyo3::exceptions::PyIndexError::new_err(i)),
    }
}

/// Registers the test hooks.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_error_examples, m)?)?;
    m.add_function(wrap_pyfunction!(_raise_error_example, m)?)
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

/// Runs `f` with the GIL released, turning a panic into an [`Error::Internal`] instead of
/// aborting the interpreter.
pub fn without_gil_core<T: Send, F: FnOnce() -> ddflow_core::Result<T> + Send>(
    py: Python<'_>,
    f: F,
) -> ddflow_core::Result<T> {
    // Whatever string ids `f` holds, no collection frees them while it runs.
    let _pin = ddflow_core::string_gc::Pin::new();
    let result = py.allow_threads(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    result.unwrap_or_else(|payload| {
        let msg = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "unknown panic".to_string()
        };
        Err(Error::Internal(format!("a bug in ddflow: {msg}")))
    })
}

/// [`without_gil_core`] with the error mapped to its Python exception.
pub fn without_gil<T: Send, F: FnOnce() -> ddflow_core::Result<T> + Send>(
    py: Python<'_>,
    f: F,
) -> PyResult<T> {
    without_gil_core(py, f).py()
}
