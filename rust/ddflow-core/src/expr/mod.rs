//! Column expressions evaluated in Rust on whole columns.
