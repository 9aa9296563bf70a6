//! The core's integration tests: each module tests the crate through its public API only.
//! They build as one test binary, so the core and its test dependencies are linked once
//! rather than once per file.

mod engine_bfs;
mod engine_dtype_links;
mod engine_node_ids;
mod engine_string_marks;
mod reduce_reference;
mod trace_bounded;
mod trace_spine;
