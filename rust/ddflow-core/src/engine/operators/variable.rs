//! `variable`: the loop variable of an iterate scope. Port 0 is the entered source, port 1
//! the body's result (the back edge). Iteration 0 is the source; iteration `i + 1` is the
//! result at iteration `i`: the variable emits the source, minus the source moved one
//! iteration on, plus the result moved one iteration on. Times at or past the scope's
//! `max_iterations` are dropped.

use super::{Operator, Output, RunCtx};
use crate::engine::column::Msg;
use crate::error::Result;
use crate::lattice::{Antichain, Time};
use crate::updates::Updates;

/// A `variable` node: the iteration coordinate it advances and the scope's limit.
pub struct Variable {
    coord: usize,
    max_iterations: u64,
}

impl Variable {
    /// Advances coordinate `coord`, dropping times at or past `max_iterations`.
    pub fn new(coord: usize, max_iterations: Option<u64>) -> Self {
        Variable {
            coord,
            max_iterations: max_iterations.unwrap_or(u64::MAX),
        }
    }

    /// `m` moved one iteration on (negated when `negate`), times past the limit dropped.
    fn bump(&self, m: &Msg, negate: bool) -> Msg {
        let c = self.coord;
        let mut next = Msg::empty(m.schema.clone());
        // Every update goes round again but those at the last iteration.
        next.upd = Updates::with_capacity(m.upd.width, m.upd.len());
        for i in 0..m.upd.len() {
            let t = m.upd.times[i];
            if t.0[c] + 1 < self.max_iterations {
                let d = m.upd.diffs[i] as i128;
                let d = if negate { -d } else { d };
                let t1 = t.with_coord(c, t.0[c] + 1);
                crate::sort::consolidate::pieces(d, |p| next.upd.push(m.upd.row(i), t1, p));
            }
        }
        next
    }
}

impl Operator for Variable {
    /// Keeps no rows.
    fn mark_strings(&self, _marks: &mut crate::string_gc::Marks) {}
    fn run(
        &mut self,
        _cx: &mut RunCtx<'_>,
        inputs: &mut [Vec<Msg>],
        _frontier: &Antichain<Time>,
    ) -> Result<Output> {
        let mut out = Vec::new();
        for m in std::mem::take(&mut inputs[0]) {
            out.push(self.bump(&m, true));
            out.push(m);
        }
        for m in std::mem::take(&mut inputs[1]) {
            out.push(self.bump(&m, false));
        }
        Ok(Output::pass(out))
    }
}
