//! Updates held until their time is complete (`arrange`, `consolidate`).

use crate::engine::column::Msg;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// Messages whose updates wait for the input frontier to pass their times. Their times are
/// the holding operator's pointstamps.
#[derive(Default)]
pub struct Buffer(Vec<Msg>);

impl Buffer {
    /// Holds `msgs`.
    pub fn extend(&mut self, msgs: impl IntoIterator<Item = Msg>) {
        self.0.extend(msgs);
    }

    /// Adds the held times to `held`.
    pub fn held(&self, held: &mut Antichain<Time>) {
        for m in &self.0 {
            for t in &m.upd.times {
                held.insert_ref(t);
            }
        }
    }

    /// Removes and returns the updates at times not in the future of `frontier`.
    pub fn extract_complete(&mut self, frontier: &Antichain<Time>) -> Vec<Msg> {
        let mut ready = Vec::new();
        let mut keep = Vec::new();
        for m in self.0.drain(..) {
            let complete = m
                .upd
                .times
                .iter()
                .filter(|t| !frontier.less_equal(t))
                .count();
            if complete == m.upd.len() {
                ready.push(m);
                continue;
            }
            if complete == 0 {
                keep.push(m);
                continue;
            }
            let w = m.upd.width;
            let mut r = Msg {
                schema: m.schema.clone(),
                upd: Updates::with_capacity(w, complete),
            };
            let mut k = Msg {
                schema: m.schema.clone(),
                upd: Updates::with_capacity(w, m.upd.len() - complete),
            };
            for i in 0..m.upd.len() {
                if frontier.less_equal(&m.upd.times[i]) {
                    k.upd.push(m.upd.row(i), m.upd.times[i], m.upd.diffs[i]);
                } else {
                    r.upd.push(m.upd.row(i), m.upd.times[i], m.upd.diffs[i]);
                }
            }
            if !r.upd.is_empty() {
                ready.push(r);
            }
            if !k.upd.is_empty() {
                keep.push(k);
            }
        }
        self.0 = keep;
        ready
    }
}
