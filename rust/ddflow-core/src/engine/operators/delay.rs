//! `delay`: holds updates until their time is complete, bundled by time, and releases each
//! distinct time once.
//!
//! Updates are kept in a map from time to the updates at that time, so an activation looks
//! at each distinct held time once, whatever the number of updates (priority-queue
//! behaviour when `advance_iteration` spreads updates over many future iterations; an
//! `arrange` buffer would re-scan every held update on every activation instead). The held
//! times are the operator's pointstamps: its output frontier is the meet of its input
//! frontier and the held times (identity path summary), so nothing downstream completes a
//! time the operator may still release. A time is released once the input frontier has
//! passed it (no more input can arrive at it), which is also when downstream operators
//! would first act on it.

use super::{take_all, Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};
use std::collections::BTreeMap;

/// The state of one `delay` node on one worker.
#[derive(Default)]
pub struct DelayState {
    /// Held updates by time; each time's messages in arrival order.
    held: BTreeMap<Time, Vec<Msg>>,
}

impl DelayState {
    /// An empty delay.
    pub fn new() -> Self {
        Self::default()
    }

    /// The distinct held times (lexicographic order).
    pub fn times(&self) -> impl Iterator<Item = &Time> {
        self.held.keys()
    }

    /// Number of held updates.
    pub fn len(&self) -> usize {
        self.held.values().flatten().map(|m| m.upd.len()).sum()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Holds every update of `m` under its time.
    pub fn insert(&mut self, m: Msg) {
        let n = m.upd.len();
        if n == 0 {
            return;
        }
        let t0 = m.upd.times[0];
        if m.upd.times.iter().all(|t| *t == t0) {
            self.held.entry(t0).or_default().push(m);
            return;
        }
        for i in 0..n {
            let t = m.upd.times[i];
            let at = self.held.entry(t).or_default();
            if at.last().is_none_or(|x| x.schema != m.schema) {
                at.push(Msg::empty(m.schema.clone()));
            }
            let last = at.last_mut().expect("a message");
            last.upd.push(m.upd.row(i), t, m.upd.diffs[i]);
        }
    }

    /// Removes and returns the updates at times not in the future of `frontier` (complete
    /// times), one or more messages per time, in lexicographic time order.
    pub fn release(&mut self, frontier: &Antichain<Time>) -> Vec<Msg> {
        let ready: Vec<Time> = self
            .held
            .keys()
            .filter(|t| !frontier.less_equal(t))
            .copied()
            .collect();
        let mut out = Vec::new();
        for t in ready {
            out.extend(self.held.remove(&t).unwrap_or_default());
        }
        out
    }
}

impl Operator for DelayState {
    fn mark_strings(&self, marks: &mut crate::string_gc::Marks) {
        self.held
            .values()
            .flatten()
            .for_each(|m| marks.words(&m.upd.rows));
    }

    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        frontier: &Antichain<Time>,
    ) -> Result<Output> {
        for m in take_all(inputs) {
            self.insert(m);
        }
        let msgs = self.release(frontier);
        let did = !msgs.is_empty();
        Ok(Output { msgs, did })
    }

    fn held(&self, held: &mut Antichain<Time>) {
        for t in self.times() {
            held.insert_ref(t);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::DType;
    use crate::updates::Updates;
    use std::sync::Arc;

    #[test]
    fn releases_each_time_once_complete() {
        let mut upd = Updates::new(1);
        for (v, it) in [(1u64, 5u64), (2, 3), (3, 5), (4, 9)] {
            upd.push(&[v], Time::from_coords(&[0, it]), 1);
        }
        let mut d = DelayState::new();
        d.insert(Msg {
            schema: Arc::new(vec![DType::Int64]),
            upd,
        });
        assert_eq!(d.times().count(), 3);
        assert!(d
            .release(&Antichain::from_elem(Time::from_coords(&[0, 3])))
            .is_empty());
        let out = d.release(&Antichain::from_elem(Time::from_coords(&[0, 6])));
        let rows: Vec<u64> = out.iter().flat_map(|m| m.upd.rows.clone()).collect();
        assert_eq!(rows, vec![2, 1, 3]);
        assert_eq!(d.len(), 1);
        assert_eq!(d.release(&Antichain::new()).len(), 1);
        assert!(d.is_empty());
    }
}
