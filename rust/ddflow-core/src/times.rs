//! Interesting times: where a reduce output may change given old and new input times.
//!
//! The interesting times of `edits` (times already present for a key) and `new_times` (times
//! of new updates) are the joins of any subset of `edits` with a non-empty subset of
//! `new_times`.

use crate::lattice::{Lattice, Time};

/// Reference implementation: the joins of a subset of `edits` with a non-empty subset of
/// `new_times`, sorted and deduplicated.
pub fn interesting_times_reference(edits: &[Time], new_times: &[Time]) -> Vec<Time> {
    let mut out: Vec<Time> = new_times.to_vec();
    out.sort();
    out.dedup();
    loop {
        let mut next = out.clone();
        for a in out.iter() {
            for b in edits.iter().chain(out.iter()) {
                next.push(a.join(b));
            }
        }
        next.sort();
        next.dedup();
        if next.len() == out.len() {
            return out;
        }
        out = next;
    }
}

/// The interesting times of `edits` and `new_times`, sorted and deduplicated, into `out`.
pub fn interesting_times(edits: &[Time], new_times: &[Time], out: &mut Vec<Time>) {
    out.clear();
    out.extend(interesting_times_reference(edits, new_times));
}
