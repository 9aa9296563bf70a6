//! Traces: immutable batches, fueled merging with compaction, the spine, handles, cursors.
