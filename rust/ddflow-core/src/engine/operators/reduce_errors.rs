//! Errors as data in `reduce`: the error state of each key over time.
//!
//! When a key's accumulation or aggregate fails at a time (a count or sum that overflows
//! `int64`), the reduce's output for that key at that time is empty and the key is *in
//! error* there. Like the output itself, the error state is emitted as differences: per key
//! a short history of `(time, message, diff)` is kept, and setting the state at a time emits
//! the difference against the accumulation of that history at the time. So an error appears
//! when the accumulation starts to fail and is retracted when it stops failing.
//!
//! Keys that never failed cost nothing: with no history at all, [`ReduceErrors::set`] with no
//! error returns at once.

use crate::error::{Error, Result};
use crate::lattice::{PartialOrder, Time};
use std::collections::HashMap;

/// Per-key error histories of one reduce, and the error updates not yet taken.
#[derive(Default, Debug)]
pub struct ReduceErrors {
    hist: HashMap<Vec<u64>, Vec<(Time, String, i64)>>,
    /// New error updates: `(key, time, message, diff)`.
    pub new: Vec<(Vec<u64>, Time, String, i64)>,
}

impl ReduceErrors {
    /// Marks the keys with error histories or new error updates.
    pub fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.hist.keys().for_each(|k| marks.words(k));
        self.new.iter().for_each(|n| marks.words(&n.0));
    }

    /// Times at which `key` changed its error state (they are interesting times for it).
    pub fn times_of(&self, key: &[u64], out: &mut Vec<Time>) {
        if self.hist.is_empty() {
            return;
        }
        if let Some(h) = self.hist.get(key) {
            out.extend(h.iter().map(|e| e.0));
        }
    }

    /// Whether `key` ever failed (it has an error history).
    pub fn has_history(&self, key: &[u64]) -> bool {
        !self.hist.is_empty() && self.hist.contains_key(key)
    }

    /// Sets the error state of `key` at `time`: `err` is the message if the key fails there.
    /// A key's times must be set in lexicographic order within an activation.
    #[inline]
    pub fn set(&mut self, key: &[u64], time: Time, err: Option<&str>) {
        // Inlined: a reduce sets the state of every (key, time) it evaluates, and almost
        // every key never failed.
        if err.is_none() && self.hist.is_empty() {
            return;
        }
        self.set_tracked(key, time, err);
    }

    /// [`ReduceErrors::set`] once some key failed or `err` is set.
    #[inline(never)]
    fn set_tracked(&mut self, key: &[u64], time: Time, err: Option<&str>) {
        let h = match self.hist.get_mut(key) {
            Some(h) => h,
            None if err.is_none() => return,
            None => self.hist.entry(key.to_vec()).or_default(),
        };
        let mut acc: Vec<(String, i64)> = Vec::new();
        for (t, m, d) in h.iter() {
            if t.less_equal(&time) {
                match acc.iter_mut().find(|(x, _)| x == m) {
                    Some(a) => a.1 += d,
                    None => acc.push((m.clone(), *d)),
                }
            }
        }
        if let Some(m) = err {
            if !acc.iter().any(|(x, _)| x == m) {
                acc.push((m.to_string(), 0));
            }
        }
        for (m, have) in acc {
            let want = i64::from(err == Some(m.as_str()));
            let diff = want - have;
            if diff != 0 {
                h.push((time, m.clone(), diff));
                self.new.push((key.to_vec(), time, m, diff));
            }
        }
    }
}

/// Runs `call(lo, hi)` on groups `lo..hi` of `n`, first all at once; where it fails because
/// of the data (a user function raising, a bad reply), bisects until single groups fail
/// alone, and returns those with their messages. Errors that must stop the run (`Internal`,
/// `Plan`) are returned as errors.
pub fn bisect_groups(
    n: usize,
    call: &mut dyn FnMut(usize, usize) -> Result<()>,
) -> Result<Vec<(usize, String)>> {
    let mut failed = Vec::new();
    if n > 0 {
        bisect(0, n, call, &mut failed)?;
    }
    Ok(failed)
}

fn bisect(
    lo: usize,
    hi: usize,
    call: &mut dyn FnMut(usize, usize) -> Result<()>,
    failed: &mut Vec<(usize, String)>,
) -> Result<()> {
    match call(lo, hi) {
        Ok(()) => Ok(()),
        Err(
            e @ (Error::Internal(_) | Error::Plan(_) | Error::MemoryLimit(_) | Error::Spill(_)),
        ) => Err(e),
        Err(e) if hi - lo == 1 => {
            failed.push((lo, e.to_string()));
            Ok(())
        }
        Err(_) => {
            let mid = lo + (hi - lo) / 2;
            bisect(lo, mid, call, failed)?;
            bisect(mid, hi, call, failed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(x: u64) -> Time {
        Time::from_coords(&[x])
    }

    #[test]
    fn error_appears_then_retracts() {
        let mut e = ReduceErrors::default();
        e.set(&[1], t(0), None);
        assert!(e.new.is_empty());
        e.set(&[1], t(1), Some("overflow"));
        e.set(&[1], t(2), Some("overflow"));
        e.set(&[1], t(3), None);
        e.set(&[2], t(3), None);
        let got: Vec<(u64, i64)> = e.new.iter().map(|n| (n.1 .0[0], n.3)).collect();
        assert_eq!(got, vec![(1, 1), (3, -1)]);
        let mut times = Vec::new();
        e.times_of(&[1], &mut times);
        assert_eq!(times, vec![t(1), t(3)]);
    }

    #[test]
    fn bisection_isolates_failing_groups() {
        let bad = [3usize, 4, 9];
        let mut calls = 0;
        let failed = bisect_groups(10, &mut |lo, hi| {
            calls += 1;
            match (lo..hi).find(|g| bad.contains(g)) {
                Some(g) => Err(Error::User(format!("group {g}"))),
                None => Ok(()),
            }
        })
        .unwrap();
        assert_eq!(
            failed,
            vec![
                (3, "user function error: group 3".to_string()),
                (4, "user function error: group 4".to_string()),
                (9, "user function error: group 9".to_string())
            ]
        );
        assert!(calls < 20, "{calls}");
        let stop = bisect_groups(4, &mut |_, _| Err(Error::Internal("stop".into())));
        assert!(stop.is_err());
    }
}
