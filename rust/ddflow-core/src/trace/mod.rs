//! Traces: immutable batches, fueled merging with compaction, the spine, handles, cursors.
//!
//! * [`Description`]: the `lower`, `upper` and `since` frontiers of a batch.
//! * [`Batch`]: an immutable layer keys -> vals -> (time, diff), shared as `Arc<Batch>`,
//!   with compact forms (u32 words, single or 8-byte times, implicit unit diffs); built by
//!   [`Builder`], [`Batch::from_sorted`] or [`Batch::from_static_pairs`].
//! * [`Spine`]: a trace, as batches of geometrically decreasing size with fueled merges
//!   that advance times by the compaction frontier.
//! * [`MergeState`]: a progressive merge of two batches that compacts times; `packed`: its
//!   inner loops over times of two coordinates packed in one word.
//! * [`merge_all::merge_all`]: many batches merged into one in one pass (full merges);
//!   `merge_val`: one val's gathered updates consolidated, for both merges.
//! * [`TraceHandle`]: a shared, thread-safe reader of a spine with its own compaction
//!   frontier; the spine compacts to the meet of all handles' frontiers.
//! * [`Cursor`]: a key-ordered, merged view over a spine's batches.
//! * `spill`: a batch written to a file and read back through a memory map
//!   ([`Batch::spill`], [`Spine::spill`]), for state larger than the memory limit.
//!
//! Rows are `u64` words: an arranged row is a key (`key_width` words) followed by a val
//! (`val_width` words). Times are [`Time`](crate::lattice::Time), diffs `i64`. Batches are
//! sorted by key, then val (word-lexicographic), then time (lexicographic `Ord`).
//!
//! # Example
//!
//! ```
//! use ddflow_core::lattice::{Antichain, Time};
//! use ddflow_core::trace::{Batch, Description, Spine, TraceHandle};
//! use ddflow_core::Updates;
//! use std::sync::Arc;
//!
//! let handle = TraceHandle::new(Spine::new(1, 1)); // keys and vals of one word
//! for round in 0..3u64 {
//!     let mut u = Updates::new(2);
//!     u.push(&[7, round], Time::scalar(round), 1); // insert (7, round)
//!     if round > 0 {
//!         u.push(&[7, round - 1], Time::scalar(round), -1); // retract (7, round - 1)
//!     }
//!     let desc = Description::scalar(round, round + 1);
//!     handle.insert(Arc::new(Batch::from_updates(u, 1, desc).unwrap()));
//!     handle
//!         .set_logical_compaction(&Antichain::from_elem(Time::scalar(round + 1)))
//!         .unwrap();
//! }
//! while handle.exert(1_000) {}
//! let mut cursor = handle.cursor();
//! let mut history = Updates::new(1);
//! assert!(cursor.key_history(&[7], &mut history));
//! // Compacted to the frontier: only (7, 2) remains, at time 3.
//! assert_eq!(history.rows, vec![2]);
//! assert_eq!(history.times, vec![Time::scalar(3)]);
//! ```

pub mod batch;
pub mod builder;
pub mod cursor;
pub mod description;
pub mod handle;
mod layer_build;
pub mod merge;
pub mod merge_all;
mod merge_val;
pub(crate) mod packed;
pub mod read;
pub mod spill;
pub mod spine;
mod static_batch;
mod stored;
mod time_vec;

pub use batch::Batch;
pub use builder::Builder;
pub use cursor::Cursor;
pub use description::Description;
pub use handle::TraceHandle;
pub use merge::MergeState;
pub use spine::{Spine, DEFAULT_EFFORT};

#[cfg(test)]
mod cursor_tests;
#[cfg(test)]
mod layer_build_tests;
#[cfg(test)]
mod tests;
