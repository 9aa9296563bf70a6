//! The error type of the core crate.
//!
//! Every fallible kernel and engine call returns [`Error`]. The variants say what went wrong
//! (a shape, a type, a value, an overflow, ...); an error raised while an operator ran is
//! wrapped in [`Error::Operator`], which carries the operator's label as a field. The
//! bindings map each variant to one Python exception class in a single exhaustive `match`
//! (the core knows nothing of Python); messages name the argument, the column and the
//! offending value.

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
    /// The bytes live in ddflow's heap passed the memory limit (see `memory.rs`); the run
    /// stopped before the allocator could fail.
    #[error("memory limit exceeded: {0}")]
    MemoryLimit(String),
    /// A spill file (cold trace batches written to disk under a memory limit, see
    /// `trace/spill.rs`) could not be written or mapped, or failed its checks.
    #[error("spill error: {0}")]
    Spill(String),
    /// `error`, raised while the operator (or capture) labelled `operator` ran: reads
    /// `"<kind>: operator <label>: <message>"`.
    #[error("{}: operator {operator}: {}", error.prefix(), error.message())]
    Operator {
        /// The operator's label, as in the plan.
        operator: String,
        /// What went wrong (never itself an `Operator`).
        error: Box<Error>,
    },
}

/// Result alias for the core crate.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error without its operator: `self` unless it is an [`Error::Operator`].
    pub fn cause(&self) -> &Error {
        match self {
            Error::Operator { error, .. } => error,
            other => other,
        }
    }

    /// The label of the operator that raised it, where known.
    pub fn operator(&self) -> Option<&str> {
        match self {
            Error::Operator { operator, .. } => Some(operator),
            _ => None,
        }
    }

    /// Attaches the label of the operator that raised the error; an error that already names
    /// one keeps it (the innermost operator is where it arose).
    pub fn with_operator(self, operator: &str) -> Error {
        match self {
            Error::Operator { .. } => self,
            other => Error::Operator {
                operator: operator.to_string(),
                error: Box::new(other),
            },
        }
    }

    /// The message without the kind prefix and without the operator.
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
            | Error::Internal(m)
            | Error::MemoryLimit(m)
            | Error::Spill(m) => m,
            Error::Operator { error, .. } => error.message(),
        }
    }

    /// Prefixes the message with context (an argument name).
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
            Error::MemoryLimit(m) => Error::MemoryLimit(wrap(m)),
            Error::Spill(m) => Error::Spill(wrap(m)),
            Error::Operator { operator, error } => Error::Operator {
                operator,
                error: Box::new(error.context(ctx)),
            },
        }
    }

    /// The human-readable name of the kind of error, which starts its message.
    fn prefix(&self) -> &'static str {
        match self {
            Error::Shape(_) => "shape error",
            Error::Type(_) => "type error",
            Error::Value(_) => "value error",
            Error::Unsorted(_) => "unsorted input",
            Error::Overflow(_) => "overflow",
            Error::Time(_) => "time error",
            Error::ColumnNotFound(_) => "column not found",
            Error::Plan(_) => "plan error",
            Error::DivisionByZero(_) => "division by zero",
            Error::User(_) => "user function error",
            Error::Internal(_) => "internal error",
            Error::MemoryLimit(_) => "memory limit exceeded",
            Error::Spill(_) => "spill error",
            Error::Operator { error, .. } => error.prefix(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn operator_is_a_field_and_reads_as_before() {
        let e = Error::Value("bad".into()).with_operator("join#3");
        assert_eq!(e.operator(), Some("join#3"));
        assert_eq!(e.cause(), &Error::Value("bad".into()));
        assert_eq!(e.to_string(), "value error: operator join#3: bad");
        // The innermost operator is kept.
        let again = e.clone().with_operator("outer");
        assert_eq!(again, e);
        assert_eq!(
            e.context("arg").to_string(),
            "value error: operator join#3: arg: bad"
        );
    }
}
