//! Traces: immutable batches, fueled merging with compaction, the spine, handles, cursors.
//!
//! * [`Description`]: the `lower`, `upper` and `since` frontiers of a batch.
//! * [`Batch`]: an immutable layer keys -> vals -> (time, diff), shared as `Arc<Batch>`,
//!   with compact forms (u32 words, single time, implicit unit diffs); built by
//!   [`Builder`], [`Batch::from_sorted`] or [`Batch::from_static_pairs`].
//! * [`Spine`]: a trace, as batches of geometrically decreasing size with fueled merges
//!   that advance times by the compaction frontier.
//! * [`MergeState`]: a progressive merge of two batches that compacts times.
//! * [`TraceHandle`]: a shared, thread-safe reader of a spine with its own compaction
//!   frontier; the spine compacts to the meet of all handles' frontiers.
//! * [`Cursor`]: a key-ordered, merged view over a spine's batches.
//!
//! Rows are `u64` words: an arranged row is a key (`key_width` words) followed by a val
//! (`val_width` words). Times are [`Time`](crate::lattice::Time), diffs `i64`.

mod batch;
mod builder;
mod cursor;
mod description;
mod handle;
mod merge;
mod spine;
mod static_batch;

pub use batch::Batch;
pub use builder::Builder;
pub use cursor::Cursor;
pub use description::Description;
pub use handle::TraceHandle;
pub use merge::MergeState;
pub use spine::{Spine, DEFAULT_EFFORT};

#[cfg(test)]
mod tests;
