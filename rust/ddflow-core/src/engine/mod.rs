//! Dataflow plans and the embedded engine.
