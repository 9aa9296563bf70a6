//! Operator kernels of the engine, one file per operator family.
//!
//! * [`advance`]: `advance_iteration`, moving iteration coordinates forward by an expression.
//! * [`delay`]: `delay`, holding updates bundled by time until their time completes.
//! * [`join`]: `join`, `semijoin`, `antijoin` of two arrangements (delta rule).
//! * [`reduce`]: `reduce` over an arrangement: interesting times, per-key accumulation,
//!   output differences against the operator's own output trace.
//! * [`reduce_chain`]: `reduce` for a key whose times are totally ordered, in one pass.
//! * [`reduce_errors`]: a reduce's per-key error state (errors as data).
//! * [`aggregate`]: the built-in aggregates (`min`, `max`, `sum`, `count`, `distinct`,
//!   `top_k`) evaluated on one key's accumulated values.

pub mod advance;
pub mod aggregate;
pub mod delay;
pub mod join;
pub mod reduce;
pub mod reduce_chain;
pub mod reduce_errors;
