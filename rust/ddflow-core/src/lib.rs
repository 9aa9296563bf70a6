//! # ddflow-core
//!
//! The native core of ddflow, differential dataflow for Python. It holds no Python code and
//! no PyO3 dependency: the `ddflow-py` crate wraps it as the module `ddflow._core`.
//!
//! * [`lattice`]: product times, antichains (frontiers), `advance_by` for compaction.
//! * [`dtype`]: column dtypes (Arrow's types) and the physical word each is stored as.
//! * [`encoding`]: typed column values as `u64` words.
//! * [`interner`]: the process-wide string interner (str words are its ids).
//! * [`string_gc`]: the string collector (frees strings no live data holds).
//! * [`values`]: words of the logical dtypes (dates, decimals, ...) as text.
//! * [`updates`]: columnar batches of `(row, time, diff)` updates.
//! * [`sort`]: LSD radix sort and consolidation.
//! * [`trace`]: immutable batches (layers), fueled merging with compaction, the spine,
//!   trace handles and cursors.
//! * [`times`]: interesting times for `reduce`.
//! * [`memory`]: the counting allocator and the memory limit checks.
//! * [`huge_pages`]: transparent huge pages advised for large allocations.
//! * [`expr`]: column expressions evaluated on whole columns.
//! * [`engine`]: dataflow plans and the embedded engine that runs them.
//! * [`capture`]: completing and consolidating a capture's output, keeping its history or
//!   only its current state.

// Kernels index several parallel columns with one loop variable; iterator chains over
// zipped columns read worse there.
#![allow(clippy::needless_range_loop)]

pub mod capture;
pub mod dtype;
pub mod encoding;
pub mod engine;
pub mod error;
pub mod exact_sum;
pub mod expr;
pub mod huge_pages;
pub mod interner;
pub mod lattice;
pub mod memory;
pub mod sort;
pub mod string_gc;
pub mod time_column;
pub mod times;
pub mod trace;
pub mod updates;
pub mod values;

pub use error::{Error, Result};
pub use lattice::{Antichain, Lattice, PartialOrder, Time};
pub use updates::Updates;
