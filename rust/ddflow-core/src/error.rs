//! The error type of the core crate.
//!
//! Every fallible kernel and engine call returns [`Error`]. Each variant maps to one Python
//! exception class in the bindings (`ddflow.DdflowError` and its subclasses); messages name
//! the operator or argument, the column and the offending value.

use thiserror::Error;

/// Errors raised by kernels and the engine.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum Error {
    /// Columns or arrays whose lengths or shapes disagree.
    #[error("shape error: {0}")]
    Shape(String),
    /// A value of an unsupported or unexpected type.
    #[error("type error: {0}")]
    Type(String),
    /// A value outside the accepted range (negative time, wrong time dimension, ...).
    #[error("value error: {0}")]
    Value(String),
    /// Input that must be sorted is not.
    #[error("unsorted input: {0}")]
    Unsorted(String),
    /// A 64-bit difference or arithmetic result overflowed.
    #[error("overflow: {0}")]
    Overflow(String),
    /// A time that is not in the future of the relevant frontier.
    #[error("time error: {0}")]
    Time(String),
    /// A column name that does not exist.
    #[error("column not found: {0}")]
    ColumnNotFound(String),
    /// An invalid dataflow plan.
    #[error("plan error: {0}")]
    Plan(String),
    /// Division by zero in an expression.
    #[error("division by zero: {0}")]
    DivisionByZero(String),
    /// A failure inside a user-supplied function (raised on the Python side).
    #[error("user function error: {0}")]
    User(String),
    /// A bug in ddflow (a panic caught at an operator) or a callback error that must stop
    /// the run (the bindings re-raise the Python exception itself).
    #[error("internal error: {0}")]
    Internal(String),
}

/// Result alias for the core crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// A short, stable name of the variant (used to map errors to exception classes).
    pub fn kind(&self) -> &'static str {
        match self {
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
        }
    }

    /// The message without the kind prefix.
    pub fn message(&self) -> &str {
        match self {
            Error::Shape(m)
            | Error::Type(m)
            | Error::Value(m)
            | Error::Unsorted(m)
            | Error::Overflow(m)
            | Error::Time(m)
            | Error::ColumnNotFound(m)
            | Error::Plan(m)
            | Error::DivisionByZero(m)
            | Error::User(m)
            | Error::Internal(m) => m,
        }
    }

    /// Prefixes the message with context (operator or argument name).
    pub fn context(self, ctx: &str) -> Error {
        let wrap = |m: String| format!("{ctx}: {m}");
        match self {
            Error::Shape(m) => Error::Shape(wrap(m)),
            Error::Type(m) => Error::Type(wrap(m)),
            Error::Value(m) => Error::Value(wrap(m)),
            Error::Unsorted(m) => Error::Unsorted(wrap(m)),
            Error::Overflow(m) => Error::Overflow(wrap(m)),
            Error::Time(m) => Error::Time(wrap(m)),
            Error::ColumnNotFound(m) => Error::ColumnNotFound(wrap(m)),
            Error::Plan(m) => Error::Plan(wrap(m)),
            Error::DivisionByZero(m) => Error::DivisionByZero(wrap(m)),
            Error::User(m) => Error::User(wrap(m)),
            Error::Internal(m) => Error::Internal(wrap(m)),
        }
    }
}
